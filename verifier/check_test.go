package verifier

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/mllog"
)

func testBench() *d5list.Benchmark {
	return &d5list.Benchmark{
		ID:    "l2-test-mlp",
		Level: 2,
		Runs:  5,
		Division: d5list.DivisionRules{
			Fixed:   map[string]any{"dataset": "synthetic-digits", "model": "mlp", "model_kwargs": map[string]any{"hidden": 64}, "epochs": 40},
			Mutable: map[string]any{"batch_size": 32, "executor": "builtin", "optimizer": "momentum", "optimizer_args": map[string]any{"lr": 0.05}},
		},
		Quality: d5list.QualityTarget{Metric: "eval_accuracy", Target: 0.9, Mode: "first", Direction: d5list.HigherIsBetter},
		Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter},
	}
}

// runSpec describes one generated run log.
type runSpec struct {
	seed      int64
	initMS    int64   // when the log begins
	epochMS   []int64 // duration of each epoch
	accs      []float64
	status    string
	gbs       int // 0: not logged
	benchKey  string
	noSeed    bool
	epochNums []float64 // overrides 1..n
}

// write renders the run with the MLLOG writer and a fake clock.
func (s runSpec) write() (string, int64) {
	var buf bytes.Buffer
	now := s.initMS
	clock := func() time.Time { return time.UnixMilli(now) }
	w := mllog.NewWriter(&buf, clock)
	if s.benchKey != "" {
		w.Point(mllog.KeySubmissionBenchmark, s.benchKey, nil)
	}
	if !s.noSeed {
		w.Point(mllog.KeySeed, s.seed, nil)
	}
	if s.gbs > 0 {
		w.Point(mllog.KeyGlobalBatchSize, s.gbs, nil)
	}
	now += 500
	start := now
	w.Start(mllog.KeyRunStart, nil, nil)
	for i, d := range s.epochMS {
		now += d
		ep := float64(i + 1)
		if s.epochNums != nil {
			ep = s.epochNums[i]
		}
		w.Point(mllog.KeyEvalAccuracy, s.accs[i], map[string]any{"epoch_num": ep})
	}
	now += 7
	w.End(mllog.KeyRunStop, nil, map[string]any{"status": s.status})
	return buf.String(), now - start
}

// fixture is a valid five-run submission; cases mutate it.
type fixture struct {
	bench  *d5list.Benchmark
	b      *bundle.Bundle
	specs  []runSpec
	base   int // first result index
	mutate map[int]func(string) string
}

func newFixture() *fixture {
	f := &fixture{bench: testBench(), mutate: map[int]func(string) string{}}
	f.b = &bundle.Bundle{
		Manifest: d5list.Manifest{Format: d5list.ManifestFormat, Benchmark: f.bench.ID, Division: "closed",
			Availability: "available", Submitter: "ETH", SystemName: "laptop", Framework: "go"},
		ManifestFile: "submission.json",
		Recipe: d5list.Recipe{
			Fixed:   map[string]any{"dataset": "synthetic-digits", "model": "mlp", "model_kwargs": map[string]any{"hidden": int64(64)}, "epochs": 40.0},
			Mutable: map[string]any{"batch_size": 16, "executor": "builtin", "optimizer": "momentum"},
			Metrics: []d5list.MetricSpec{{Name: "TestAccuracy"}, {Name: "time_to_train_s"}},
		},
		RecipeFile: "recipe.yaml",
	}
	t0 := int64(1_700_000_000_000)
	for i := 0; i < 5; i++ {
		f.specs = append(f.specs, runSpec{
			seed:     int64(1000 + i),
			initMS:   t0 + int64(i)*20_000,
			epochMS:  []int64{3000 + int64(i)*111, 3000, 3000},
			accs:     []float64{0.5, 0.85, 0.93},
			status:   "success",
			gbs:      16,
			benchKey: f.bench.ID,
		})
	}
	return f
}

// build renders the specs into the bundle and returns the runs' times.
func (f *fixture) build() []float64 {
	f.b.Results = nil
	var times []float64
	for i, s := range f.specs {
		text, ms := s.write()
		if m := f.mutate[i]; m != nil {
			text = m(text)
		}
		idx := f.base + i
		f.b.Results = append(f.b.Results, bundle.ResultFile{Index: idx, Name: fmt.Sprintf("results/result_%d.txt", idx), Data: []byte(text)})
		times = append(times, float64(ms)/1000)
	}
	return times
}

