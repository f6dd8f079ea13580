package leaderboard

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.json from the current output")

var t0 = time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)

func testBench() *d5list.Benchmark {
	return &d5list.Benchmark{
		ID:      "l2-digits-mlp-cpu",
		Runs:    5,
		Quality: d5list.QualityTarget{Metric: "eval_accuracy", Target: 0.9, Mode: "first", Direction: d5list.HigherIsBetter},
		Ranking: d5list.RankingRule{
			Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter, Unit: "s",
			Secondary: d5list.MetricFinalAccuracy, SecondaryDirection: d5list.HigherIsBetter,
		},
	}
}

// sub builds a submission whose runs take the given times; NaN marks a run
// that did not converge.
type subSpec struct {
	id                        int64
	submitter, system         string
	status                    d5list.Status
	flag                      string
	minutes                   int // after t0
	times                     []float64
	acc                       float64
	division, avail, acc_, fw string
}

func sub(s subSpec) d5list.Submission {
	res := &d5list.Result{}
	for i, tt := range s.times {
		r := d5list.RunMetrics{Index: i, Seed: int64(i + 1), Status: "success", Converged: true, TimeToTrain: tt, FinalAccuracy: s.acc, EpochsToTarget: 4}
		if math.IsNaN(tt) {
			r = d5list.RunMetrics{Index: i, Seed: int64(i + 1), Status: "aborted", TimeToTrain: 99, FinalAccuracy: 0.5, EpochsToTarget: -1}
		}
		res.Runs = append(res.Runs, r)
	}
	def := func(v, d string) string {
		if v == "" {
			return d
		}
		return v
	}
	status := s.status
	if status == "" {
		status = d5list.StatusVerified
	}
	// A verdict comes from a re-run; these measure what was claimed.
	var measured *d5list.Result
	if status.Final() {
		measured = &d5list.Result{Runs: slices.Clone(res.Runs)}
	}
	return d5list.Submission{
		Measured: measured,
		ID:       s.id, BenchmarkID: "l2-digits-mlp-cpu",
		Submitter: s.submitter, SystemName: s.system,
		Division: def(s.division, "closed"), Availability: def(s.avail, "available"),
		Accelerator: s.acc_, Framework: def(s.fw, "numpy"),
		Status: status, Flag: s.flag, Claimed: res,
		CreatedAt: t0.Add(time.Duration(s.minutes) * time.Minute),
	}
}

func five(v float64) []float64 { return []float64{v, v, v, v, v} }

var nan = math.NaN()

type view struct {
	name    string
	opt     Options
	wantIDs []int64 // the order, written by hand so a wrong golden cannot pass
}

