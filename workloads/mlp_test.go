package workloads

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"slices"
	"strings"
	"sync"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
)

// quickConfig trains a small model for a few epochs: enough to learn
// something, cheap enough for unit tests.
func quickConfig(target float64, maxEpochs int) MLPConfig {
	return MLPConfig{Benchmark: "test-bench", Hidden: 16, MaxEpochs: maxEpochs, BatchSize: 32,
		Optimizer: optimizerMomentum, LearningRate: 0.01, Momentum: 0.9, Target: target}
}

type logEvent struct {
	EventType string         `json:"event_type"`
	Key       string         `json:"key"`
	Value     any            `json:"value"`
	Metadata  map[string]any `json:"metadata"`
	TimeMS    *int64         `json:"time_ms"`
}

func parseLog(t *testing.T, log []byte) []logEvent {
	t.Helper()
	var events []logEvent
	for i, line := range strings.Split(strings.TrimRight(string(log), "\n"), "\n") {
		rest, ok := strings.CutPrefix(line, mllog.Prefix)
		if !ok {
			t.Fatalf("line %d lacks the MLLOG prefix: %q", i+1, line)
		}
		var e logEvent
		if err := json.Unmarshal([]byte(rest), &e); err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		if e.TimeMS == nil || e.Metadata == nil {
			t.Fatalf("line %d lacks time_ms or metadata: %q", i+1, line)
		}
		events = append(events, e)
	}
	return events
}

func runQuick(t *testing.T, cfg MLPConfig, seed int64) (Summary, []byte) {
	t.Helper()
	var buf bytes.Buffer
	sum, err := TrainMLP(context.Background(), cfg, seed, mllog.NewWriter(&buf, nil))
	if err != nil {
		t.Fatal(err)
	}
	return sum, buf.Bytes()
}

func evalAccuracies(events []logEvent) []float64 {
	var accs []float64
	for _, e := range events {
		if e.Key == mllog.KeyEvalAccuracy {
			accs = append(accs, e.Value.(float64))
		}
	}
	return accs
}

func TestTrainMLPIsDeterministicPerSeed(t *testing.T) {
	cfg := quickConfig(1.1, 3) // unreachable: every run trains all 3 epochs
	first, log1 := runQuick(t, cfg, 7)
	again, log2 := runQuick(t, cfg, 7)
	other, _ := runQuick(t, cfg, 8)

	if !slices.Equal(first.Accuracies, again.Accuracies) {
		t.Errorf("seed 7 twice: %v then %v", first.Accuracies, again.Accuracies)
	}
	if got := evalAccuracies(parseLog(t, log2)); !slices.Equal(got, evalAccuracies(parseLog(t, log1))) {
		t.Errorf("logged accuracies differ between identical runs: %v", got)
	}
	if slices.Equal(first.Accuracies, other.Accuracies) {
		t.Errorf("seeds 7 and 8 gave the same accuracies %v", first.Accuracies)
	}
	if len(first.Accuracies) != 3 || first.Accuracies[2] < 0.5 {
		t.Errorf("3 epochs should learn well above chance (0.1), got %v", first.Accuracies)
	}
}

