package d5list

import "testing"

// On a GPU benchmark the re-run's hardware matches the claim's only with
// the same GPU model, count and driver; the driver is the one the claim's
// environment recorded.
func TestRemeasuredOnComparesGPUModelCountAndDriver(t *testing.T) {
	b := &Benchmark{Verify: VerifyPolicy{SameHardware: []string{"accelerator_model", "accelerator_count", "accelerator_driver"}}}
	sub := &Submission{Accelerator: "NVIDIA H100 80GB HBM3", Accelerators: 2,
		Claimed: &Result{Runner: map[string]string{"accelerator_driver": "550.54.15"}}}
	same := map[string]string{"accelerator_model": "NVIDIA H100 80GB HBM3", "accelerator_count": "2", "accelerator_driver": "550.54.15"}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for k, v := range same {
			m[k] = v
		}
		m[k] = v
		return m
	}
	for _, tt := range []struct {
		name   string
		sub    *Submission
		runner map[string]string
		want   bool
	}{
		{"same GPUs and driver", sub, same, true},
		{"another driver", sub, with("accelerator_driver", "535.104.05"), false},
		{"another count", sub, with("accelerator_count", "1"), false},
		{"another model", sub, with("accelerator_model", "NVIDIA A100-SXM4-80GB"), false},
		{"a claim that recorded no driver", &Submission{Accelerator: sub.Accelerator, Accelerators: 2}, same, false},
	} {
		if got := b.RemeasuredOn(tt.sub, tt.runner); got != tt.want {
			t.Errorf("%s: RemeasuredOn = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestFreshRunCount(t *testing.T) {
	for _, c := range []struct{ runs, fresh, want int }{{5, 0, 5}, {5, 3, 3}, {5, -1, 0}} {
		b := Benchmark{Runs: c.runs, Verify: VerifyPolicy{FreshRuns: c.fresh}}
		if got := b.FreshRunCount(); got != c.want {
			t.Errorf("runs %d, fresh_runs %d: %d fresh runs, want %d", c.runs, c.fresh, got, c.want)
		}
	}
}
