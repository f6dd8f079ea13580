package runner

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// stepping is an audit that takes steps of about a millisecond of CPU
// until told to stop, counting them.
type stepping struct {
	steps atomic.Int64
	stop  atomic.Bool
}

func (s *stepping) check(pace func()) *d5list.Audit {
	for !s.stop.Load() {
		pace()
		for t := time.Now(); time.Since(t) < time.Millisecond; {
		}
		s.steps.Add(1)
	}
	return &d5list.Audit{Sections: []d5list.AuditSection{{Name: "stepped"}}}
}

// stepsAfter is how many steps the audit has taken once d has passed.
func (s *stepping) stepsAfter(d time.Duration) int64 {
	time.Sleep(d)
	return s.steps.Load()
}

// An earlier run's audit computes while the next run starts up, stops
// before the run takes its seed at the gate, takes no step while the
// run's window is open, and goes on once its run_stop has arrived; its
// result reaches the earlier run's clock when the job waits for it.
func TestAuditsStayOutOfTheNextRunsWindow(t *testing.T) {
	audits := newAuditor()
	var audit stepping
	earlier := &d5list.RunClock{}
	audits.audit(earlier, audit.check)
	if n := audit.stepsAfter(50 * time.Millisecond); n == 0 {
		t.Fatal("the audit took no step before the next run opened its gate")
	}

	win, err := openWindow(filepath.Join(t.TempDir(), "ctl"), windowRun{index: 1, seed: 42, maxBytes: 1 << 20, audits: audits})
	if err != nil {
		t.Fatal(err)
	}
	// The run: it opens its gate and reads its seed, then logs its window.
	gate, err := os.Open(filepath.Join(win.dir, windowGateName))
	if err != nil {
		t.Fatal(err)
	}
	seed, err := bufio.NewReader(gate).ReadString('\n')
	gate.Close()
	if err != nil || seed != `{"seed":42}`+"\n" {
		t.Fatalf("gate: %q, %v", seed, err)
	}
	held := audit.steps.Load()
	if n := audit.stepsAfter(100 * time.Millisecond); n != held {
		t.Fatalf("the audit took %d steps during the run's window", n-held)
	}
	logFile, err := os.OpenFile(filepath.Join(win.dir, windowLogName), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		`:::MLLOG {"namespace": "", "time_ms": 1, "event_type": "INTERVAL_START", "key": "run_start", "value": null, "metadata": {}}`,
		`:::MLLOG {"namespace": "", "time_ms": 2, "event_type": "INTERVAL_END", "key": "run_stop", "value": null, "metadata": {"status": "success"}}`,
	} {
		if _, err := logFile.WriteString(line + "\n"); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for audit.steps.Load() == held {
		if time.Now().After(deadline) {
			t.Fatal("the audit did not go on after the run's run_stop")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if audits.cpu() <= 0 {
		t.Error("the audit's CPU time was not counted")
	}
	logFile.Close()
	clock := &d5list.RunClock{}
	if _, err := win.close(clock); err != nil {
		t.Fatal(err)
	}
	if clock.LogS <= 0 || len(clock.Breaches) != 0 {
		t.Fatalf("window: %+v", clock)
	}
	audit.stop.Store(true)
	audits.wait()
	if earlier.Audit == nil || earlier.Audit.Sections[0].Name != "stepped" {
		t.Fatalf("the earlier run's audit: %+v", earlier.Audit)
	}
}

// The gate waits for the step an audit is in, and no longer: a step of
// 200 ms holds the seed back until it ends.
func TestGateWaitsForTheAuditsStep(t *testing.T) {
	audits := newAuditor()
	var inStep, stepEnded atomic.Bool
	audits.audit(&d5list.RunClock{}, func(pace func()) *d5list.Audit {
		pace()
		inStep.Store(true)
		time.Sleep(200 * time.Millisecond)
		stepEnded.Store(true)
		pace()
		return nil
	})
	for !inStep.Load() {
		time.Sleep(time.Millisecond)
	}
	audits.hold()
	if !stepEnded.Load() {
		t.Fatal("hold returned while the audit was in its step")
	}
	audits.release()
	audits.wait()
}

// Audits run one at a time, in the order the runs ended, and each result
// reaches its own run's clock.
func TestAuditsRunInOrder(t *testing.T) {
	audits := newAuditor()
	var running, overlapped atomic.Int32
	clocks := make([]*d5list.RunClock, 4)
	for i := range clocks {
		clocks[i] = &d5list.RunClock{}
		audits.audit(clocks[i], func(pace func()) *d5list.Audit {
			if running.Add(1) > 1 {
				overlapped.Store(1)
			}
			defer running.Add(-1)
			time.Sleep(10 * time.Millisecond)
			pace()
			return &d5list.Audit{Sections: []d5list.AuditSection{{Name: string(rune('a' + i))}}}
		})
	}
	audits.wait()
	if overlapped.Load() != 0 {
		t.Error("two audits computed at once")
	}
	for i, c := range clocks {
		if c.Audit == nil || c.Audit.Sections[0].Name != string(rune('a'+i)) {
			t.Errorf("run %d: audit %+v", i, c.Audit)
		}
	}
}

// An audit's result carries the CPU time the runner spent on it: the
// computing of its check, not the time it waited (here a sleep).
func TestAuditCarriesItsCPUTime(t *testing.T) {
	audits := newAuditor()
	clock := &d5list.RunClock{}
	audits.audit(clock, func(pace func()) *d5list.Audit {
		time.Sleep(150 * time.Millisecond)
		x := 1.0
		for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
			x = x*1.0000001 + 1e-9
		}
		pace()
		return &d5list.Audit{Sections: []d5list.AuditSection{{Name: fmt.Sprint(x > 0)}}}
	})
	audits.wait()
	if clock.Audit == nil {
		t.Fatal("no audit")
	}
	// 100 ms of computing, on a machine that may lend the thread a share
	// of a core only; the 150 ms asleep must not count.
	if got := clock.Audit.CPUS; got < 0.01 || got > 0.14 {
		t.Fatalf("audit CPU %.3f s; want the check's computing (about 0.1 s), not its sleep", got)
	}
}
