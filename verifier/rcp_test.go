package verifier

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

func TestLoadRCPResNet(t *testing.T) {
	pts, err := LoadRCPFile(filepath.Join(peer, "rules-4.0.0", "rcps_resnet.json"))
	if err != nil {
		t.Skipf("peer data: %v", err)
	}
	if len(pts) < 3 {
		t.Fatalf("%d points", len(pts))
	}
	for i := 1; i < len(pts); i++ {
		if pts[i].GlobalBatchSize <= pts[i-1].GlobalBatchSize {
			t.Fatalf("not sorted by batch size: %v", pts)
		}
	}
	// resnet_ref_3264 lists 36 35 34 34 36 35 35 35 35 37 35 35 35 36 35:
	// without one 34 and the 37 that is 34, nine 35 and three 36, 13 values
	// summing to 457 with squares summing to 16069, so the population
	// variance is (13*16069 - 457^2)/13^2 = 48/169.
	var p3264 *d5list.ConvergencePoint
	for i := range pts {
		if pts[i].GlobalBatchSize == 3264 {
			p3264 = &pts[i]
		}
	}
	if p3264 == nil || p3264.Samples != 13 || math.Abs(p3264.EpochsMean-457.0/13) > 1e-12 || math.Abs(p3264.EpochsStdev-math.Sqrt(48)/13) > 1e-12 {
		t.Errorf("3264: %+v", p3264)
	}
	if _, err := LoadRCP(strings.NewReader(`{"x": {"BS": 8, "Epochs to converge": [1]}}`), "bad.json"); d5list.ErrorCode(err) != d5list.EINVALID {
		t.Errorf("short list: %v", err)
	}
	if _, err := LoadRCP(strings.NewReader(`[`), "bad.json"); err == nil || !strings.Contains(err.Error(), "bad.json") {
		t.Errorf("bad JSON: %v", err)
	}
}

func TestInterpolateRCP(t *testing.T) {
	pts := []d5list.ConvergencePoint{{GlobalBatchSize: 300, EpochsMean: 20, EpochsStdev: 2, Samples: 10}, {GlobalBatchSize: 100, EpochsMean: 10, EpochsStdev: 1, Samples: 8}}
	cases := []struct {
		bs         int
		ok         bool
		mean, sdev float64
	}{
		{100, true, 10, 1}, {300, true, 20, 2}, {150, true, 12.5, 1.25}, {200, true, 15, 1.5},
		{99, false, 0, 0}, {301, false, 0, 0},
	}
	for _, c := range cases {
		p, ok := InterpolateRCP(pts, c.bs)
		if ok != c.ok || ok && (math.Abs(p.EpochsMean-c.mean) > 1e-12 || math.Abs(p.EpochsStdev-c.sdev) > 1e-12) {
			t.Errorf("bs %d: %+v %v, want %v %v %v", c.bs, p, ok, c.ok, c.mean, c.sdev)
		}
	}
}

func runsWithEpochs(eps ...float64) []d5list.RunMetrics {
	var rs []d5list.RunMetrics
	for i, e := range eps {
		rs = append(rs, d5list.RunMetrics{Index: i, Converged: e >= 0, EpochsToTarget: e})
	}
	return rs
}

func TestTestRCP(t *testing.T) {
	ref := []d5list.ConvergencePoint{{GlobalBatchSize: 1000, EpochsMean: 35, EpochsStdev: 1, Samples: 13}}
	cases := []struct {
		name    string
		runs    []d5list.RunMetrics
		checked bool
		pass    bool
	}{
		{"as the reference", runsWithEpochs(34, 35, 35, 36, 37), true, true},
		{"a bit faster", runsWithEpochs(34, 34, 35, 35, 36), true, true},
		{"much faster", runsWithEpochs(30, 31, 31, 32, 33), true, false},
		{"faster, the unconverged run dropped", runsWithEpochs(30, 31, 31, 32, -1), true, false},
		{"two unconverged", runsWithEpochs(30, -1, 31, 32, -1), false, false},
	}
	for _, c := range cases {
		r := TestRCP(ref, 1000, c.runs)
		if r.Checked != c.checked || r.Checked && r.Pass != c.pass {
			t.Errorf("%s: %+v", c.name, r)
		}
	}
	if r := TestRCP(ref, 999, runsWithEpochs(30, 31, 31, 32, 33)); r.Checked || !strings.Contains(r.Note, "999") {
		t.Errorf("outside range: %+v", r)
	}
}

// TestCheckASUSTeKAsBundle runs Check on the published MLPerf logs as if
// they were a d5list bundle with the MLPerf reference convergence points:
// the log rules and the RCP test must accept a submission MLPerf accepted.
func TestCheckASUSTeKAsBundle(t *testing.T) {
	rcp, err := LoadRCPFile(filepath.Join(peer, "rules-4.0.0", "rcps_resnet.json"))
	if err != nil {
		t.Skipf("peer data: %v", err)
	}
	bench := &d5list.Benchmark{
		ID: "resnet", Level: 2, Runs: 5,
		Quality: resnetQuality(),
		Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter},
		RCP:     rcp,
	}
	b := &bundle.Bundle{
		Manifest:     d5list.Manifest{Format: d5list.ManifestFormat, Benchmark: "resnet", Division: "open", Availability: "available", Submitter: "ASUSTeK", SystemName: "ESC8000A-E12"},
		ManifestFile: "submission.json",
		Recipe: d5list.Recipe{
			Fixed:   map[string]any{"dataset": "imagenet", "model": "resnet50", "epochs": 90},
			Mutable: map[string]any{"batch_size": 3200, "executor": "mxnet", "optimizer": "lars"},
		},
	}
	for i := 1; i <= 5; i++ {
		name := "result_" + strconv.Itoa(i) + ".txt"
		data := readFile(t, filepath.Join(peer, "v4.0-asustek-resnet", name))
		b.Results = append(b.Results, bundle.ResultFile{Index: i, Name: "results/" + name, Data: data})
	}
	claimed, reasons := Check(b, bench)
	if len(reasons) != 0 {
		t.Errorf("reasons on accepted MLPerf logs: %v", reasons)
	}
	if !claimed.Score.Valid || claimed.Runs[2].Converged {
		t.Errorf("claimed %+v", claimed.Score)
	}
	// Pretending the runs needed a third of the reference epochs must fail
	// the convergence test: scale the reference up instead.
	for i := range bench.RCP {
		bench.RCP[i].EpochsMean *= 3
	}
	_, reasons = Check(b, bench)
	assertCodes(t, reasons, []string{CodeConvergenceTooFast}, true)
}

func resnetQuality() d5list.QualityTarget {
	return d5list.QualityTarget{Metric: "eval_accuracy", Target: 0.759, Mode: "first", Direction: d5list.HigherIsBetter}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	var buf bytes.Buffer
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skipf("peer data: %v", err)
	}
	buf.Write(data)
	return buf.Bytes()
}