var scenarios = []struct {
	name  string
	subs  []subSpec
	views []view
}{
	{
		name: "ties",
		subs: []subSpec{
			{id: 1, submitter: "ETH", system: "a", minutes: 60, times: []float64{10, 11, 12, 13, 14}, acc: 0.92},
			{id: 2, submitter: "ETH", system: "b", minutes: 90, times: []float64{9, 11, 12, 13, 20}, acc: 0.95},
			{id: 3, submitter: "ETH", system: "c", minutes: 0, times: five(12), acc: 0.92},
			{id: 4, submitter: "ETH", system: "d", minutes: 0, times: five(12), acc: 0.92},
			{id: 5, submitter: "ETH", system: "e", minutes: 120, times: []float64{8, 9, 10, 11, 12}, acc: 0.90},
		},
		views: []view{{
			// 5 is fastest (10); 1-4 all score 12: 2 wins on accuracy,
			// 3 and 4 (earlier than 1) tie on time and split by id.
			name: "default", wantIDs: []int64{5, 2, 3, 4, 1},
		}},
	},
	{
		name: "olympic",
		subs: []subSpec{
			// The non-converged run is dropped as the worst, 10 as the best.
			{id: 1, submitter: "A", system: "x", times: []float64{10, nan, 11, 12, 13}, acc: 0.93},
			// Two runs missed the target: not ranked.
			{id: 2, submitter: "B", system: "x", times: []float64{10, nan, nan, 11, 12}, acc: 0.93},
			// An outlier run is dropped: value 11.5, range to 30.
			{id: 3, submitter: "C", system: "x", times: []float64{11.5, 11.5, 11.5, 11.5, 30}, acc: 0.93},
			{id: 4, submitter: "D", system: "x", times: five(20), acc: 0.93},
		},
		views: []view{{name: "default", wantIDs: []int64{3, 1, 4}}},
	},
	{
		name: "per-system",
		subs: []subSpec{
			{id: 1, submitter: "A", system: "sys1", minutes: 0, times: five(12), acc: 0.93},
			{id: 2, submitter: "A", system: "sys1", minutes: 10, times: five(10), acc: 0.93},
			{id: 3, submitter: "B", system: "sys1", minutes: 20, times: five(11), acc: 0.93},
			// Same system as A/sys1, spelt differently.
			{id: 4, submitter: "a ", system: "SYS1", minutes: 30, times: five(9), acc: 0.93},
		},
		views: []view{
			{name: "best-per-system", wantIDs: []int64{4, 3}},
			{name: "all", opt: Options{AllPerSystem: true}, wantIDs: []int64{4, 2, 3, 1}},
		},
	},
	{
		name: "status",
		subs: []subSpec{
			{id: 1, submitter: "S1", system: "x", times: five(12), acc: 0.93},
			{id: 2, submitter: "S2", system: "x", flag: "log timestamps questioned", times: five(10), acc: 0.93},
			{id: 3, submitter: "S3", system: "x", status: d5list.StatusNeedsReview, times: five(9), acc: 0.93},
			{id: 4, submitter: "S4", system: "x", status: d5list.StatusQueued, times: five(8), acc: 0.93},
			{id: 5, submitter: "S5", system: "x", status: d5list.StatusRunning, times: five(8.5), acc: 0.93},
			{id: 6, submitter: "S6", system: "x", status: d5list.StatusChecking, times: five(13), acc: 0.93},
			{id: 7, submitter: "S7", system: "x", status: d5list.StatusDiscrepancy, times: five(1), acc: 0.93},
			{id: 8, submitter: "S8", system: "x", status: d5list.StatusRejected, times: five(2), acc: 0.93},
			{id: 9, submitter: "S9", system: "x", status: d5list.StatusFailed, times: five(3), acc: 0.93},
			{id: 10, submitter: "S10", system: "x", status: d5list.StatusDiscrepancy, flag: "under appeal", times: five(4), acc: 0.93},
		},
		views: []view{
			{name: "verified-only", wantIDs: []int64{1}},
			{name: "include-unverified", opt: Options{IncludeUnverified: true}, wantIDs: []int64{4, 5, 3, 2, 1, 6}},
		},
	},
	{
		name: "filters",
		subs: []subSpec{
			{id: 1, submitter: "F1", system: "x", times: five(10), acc: 0.93, division: "closed", avail: "available", acc_: "H100", fw: "pytorch"},
			{id: 2, submitter: "F2", system: "x", times: five(11), acc: 0.93, division: "open", avail: "available", acc_: "H100", fw: "jax"},
			{id: 3, submitter: "F3", system: "x", times: five(12), acc: 0.93, division: "closed", avail: "preview", acc_: "A100", fw: "PyTorch"},
			{id: 4, submitter: "F4", system: "x", times: five(13), acc: 0.93, division: "closed", avail: "available", acc_: "a100", fw: "pytorch"},
		},
		views: []view{
			{name: "closed", opt: Options{Division: "CLOSED"}, wantIDs: []int64{1, 3, 4}},
			{name: "open", opt: Options{Division: "open"}, wantIDs: []int64{2}},
			{name: "a100", opt: Options{Accelerator: " a100"}, wantIDs: []int64{3, 4}},
			{name: "pytorch-available", opt: Options{Framework: "pytorch", Availability: "Available"}, wantIDs: []int64{1, 4}},
			{name: "nothing", opt: Options{Framework: "tensorflow"}, wantIDs: []int64{}},
		},
	},
}

func TestRankGolden(t *testing.T) {
	bench := testBench()
	for _, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			var subs []d5list.Submission
			for _, s := range sc.subs {
				subs = append(subs, sub(s))
			}
			got := map[string][]d5list.Entry{}
			for _, v := range sc.views {
				entries := Rank(bench, subs, v.opt)
				got[v.name] = entries
				ids := []int64{}
				for i, e := range entries {
					ids = append(ids, e.SubmissionID)
					if e.Rank != i+1 {
						t.Errorf("%s: entry %d has rank %d", v.name, i, e.Rank)
					}
				}
				if !slices.Equal(ids, v.wantIDs) {
					t.Errorf("%s: order %v, want %v", v.name, ids, v.wantIDs)
				}
			}
			data, err := json.MarshalIndent(got, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			data = append(data, '\n')
			path := filepath.Join("testdata", sc.name+".golden.json")
			if *update {
				if err := os.WriteFile(path, data, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run go test ./leaderboard -update to create it)", err)
			}
			if !bytes.Equal(data, want) {
				t.Errorf("%s differs from the output; got:\n%s", path, data)
			}
		})
	}
}

