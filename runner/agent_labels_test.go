package runner

import (
	"context"
	"io"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// labelQueue records the labels an agent leases with; it has no job.
type labelQueue struct {
	recordingQueue
	seen chan map[string]string
}

func (q *labelQueue) Lease(ctx context.Context, runnerID string, labels map[string]string) (*d5list.Lease, error) {
	select {
	case q.seen <- labels:
	default:
	}
	return nil, nil
}

// An agent says what its executor runs, so that the portal leases it only
// those jobs (issue 14); the operator's labels are kept beside it.
func TestAgentAdvertisesWhatItsExecutorRuns(t *testing.T) {
	process, err := NewProcess(ProcessOptions{Fetch: func(context.Context, d5list.JobSpec, io.Writer) error { return nil }, AllowUnsandboxed: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		executor Executor
		want     string
	}{{Builtin{}, d5list.RunsBuiltin}, {process, d5list.RunsEntrypoint}} {
		q := &labelQueue{seen: make(chan map[string]string, 1)}
		ctx, cancel := context.WithCancel(context.Background())
		a := &Agent{ID: "a", Labels: map[string]string{"cpu_model": "AMD EPYC"}, Queue: q, Executor: tt.executor, Poll: time.Millisecond}
		done := make(chan error, 1)
		go func() { done <- a.Run(ctx) }()
		labels := <-q.seen
		cancel()
		<-done
		if labels[d5list.LabelRuns] != tt.want || labels["cpu_model"] != "AMD EPYC" {
			t.Errorf("%T leases with %v, want runs=%s beside the operator's labels", tt.executor, labels, tt.want)
		}
	}
}
