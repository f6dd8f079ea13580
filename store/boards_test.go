package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// The indexed boards answer what the in-memory ranking answers, for every
// view, filter (one or several at once), search, order and page, on random
// submissions that went through the store's real write paths (upload,
// lease, verdict, review, re-run): ties in value, secondary value and
// time, systems spelt in two cases, claims never re-measured, flags (issue
// 15). So do the charts' summaries, and everything the writes kept (best
// rows, filtered best rows, counts, shares, fronts) is what electing the
// whole board again makes (issue 28).
func TestBoardIndexMatchesRanking(t *testing.T) {
	for seed := range uint64(3) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			t.Parallel()
			checkBoardIndex(t, seed)
		})
	}
}

// indexBenchmark is the benchmark of randomBoard.
func indexBenchmark() d5list.Benchmark {
	bench := testBenchmark("l2-index", nil)
	bench.Level = 2
	// Epochs to target is missing where the target was never reached: a
	// missing secondary value loses a tie.
	bench.Ranking = d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Secondary: d5list.MetricEpochsToTarget}
	bench.Verify.SameHardware = []string{"cpu_model"}
	return bench
}

// randomBoard stores indexBenchmark and 250 random submissions through the
// store's real write paths (upload, lease, verdict, review, re-run).
func randomBoard(t *testing.T, db *DB, clock *fakeClock, seed uint64) d5list.Benchmark {
	t.Helper()
	return randomBoardChecked(t, db, clock, seed, nil)
}