func TestRankValues(t *testing.T) {
	bench := testBench()
	subs := []d5list.Submission{
		sub(subSpec{id: 1, submitter: "A", system: "x", times: []float64{10, nan, 11, 12, 13}, acc: 0.93}),
		sub(subSpec{id: 3, submitter: "C", system: "x", times: []float64{11.5, 11.5, 11.5, 11.5, 30}, acc: 0.93}),
	}
	// A stale stored score must not matter: Rank recomputes from the runs.
	subs[0].Claimed.Score = d5list.Score{Metric: d5list.MetricTimeToTrain, Value: 1, Valid: true}
	entries := Rank(bench, subs, Options{})
	want := []struct {
		id              int64
		value, min, max float64
		runs            int
	}{{3, 11.5, 11.5, 30, 5}, {1, 12, 10, 13, 5}}
	if len(entries) != len(want) {
		t.Fatalf("entries %+v", entries)
	}
	for i, w := range want {
		e := entries[i]
		if e.SubmissionID != w.id || e.Value != w.value || e.Min != w.min || e.Max != w.max || e.Runs != w.runs || e.Metric != d5list.MetricTimeToTrain {
			t.Errorf("entry %d = %+v, want %+v", i, e, w)
		}
	}
}

func TestRankHigherIsBetterAndOtherBenchmarks(t *testing.T) {
	bench := testBench()
	bench.Ranking = d5list.RankingRule{Metric: d5list.MetricThroughput, Direction: d5list.HigherIsBetter}
	mk := func(id int64, thr float64, benchID string) d5list.Submission {
		s := sub(subSpec{id: id, submitter: fmt.Sprint("S", id), system: "x", times: five(10), acc: 0.93})
		for i := range s.Claimed.Runs {
			s.Claimed.Runs[i].Throughput = thr + float64(i)
			s.Measured.Runs[i].Throughput = thr + float64(i)
		}
		s.BenchmarkID = benchID
		return s
	}
	subs := []d5list.Submission{mk(1, 100, bench.ID), mk(2, 300, bench.ID), mk(3, 999, "other-benchmark"), mk(4, 200, bench.ID)}
	var ids []int64
	for _, e := range Rank(bench, subs, Options{}) {
		ids = append(ids, e.SubmissionID)
	}
	if !slices.Equal(ids, []int64{2, 4, 1}) {
		t.Errorf("order %v, want [2 4 1]", ids)
	}
}

func TestRules(t *testing.T) {
	bench := testBench()
	rules := Rules(bench)
	for _, want := range []string{
		"time_to_train_s (lower is better, in s)",
		"olympic mean over its 5 runs",
		"eval_accuracy at least 0.9",
		"two or more such runs is not ranked",
		"Only verified submissions",
		"never rejected, failed or discrepant",
		"by final_accuracy (olympic mean, higher is better), then by the earlier submission, then by the lower submission number",
		"Each system (submitter and system name, ignoring case) appears once",
		"without shared places",
	} {
		if !strings.Contains(rules, want) {
			t.Errorf("Rules lacks %q:\n%s", want, rules)
		}
	}
	if strings.Contains(rules, "\n") {
		t.Error("Rules must be one paragraph")
	}
	bench.Ranking.Secondary = ""
	if r := Rules(bench); strings.Contains(r, "final_accuracy") || !strings.Contains(r, "ordered by the earlier submission") {
		t.Errorf("without a secondary metric: %s", r)
	}
}

