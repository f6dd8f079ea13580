package runner

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// secretQueue leases one job with a known lease secret and keeps what the
// agent reports.
type secretQueue struct {
	mu     sync.Mutex
	lease  *d5list.Lease
	logs   []d5list.RunLog
	failed string
	done   chan struct{}
}

func (q *secretQueue) Lease(ctx context.Context, runnerID string, labels map[string]string) (*d5list.Lease, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	l := q.lease
	q.lease = nil
	return l, nil
}

func (q *secretQueue) Heartbeat(ctx context.Context, jobID int64, secret string) error { return nil }

func (q *secretQueue) Complete(ctx context.Context, jobID int64, secret string, logs []d5list.RunLog, runner map[string]string) error {
	q.mu.Lock()
	q.logs = logs
	q.mu.Unlock()
	close(q.done)
	return nil
}

func (q *secretQueue) Fail(ctx context.Context, jobID int64, secret, message string) error {
	q.mu.Lock()
	q.failed = message
	q.mu.Unlock()
	close(q.done)
	return nil
}

// A job's recorded environment (RunClock.Environment, published with the
// measured result) never holds the runner's token or the job's lease
// secret: the runner sets only its own D5_* variables, a minimal PATH and
// the GPU selection in the sandbox (runEnv), not what is in its own
// environment, and the lease secret stays with the agent and its fetch.
// The entrypoint prints its whole environment, which must not hold them
// either.
func TestRecordedEnvironmentHoldsNoRunnerSecrets(t *testing.T) {
	needBwrap(t)
	const token = "d5r_runner-token-never-in-a-sandbox"
	const secret = "lease-secret-never-in-a-sandbox"
	t.Setenv("D5LIST_RUNNER_TOKEN", token)
	t.Setenv("D5LIST_LEASE_SECRET", secret)
	run, err := os.ReadFile("testdata/process-bundle/code/run.sh")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(run), "\n") // after its #! line
	fetch := fixtureBundle(t, "#!/bin/sh\nenv\n"+body)
	var mu sync.Mutex
	var printed []string
	p, err := NewProcess(ProcessOptions{
		Versions: testVersions[true],
		Fetch:    fetch,
		WorkDir:  workDir(t),
		OnLine: func(run int, stream, line string) {
			mu.Lock()
			defer mu.Unlock()
			printed = append(printed, line)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(1, 2)
	q := &secretQueue{lease: &d5list.Lease{Job: d5list.Job{ID: spec.JobID}, Secret: secret, Spec: spec}, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(context.Background())
	a := &Agent{ID: "a", Queue: q, Executor: p, Poll: 10 * time.Millisecond}
	stopped := make(chan error, 1)
	go func() { stopped <- a.Run(ctx) }()
	select {
	case <-q.done:
	case <-time.After(2 * time.Minute):
		t.Fatal("the job did not finish")
	}
	cancel()
	<-stopped
	if q.failed != "" {
		t.Fatalf("the job failed: %s", q.failed)
	}
	if len(q.logs) != 2 {
		t.Fatalf("%d run logs, want 2", len(q.logs))
	}
	for _, l := range q.logs {
		if l.Clock == nil || l.Clock.Environment["env.D5_GATE"] == "" {
			t.Fatalf("run %d recorded no environment: %+v", l.Index, l.Clock)
		}
		for k, v := range l.Clock.Environment {
			for _, s := range []string{token, secret} {
				if strings.Contains(k, s) || strings.Contains(v, s) {
					t.Errorf("run %d recorded %s=%s, which holds a runner secret", l.Index, k, v)
				}
			}
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(printed) == 0 {
		t.Fatal("the entrypoint printed nothing")
	}
	for _, line := range printed {
		if strings.Contains(line, token) || strings.Contains(line, secret) || strings.Contains(line, "D5LIST_") {
			t.Errorf("the sandbox's environment holds a runner secret: %s", line)
		}
	}
}

// A variable whose name says it may hold a secret (an image's HF_TOKEN) is
// recorded by name only.
func TestEnvRecordHidesSecretLookingValues(t *testing.T) {
	rec := envRecord([]string{"PATH=/usr/bin", "HF_TOKEN=hf_abc", "DB_PASSWORD=pw", "D5_SEED=3"})
	for k, want := range map[string]string{"env.PATH": "/usr/bin", "env.HF_TOKEN": d5list.HiddenValue, "env.DB_PASSWORD": d5list.HiddenValue, "env.D5_SEED": "3"} {
		if rec[k] != want {
			t.Errorf("%s recorded as %q, want %q", k, rec[k], want)
		}
	}
}
