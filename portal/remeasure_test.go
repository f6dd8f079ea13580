package portal

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/store"
	"github.com/deep500/d5list/verifier"
)

// remeasureRig is the service on a real SQLite file whose clock the test
// moves, with a benchmark of the competitor's code (the digits one, re-run
// by an entrypoint), whose re-measures time only fresh runs.
type remeasureRig struct {
	svc   *Service
	db    *store.DB
	now   time.Time
	bench *d5list.Benchmark
}

var rigLabels = map[string]string{"runs": "entrypoint", "cpu_model": "Test CPU"}

func newRemeasureRig(t *testing.T) *remeasureRig {
	t.Helper()
	db, err := store.Open(context.Background(), t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r := &remeasureRig{db: db, now: time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC), bench: digits(t)}
	r.bench.ID, r.bench.Workload, r.bench.Verify.FreshRuns = "t-digits-entrypoint", "", 0
	db.Now = func() time.Time { return r.now }
	if err := db.UpsertBenchmarks(context.Background(), []d5list.Benchmark{*r.bench}); err != nil {
		t.Fatal(err)
	}
	r.svc = New(db, nil, Config{LeaseTTL: time.Minute, RemeasureAfter: 10 * time.Second, RemeasureElsewhere: 30 * time.Second}, nil)
	t.Cleanup(r.svc.StopWaiting)
	return r
}

// runLog is one run's MLLOG: four epochs of epochS seconds each, the
// accuracies a function of the epoch alone, so that every seed reproduces.
func runLog(seed int64, epochS float64) []byte {
	lines := []string{
		fmt.Sprintf(`:::MLLOG {"time_ms": 0, "key": "seed", "value": %d}`, seed),
		`:::MLLOG {"time_ms": 0, "key": "run_start", "value": null}`,
	}
	for e, acc := range []float64{0.5, 0.8, 0.93, 0.95} {
		lines = append(lines, fmt.Sprintf(`:::MLLOG {"time_ms": %d, "key": "eval_accuracy", "value": %v, "metadata": {"epoch_num": %d}}`,
			int(float64(e+1)*epochS*1000), acc, e+1))
	}
	lines = append(lines, fmt.Sprintf(`:::MLLOG {"time_ms": %d, "key": "run_stop", "value": null, "metadata": {"status": "success"}}`, int(4*epochS*1000)+1))
	return []byte(strings.Join(lines, "\n") + "\n")
}