// replaceLine replaces the line holding key (the n-th, from 1) with repl.
func replaceLine(key string, n int, repl func(string) string) func(string) string {
	return func(text string) string {
		lines := strings.Split(text, "\n")
		seen := 0
		for i, l := range lines {
			if strings.Contains(l, `"key":"`+key+`"`) {
				seen++
				if seen == n {
					lines[i] = repl(l)
					break
				}
			}
		}
		return strings.Join(lines, "\n")
	}
}

func dropLine(key string) func(string) string {
	return replaceLine(key, 1, func(string) string { return "" })
}

func TestCheck(t *testing.T) {
	cases := []struct {
		name     string
		setup    func(f *fixture)
		want     []string // exact set of reason codes; empty: passes
		wantLine bool     // the reasons point into a log
	}{
		{name: "valid submission", setup: func(*fixture) {}},
		{name: "numbered from 1 like MLPerf", setup: func(f *fixture) { f.base = 1 }},
		{name: "lines after run_stop", setup: func(f *fixture) {
			f.mutate[2] = func(s string) string {
				return s + `:::MLLOG {"namespace": "", "time_ms": 1700000060000, "event_type": "POINT_IN_TIME", "key": "status", "value": "success", "metadata": {}}` + "\n"
			}
		}},
		{name: "open division may change fixed", setup: func(f *fixture) {
			f.b.Manifest.Division = "open"
			f.b.Recipe.Fixed["model"] = "cnn"
			f.b.Recipe.Mutable["loss"] = "hinge"
		}},
		{name: "one run not converged is dropped", setup: func(f *fixture) {
			f.specs[1].accs = []float64{0.5, 0.6, 0.7}
			f.specs[1].status = "aborted"
		}},

		{name: "format", setup: func(f *fixture) { f.b.Manifest.Format = "mlperf" }, want: []string{CodeManifestFormat}},
		{name: "benchmark", setup: func(f *fixture) { f.b.Manifest.Benchmark = "other" }, want: []string{CodeManifestBenchmark}},
		{name: "division", setup: func(f *fixture) { f.b.Manifest.Division = "closedish" }, want: []string{CodeManifestDivision}},
		{name: "availability", setup: func(f *fixture) { f.b.Manifest.Availability = "soon" }, want: []string{CodeManifestAvailability}},
		{name: "submitter", setup: func(f *fixture) { f.b.Manifest.Submitter = " " }, want: []string{CodeManifestSubmitter}},
		{name: "system name", setup: func(f *fixture) { f.b.Manifest.SystemName = "" }, want: []string{CodeManifestSystemName}},

		{name: "fixed value differs", setup: func(f *fixture) { f.b.Recipe.Fixed["epochs"] = 41 }, want: []string{CodeRecipeFixedMismatch}},
		{name: "fixed nested value differs", setup: func(f *fixture) {
			f.b.Recipe.Fixed["model_kwargs"] = map[string]any{"hidden": 64, "depth": 2}
		}, want: []string{CodeRecipeFixedMismatch}},
		{name: "fixed missing", setup: func(f *fixture) { delete(f.b.Recipe.Fixed, "model_kwargs") }, want: []string{CodeRecipeFixedMissing}},
		{name: "fixed unknown", setup: func(f *fixture) { f.b.Recipe.Fixed["augment"] = true }, want: []string{CodeRecipeFixedUnknown}},
		{name: "mutable not allowed", setup: func(f *fixture) { f.b.Recipe.Mutable["loss"] = "hinge" }, want: []string{CodeRecipeMutableDenied}},
		{name: "key in both", setup: func(f *fixture) {
			f.b.Manifest.Division = "open"
			f.b.Recipe.Fixed["batch_size"] = 16
		}, want: []string{CodeRecipeKeyInBoth}},
		{name: "missing required key", setup: func(f *fixture) {
			f.b.Manifest.Division = "open"
			delete(f.b.Recipe.Mutable, "optimizer")
		}, want: []string{CodeRecipeMissingKey}},
		{name: "unknown metric", setup: func(f *fixture) {
			f.b.Recipe.Metrics = append(f.b.Recipe.Metrics, d5list.MetricSpec{Name: "d5.Happiness"})
		}, want: []string{CodeRecipeUnknownMetric}},

		{name: "too few runs", setup: func(f *fixture) { f.specs = f.specs[:4] }, want: []string{CodeRunCount}},
		{name: "index gap", setup: func(f *fixture) {
			f.build()
			f.b.Results[4].Index = 5
		}, want: []string{CodeRunIndex}},
		{name: "syntax", setup: func(f *fixture) {
			f.mutate[3] = replaceLine("seed", 1, func(l string) string { return strings.TrimSuffix(l, "}") })
		}, want: []string{mllog.CodeSyntax, CodeTooManyUnconverged + "?"}, wantLine: true},
		{name: "missing run_start", setup: func(f *fixture) { f.mutate[0] = dropLine("run_start") },
			want: []string{mllog.CodeMissingRunStart}, wantLine: true},
		{name: "missing run_stop", setup: func(f *fixture) { f.mutate[4] = dropLine("run_stop") },
			want: []string{mllog.CodeMissingRunStop}, wantLine: true},
		{name: "two run_start", setup: func(f *fixture) {
			f.mutate[2] = replaceLine("run_start", 1, func(l string) string { return l + "\n" + l })
		}, want: []string{CodeDuplicateRunStart}, wantLine: true},
		{name: "two run_stop", setup: func(f *fixture) {
			f.mutate[2] = replaceLine("run_stop", 1, func(l string) string { return l + "\n" + l })
		}, want: []string{CodeDuplicateRunStop}, wantLine: true},
		{name: "time goes backwards", setup: func(f *fixture) {
			f.mutate[1] = replaceLine("eval_accuracy", 2, func(l string) string {
				return strings.Replace(l, `"time_ms":`, `"time_ms":1000,"x":`, 1)
			})
		}, want: []string{CodeTimeBackwards}, wantLine: true},
		{name: "accuracy above one", setup: func(f *fixture) { f.specs[0].accs[2] = 93 },
			want: []string{CodeEvalOutOfRange}, wantLine: true},
		{name: "epochs not increasing", setup: func(f *fixture) { f.specs[3].epochNums = []float64{1, 3, 2} },
			want: []string{CodeEvalEpochOrder}, wantLine: true},
		{name: "no seed", setup: func(f *fixture) { f.specs[2].noSeed = true },
			want: []string{CodeMissingSeed}, wantLine: true},
		{name: "seed reused", setup: func(f *fixture) { f.specs[4].seed = f.specs[1].seed },
			want: []string{CodeDuplicateSeed}, wantLine: true},
		{name: "no submission_benchmark", setup: func(f *fixture) { f.specs[0].benchKey = "" },
			want: []string{CodeMissingBenchmarkKey}, wantLine: true},
		{name: "wrong submission_benchmark", setup: func(f *fixture) { f.specs[0].benchKey = "resnet" },
			want: []string{CodeWrongBenchmarkKey}, wantLine: true},
		{name: "no global_batch_size", setup: func(f *fixture) { f.specs[3].gbs = 0 },
			want: []string{CodeMissingBatchSize}, wantLine: true},
		{name: "global_batch_size differs", setup: func(f *fixture) { f.specs[3].gbs = 32 },
			want: []string{CodeBatchSizeDiffers}, wantLine: true},
		{name: "runs overlap", setup: func(f *fixture) { f.specs[2].initMS = f.specs[1].initMS + 2000 },
			want: []string{CodeRunsOverlap, CodeRunGap + "?"}, wantLine: true},
		{name: "best five of six (a run left out)", setup: func(f *fixture) {
			for i := 3; i < 5; i++ {
				f.specs[i].initMS += 75_000
			}
		}, want: []string{CodeRunGap}, wantLine: true},
		{name: "pauses within the benchmark's max_run_gap_s", setup: func(f *fixture) {
			f.bench.Verify.MaxRunGapSeconds = 12 // the fixture's runs pause about 11 s
		}, want: nil},
		{name: "a pause beyond the benchmark's max_run_gap_s", setup: func(f *fixture) {
			f.bench.Verify.MaxRunGapSeconds = 12
			f.specs[3].initMS += 2_000
			f.specs[4].initMS += 2_000
		}, want: []string{CodeRunGap}, wantLine: true},
		{name: "runs out of index order", setup: func(f *fixture) {
			f.specs[0].initMS, f.specs[4].initMS = f.specs[4].initMS, f.specs[0].initMS
		}, want: []string{CodeRunsOverlap}, wantLine: true},
		{name: "two runs not converged", setup: func(f *fixture) {
			f.specs[1].accs = []float64{0.5, 0.6, 0.7}
			f.specs[1].status = "aborted"
			f.specs[3].accs = []float64{0.5, 0.6, 0.95}
			f.specs[3].status = "aborted"
		}, want: []string{CodeTooManyUnconverged}, wantLine: true},
		{name: "claim unknown", setup: func(f *fixture) { f.b.Manifest.Claims = map[string]float64{"happiness": 1} },
			want: []string{CodeClaimUnknown}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture()
			c.setup(f)
			if f.b.Results == nil {
				f.build()
			}
			claimed, reasons := Check(f.b, f.bench)
			if claimed == nil {
				t.Fatal("claimed result is nil")
			}
			assertCodes(t, reasons, c.want, c.wantLine)
		})
	}
}

