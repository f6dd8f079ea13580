package runner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// recordingQueue hands out one lease and records what the agent reports.
type recordingQueue struct {
	mu       sync.Mutex
	lease    *d5list.Lease
	batches  [][]d5list.LogLine
	calls    []string // "progress" and "complete", in order
	finished chan struct{}
}

func (q *recordingQueue) Lease(ctx context.Context, runnerID string, labels map[string]string) (*d5list.Lease, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.lease
	q.lease = nil
	return l, nil
}

func (q *recordingQueue) Heartbeat(ctx context.Context, jobID int64, secret string) error { return nil }

func (q *recordingQueue) Complete(ctx context.Context, jobID int64, secret string, logs []d5list.RunLog, runner map[string]string) error {
	q.mu.Lock()
	q.calls = append(q.calls, "complete")
	q.mu.Unlock()
	close(q.finished)
	return nil
}

func (q *recordingQueue) Fail(ctx context.Context, jobID int64, secret, message string) error {
	return fmt.Errorf("unexpected failure report: %s", message)
}

func (q *recordingQueue) Progress(ctx context.Context, jobID int64, secret string, lines []d5list.LogLine) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if secret != "s3cret" || jobID != 9 {
		return d5list.Errorf(d5list.EFORBIDDEN, "not the lease")
	}
	q.batches = append(q.batches, lines)
	q.calls = append(q.calls, "progress")
	return nil
}

// chattyExecutor prints n lines through the job's line sink.
type chattyExecutor struct{ n int }

func (e chattyExecutor) Execute(ctx context.Context, spec d5list.JobSpec) ([]d5list.RunLog, error) {
	out := LinesFrom(ctx)
	if out == nil {
		return nil, fmt.Errorf("no line sink in the executor's context")
	}
	for i := range e.n {
		out(0, d5list.StreamStdout, fmt.Sprintf("line %d", i))
	}
	return []d5list.RunLog{{Index: 0, Seed: 1, Log: []byte("x\n")}}, nil
}

// An agent whose queue takes progress streams every line of the job in
// batches of at most ProgressBatch, in order, before reporting the result.
func TestAgentStreamsProgressBeforeTheResult(t *testing.T) {
	q := &recordingQueue{lease: &d5list.Lease{Job: d5list.Job{ID: 9, Attempts: 1}, Secret: "s3cret"}, finished: make(chan struct{})}
	a := &Agent{ID: "t", Queue: q, Executor: chattyExecutor{n: 250}, Poll: time.Hour, Heartbeat: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { a.Run(ctx); close(done) }()
	select {
	case <-q.finished:
	case <-time.After(10 * time.Second):
		t.Fatal("the job was not reported within 10 s")
	}
	cancel()
	<-done
	q.mu.Lock()
	defer q.mu.Unlock()
	if last := q.calls[len(q.calls)-1]; last != "complete" {
		t.Errorf("calls %v: the result was not the last report", q.calls)
	}
	next := 0
	for _, b := range q.batches {
		if len(b) == 0 || len(b) > ProgressBatch {
			t.Errorf("a batch of %d lines; want 1..%d", len(b), ProgressBatch)
		}
		for _, l := range b {
			if l.Text != fmt.Sprintf("line %d", next) || l.Stream != d5list.StreamStdout {
				t.Fatalf("line %+v, want line %d on stdout", l, next)
			}
			next++
		}
	}
	if next != 250 {
		t.Errorf("%d lines streamed, want 250", next)
	}
}

// The builtin executor streams each MLLOG line of a run as it writes it.
func TestLineWriterSplitsLines(t *testing.T) {
	var got []string
	var sink []byte
	w := &lineWriter{w: writerFunc(func(b []byte) { sink = append(sink, b...) }), run: 2, stream: d5list.StreamMLLOG,
		onLine: func(run int, stream, line string) { got = append(got, fmt.Sprintf("%d/%s/%s", run, stream, line)) }}
	for _, chunk := range []string{":::MLLOG {\"a\"", ":1}\n:::MLLOG {}\r\n", "tail"} {
		w.Write([]byte(chunk))
	}
	w.flush()
	want := []string{`2/mllog/:::MLLOG {"a":1}`, "2/mllog/:::MLLOG {}", "2/mllog/tail"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("lines %q, want %q", got, want)
	}
	if string(sink) != ":::MLLOG {\"a\":1}\n:::MLLOG {}\r\ntail" {
		t.Errorf("the underlying writer got %q", sink)
	}
}

type writerFunc func([]byte)

func (f writerFunc) Write(b []byte) (int, error) { f(b); return len(b), nil }

// tailFile passes a growing file's lines while it grows, starting before
// the file exists, and its unterminated last line on stop.
func TestTailFileFollowsAGrowingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "slurm.out")
	got := make(chan string, 10)
	stop := tailFile(path, 1, d5list.StreamStdout, func(run int, stream, line string) { got <- fmt.Sprintf("%d/%s/%s", run, stream, line) }, 10*time.Millisecond)
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("first\nsec")
	select {
	case l := <-got:
		if l != "1/stdout/first" {
			t.Fatalf("first line %q", l)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the first line did not arrive while the file grew")
	}
	f.WriteString("ond\n" + strings.Repeat("z", d5list.MaxLogLineBytes+10) + "\nlast")
	stop()
	close(got)
	var rest []string
	for l := range got {
		rest = append(rest, l)
	}
	want := []string{"1/stdout/second", "1/stdout/" + strings.Repeat("z", d5list.MaxLogLineBytes) + " [cut]", "1/stdout/last"}
	if fmt.Sprint(rest) != fmt.Sprint(want) {
		t.Errorf("lines after the first: %.200q, want %.200q", rest, want)
	}
}

// The process executor streams a job's stdout/stderr and the lines of its
// MLLOG file to the job's line sink.
func TestProcessStreamsOutputAndMLLOG(t *testing.T) {
	needBwrap(t)
	p, err := NewProcess(ProcessOptions{Versions: testVersions[true], Fetch: fixtureBundle(t, ""), WorkDir: workDir(t)})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var lines []string
	ctx := WithLines(context.Background(), func(run int, stream, line string) {
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, fmt.Sprintf("%d %s %s", run, stream, line))
	})
	logs, err := p.Execute(ctx, testSpec(11))
	if err != nil {
		t.Fatal(err)
	}
	var mllogLines []string
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l, "0 mllog "); ok {
			mllogLines = append(mllogLines, rest)
		}
	}
	if want := strings.Split(strings.TrimSpace(string(logs[0].Log)), "\n"); fmt.Sprint(mllogLines) != fmt.Sprint(want) {
		t.Errorf("streamed MLLOG lines %q, want the result log's %q", mllogLines, want)
	}
	if !strings.Contains(strings.Join(lines, "\n"), "0 stdout seed 11 done") {
		t.Errorf("stdout not streamed: %q", lines)
	}
}