func TestTrainMLPLogContent(t *testing.T) {
	const target = 0.8
	cfg := quickConfig(target, 20)
	sum, log := runQuick(t, cfg, 3)
	events := parseLog(t, log)

	if sum.Status != statusSuccess || !sum.Reached() {
		t.Fatalf("status %q, accuracies %v: the small model should reach %v", sum.Status, sum.Accuracies, target)
	}
	count := map[string]int{}
	first := map[string]int{}
	for i, e := range events {
		if count[e.Key] == 0 {
			first[e.Key] = i
		}
		count[e.Key]++
	}
	for _, key := range []string{mllog.KeySubmissionBenchmark, mllog.KeySeed, mllog.KeyGlobalBatchSize,
		keyOptName, keyOptBaseLR, mllog.KeyTrainSamples, mllog.KeyEvalSamples, mllog.KeyInitStart,
		mllog.KeyInitStop, mllog.KeyRunStart, mllog.KeyRunStop, mllog.KeyEpochStart, mllog.KeyEpochStop,
		mllog.KeyEvalStart, mllog.KeyEvalStop, mllog.KeyEvalAccuracy, mllog.KeyThroughput} {
		if count[key] == 0 {
			t.Errorf("no %s event", key)
		}
	}
	for _, key := range []string{mllog.KeyInitStart, mllog.KeyInitStop, mllog.KeyRunStart, mllog.KeyRunStop} {
		if count[key] != 1 {
			t.Errorf("%d %s events, want 1", count[key], key)
		}
	}
	if !(first[mllog.KeyInitStop] < first[mllog.KeyRunStart] && first[mllog.KeyRunStop] == len(events)-1) {
		t.Errorf("order: init_stop at %d, run_start at %d, run_stop at %d of %d",
			first[mllog.KeyInitStop], first[mllog.KeyRunStart], first[mllog.KeyRunStop], len(events))
	}
	wantPoints := map[string]any{
		mllog.KeySubmissionBenchmark: "test-bench", mllog.KeySeed: 3.0, mllog.KeyGlobalBatchSize: 32.0,
		keyOptName: "momentum", keyOptBaseLR: 0.01, mllog.KeyTrainSamples: float64(DefaultDigits.Train),
		mllog.KeyEvalSamples: float64(DefaultDigits.Test),
	}
	for key, want := range wantPoints {
		if e := events[first[key]]; e.Value != want || e.EventType != mllog.PointInTime {
			t.Errorf("%s = %v (%s), want %v", key, e.Value, e.EventType, want)
		}
	}

	var epochs []int
	for _, e := range events[first[mllog.KeyRunStart]:] {
		switch e.Key {
		case mllog.KeyEpochStart:
			epochs = append(epochs, int(e.Metadata[keyEpochNum].(float64)))
		case mllog.KeyEvalAccuracy:
			acc := e.Value.(float64)
			if acc < 0 || acc > 1 {
				t.Errorf("eval_accuracy %v outside [0, 1]", acc)
			}
			if got := int(e.Metadata[keyEpochNum].(float64)); got != len(epochs) {
				t.Errorf("eval_accuracy of epoch %d logged during epoch %d", got, len(epochs))
			}
		}
	}
	for i, n := range epochs {
		if n != i+1 {
			t.Fatalf("epoch numbers %v, want 1, 2, 3, ...", epochs)
		}
	}
	accs := evalAccuracies(events)
	if !slices.Equal(accs, sum.Accuracies) || len(epochs) != sum.Epochs {
		t.Errorf("log has %d epochs and accuracies %v; summary %d and %v", len(epochs), accs, sum.Epochs, sum.Accuracies)
	}
	for i, acc := range accs {
		if reached := acc >= target; reached != (i == len(accs)-1) {
			t.Errorf("epoch %d accuracy %v: the run must stop at the first evaluation at target", i+1, acc)
		}
	}
	stop := events[len(events)-1]
	if stop.Metadata[keyStatus] != statusSuccess || stop.EventType != mllog.IntervalEnd {
		t.Errorf("run_stop %+v, want INTERVAL_END with status success", stop)
	}
	if tp := events[first[mllog.KeyThroughput]].Value.(float64); !(tp > 0) {
		t.Errorf("throughput %v, want positive", tp)
	}
}

func TestTrainMLPAbortsAtEpochCap(t *testing.T) {
	sum, log := runQuick(t, quickConfig(0.9999, 2), 1)
	events := parseLog(t, log)
	stop := events[len(events)-1]
	if stop.Key != mllog.KeyRunStop || stop.Metadata[keyStatus] != statusAborted {
		t.Fatalf("last event %+v, want run_stop with status aborted", stop)
	}
	if sum.Status != statusAborted || sum.Epochs != 2 || len(evalAccuracies(events)) != 2 {
		t.Errorf("summary %+v: want aborted after exactly 2 evaluated epochs", sum)
	}
}

// cancelOnWrite cancels a context when a log line containing trigger is
// written, so cancellation lands at a known point of a run.
type cancelOnWrite struct {
	buf     bytes.Buffer
	trigger string
	cancel  context.CancelFunc
	once    sync.Once
}

func (c *cancelOnWrite) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(c.trigger)) {
		c.once.Do(c.cancel)
	}
	return c.buf.Write(p)
}

func TestTrainMLPHonoursCancellation(t *testing.T) {
	for _, trigger := range []string{`"key":"run_start"`, `"epoch_num":2`} {
		t.Run(trigger, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			out := &cancelOnWrite{trigger: trigger, cancel: cancel}
			_, err := TrainMLP(ctx, quickConfig(1.1, 50), 1, mllog.NewWriter(out, nil))
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("err %v, want context.Canceled", err)
			}
			if bytes.Contains(out.buf.Bytes(), []byte(mllog.KeyRunStop)) {
				t.Error("a cancelled run must not log run_stop")
			}
			if bytes.Contains(out.buf.Bytes(), []byte(`"epoch_num":3`)) {
				t.Error("training went on past the cancellation")
			}
		})
	}
}

func TestTrainMLPRejectsInvalidConfig(t *testing.T) {
	cfg := quickConfig(0.5, 2)
	cfg.Optimizer = "adam"
	var buf bytes.Buffer
	if _, err := TrainMLP(context.Background(), cfg, 1, mllog.NewWriter(&buf, nil)); err == nil || !strings.Contains(err.Error(), "adam") {
		t.Errorf("err %v, want one naming the optimizer", err)
	}
	if buf.Len() != 0 {
		t.Errorf("an invalid config logged %q", buf.String())
	}
}