// assertCodes requires the codes of reasons to be exactly want (a code
// ending in "?" may or may not appear), each reason naming its file, and
// its line when wantLine.
func assertCodes(t *testing.T, reasons []d5list.Reason, want []string, wantLine bool) {
	t.Helper()
	required, optional := map[string]bool{}, map[string]bool{}
	for _, w := range want {
		if strings.HasSuffix(w, "?") {
			optional[strings.TrimSuffix(w, "?")] = true
		} else {
			required[w] = true
		}
	}
	got := map[string]bool{}
	for _, r := range reasons {
		got[r.Code] = true
		if !required[r.Code] && !optional[r.Code] {
			t.Errorf("unexpected reason %s: %s (%s:%d)", r.Code, r.Message, r.File, r.Line)
			continue
		}
		if r.File == "" || r.Message == "" {
			t.Errorf("reason %s without file or message: %+v", r.Code, r)
		}
		if wantLine && r.Line <= 0 {
			t.Errorf("reason %s names no line: %+v", r.Code, r)
		}
	}
	for w := range required {
		if !got[w] {
			t.Errorf("missing reason %s; got %v", w, reasons)
		}
	}
}

func TestCheckScoreAndClaims(t *testing.T) {
	f := newFixture()
	times := f.build()
	// The expected score, from the generator's own durations.
	s := append([]float64(nil), times...)
	sort.Float64s(s)
	wantScore := (s[1] + s[2] + s[3]) / 3
	claimed, reasons := Check(f.b, f.bench)
	if len(reasons) > 0 {
		t.Fatalf("reasons %v", reasons)
	}
	if !claimed.Score.Valid || math.Abs(claimed.Score.Value-wantScore) > 1e-9 {
		t.Fatalf("score %+v, want %v", claimed.Score, wantScore)
	}
	for i, r := range claimed.Runs {
		if r.TimeToTrain != times[i] || r.EpochsToTarget != 3 || r.Seed != f.specs[i].seed {
			t.Errorf("run %d: %+v", i, r)
		}
	}

	cases := []struct {
		claims map[string]float64
		want   []string
	}{
		{map[string]float64{d5list.MetricTimeToTrain: wantScore, d5list.MetricFinalAccuracy: 0.93}, nil},
		{map[string]float64{d5list.MetricTimeToTrain: wantScore * (1 + 1e-7)}, nil},
		{map[string]float64{d5list.MetricTimeToTrain: wantScore * 0.99}, []string{CodeClaimMismatch}},
		{map[string]float64{d5list.MetricFinalAccuracy: 0.95}, []string{CodeClaimMismatch}},
	}
	for _, c := range cases {
		f.b.Manifest.Claims = c.claims
		_, reasons := Check(f.b, f.bench)
		assertCodes(t, reasons, c.want, false)
		for _, r := range reasons {
			if r.Claimed == nil || r.Measured == nil || !strings.Contains(r.Message, "claim") {
				t.Errorf("mismatch reason lacks values: %+v", r)
			}
		}
	}
}