// randomBoardChecked is randomBoard calling check, where not nil, after
// the writes of every tenth submission.
func randomBoardChecked(t *testing.T, db *DB, clock *fakeClock, seed uint64, check func()) d5list.Benchmark {
	t.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(seed, 15))
	bench := indexBenchmark()
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{bench}); err != nil {
		t.Fatal(err)
	}
	pick := func(xs ...string) string { return xs[rng.IntN(len(xs))] }
	org := &d5list.User{Name: "olga", Role: d5list.RoleOrganiser}
	for i := range 250 {
		if check != nil && i%10 == 9 {
			check()
		}
		clock.Advance(time.Duration(rng.IntN(2)) * time.Second) // equal times happen
		value := float64(10 + rng.IntN(6))                      // so do equal values
		acc := 0.9 + 0.01*float64(rng.IntN(3))
		epochs := float64(rng.IntN(3) + 1)
		if epochs == 1 {
			epochs = -1
		}
		res := &d5list.Result{}
		for r := range 5 {
			res.Runs = append(res.Runs, d5list.RunMetrics{Index: r, Seed: int64(r), Converged: true, TimeToTrain: value,
				EpochsToTarget: epochs, FinalAccuracy: acc})
		}
		s := &d5list.Submission{BenchmarkID: bench.ID, Division: pick(d5list.DivisionClosed, d5list.DivisionOpen),
			Availability: pick(d5list.AvailabilityAvailable, d5list.AvailabilityPreview),
			Submitter:    pick("Lab A", "lab a", "Lab B", "Other Org"), SystemName: pick("box-1", "Box-1 ", "box-2", "rack"),
			Framework: pick("torch", "jax"), Accelerator: pick("", "NVIDIA H100", "AMD MI300X"), HostCPU: "cpu-x",
			Accelerators: rng.IntN(4), CostPerHour: []float64{0, 1.5, 3, 6, 12}[rng.IntN(5)],
			Claimed: res, Recipe: &d5list.Recipe{}}
		mustCreate(t, db, s)
		if i >= 240 {
			continue // left queued, the last few, so that each lease below takes the one just made
		}
		l := mustLease(t, db, "r", nil, time.Hour)
		if rng.IntN(10) == 0 {
			continue // left running
		}
		if l.Job.SubmissionID != s.ID {
			t.Fatalf("leased submission %d, want %d", l.Job.SubmissionID, s.ID)
		}
		measured := *res
		measured.Runs = append([]d5list.RunMetrics(nil), res.Runs...)
		for r := range measured.Runs {
			measured.Runs[r].TimeToTrain = value + float64(rng.IntN(3))
		}
		measured.Runner = map[string]string{"cpu_model": pick("cpu-x", "cpu-x", "cpu-y")}
		status := []d5list.Status{d5list.StatusVerified, d5list.StatusVerified, d5list.StatusVerified,
			d5list.StatusDiscrepancy, d5list.StatusNeedsReview}[rng.IntN(5)]
		if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, &measured, status, nil); err != nil {
			t.Fatal(err)
		}
		switch rng.IntN(10) {
		case 0:
			note := "checked by hand"
			if _, err := db.ApplyReview(ctx, d5list.ReviewChange{SubmissionID: s.ID, Actor: org, Action: d5list.ActionFlag,
				Note: note, Flag: &note, FromStatus: status, ToStatus: status}); err != nil {
				t.Fatal(err)
			}
		case 1:
			if _, err := db.ApplyReview(ctx, d5list.ReviewChange{SubmissionID: s.ID, Actor: org, Action: d5list.ActionRerun,
				FromStatus: status, ToStatus: d5list.StatusQueued, Rerun: true}); err != nil {
				t.Fatal(err)
			}
			l := mustLease(t, db, "r", nil, time.Hour)
			if err := db.CompleteJob(ctx, l.Job.ID, l.Secret, &measured, d5list.StatusVerified, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	return bench
}

// scoredRandomBoard is randomBoard on a new store, with its benchmark as
// stored, its submissions and their in-memory ranking.
func scoredRandomBoard(t *testing.T, seed uint64) (*DB, *d5list.Benchmark, []d5list.Submission, *leaderboard.Scored) {
	t.Helper()
	db, clock := newTestDB(t)
	ctx := context.Background()
	bench := randomBoardChecked(t, db, clock, seed, func() { compareKeptWithElection(t, db, indexBenchmark().ID) })
	compareKeptWithElection(t, db, indexBenchmark().ID)
	tx, err := db.read.Begin()
	if err != nil {
		t.Fatal(err)
	}
	kept := keptBoardState(t, tx, bench.ID)
	tx.Rollback()
	for _, kind := range []string{"best ", "filter ", "count ", "group ", "front "} {
		if !slices.ContainsFunc(slices.Collect(maps.Keys(kept)), func(k string) bool { return strings.HasPrefix(k, kind) }) {
			t.Fatalf("no %q rows kept: the random board should have some", kind)
		}
	}
	subs, err := db.Submissions(ctx, d5list.SubmissionFilter{BenchmarkID: bench.ID})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := db.Benchmark(ctx, bench.ID)
	if err != nil {
		t.Fatal(err)
	}
	return db, stored, subs, leaderboard.Score(stored, subs)
}

func checkBoardIndex(t *testing.T, seed uint64) {
	db, bench, subs, scored := scoredRandomBoard(t, seed)
	ctx := context.Background()
	boards := 0
	// compareBoard stops the test at the first difference; the deferred
	// log still runs then, and says how far the comparison got.
	defer func() {
		if t.Failed() {
			t.Logf("%d boards compared before the difference", boards)
		}
	}()
	for _, unverified := range []bool{false, true} {
		for _, all := range []bool{false, true} {
			for _, filter := range []leaderboard.Options{{}, {Division: "closed"}, {Accelerator: "nvidia h100"}, {Framework: "JAX "},
				{Division: "closed", Framework: "torch"}, {Division: "open", Availability: "preview", Accelerator: "amd mi300x"}} {
				for _, search := range []string{"", "lab a", "h100", "zzz"} {
					for _, sort := range []string{"", leaderboard.SortDate, leaderboard.SortSubmitter, leaderboard.SortSystem,
						leaderboard.SortScore, leaderboard.SortScoreReverse} {
						opt := filter
						opt.IncludeUnverified, opt.AllPerSystem, opt.Search, opt.Sort = unverified, all, search, sort
						compareBoard(t, db, bench.ID, opt, scored.Rank(opt))
						boards++
					}
				}
			}
		}
	}
	for _, unverified := range []bool{false, true} {
		compareSummary(t, db, bench.ID, unverified)
	}
	// One entry's rank, as the badge asks for it, on both default views.
	for _, best := range []bool{false, true} {
		want := map[int64]int{}
		for _, e := range scored.Rank(leaderboard.Options{AllPerSystem: !best}) {
			want[e.SubmissionID] = e.Rank
		}
		for _, sub := range subs {
			e, err := db.RankOf(ctx, bench.ID, sub.ID, best)
			if err != nil {
				t.Fatal(err)
			}
			switch {
			case e == nil && want[sub.ID] != 0:
				t.Fatalf("RankOf(%d, best %v): not listed, want rank %d", sub.ID, best, want[sub.ID])
			case e != nil && e.Rank != want[sub.ID]:
				t.Fatalf("RankOf(%d, best %v): rank %d, want %d", sub.ID, best, e.Rank, want[sub.ID])
			}
		}
	}
}

// compareKeptWithElection checks that what the writes kept of benchID's
// boards, one change at a time, is what one election of the whole board
// makes (as after a seeding or a rebuild; elected here in a transaction
// rolled back after, so that it leaves the writes' state to be checked
// again later): each system's best rows, its best rows under every set of
// filters, the counts, the shares' sums (performance within rounding) and
// the fronts. A count left at 0 is no count.
func compareKeptWithElection(t *testing.T, db *DB, benchID string) {
	t.Helper()
	tx, err := db.write.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	compareRankedWithRows(t, tx, benchID)
	kept := keptBoardState(t, tx, benchID)
	if err := electAllBestTx(context.Background(), tx, benchID); err != nil {
		t.Fatal(err)
	}
	compareRankedWithRows(t, tx, benchID)
	elected := keptBoardState(t, tx, benchID)
	for _, k := range slices.Sorted(maps.Keys(elected)) {
		if g, ok := kept[k]; !ok || math.Abs(g-elected[k]) > 1e-9*math.Max(1, math.Abs(elected[k])) {
			t.Fatalf("kept by the writes: %q = %v (%v), elected: %v", k, g, ok, elected[k])
		}
	}
	for _, k := range slices.Sorted(maps.Keys(kept)) {
		if _, ok := elected[k]; !ok {
			t.Fatalf("kept by the writes: %q = %v, which the election does not make", k, kept[k])
		}
	}
}

// compareRankedWithRows fails unless board_ranked holds exactly the best
// rows board_rows marks, each with its submission's owner and key.
func compareRankedWithRows(t *testing.T, tx *sql.Tx, benchID string) {
	t.Helper()
	const marked = `SELECT b.benchmark_id, v.best_all, b.k1, b.sec_missing, b.k2, b.created_at, b.submission_id, b.search, b.sort_submitter, b.sort_system, s.owner_id, s.submitter_key, b.entry
		FROM board_rows b JOIN (SELECT 0 AS best_all UNION ALL SELECT 1) v JOIN submissions s ON s.id = b.submission_id
		WHERE b.benchmark_id = ?1 AND ((v.best_all = 0 AND b.best_default = 1) OR (v.best_all = 1 AND b.best_all = 1))`
	const ranked = `SELECT * FROM board_ranked WHERE benchmark_id = ?1`
	var missing, extra, n int
	for _, c := range []struct {
		q string
		n *int
	}{{marked + ` EXCEPT ` + ranked, &missing}, {ranked + ` EXCEPT ` + marked, &extra}, {ranked, &n}} {
		if err := tx.QueryRow(`SELECT count(*) FROM (`+c.q+`)`, benchID).Scan(c.n); err != nil {
			t.Fatal(err)
		}
	}
	if missing != 0 || extra != 0 || n == 0 {
		t.Fatalf("board_ranked of %q: %d best rows missing, %d rows not best or out of date, %d rows", benchID, missing, extra, n)
	}
}

// keptBoardState is every kept row of benchID's boards, as a key naming
// the row and a number (1, a count, or a sum).
func keptBoardState(t *testing.T, tx *sql.Tx, benchID string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, q := range []string{
		`SELECT 'best ' || submission_id || ' ' || best_default || best_all, 1 FROM board_rows WHERE benchmark_id = ?1 AND (best_default OR best_all)`,
		`SELECT 'filter ' || view || ' ' || col || '=' || replace(val, char(0), '|') || ' ' || system_key || ': ' || submission_id, 1
			FROM board_filter_best WHERE benchmark_id = ?1`,
		`SELECT 'count ' || replace(view, char(0), '|'), n FROM board_counts WHERE benchmark_id = ?1 AND n != 0`,
		`SELECT 'group ' || view || ' ' || col || '=' || name || ' n', n FROM board_groups WHERE benchmark_id = ?1`,
		`SELECT 'group ' || view || ' ' || col || '=' || name || ' perf', perf FROM board_groups WHERE benchmark_id = ?1`,
		`SELECT 'front ' || view || ' ' || col || '=' || x || ': ' || submission_id || ' of ' || n || ' on ' || on_front, 1
			FROM board_fronts WHERE benchmark_id = ?1`,
		`SELECT 'record ' || view || ' ' || submission_id || ' ' || created_at || ' ' || k1, 1 FROM board_records WHERE benchmark_id = ?1`,
	} {
		rows, err := tx.Query(q, benchID)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var k string
			var v float64
			if err := rows.Scan(&k, &v); err != nil {
				t.Fatal(err)
			}
			out[k] = v
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func compareBoard(t *testing.T, db *DB, benchID string, opt leaderboard.Options, want []d5list.Entry) {
	t.Helper()
	ctx := context.Background()
	var got []d5list.Entry
	if err := db.EachBoardEntry(ctx, benchID, opt, func(e *d5list.Entry) error { got = append(got, *e); return nil }); err != nil {
		t.Fatal(err)
	}
	if a, b := entriesJSON(t, got), entriesJSON(t, want); a != b {
		t.Fatalf("%+v: the index gives\n%s\nthe ranking\n%s", opt, a, b)
	}
	for _, page := range [][2]int{{0, 7}, {7, 7}, {len(want) - 3, 7}} {
		off, n := max(page[0], 0), page[1]
		entries, total, err := db.BoardPage(ctx, benchID, opt, off, n)
		if err != nil {
			t.Fatal(err)
		}
		lo, hi := min(off, len(want)), min(off+n, len(want))
		if total != len(want) || entriesJSON(t, entries) != entriesJSON(t, want[lo:hi]) {
			t.Fatalf("%+v, rows %d..%d: the index gives %d of %d\n%s\nthe ranking\n%s", opt, off, off+n, len(entries), total,
				entriesJSON(t, entries), entriesJSON(t, want[lo:hi]))
		}
	}
}

func entriesJSON(t *testing.T, es []d5list.Entry) string {
	t.Helper()
	if es == nil {
		es = []d5list.Entry{}
	}
	b, err := json.Marshal(es)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A bulk load without indexes gives the schema back whole, and the boards
// read the loaded rows through the rebuilt indexes (issue 15's seeding).
func TestWithoutIndexesRestoresThem(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	indexes := func() string {
		rows, err := db.read.QueryContext(ctx, `SELECT name || ':' || sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL ORDER BY name`)
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		var out []string
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				t.Fatal(err)
			}
			out = append(out, s)
		}
		return fmt.Sprint(out)
	}
	before := indexes()
	bench, err := db.Benchmark(ctx, "l2-digits")
	if err != nil {
		t.Fatal(err)
	}
	subs := leaderboard.Synthetic(bench, 50, 10, SyntheticSubmitter, 1)
	err = db.WithoutIndexes(ctx, func() error {
		during := indexes()
		if during == before {
			t.Error("the indexes were not dropped during the load")
		}
		if !strings.Contains(during, "board_best_default:") || strings.Contains(during, "board_on_default:") {
			t.Errorf("indexes during the load: %s\nwant the best rows' partial indexes kept and the others dropped", during)
		}
		if _, err := db.AppendSynthetic(ctx, subs); err != nil {
			return err
		}
		// The indexes kept are those the load adds no entry to.
		var entered int
		if err := db.read.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM board_rows WHERE best_default = 1 OR best_all = 1)
			+ (SELECT count(*) FROM submissions WHERE bundle_sha256 != '' OR content_sha256 != '')`).Scan(&entered); err != nil {
			return err
		}
		if entered != 0 {
			t.Errorf("%d loaded rows are entries of an index kept during the load", entered)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.ElectBoards(ctx, bench.ID); err != nil {
		t.Fatal(err)
	}
	if after := indexes(); after != before {
		t.Fatalf("indexes after the load:\n%s\nbefore:\n%s", after, before)
	}
	entries, total, err := db.BoardPage(ctx, bench.ID, leaderboard.Options{}, 0, 100)
	if err != nil || total != 10 || len(entries) != 10 {
		t.Fatalf("the default board after the load: %d of %d (%v), want each of the 10 systems", len(entries), total, err)
	}
}

// checkAgainstScore compares the default and unverified boards of benchID,
// each system's best and every entry, plain, filtered, searched and
// sorted, with leaderboard.Score over the stored submissions.
func checkAgainstScore(t *testing.T, db *DB, benchID string) {
	t.Helper()
	ctx := context.Background()
	subs, err := db.Submissions(ctx, d5list.SubmissionFilter{BenchmarkID: benchID})
	if err != nil {
		t.Fatal(err)
	}
	bench, err := db.Benchmark(ctx, benchID)
	if err != nil {
		t.Fatal(err)
	}
	scored := leaderboard.Score(bench, subs)
	for _, unverified := range []bool{false, true} {
		for _, all := range []bool{false, true} {
			for _, opt := range []leaderboard.Options{{}, {Division: "closed"}, {Framework: "JAX "}, {Accelerator: "nvidia h100"},
				{Division: "open", Framework: "torch"}, {Search: "lab a"}, {Sort: leaderboard.SortDate}} {
				opt.IncludeUnverified, opt.AllPerSystem = unverified, all
				compareBoard(t, db, benchID, opt, scored.Rank(opt))
			}
		}
	}
}

// pendingRebuilds lists the benchmarks marked for a rebuild.
func pendingRebuilds(t *testing.T, db *DB) []string {
	t.Helper()
	rows, err := db.read.Query(`SELECT benchmark_id FROM board_rebuilds ORDER BY 1`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

// smallRebuildBatches makes a rebuild of randomBoard's 250 submissions
// take several batches, with hook between them.
func smallRebuildBatches(t *testing.T, hook func(benchID string, after int64) error) {
	batch := rebuildBatch
	rebuildBatch, rebuildHook = 40, hook
	t.Cleanup(func() { rebuildBatch, rebuildHook = batch, nil })
}

// changedRanking is indexBenchmark ranked otherwise: no secondary value,
// and timings from any runner count as re-measured, so that both the order
// and which entries the default board lists change.
func changedRanking() d5list.Benchmark {
	b := indexBenchmark()
	b.Ranking.Secondary = ""
	b.Verify.SameHardware = nil
	return b
}

// A rebuild stopped half way (a crash between two batches here) leaves
// its benchmark marked in the same transaction that changed the
// definition, and the next Open finishes it: the boards then rank as
// leaderboard.Score does under the new definition (issue 15).
func TestRebuildStoppedHalfWayIsFinishedAtOpen(t *testing.T) {
	db, clock := newTestDB(t)
	ctx := context.Background()
	randomBoard(t, db, clock, 7)
	crash := errors.New("crashed")
	batches := 0
	smallRebuildBatches(t, func(string, int64) error {
		batches++
		return crash
	})
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{changedRanking()}); !errors.Is(err, crash) {
		t.Fatalf("UpsertBenchmarks with a rebuild that crashes: %v, want the crash", err)
	}
	if batches != 1 {
		t.Fatalf("the rebuild stopped after %d batches, want 1", batches)
	}
	if got := pendingRebuilds(t, db); fmt.Sprint(got) != "[l2-index]" {
		t.Fatalf("pending rebuilds after the crash: %v, want [l2-index]", got)
	}
	rebuildHook = nil
	db.Close()
	db = openTestDB(t, db.Dir())
	db.Now = clock.Now
	if got := pendingRebuilds(t, db); len(got) != 0 {
		t.Fatalf("pending rebuilds after Open: %v, want none", got)
	}
	checkAgainstScore(t, db, "l2-index")
}

// A rebuild outlives the context of whoever started it (a console request
// whose browser left), and an upload and a verdict written between two of
// its batches neither break it (the upload's row is written again by a
// later batch) nor are overwritten by it.
func TestRebuildSurvivesCancelAndWrites(t *testing.T) {
	db, clock := newTestDB(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	randomBoard(t, db, clock, 8)
	// The submission the verdict goes to: uploaded now, leased before the
	// rebuild, judged during it.
	late := testSubmission("l2-index", 1, 2, 3)
	late.Submitter, late.SystemName = "Late Lab", "late-box"
	mustCreate(t, db, late)
	var l *d5list.Lease
	for {
		l = mustLease(t, db, "r", nil, time.Hour)
		if l.Job.SubmissionID == late.ID {
			break
		}
	}
	batches := 0
	smallRebuildBatches(t, func(string, int64) error {
		batches++
		if batches == 1 {
			cancel()
			upload := testSubmission("l2-index", 4, 5, 6)
			upload.SystemName = "uploaded during the rebuild"
			mustCreate(t, db, upload)
			measured := *late.Claimed
			measured.Runner = map[string]string{"cpu_model": "cpu-x"}
			if err := db.CompleteJob(context.Background(), l.Job.ID, l.Secret, &measured, d5list.StatusVerified, nil); err != nil {
				t.Fatal(err)
			}
		}
		return nil
	})
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{changedRanking()}); err != nil {
		t.Fatalf("UpsertBenchmarks, cancelled and written to during its rebuild: %v", err)
	}
	if batches < 2 {
		t.Fatalf("the rebuild took %d batches, want several", batches)
	}
	if got := pendingRebuilds(t, db); len(got) != 0 {
		t.Fatalf("pending rebuilds after the rebuild: %v, want none", got)
	}
	checkAgainstScore(t, db, "l2-index")
	if e, err := db.RankOf(context.Background(), "l2-index", late.ID, true); err != nil || e == nil {
		t.Fatalf("the verdict written during the rebuild is not on the board: %v, %v", e, err)
	}
}

// A database whose boards were never indexed (made before migration 0009)
// or lost their rows and counts is indexed at Open.
func TestBoardsBackfilledAtOpen(t *testing.T) {
	db, clock := newTestDB(t)
	randomBoard(t, db, clock, 9)
	for _, q := range []string{`DELETE FROM board_rows`, `DELETE FROM board_counts`} {
		if _, err := db.write.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	db = openTestDB(t, db.Dir())
	db.Now = clock.Now
	checkAgainstScore(t, db, "l2-index")
}

// Each system's best rows, in every view and under every filter, are
// elected again in one pass over the system index a slice of systems at a
// time (a slice of one system here, so that every boundary is crossed);
// a database indexed before board_filter_best existed (migration 0015)
// gets its filtered boards at Open.
func TestFilteredBestElectedInSlicesAndAtOpen(t *testing.T) {
	db, clock := newTestDB(t)
	ctx := context.Background()
	randomBoard(t, db, clock, 11)
	defer func(n int) { electionSlice = n }(electionSlice)
	electionSlice = 1
	if err := db.ElectBoards(ctx, "l2-index"); err != nil {
		t.Fatal(err)
	}
	checkAgainstScore(t, db, "l2-index")

	if _, err := db.write.Exec(`DELETE FROM board_filter_best`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	db = openTestDB(t, db.Dir())
	db.Now = clock.Now
	var n int
	if err := db.read.QueryRow(`SELECT count(*) FROM board_filter_best`).Scan(&n); err != nil || n == 0 {
		t.Fatalf("board_filter_best holds %d rows after Open (%v), want the filtered boards elected again", n, err)
	}
	checkAgainstScore(t, db, "l2-index")
}

// paretoFront is the front templates.ParetoChart draws from candidates:
// by x (0 left out), the best value first among equal x, each entry that
// beats every one before it. It gives the entries' ids in x order.
func paretoFront(candidates []d5list.Entry, x func(d5list.Entry) float64, dir d5list.Direction) []int64 {
	var pts []d5list.Entry
	for _, e := range candidates {
		if x(e) > 0 {
			pts = append(pts, e)
		}
	}
	slices.SortStableFunc(pts, func(a, b d5list.Entry) int {
		if x(a) != x(b) {
			return cmp.Compare(x(a), x(b))
		}
		if dir.Better(a.Value, b.Value) {
			return -1
		} else if dir.Better(b.Value, a.Value) {
			return 1
		}
		return 0
	})
	var front []int64
	var best float64
	for i, e := range pts {
		if i == 0 || dir.Better(e.Value, best) {
			front, best = append(front, e.SubmissionID), e.Value
		}
	}
	return front
}

func accelerators(e d5list.Entry) float64 { return float64(e.Accelerators) }
func costPerHour(e d5list.Entry) float64  { return e.CostPerHour }

// compareSummary checks the index's summary of a board against
// leaderboard.SummaryOf of the same board ranked in memory: the same
// total and top entries, the same Pareto fronts as the charts draw them,
// the same shares, and as filter choices the names that any board lists.
func compareSummary(t *testing.T, db *DB, benchID string, unverified bool) {
	t.Helper()
	ctx := context.Background()
	subs, err := db.Submissions(ctx, d5list.SubmissionFilter{BenchmarkID: benchID})
	if err != nil {
		t.Fatal(err)
	}
	bench, err := db.Benchmark(ctx, benchID)
	if err != nil {
		t.Fatal(err)
	}
	scored := leaderboard.Score(bench, subs)
	want := leaderboard.SummaryOf(&d5list.Leaderboard{Benchmark: *bench, Entries: scored.Rank(leaderboard.Options{IncludeUnverified: unverified})})
	listed := leaderboard.SummaryOf(&d5list.Leaderboard{Benchmark: *bench,
		Entries: scored.Rank(leaderboard.Options{IncludeUnverified: true, AllPerSystem: true})})
	got, err := db.BoardSummary(ctx, benchID, unverified)
	if err != nil {
		t.Fatal(err)
	}
	where := fmt.Sprintf("summary (unverified %v)", unverified)
	if got.Total != want.Total || entriesJSON(t, got.Top) != entriesJSON(t, want.Top) {
		t.Fatalf("%s: total %d and top\n%s\nwant %d and\n%s", where, got.Total, entriesJSON(t, got.Top), want.Total, entriesJSON(t, want.Top))
	}
	if got.WithAccelerators != want.WithAccelerators || got.WithCost != want.WithCost {
		t.Fatalf("%s: %d entries with accelerators and %d with a price, want %d and %d", where,
			got.WithAccelerators, got.WithCost, want.WithAccelerators, want.WithCost)
	}
	dir := bench.Ranking.Direction
	if dir == "" {
		dir = d5list.LowerIsBetter
	}
	for _, f := range []struct {
		name      string
		got, want []d5list.Entry
		x         func(d5list.Entry) float64
	}{{"accelerators", got.ParetoAccelerators, want.ParetoAccelerators, accelerators}, {"cost", got.ParetoCost, want.ParetoCost, costPerHour}} {
		if g, w := paretoFront(f.got, f.x, dir), paretoFront(f.want, f.x, dir); !slices.Equal(g, w) || len(w) == 0 {
			t.Fatalf("%s: the Pareto front against %s is %v, want %v", where, f.name, g, w)
		}
	}
	for _, s := range []struct {
		name      string
		got, want []leaderboard.Share
	}{{"vendors", got.Vendors, want.Vendors}, {"frameworks", got.Frameworks, want.Frameworks}} {
		if len(s.got) != len(s.want) {
			t.Fatalf("%s: shares by %s %+v, want %+v", where, s.name, s.got, s.want)
		}
		for i := range s.want {
			g, w := s.got[i], s.want[i]
			if g.Group != w.Group || g.Entries != w.Entries || math.Abs(g.EntryShare-w.EntryShare) > 1e-9 || math.Abs(g.Performance-w.Performance) > 1e-9 {
				t.Fatalf("%s: shares by %s %+v, want %+v", where, s.name, s.got, s.want)
			}
		}
	}
	for _, n := range []struct {
		name      string
		got, want []string
	}{{"accelerator", got.AcceleratorNames, listed.AcceleratorNames}, {"framework", got.FrameworkNames, listed.FrameworkNames}} {
		w := slices.Sorted(slices.Values(n.want))
		if !slices.Equal(n.got, w) {
			t.Fatalf("%s: %s names %q, want %q", where, n.name, n.got, w)
		}
	}
}

// The charts' summary made by aggregate queries over the index equals the
// one made from the board ranked in memory, on random boards, for the
// default board and the one that lists unverified entries.
func TestBoardSummaryMatchesSummaryOf(t *testing.T) {
	for seed := range uint64(2) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			db, clock := newTestDB(t)
			bench := randomBoard(t, db, clock, 20+seed)
			for _, unverified := range []bool{false, true} {
				compareSummary(t, db, bench.ID, unverified)
			}
		})
	}
}

// With more prices, accelerator names and frameworks than a summary's
// queries return, the front still holds the best entry on the board,
// which declares the highest price (a bound on the prices in price order
// dropped it), and the shares still add up to every entry, the rarest
// names summed as "others".
func TestBoardSummaryBoundKeepsFrontAndShares(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	bench, err := db.Benchmark(ctx, "l2-digits")
	if err != nil {
		t.Fatal(err)
	}
	subs := leaderboard.Synthetic(bench, 12, 12, SyntheticSubmitter, 1)
	names := []string{"Alpha X1", "Alpha X1", "Alpha X1", "Alpha X1", "Beta X2", "Beta X2", "Beta X2", "Gamma", "Gamma", "Delta", "Delta", "Epsilon"}
	for i := range subs {
		s := &subs[i]
		// The cheapest is good, the dearest the best, all between worse.
		value := 30.0
		switch i {
		case 0:
			value = 20
		case len(subs) - 1:
			value = 10
		}
		for r := range s.Claimed.Runs {
			s.Claimed.Runs[r].TimeToTrain = value
		}
		s.CostPerHour, s.Accelerator, s.Accelerators = float64(i+1), names[i], i%3+1
	}
	if err := db.InsertSynthetic(ctx, subs); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { maxSummaryGroups = n }(maxSummaryGroups)
	maxSummaryGroups = 3
	sum, err := db.BoardSummary(ctx, bench.ID, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := paretoFront(sum.ParetoCost, costPerHour, d5list.LowerIsBetter); !slices.Equal(got, []int64{subs[0].ID, subs[11].ID}) {
		t.Fatalf("the front against price: %v, want the cheapest and the dearest, %v", got, []int64{subs[0].ID, subs[11].ID})
	}
	if sum.WithCost != 12 {
		t.Fatalf("%d entries with a price, want 12", sum.WithCost)
	}
	for _, s := range []struct {
		name   string
		shares []leaderboard.Share
		want   string
	}{
		{"vendors", sum.Vendors, "[Alpha:4 Beta:3 others:3 Delta:2]"},
		{"frameworks", sum.Frameworks, "[jax:3 numpy:3 others:3 tensorflow:3]"},
	} {
		var got []string
		share := 0.0
		for _, g := range s.shares {
			got = append(got, fmt.Sprintf("%s:%d", g.Group, g.Entries))
			share += g.EntryShare
		}
		if fmt.Sprint(got) != s.want || math.Abs(share-1) > 1e-9 {
			t.Fatalf("shares by %s: %v (summing to %v), want %s", s.name, got, share, s.want)
		}
	}
}

// BenchmarkBoardPageFiltered is one page of a filtered board of 20,000
// synthetic entries (each its own system), the first and a deep one: the
// window functions pass over the index rows of the board, and only the
// page's rows are joined to their submissions.
func BenchmarkBoardPageFiltered(b *testing.B) {
	ctx := context.Background()
	db, err := Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	bench := testBenchmark("l2-bench", nil)
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{bench}); err != nil {
		b.Fatal(err)
	}
	if err := db.InsertSynthetic(ctx, leaderboard.Synthetic(&bench, 20000, 20000, SyntheticSubmitter, 1)); err != nil {
		b.Fatal(err)
	}
	for _, offset := range []int{0, 4000} {
		b.Run(fmt.Sprint("offset ", offset), func(b *testing.B) {
			for b.Loop() {
				entries, total, err := db.BoardPage(ctx, bench.ID, leaderboard.Options{Framework: "torch"}, offset, 50)
				if err != nil || len(entries) != 50 || total != 5000 {
					b.Fatalf("%d entries of %d: %v", len(entries), total, err)
				}
			}
		})
	}
}

// Saving several changed definitions at once rebuilds each benchmark
// once: UpsertBenchmarks's one RebuildBoards finishes every marked one.
func TestUpsertRebuildsEachBenchmarkOnce(t *testing.T) {
	db, clock := newTestDB(t)
	ctx := context.Background()
	randomBoard(t, db, clock, 10)
	subs, err := db.Submissions(ctx, d5list.SubmissionFilter{BenchmarkID: "l2-index"})
	if err != nil {
		t.Fatal(err)
	}
	batches := 0
	smallRebuildBatches(t, func(benchID string, _ int64) error {
		if benchID == "l2-index" {
			batches++
		}
		return nil
	})
	other := testBenchmark("l2-other", nil)
	other.Name = "changed"
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{other, changedRanking()}); err != nil {
		t.Fatal(err)
	}
	if want := len(subs) / rebuildBatch; batches != want {
		t.Fatalf("%d batches of l2-index rebuilt, want %d: one rebuild", batches, want)
	}
	checkAgainstScore(t, db, "l2-index")
}

// A rebuild rewrites only the rows it derives otherwise: marked again with
// an unchanged definition (as a migration marks a board for a field few
// rows change), it writes no row; after a change of ranking, it rewrites
// rows and the board ranks as leaderboard.Score does.
func TestRebuildRewritesOnlyTheRowsItChanges(t *testing.T) {
	db, clock := newTestDB(t)
	ctx := context.Background()
	randomBoard(t, db, clock, 11)
	// A temporary trigger lives on the one write connection the rebuild
	// uses, and counts the rows whose derived columns it rewrites.
	for _, q := range []string{
		`CREATE TEMP TABLE rewritten (submission_id INTEGER)`,
		`CREATE TEMP TRIGGER count_rewrites AFTER UPDATE OF entry ON board_rows BEGIN
			INSERT INTO rewritten VALUES (new.submission_id); END`,
	} {
		if _, err := db.write.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	rewritten := func() int {
		var n int
		if err := db.write.QueryRowContext(ctx, `SELECT count(*) FROM rewritten`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if _, err := db.write.ExecContext(ctx, `INSERT INTO board_rebuilds (benchmark_id, generation) VALUES ('l2-index', 1)
		ON CONFLICT (benchmark_id) DO UPDATE SET generation = generation + 1`); err != nil {
		t.Fatal(err)
	}
	if err := db.RebuildBoards(ctx); err != nil {
		t.Fatal(err)
	}
	if n := rewritten(); n != 0 {
		t.Fatalf("a rebuild under the same definition rewrote %d rows, want none", n)
	}
	checkAgainstScore(t, db, "l2-index")
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{changedRanking()}); err != nil {
		t.Fatal(err)
	}
	if n := rewritten(); n == 0 {
		t.Fatal("a rebuild under a new ranking rewrote no row")
	}
	checkAgainstScore(t, db, "l2-index")
}

// queryPlan is SQLite's plan for q on the read pool, its steps joined by
// "; ".
func queryPlan(t *testing.T, db *DB, q string, args ...any) string {
	t.Helper()
	rows, err := db.read.Query(`EXPLAIN QUERY PLAN `+q, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return strings.Join(plan, "; ")
}

// A rebuild's batch reads its rows from an index in id order: a batch
// that sorted the benchmark's every submission made a rebuild quadratic.
func TestRebuildBatchesWalkAnIndex(t *testing.T) {
	db, _ := newTestDB(t)
	text := queryPlan(t, db, submissionsAfter, "l2-index", 0, 10)
	if !strings.Contains(text, "USING INDEX submissions_by_benchmark_id (benchmark_id=? AND id>?)") || strings.Contains(text, "TEMP B-TREE") {
		t.Fatalf("a rebuild batch's plan: %s", text)
	}
}