func TestDigitsDataset(t *testing.T) {
	ds := Digits(DefaultDigits)
	if Digits(DefaultDigits) != ds {
		t.Error("the same config generated the data set twice")
	}
	if len(ds.TrainX) != DefaultDigits.Train || len(ds.TestX) != DefaultDigits.Test || ds.Dim != 144 {
		t.Fatalf("sizes %d/%d dim %d", len(ds.TrainX), len(ds.TestX), ds.Dim)
	}
	perClass := make([]int, numClasses)
	for _, l := range ds.TestLabs {
		perClass[l]++
	}
	for c, n := range perClass {
		if n != DefaultDigits.Test/numClasses {
			t.Errorf("class %d has %d test images, want %d", c, n, DefaultDigits.Test/numClasses)
		}
	}
	var sum, sumSq float64
	for _, img := range ds.TrainX {
		for _, p := range img {
			if math.IsNaN(p) || math.IsInf(p, 0) {
				t.Fatal("non-finite pixel")
			}
			sum += p
			sumSq += p * p
		}
	}
	n := float64(len(ds.TrainX) * ds.Dim)
	if mean, variance := sum/n, sumSq/n-(sum/n)*(sum/n); math.Abs(mean) > 1e-9 || math.Abs(variance-1) > 1e-9 {
		t.Errorf("training pixels have mean %v and variance %v, want 0 and 1", mean, variance)
	}
	other := DefaultDigits
	other.Seed++
	if slices.Equal(Digits(other).TrainX[0], ds.TrainX[0]) {
		t.Error("a different data set seed rendered the same first image")
	}
}

func TestDetExpMatchesMathExp(t *testing.T) {
	for x := -50.0; x <= 0; x += 0.0137 {
		want := math.Exp(x)
		if got := detExp(x); math.Abs(got-want) > 4e-16*want {
			t.Fatalf("detExp(%v) = %v, math.Exp = %v", x, got, want)
		}
	}
	if detExp(-800) != 0 || detExp(0) != 1 {
		t.Errorf("detExp(-800) = %v, detExp(0) = %v", detExp(-800), detExp(0))
	}
}

func TestLookupDigitsMLPWritesRunLog(t *testing.T) {
	work, ok := Lookup("digits-mlp")
	if !ok {
		t.Fatal("digits-mlp not registered")
	}
	if _, ok := Lookup("nonsense"); ok {
		t.Error("Lookup found an unregistered workload")
	}
	b := &d5list.Benchmark{ID: "l2-digits-mlp-cpu", Quality: d5list.QualityTarget{Target: 0.7}}
	r := &d5list.Recipe{
		Fixed:   map[string]any{"dataset": "synthetic-digits", "model": "mlp", "model_kwargs": map[string]any{"hidden": 16}, "epochs": 10},
		Mutable: map[string]any{"batch_size": int64(64), "executor": "builtin", "optimizer": "sgd", "optimizer_args": map[string]any{"lr": 0.1}, "train_sampler": "shuffle"},
	}
	var out bytes.Buffer
	if err := work(context.Background(), b, r, 5, &out); err != nil {
		t.Fatal(err)
	}
	events := parseLog(t, out.Bytes())
	got := map[string]any{}
	for _, e := range events {
		got[e.Key] = e.Value
	}
	if got[mllog.KeySubmissionBenchmark] != "l2-digits-mlp-cpu" || got[mllog.KeyGlobalBatchSize] != 64.0 || got[keyOptName] != "sgd" {
		t.Errorf("logged %v", got)
	}
	if stop := events[len(events)-1]; stop.Metadata[keyStatus] != statusSuccess {
		t.Errorf("run_stop %+v, want success at target 0.7", stop)
	}

	if err := work(context.Background(), b, &d5list.Recipe{Mutable: map[string]any{"batch_size": "x"}}, 5, io.Discard); err == nil {
		t.Error("a bad recipe ran")
	}
}

func BenchmarkTrainEpoch(b *testing.B) {
	ds := Digits(DefaultDigits)
	cfg := MLPConfig{Hidden: DefaultHidden, BatchSize: DefaultBatchSize, Optimizer: DefaultOptimizer,
		LearningRate: DefaultLearningRate, Momentum: DefaultMomentum}
	model := newMLP(ds.Dim, cfg.Hidden, newRNG(1, 1))
	perm := make([]int, len(ds.TrainX))
	for i := range perm {
		perm[i] = i
	}
	shuffler := newRNG(1, 2)
	b.ResetTimer()
	for b.Loop() {
		shuffler.shuffle(perm)
		if err := model.trainEpoch(context.Background(), cfg, ds, perm); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(perm)*b.N)/b.Elapsed().Seconds(), "samples/s")
}
