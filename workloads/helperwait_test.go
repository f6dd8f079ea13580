package workloads

import (
	"github.com/deep500/d5list/sysinfo"
	"io"
	"math"
	"testing"
	"time"

	"github.com/deep500/d5list/mllog"
)

func TestForeignDelayShare(t *testing.T) {
	at := time.Unix(1000, 0)
	start := helperClock{at: at, helpers: 2, helperCPU: 5 * time.Second, helperWait: time.Second,
		coordinatorCPU: time.Second, machineBusy: 100 * time.Second}
	after := func(span, helperCPU, helperWait, coordinatorCPU, machineBusy time.Duration) helperClock {
		return helperClock{at: at.Add(span), helpers: 2, helperCPU: start.helperCPU + helperCPU, helperWait: start.helperWait + helperWait,
			coordinatorCPU: start.coordinatorCPU + coordinatorCPU, machineBusy: start.machineBusy + machineBusy}
	}
	tests := []struct {
		name string
		end  helperClock
		want float64
	}{
		// The helpers waited 200 ms each for each other and the coordinator,
		// and the machine did nothing else: nothing to take off.
		{"quiet machine, the workload waits for itself", after(time.Second, 1600*time.Millisecond, 400*time.Millisecond, 400*time.Millisecond, 2*time.Second), 0},
		// A busy loop took 1 s of the 3 s the machine was busy: a third of
		// the helpers' mean wait of 300 ms is foreign.
		{"a busy loop beside it", after(time.Second, 1600*time.Millisecond, 600*time.Millisecond, 400*time.Millisecond, 3*time.Second), 0.1},
		// /proc/stat counts in ticks and may read less than the processes'
		// own clocks: no negative foreign time.
		{"machine counter behind the processes'", after(time.Second, 1600*time.Millisecond, 600*time.Millisecond, 400*time.Millisecond, 1900*time.Millisecond), 0},
		{"empty span", after(0, 0, 0, 0, 0), 0},
		// Never more than the whole span, whatever the counters say.
		{"wait beyond the span", after(time.Second, 0, 10*time.Second, 0, 5*time.Second), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := start.foreignDelayShare(tt.end); math.Abs(got-tt.want) > 1e-9 {
				t.Errorf("share %v, want %v", got, tt.want)
			}
		})
	}
}

// A data-parallel run reports its foreign delay once, as a share of its
// timed span, read from this machine's real /proc.
func TestDataParallelReportsForeignDelay(t *testing.T) {
	if _, ok := sysinfo.MachineBusy(); !ok {
		t.Skip("no /proc/stat")
	}
	var shares []float64
	ctx := WithForeignDelay(t.Context(), func(share float64) { shares = append(shares, share) })
	if _, err := trainDataParallel(ctx, dpConfig(2, 16, 2, 0.99), smallDigits, 7, mllog.NewWriter(io.Discard, nil)); err != nil {
		t.Fatal(err)
	}
	if len(shares) != 1 || !(shares[0] >= 0 && shares[0] <= 1) {
		t.Fatalf("reported shares %v, want one share in [0, 1]", shares)
	}
}
