package web_test

import (
	"context"
	"io"
	"sync"
	"time"

	d5list "github.com/deep500/d5list"
)

// fakeService is an in-memory portal: enough behaviour for the HTTP layer
// to be exercised through the real router.
type fakeService struct {
	mu          sync.Mutex
	users       map[string]*d5list.User // by token
	benchmarks  []d5list.Benchmark
	submissions map[int64]*d5list.Submission
	boards      map[string]*d5list.Leaderboard

	fail     error // returned by every read method when set
	panicMsg string

	submits  int
	received []byte // what the last Submit read
	nextID   int64
}

func newFake() *fakeService {
	bench := digitsBenchmark()
	return &fakeService{
		users: map[string]*d5list.User{
			"d5_alice":  {ID: 1, Name: "alice", Role: d5list.RoleCompetitor},
			"d5_viewer": {ID: 2, Name: "viewer", Role: d5list.RolePublic},
			"d5_bob":    {ID: 3, Name: "bob", Role: d5list.RoleCompetitor},
		},
		benchmarks:  []d5list.Benchmark{bench, {ID: "l0-conv", Name: "Convolution", Level: 0, Category: "operators", Ranking: d5list.RankingRule{Metric: "latency_ms", Unit: "ms", Direction: d5list.LowerIsBetter}}},
		submissions: map[int64]*d5list.Submission{7: verifiedSubmission(), 8: queuedSubmission()},
		boards:      map[string]*d5list.Leaderboard{bench.ID: {Benchmark: bench, Entries: rankedEntries()}},
		nextID:      100,
	}
}

func (f *fakeService) Authenticate(ctx context.Context, token string) (*d5list.User, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if u, ok := f.users[token]; ok {
		return u, nil
	}
	if token == "d5_revoked" {
		return nil, d5list.Errorf(d5list.ENOTFOUND, "token not found")
	}
	return nil, d5list.Errorf(d5list.EUNAUTHORIZED, "the API token is not valid")
}

// Submit reads the whole body the way the portal spools it, and passes read
// errors (an over-long body) up unchanged.
func (f *fakeService) Submit(ctx context.Context, user *d5list.User, body io.Reader) (*d5list.Submission, bool, error) {
	data, err := io.ReadAll(body)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.submits++
	if err != nil {
		return nil, false, err
	}
	f.received = data
	f.nextID++
	s := &d5list.Submission{ID: f.nextID, BenchmarkID: "l2-digits-mlp-cpu", OwnerID: user.ID, Owner: user.Name, Status: d5list.StatusQueued}
	f.submissions[s.ID] = s
	return s, false, nil
}

func (f *fakeService) readErr() error {
	if f.panicMsg != "" {
		panic(f.panicMsg)
	}
	return f.fail
}

func (f *fakeService) Benchmarks(ctx context.Context) ([]d5list.Benchmark, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.readErr(); err != nil {
		return nil, err
	}
	return f.benchmarks, nil
}

func (f *fakeService) Benchmark(ctx context.Context, id string) (*d5list.Benchmark, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.readErr(); err != nil {
		return nil, err
	}
	for i := range f.benchmarks {
		if f.benchmarks[i].ID == id {
			b := f.benchmarks[i]
			return &b, nil
		}
	}
	return nil, d5list.Errorf(d5list.ENOTFOUND, "benchmark %q does not exist", id)
}

func (f *fakeService) Submission(ctx context.Context, id int64) (*d5list.Submission, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.readErr(); err != nil {
		return nil, err
	}
	if s, ok := f.submissions[id]; ok {
		return s, nil
	}
	return nil, d5list.Errorf(d5list.ENOTFOUND, "submission %d does not exist", id)
}

func (f *fakeService) Leaderboard(ctx context.Context, benchmarkID string) (*d5list.Leaderboard, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.readErr(); err != nil {
		return nil, err
	}
	if b, ok := f.boards[benchmarkID]; ok {
		return b, nil
	}
	return nil, d5list.Errorf(d5list.ENOTFOUND, "benchmark %q does not exist", benchmarkID)
}