// TestRankByMeasuredValue: where the portal re-ran a submission on the
// hardware it declares, the board ranks what the portal measured, so a
// forged clock buys nothing; where no runner of that hardware re-ran it,
// the accepted claim is marked and kept off the default board.
func TestRankByMeasuredValue(t *testing.T) {
	bench := testBench()
	bench.Verify.SameHardware = []string{"cpu_model"}
	onCPU := func(s d5list.Submission, cpu string, measured float64) d5list.Submission {
		s.HostCPU = "AMD EPYC 9654"
		s.Measured = &d5list.Result{Runner: map[string]string{"cpu_model": cpu}}
		for _, r := range s.Claimed.Runs {
			r.TimeToTrain = measured
			s.Measured.Runs = append(s.Measured.Runs, r)
		}
		return s
	}
	honest := onCPU(sub(subSpec{id: 1, submitter: "Honest", system: "a", times: five(1.03), acc: 0.95}), "AMD EPYC 9654", 1.05)
	// The clock of every run ×0.6: claimed 0.6 s, re-run 0.9 s.
	forged := onCPU(sub(subSpec{id: 2, submitter: "Forger", system: "b", times: five(0.6), acc: 0.95}), "AMD EPYC 9654", 0.9)
	// Re-run elsewhere: the claim (0.5 s) was not re-measured.
	elsewhere := onCPU(sub(subSpec{id: 3, submitter: "Far", system: "c", times: five(0.5), acc: 0.95}), "Intel Xeon 8480", 2.0)

	board := Rank(bench, []d5list.Submission{honest, forged, elsewhere}, Options{})
	var got []string
	for _, e := range board {
		got = append(got, fmt.Sprintf("%d:%g:%s:%g", e.SubmissionID, e.Value, e.Basis, e.Claimed))
	}
	want := []string{"2:0.9:measured:0.6", "1:1.05:measured:1.03"}
	if !slices.Equal(got, want) {
		t.Fatalf("default board %v, want %v (measured values, the claim beside; the unmeasured entry left out)", got, want)
	}
	if r := board[0].ClaimRatio(); math.Abs(r-0.6/0.9) > 1e-12 {
		t.Errorf("claim ratio %g, want %g", r, 0.6/0.9)
	}

	all := Rank(bench, []d5list.Submission{honest, forged, elsewhere}, Options{IncludeUnverified: true})
	got = got[:0]
	for _, e := range all {
		got = append(got, fmt.Sprintf("%d:%g:%s", e.SubmissionID, e.Value, e.Basis))
	}
	want = []string{"3:0.5:claimed", "2:0.9:measured", "1:1.05:measured"}
	if !slices.Equal(got, want) {
		t.Fatalf("board with unverified entries %v, want %v", got, want)
	}
	if all[0].ClaimRatio() != 0 {
		t.Errorf("an unmeasured entry has a claim ratio %g", all[0].ClaimRatio())
	}
	if !strings.Contains(Rules(bench), "as the portal measured it") {
		t.Errorf("the rules do not say the board ranks measured values: %s", Rules(bench))
	}
}

// The boards and exports carry no float noise: an olympic mean of times
// logged in milliseconds (0.603, 0.604, 0.602) is 0.603, not the
// 0.6030000000000001 the arithmetic gives, in the entry and the CSV (issue 16).
func TestRankedValuesCarryNoFloatNoise(t *testing.T) {
	bench := testBench()
	s := sub(subSpec{id: 1, submitter: "A", system: "a", times: []float64{0.1, 0.603, 0.604, 0.602, 9}, acc: 0.95})
	entries := Rank(bench, []d5list.Submission{s}, Options{})
	if len(entries) != 1 || entries[0].Value != 0.603 || entries[0].Min != 0.1 || entries[0].Max != 9 {
		t.Fatalf("entries %+v, want the value 0.603", entries)
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, &d5list.Leaderboard{Benchmark: *bench, Entries: entries}, ""); err != nil {
		t.Fatal(err)
	}
	if row := strings.Split(buf.String(), "\n")[1]; !strings.Contains(row, ",0.603,0.1,9,") {
		t.Fatalf("CSV row %q, want value 0.603 written as such", row)
	}
}

// A search finds rows: each keeps its rank on the board, the match is
// case-insensitive over submitter, system, framework and accelerator, and
// searched boards are not kept in the cache (issue 16).
func TestRankSearch(t *testing.T) {
	bench := testBench()
	subs := []d5list.Submission{
		sub(subSpec{id: 1, submitter: "Alpha Lab", system: "a1", times: []float64{1, 1, 1, 1, 1}, acc: 0.95}),
		sub(subSpec{id: 2, submitter: "Beta Lab", system: "b1", times: []float64{2, 2, 2, 2, 2}, acc: 0.95, acc_: "H100"}),
		sub(subSpec{id: 3, submitter: "Gamma", system: "alpha-box", times: []float64{3, 3, 3, 3, 3}, acc: 0.95}),
	}
	for _, tt := range []struct {
		q    string
		want []string // submission id:rank
	}{
		{"ALPHA", []string{"1:1", "3:3"}},
		{"h100", []string{"2:2"}},
		{"numpy", []string{"1:1", "2:2", "3:3"}},
		{"nobody", nil},
	} {
		var got []string
		for _, e := range Rank(bench, subs, Options{Search: tt.q}) {
			got = append(got, fmt.Sprintf("%d:%d", e.SubmissionID, e.Rank))
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("search %q: %v, want %v", tt.q, got, tt.want)
		}
	}
	c := NewCache()
	computed := 0
	compute := func() ([]d5list.Entry, error) { computed++; return Rank(bench, subs, Options{Search: "alpha"}), nil }
	for range 2 {
		if _, err := c.Get(bench.ID, Options{Search: "alpha"}, compute); err != nil {
			t.Fatal(err)
		}
	}
	if computed != 2 || len(c.boards) != 0 {
		t.Errorf("a searched board was kept: computed %d times, %d boards cached", computed, len(c.boards))
	}
}