func TestCheckConvergence(t *testing.T) {
	cases := []struct {
		name string
		rcp  []d5list.ConvergencePoint
		want []string
		note bool
	}{
		// The runs reach the target at epoch 3.
		{"too fast for the reference", []d5list.ConvergencePoint{{GlobalBatchSize: 8, EpochsMean: 6, EpochsStdev: 0.5, Samples: 10}, {GlobalBatchSize: 32, EpochsMean: 8, EpochsStdev: 0.5, Samples: 10}},
			[]string{CodeConvergenceTooFast}, false},
		{"like the reference", []d5list.ConvergencePoint{{GlobalBatchSize: 8, EpochsMean: 2.8, EpochsStdev: 0.5, Samples: 10}, {GlobalBatchSize: 32, EpochsMean: 3.4, EpochsStdev: 0.5, Samples: 10}},
			nil, false},
		{"batch size outside the references", []d5list.ConvergencePoint{{GlobalBatchSize: 64, EpochsMean: 30, EpochsStdev: 1, Samples: 10}},
			nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture()
			f.bench.RCP = c.rcp
			f.build()
			claimed, reasons := Check(f.b, f.bench)
			assertCodes(t, reasons, c.want, true)
			if c.note != strings.Contains(claimed.Score.Note, "outside the reference range") {
				t.Errorf("note %q", claimed.Score.Note)
			}
			for _, r := range reasons {
				if !strings.Contains(r.Message, "p = ") {
					t.Errorf("message does not report the test: %s", r.Message)
				}
			}
		})
	}
}