func digitsBenchmark() d5list.Benchmark {
	return d5list.Benchmark{
		ID: "l2-digits-mlp-cpu", Name: "Digits MLP on CPU", Level: 2, Category: "image-classification",
		Description: "Train a small MLP on synthetic digits.",
		Division: d5list.DivisionRules{
			Fixed:   map[string]any{"dataset": "synthetic-digits", "model": "mlp"},
			Mutable: map[string]any{"batch_size": 32, "optimizer": "momentum"},
		},
		Runs:    5,
		Quality: d5list.QualityTarget{Metric: "eval_accuracy", Target: 0.97, Mode: "first", Direction: d5list.HigherIsBetter},
		Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter, Unit: "s"},
		Timing:  "run_start to run_stop",
		Verify:  d5list.VerifyPolicy{SameHardware: []string{"cpu_model"}},
	}
}

// rankedEntries is a board as the service ranks it; the submitter names
// carry their rank so that the page's order can be checked.
func rankedEntries() []d5list.Entry {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	return []d5list.Entry{
		{Rank: 1, SubmissionID: 7, Submitter: "First Lab", SystemName: "box-a", Framework: "numpy", Division: "closed", Metric: d5list.MetricTimeToTrain, Value: 12.5, Min: 11, Max: 14, Runs: 5, Status: d5list.StatusVerified, CreatedAt: at},
		{Rank: 2, SubmissionID: 3, Submitter: "Second <b>Lab</b>", SystemName: "box-b", Framework: "torch", Division: "open", Metric: d5list.MetricTimeToTrain, Value: 20.25, Min: 19, Max: 22, Runs: 5, Status: d5list.StatusVerified, CreatedAt: at},
		{Rank: 3, SubmissionID: 5, Submitter: "Third Lab", SystemName: "box-c", Framework: "jax", Division: "closed", Metric: d5list.MetricTimeToTrain, Value: 31, Min: 30, Max: 33, Runs: 5, Status: d5list.StatusVerified, CreatedAt: at},
	}
}

func result(base float64, runs int) *d5list.Result {
	res := &d5list.Result{}
	for i := range runs {
		ttt := base + float64(i)
		res.Runs = append(res.Runs, d5list.RunMetrics{
			Index: i, Seed: int64(1000 + i), Converged: true, TimeToTrain: ttt, EpochsToTarget: float64(3 + i), FinalAccuracy: 0.975 + float64(i)/1000,
			Evals: []d5list.EvalPoint{{Epoch: 1, Seconds: ttt / 3, Accuracy: 0.8}, {Epoch: 2, Seconds: 2 * ttt / 3, Accuracy: 0.93}, {Epoch: 3, Seconds: ttt, Accuracy: 0.975}},
		})
	}
	res.Score = d5list.OlympicScore(res.Runs, d5list.MetricTimeToTrain, d5list.LowerIsBetter)
	return res
}

func verifiedSubmission() *d5list.Submission {
	run := 2
	claimed, measured := 0.93, 0.91
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	rerun := result(20, 5)
	rerun.Runner = map[string]string{"runs": "builtin", "cpu_model": "AMD EPYC"}
	return &d5list.Submission{
		ID: 7, BenchmarkID: "l2-digits-mlp-cpu", OwnerID: 1, Owner: "alice", Division: "closed", Availability: "available",
		Submitter: "First Lab", SystemName: "box-a", Framework: "numpy", Status: d5list.StatusVerified,
		BundleSHA256: "ab12", BundleSize: 4096, Claimed: result(10, 5), Measured: rerun,
		Reasons:   []d5list.Reason{{Code: "accuracy_mismatch", Message: "run 2 epoch 2 accuracy differs", File: "results/result_2.txt", Run: &run, Claimed: &claimed, Measured: &measured}},
		CreatedAt: at, UpdatedAt: at,
	}
}

func queuedSubmission() *d5list.Submission {
	return &d5list.Submission{ID: 8, BenchmarkID: "l2-digits-mlp-cpu", Submitter: "Waiting Lab", SystemName: "box-w", Framework: "numpy",
		Division: "closed", Status: d5list.StatusQueued, Claimed: result(10, 5)}
}