// submit stores a claim of five runs of epochS seconds an epoch.
func (r *remeasureRig) submit(t *testing.T, epochS float64) int64 {
	t.Helper()
	var logs []d5list.RunLog
	for i := range 5 {
		logs = append(logs, d5list.RunLog{Index: i, Seed: int64(100 + i), Log: runLog(int64(100+i), epochS)})
	}
	claimed, err := Measure(r.bench, logs)
	if err != nil {
		t.Fatal(err)
	}
	sub := &d5list.Submission{BenchmarkID: r.bench.ID, Division: d5list.DivisionOpen, Availability: d5list.AvailabilityAvailable,
		Submitter: "Lab", SystemName: "box", Framework: "go", HostCPU: "Test CPU", BundleSHA256: strings.Repeat("cd", 32), BundleSize: 1,
		Recipe: &d5list.Recipe{Fixed: r.bench.Division.Fixed, Mutable: r.bench.Division.Mutable}, Claimed: claimed}
	if err := r.db.CreateSubmission(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	return sub.ID
}

// online records runners as asking for work now.
func (r *remeasureRig) online(t *testing.T, runners ...string) {
	t.Helper()
	for _, name := range runners {
		if err := r.db.TouchRunner(context.Background(), name, rigLabels, 0); err != nil {
			t.Fatal(err)
		}
	}
}

func (r *remeasureRig) lease(t *testing.T, runner string) *d5list.Lease {
	t.Helper()
	l, err := r.svc.Lease(context.Background(), runner, rigLabels)
	if err != nil {
		t.Fatalf("lease by %s: %v", runner, err)
	}
	return l
}

// complete reports the leased runs: the claimed seeds' at a second an
// epoch, the fresh ones at the given seconds an epoch in turn (the runs of
// a noisy machine differ).
func (r *remeasureRig) complete(t *testing.T, l *d5list.Lease, fresh ...float64) {
	t.Helper()
	var logs []d5list.RunLog
	k := 0
	for _, run := range l.Spec.Runs() {
		e := 1.0
		if run.Fresh {
			e = fresh[k%len(fresh)]
			k++
		}
		logs = append(logs, d5list.RunLog{Index: run.Index, Seed: run.Seed, Fresh: run.Fresh, Log: runLog(run.Seed, e),
			Clock: &d5list.RunClock{CompetitorLog: true, LogS: 4*e + 0.001, WallS: 4*e + 0.1, CPUS: 4 * e}})
	}
	if err := r.svc.Complete(context.Background(), l.Job.ID, l.Secret, logs, rigLabels); err != nil {
		t.Fatalf("complete job %d: %v", l.Job.ID, err)
	}
}

func (r *remeasureRig) submission(t *testing.T, id int64) *d5list.Submission {
	t.Helper()
	sub, err := r.db.Submission(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return sub
}

func (r *remeasureRig) attempts(t *testing.T, id int64) []d5list.Attempt {
	t.Helper()
	as, err := r.db.Attempts(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return as
}

func hasFinding(rs []d5list.Reason, code string) bool {
	for _, r := range rs {
		if r.Code == code {
			return true
		}
	}
	return false
}

// A clock forged by 0.6: the first measurement's gap holds the verdict
// back, and the timed runs are measured again, later and by the other
// runner while it is online; the gap, seen again on a quiet runner,
// stands. Both measurements stay in the history.
func TestRemeasureConfirmsAGapOnAnotherRunner(t *testing.T) {
	r := newRemeasureRig(t)
	id := r.submit(t, 0.6)
	r.online(t, "a/1", "b/1")
	first := r.lease(t, "a/1")
	r.complete(t, first, 1.0)

	sub := r.submission(t, id)
	if sub.Status != d5list.StatusQueued || sub.Measured != nil || len(sub.Reasons) != 0 {
		t.Fatalf("after the first gap the entry is %s with %v, want queued with no verdict shown", sub.Status, sub.Reasons)
	}
	as := r.attempts(t, id)
	if len(as) != 2 || as[0].Status != d5list.StatusDiscrepancy || !hasFinding(as[0].Reasons, verifier.CodeTimingMismatch) ||
		as[0].Measured == nil || !as[0].Hidden || as[1].Job.Remeasure != 1 || as[1].Job.State != d5list.JobQueued {
		t.Fatalf("attempts %+v: want the first measurement archived (hidden, a gap) and a re-measure queued", as)
	}

	if l := r.lease(t, "a/1"); l != nil {
		t.Fatalf("job %d leased at once; a re-measure waits", l.Job.ID)
	}
	r.now = r.now.Add(11 * time.Second)
	r.online(t, "b/1")
	if l := r.lease(t, "a/1"); l != nil {
		t.Fatalf("runner a took its own re-measure while runner b was online")
	}
	again := r.lease(t, "b/1")
	if again == nil || again.Job.Remeasure != 1 || len(again.Spec.Seeds) != 0 || len(again.Spec.FreshSeeds) != r.bench.FreshRunCount() {
		t.Fatalf("runner b's lease %+v: want the re-measure, its fresh runs only", again)
	}
	r.complete(t, again, 1.0)

	sub = r.submission(t, id)
	if sub.Status != d5list.StatusDiscrepancy || !hasFinding(sub.Reasons, verifier.CodeTimingMismatch) {
		t.Fatalf("confirmed gap: %s %v, want a timing discrepancy", sub.Status, sub.Reasons)
	}
	if m := sub.Measured; m == nil || len(m.ClaimedSeedRuns()) != 5 || len(m.TimedRuns()) != 5 || m.Runs[5].Index != 5 ||
		m.Runs[5].GivenSeed != again.Spec.FreshSeeds[0] {
		t.Fatalf("measured %+v: want the first job's claimed seeds and the re-measure's fresh runs after them", sub.Measured)
	}
	if as := r.attempts(t, id); len(as) != 2 || as[1].Job.RunnerID != "b/1" || as[1].Job.State != d5list.JobDone {
		t.Fatalf("attempts %+v: want two, the second by runner b", as)
	}
}

// An honest claim whose first re-run ran on a machine 1.8 times slower
// than it measured: held back, measured again (by the same runner, the
// only one online), and verified; what ranks is the second measurement.
func TestRemeasureClearsAnHonestClaim(t *testing.T) {
	r := newRemeasureRig(t)
	id := r.submit(t, 1.0)
	r.online(t, "a/1")
	r.complete(t, r.lease(t, "a/1"), 1.8)
	r.now = r.now.Add(11 * time.Second)
	again := r.lease(t, "a/1")
	if again == nil {
		t.Fatal("no other runner is online, yet runner a may not re-measure")
	}
	r.complete(t, again, 1.05)
	sub := r.submission(t, id)
	if sub.Status != d5list.StatusVerified || len(sub.Reasons) != 0 {
		t.Fatalf("%s %v, want verified", sub.Status, sub.Reasons)
	}
	if want := 4.201; math.Abs(sub.Measured.Score.Value-want) > 1e-9 {
		t.Fatalf("measured score %v, want the re-measure's %v", sub.Measured.Score.Value, want)
	}
	timeline, err := r.svc.Timeline(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range timeline {
		found = found || (e.Kind == d5list.EventRemeasure && strings.Contains(e.Text, "measured again"))
	}
	if !found {
		t.Errorf("timeline %+v: no line says the verdict waited for another measurement", timeline)
	}
}

// A re-run too noisy to judge is measured again, as often as the benchmark
// allows; then an organiser decides.
func TestRemeasureTooNoisyThenReview(t *testing.T) {
	r := newRemeasureRig(t)
	id := r.submit(t, 1.0)
	r.online(t, "a/1")
	noisy := []float64{0.6, 0.8, 1.0, 1.3, 1.6}
	for i := range 1 + r.bench.Verify.RemeasureCount() {
		l := r.lease(t, "a/1")
		if l == nil || l.Job.Remeasure != i {
			t.Fatalf("measurement %d: lease %+v", i, l)
		}
		r.complete(t, l, noisy...)
		r.now = r.now.Add(time.Minute)
	}
	sub := r.submission(t, id)
	if sub.Status != d5list.StatusNeedsReview || !hasFinding(sub.Reasons, verifier.CodeTimingTooNoisy) {
		t.Fatalf("%s %v, want needs_review, too noisy", sub.Status, sub.Reasons)
	}
	if as := r.attempts(t, id); len(as) != 3 {
		t.Fatalf("%d attempts, want 3", len(as))
	}
	if l := r.lease(t, "a/1"); l != nil {
		t.Fatalf("a fourth measurement was queued: job %d", l.Job.ID)
	}
}