// loadFolder reads a fixture folder without the bundle package's reader,
// so these tests do not depend on it: submission.json, recipe.json and
// results/result_<i>.txt.
func loadFolder(t *testing.T, dir string) *bundle.Bundle {
	t.Helper()
	b := &bundle.Bundle{ManifestFile: "submission.json", RecipeFile: "recipe.json"}
	for name, v := range map[string]any{"submission.json": &b.Manifest, "recipe.json": &b.Recipe} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "results", "result_*.txt"))
	for _, p := range paths {
		i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "result_"), ".txt"))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := os.ReadFile(p)
		b.Results = append(b.Results, bundle.ResultFile{Index: i, Name: "results/" + filepath.Base(p), Data: data})
	}
	sort.Slice(b.Results, func(i, j int) bool { return b.Results[i].Index < b.Results[j].Index })
	return b
}

func TestCheckFolderFixtures(t *testing.T) {
	cases := []struct {
		dir  string
		want []string
	}{
		{"pass", nil},
		{"duplicate-seed", []string{CodeDuplicateSeed}},
		{"claim-mismatch", []string{CodeClaimMismatch}},
	}
	for _, c := range cases {
		t.Run(c.dir, func(t *testing.T) {
			b := loadFolder(t, filepath.Join("testdata", "check", c.dir))
			if len(b.Results) != 5 {
				t.Fatalf("%d results", len(b.Results))
			}
			_, reasons := Check(b, testBench())
			assertCodes(t, reasons, c.want, false)
		})
	}
}

// TestWriteFolderFixtures regenerates testdata/check with -update-fixtures.
func TestWriteFolderFixtures(t *testing.T) {
	if os.Getenv("D5LIST_UPDATE_FIXTURES") == "" {
		t.Skip("set D5LIST_UPDATE_FIXTURES=1 to regenerate testdata/check")
	}
	write := func(dir string, f *fixture) {
		f.build()
		must := func(err error) {
			if err != nil {
				t.Fatal(err)
			}
		}
		must(os.MkdirAll(filepath.Join(dir, "results"), 0o755))
		m, _ := json.MarshalIndent(f.b.Manifest, "", "  ")
		r, _ := json.MarshalIndent(f.b.Recipe, "", "  ")
		must(os.WriteFile(filepath.Join(dir, "submission.json"), append(m, '\n'), 0o644))
		must(os.WriteFile(filepath.Join(dir, "recipe.json"), append(r, '\n'), 0o644))
		for _, res := range f.b.Results {
			must(os.WriteFile(filepath.Join(dir, res.Name), res.Data, 0o644))
		}
	}
	write("testdata/check/pass", newFixture())
	f := newFixture()
	f.specs[3].seed = f.specs[0].seed
	write("testdata/check/duplicate-seed", f)
	f = newFixture()
	f.b.Manifest.Claims = map[string]float64{d5list.MetricTimeToTrain: 1.5}
	write("testdata/check/claim-mismatch", f)
}

// Past the upload's budget of events, or of their values' and metadata's
// bytes, the remaining logs are not parsed: each is named with a reason
// that says which, and the check still answers.
func TestCheckStopsAtTheEventBudget(t *testing.T) {
	f := newFixture()
	f.build()
	evs, err := mllog.Parse(bytes.NewReader(f.b.Results[0].Data), "r")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		budget *int
		perLog int
		says   string
	}{
		{&maxUploadEvents, len(evs), "MLLOG events"},
		{&maxUploadDecodedBytes, mllog.DecodedBytes(evs), "bytes of MLLOG values and metadata"},
	} {
		old := *c.budget
		*c.budget = 2*c.perLog + 1
		_, reasons := Check(f.b, f.bench)
		*c.budget = old
		var unread []string
		for _, r := range reasons {
			if r.Code == CodeTooManyEvents && strings.Contains(r.Message, c.says) {
				unread = append(unread, r.File)
			}
		}
		want := []string{"results/result_3.txt", "results/result_4.txt"}
		if !slices.Equal(unread, want) {
			t.Errorf("a budget of %d %s: files not read %v, want %v (%d a log); reasons %+v", 2*c.perLog+1, c.says, unread, want, c.perLog, reasons)
		}
	}
}
