package portal

import (
	"bytes"
	"context"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/workloads"
)

func digits(t *testing.T) *d5list.Benchmark {
	t.Helper()
	bs, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	b, err := catalog.Lookup(bs, "l2-digits-mlp-cpu")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestSameHardware(t *testing.T) {
	b := digits(t)
	sub := &d5list.Submission{HostCPU: "AMD EPYC"}
	tests := []struct {
		name   string
		labels []string
		runner map[string]string
		want   bool
	}{
		{"matching CPU", []string{"cpu_model"}, map[string]string{"cpu_model": "AMD EPYC"}, true},
		{"other CPU", []string{"cpu_model"}, map[string]string{"cpu_model": "Intel Xeon"}, false},
		{"runner without the label", []string{"cpu_model"}, map[string]string{}, false},
		{"undeclared accelerator never matches", []string{"accelerator_model"}, map[string]string{"accelerator_model": ""}, false},
		{"no hardware rule", nil, map[string]string{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bench := *b
			bench.Verify.SameHardware = tt.labels
			if got := bench.RemeasuredOn(sub, tt.runner); got != tt.want {
				t.Fatalf("SameHardware = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestMeasure(t *testing.T) {
	b := digits(t)
	work, ok := workloads.Lookup(b.Workload)
	if !ok {
		t.Fatal("no digits workload")
	}
	recipe := d5list.Recipe{Fixed: b.Division.Fixed, Mutable: b.Division.Mutable}
	var log bytes.Buffer
	if err := work(context.Background(), b, &recipe, 7, &log); err != nil {
		t.Fatal(err)
	}
	res, err := Measure(b, []d5list.RunLog{{Index: 0, Seed: 7, Log: log.Bytes()}})
	if err != nil {
		t.Fatal(err)
	}
	r := res.Runs[0]
	if r.Seed != 7 || !r.Converged || r.EpochsToTarget < 1 || r.FinalAccuracy < b.Quality.Target || len(r.Evals) == 0 {
		t.Fatalf("measured run %+v", r)
	}
	if !res.Score.Valid || res.Score.Value != r.TimeToTrain {
		t.Fatalf("score %+v for one run of %v s", res.Score, r.TimeToTrain)
	}

	bad := []struct {
		name string
		logs []d5list.RunLog
		code string
	}{
		{"no logs", nil, d5list.EINVALID},
		{"out of order", []d5list.RunLog{{Index: 1, Log: log.Bytes()}}, d5list.EINVALID},
		{"unparsable", []d5list.RunLog{{Index: 0, Log: []byte(":::MLLOG {broken\n")}}, d5list.EINVALID},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Measure(b, tt.logs); d5list.ErrorCode(err) != tt.code {
				t.Fatalf("Measure error %v, want code %s", err, tt.code)
			}
		})
	}
}
