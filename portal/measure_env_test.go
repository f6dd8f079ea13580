package portal

import (
	"strconv"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// A run's recorded environment comes from a remote runner and is published
// with the measured result: Measure bounds it, refusing the report with the
// run and the bound named, and hides the values of variables whose names
// say they may hold secrets, whatever the runner sent.
func TestMeasureBoundsTheRecordedEnvironment(t *testing.T) {
	b := digits(t)
	log := []byte(strings.Join([]string{
		`:::MLLOG {"time_ms": 1000, "key": "seed", "value": 7}`,
		`:::MLLOG {"time_ms": 1000, "key": "run_start", "value": null}`,
		`:::MLLOG {"time_ms": 1005, "key": "eval_accuracy", "value": 0.99, "metadata": {"epoch_num": 1}}`,
		`:::MLLOG {"time_ms": 1010, "key": "run_stop", "value": null, "metadata": {"status": "success"}}`,
	}, "\n"))
	measure := func(env map[string]string) (*d5list.Result, error) {
		return Measure(b, []d5list.RunLog{{Index: 0, Seed: 7, Log: log, Clock: &d5list.RunClock{WallS: 1, Environment: env}}})
	}
	many := map[string]string{}
	for i := range 129 {
		many["env.K"+strconv.Itoa(i)] = "v"
	}
	for _, tt := range []struct {
		name string
		env  map[string]string
		want string
	}{
		{"too many entries", many, "holds 129 entries, more than 128"},
		{"a long key", map[string]string{"env." + strings.Repeat("K", 300): "v"}, "is longer than 200 bytes"},
		{"a long value", map[string]string{"framework.torch": strings.Repeat("1", 201)}, `entry "framework.torch" is longer than 200 bytes`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := measure(tt.env)
			if d5list.ErrorCode(err) != d5list.EINVALID || !strings.Contains(err.Error(), "run 0: clock: the recorded environment") || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Measure: %v, want it refused with %q", err, tt.want)
			}
		})
	}
	delete(many, "env.K0")
	if _, err := measure(many); err != nil {
		t.Errorf("128 entries, the most a runner records: %v", err)
	}
	res, err := measure(map[string]string{"env.PATH": "/usr/bin:/bin", "env.HF_TOKEN": "hf_abc", "env.AWS_SECRET_ACCESS_KEY": "s3",
		"framework.torch": "1.13.1", "framework.tokenizers": "0.13.3"})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Runs[0].Clock.Environment
	for k, want := range map[string]string{"env.PATH": "/usr/bin:/bin", "env.HF_TOKEN": d5list.HiddenValue, "env.AWS_SECRET_ACCESS_KEY": d5list.HiddenValue,
		"framework.torch": "1.13.1", "framework.tokenizers": "0.13.3"} {
		if got[k] != want {
			t.Errorf("%s recorded as %q, want %q", k, got[k], want)
		}
	}
}
