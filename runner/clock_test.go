package runner

import (
	"testing"
	"time"
)

// A builtin run is timed by the runner's clocks on its own thread: the
// wall time covers the run, and the CPU time the thread spent on it, which
// for a run that only computes is close to its wall time and never more
// than it (plus the clocks' granularity).
func TestTimedRunMeasuresTheThread(t *testing.T) {
	var sink float64
	clock, err := timedRun(func() error {
		deadline := time.Now().Add(150 * time.Millisecond)
		for time.Now().Before(deadline) {
			for i := range 1000 {
				sink += float64(i) * 1e-9
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if clock.WallS < 0.15 {
		t.Errorf("wall %.3f s for a run of at least 0.15 s", clock.WallS)
	}
	if clock.CPUS <= 0 || clock.CPUS > clock.WallS+0.02 {
		t.Errorf("CPU %.3f s against wall %.3f s: the thread's CPU time must be positive and within the wall time", clock.CPUS, clock.WallS)
	}
	if clock.WaitS < 0 || clock.WaitS > clock.WallS {
		t.Errorf("run-queue wait %.3f s outside 0..wall %.3f s", clock.WaitS, clock.WallS)
	}
	if a := clock.Availability(); a < 0.05 || a > 1 {
		t.Errorf("availability %.3f outside 0.05..1", a)
	}
	_ = sink

	// A run that sleeps is on the wall clock but not on the CPU.
	idle, _ := timedRun(func() error { time.Sleep(100 * time.Millisecond); return nil })
	if idle.WallS < 0.1 || idle.CPUS > 0.05 {
		t.Errorf("a sleeping run: wall %.3f s, CPU %.3f s; want ≥ 0.1 s on the wall and almost nothing on the CPU", idle.WallS, idle.CPUS)
	}
}
