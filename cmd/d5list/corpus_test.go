package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/internal/slowtest"
	"github.com/deep500/d5list/stats"
	"github.com/deep500/d5list/store"
	"github.com/deep500/d5list/verifier"
)

// TestVerifierCorpus is issue 5's "done when": one honest submission made
// with `d5list init` and `d5list run`, copies of it altered the ways a
// competitor might cheat, each judged by the real portal. Some alterations
// break a rule the upload checks enforce and are refused with 400 before
// anything runs; the others pass those checks (the logs are consistent in
// themselves) and are caught by comparing them with the portal's re-run.
// Every verdict must carry a reason naming the altered run (or, where no
// run is at fault, the file). The honest submission is verified, also when
// its re-run shares the CPU with a busy loop.
func TestVerifierCorpus(t *testing.T) {
	slowtest.Require(t, "two minutes of honest and forged claims judged on the re-run's times, one beside a busy loop")
	start := time.Now()
	p := startPortal(t, 2)
	// One measurement again, not the catalogue's two: each forged clock
	// below is a gap every measurement shows, and each measurement is a
	// job of seven runs.
	editVerifyPolicy(t, p, "l2-digits-mlp-cpu", func(v *d5list.VerifyPolicy) { v.Remeasures = 1 })
	work := t.TempDir()
	honest := filepath.Join(work, "honest")
	ctx := context.Background()
	if err := run(ctx, []string{"init", "l2-digits-mlp-cpu", honest, "--submitter", "Corpus Lab"}, io.Discard, io.Discard); err != nil {
		t.Fatalf("init: %v", err)
	}
	// Six runs: the honest submission is the first five, and a cheater
	// drops one of them and moves the sixth up.
	if err := run(ctx, []string{"run", "--runs", "6", honest}, io.Discard, io.Discard); err != nil {
		t.Fatalf("run: %v", err)
	}
	t.Logf("d5list run: %s", time.Since(start).Round(time.Millisecond))
	logFile := func(dir string, i int) string {
		return filepath.Join(dir, "results", "result_"+strconv.Itoa(i)+".txt")
	}
	six := filepath.Join(work, "six")
	copyDir(t, honest, six)
	if err := os.Remove(logFile(honest, 5)); err != nil {
		t.Fatal(err)
	}
	variant := func(name string, edit func(dir string)) string {
		dir := filepath.Join(work, name)
		copyDir(t, honest, dir)
		edit(dir)
		return dir
	}

	// The honest submission is re-run first. Its re-run, corrected for
	// waits, is what this CPU does; the timing forgeries below claim a fixed
	// fraction of that, not of the honest logs, which were written by
	// `d5list run` on a CPU that other tests may have been sharing (a claim
	// made under load is slower than the hardware, and a forgery of it only
	// as fast).
	code, honestID, e := p.postBundle(t, honest)
	if code/100 != 2 {
		t.Fatalf("honest upload refused %d: %s", code, reasonsText(e.Error.Reasons))
	}
	honestSub := p.honestVerdict(t, honestID)
	logRatios(t, honestSub)
	if honestSub.Status != d5list.StatusVerified {
		t.Fatalf("honest submission ended %s, want verified (the re-run with the same seeds reproduces every accuracy exactly and runs as fast): %s",
			honestSub.Status, reasonsText(honestSub.Reasons))
	}
	pace := claimedPace(t, honestSub)
	t.Logf("the honest logs took %.3f of their re-run's corrected time", pace)

	// Accepted at upload, judged by the re-run.
	type rerunCase struct {
		name   string
		dir    string
		status d5list.Status
		code   string // a reason with this code (or one of "a|b") ...
		run    int    // ... naming this run (-1: submission-wide, no run)
		why    string
	}
	var epoch float64
	_, slowest := runExtremes(t, honest)
	reruns := []rerunCase{
		{"accuracy raised in one epoch", variant("accuracy", func(dir string) {
			epoch = raiseFirstAccuracy(t, logFile(dir, 2))
		}), d5list.StatusDiscrepancy, "accuracy_mismatch", 2,
			"the log stays consistent, so only the deterministic re-run (accuracy tolerance 0) shows run 2's curve was edited"},
		{"every timestamp compressed", variant("compressed", func(dir string) {
			// The whole timeline from the first run_start on, so the runs
			// stay consecutive and the upload checks pass: the sed one-liner
			// of a forger who wants a 40 % faster clock.
			_, evs := mllogLines(t, logFile(dir, 0))
			origin := eventTime(t, evs, "run_start")
			for i := range 5 {
				scaleTimes(t, logFile(dir, i), origin, 0.5/pace)
			}
		}), d5list.StatusDiscrepancy, "timing_mismatch", -1,
			"every time after the first run_start scaled to half the re-run's pace keeps the logs ordered and the runs consecutive; the olympic mean is then half the re-run's on the same CPU, beyond the drift allowed (25 %), the catalogue's precision (10 %) and the noise the re-run measured, by more than another re-run's noise on a busy machine"},
		{"only the runs the olympic drop keeps sped up", variant("kept", func(dir string) {
			f := keptSpeedup(t, dir, 0.5/pace)
			t.Logf("the runs the olympic drop keeps, scaled to %.3f of the honest logs' times", f)
			for _, i := range keptRuns(t, dir) {
				_, evs := mllogLines(t, logFile(dir, i))
				scaleTimes(t, logFile(dir, i), eventTime(t, evs, "init_start"), f)
			}
			closeGaps(t, dir)
		}), d5list.StatusDiscrepancy, "timing_mismatch|run_timing_mismatch|epoch_time_mismatch", -1,
			"the fastest and the slowest run are left as they were and the other three sped up until the olympic mean is half the re-run's: " +
				"sped up, they take the fastest run's place in the drop, so the fastest run counts in the mean and they go further than half"},
		{"a faster clock on the evaluations only", variant("evals", func(dir string) {
			for i := range 5 {
				scaleInsideRun(t, logFile(dir, i), 0.3/pace)
			}
		}), d5list.StatusDiscrepancy, "epoch_time_mismatch", anyRun,
			"every event between run_start and run_stop scaled to 0.3 of the re-run's pace, run_stop kept: the time to train is honest but the time to accuracy is not; each run's evaluations come faster than the re-run's epochs, beyond the bound of one run (drift, twice the precision and twice the spread of a busy machine's re-run)"},
		{"a run duplicated under another seed", variant("duplicate", func(dir string) {
			duplicateRun(t, logFile(dir, fastestConverged(t, dir, slowest)), logFile(dir, slowest), 1234567)
			closeGaps(t, dir)
		}), d5list.StatusDiscrepancy, "accuracy_mismatch", slowest,
			"the fastest run's log copied over the slowest with a fresh seed, its times moved into that slot and the later runs moved up to close the hole, passes the upload checks; re-run with that seed, the run trains differently"},
	}

	// Dropping the very first run leaves no gap to see (nothing precedes
	// it), so the cheater of the best-five-of-six case drops the slowest
	// of runs 1..4.
	dropped := slowestAfterFirst(t, honest)

	// Refused at upload: each breaks a rule checkable from the bundle alone.
	type uploadCase struct {
		name string
		dir  string
		code string
		file string
		run  int // -1: the rule is not about one run
		why  string
	}
	uploads := []uploadCase{
		{"run_start moved later", variant("late-start", func(dir string) {
			moveRunStart(t, logFile(dir, 3))
		}), "time_backwards", "results/result_3.txt", 3,
			"run_start follows init_stop and precedes the first epoch at the same millisecond; moving it later leaves the next event earlier than it"},
		{"slowest run dropped and the rest renumbered", func() string {
			dir := filepath.Join(work, "dropped")
			copyDir(t, six, dir)
			if err := os.Remove(logFile(dir, dropped)); err != nil {
				t.Fatal(err)
			}
			for i := dropped + 1; i < 6; i++ {
				if err := os.Rename(logFile(dir, i), logFile(dir, i-1)); err != nil {
					t.Fatal(err)
				}
			}
			return dir
		}(), "run_gap", "results/result_" + strconv.Itoa(dropped) + ".txt", dropped,
			"best five of six: the dropped run leaves a pause of a whole run (seconds) before the run moved into its slot, beyond the benchmark's max_run_gap_s of 0.5 s"},
		{"slowest run dropped, the rest renumbered, one run short", variant("short", func(dir string) {
			if err := os.Remove(logFile(dir, slowest)); err != nil {
				t.Fatal(err)
			}
			for i := slowest + 1; i < 5; i++ {
				if err := os.Rename(logFile(dir, i), logFile(dir, i-1)); err != nil {
					t.Fatal(err)
				}
			}
		}), "wrong_run_count", "results/", -1,
			"the benchmark needs exactly 5 runs"},
		{"fixed component changed in the closed division", variant("fixed", func(dir string) {
			editFile(t, filepath.Join(dir, "recipe.yaml"), "hidden: 64", "hidden: 128")
		}), "recipe_fixed_mismatch", "recipe.yaml", -1,
			"model_kwargs is fixed in the closed division"},
		{"claim disagrees with the logs", variant("claim", func(dir string) {
			setClaim(t, filepath.Join(dir, "submission.json"), d5list.MetricTimeToTrain, olympicTime(t, honest)*0.8)
		}), "claim_mismatch", "submission.json", -1,
			"submission.json claims a time to train 20 % below the olympic mean of its own logs"},
	}

	for _, u := range uploads {
		t.Run("upload/"+u.name, func(t *testing.T) {
			code, _, e := p.postBundle(t, u.dir)
			if code != http.StatusBadRequest || e.Error.Code != d5list.EINVALID {
				t.Fatalf("got %d %+v, want 400 invalid (%s)", code, e, u.why)
			}
			if !hasReason(e.Error.Reasons, u.code, u.file, u.run) {
				t.Fatalf("no %s reason naming %s run %d (%s): %s", u.code, u.file, u.run, u.why, reasonsText(e.Error.Reasons))
			}
		})
	}

	ids := map[string]int64{}
	for _, c := range reruns {
		code, id, e := p.postBundle(t, c.dir)
		if code != http.StatusCreated && code != http.StatusOK && code != http.StatusAccepted {
			t.Fatalf("%s: upload refused %d: %s", c.name, code, reasonsText(e.Error.Reasons))
		}
		ids[c.name] = id
	}
	verdicts := map[string]submissionJSON{}
	for _, c := range reruns {
		t.Run("rerun/"+c.name, func(t *testing.T) {
			got := p.forgedVerdict(t, ids[c.name])
			verdicts[c.name] = got
			if got.Status != c.status {
				t.Fatalf("ended %s, want %s (%s): %s", got.Status, c.status, c.why, reasonsText(got.Reasons))
			}
			if c.code != "" && !slices.ContainsFunc(strings.Split(c.code, "|"), func(code string) bool {
				run := c.run
				if code == verifier.CodeRunTimingMismatch || code == verifier.CodeEpochTimeMismatch {
					run = anyRun
				}
				return hasReason(got.Reasons, code, "", run)
			}) {
				t.Fatalf("no %s reason naming run %d (%s): %s", c.code, c.run, c.why, reasonsText(got.Reasons))
			}
			logRatios(t, got)
		})
	}
	if e := verdicts["accuracy raised in one epoch"]; !hasEpochReason(e.Reasons, 2, epoch) {
		t.Errorf("the accuracy reason does not name run 2, epoch %v: %s", epoch, reasonsText(e.Reasons))
	}
	t.Logf("corpus verdicts: %s", time.Since(start).Round(time.Millisecond))

	// The board ranks what the portal measured: the honest entry is listed
	// with its re-run's olympic mean and its claim beside it, and no forged
	// copy is listed, let alone above it.
	t.Run("the board ranks the measured value", func(t *testing.T) {
		var board d5list.Leaderboard
		if code, e := p.call(t, http.MethodGet, "/api/v1/leaderboards/l2-digits-mlp-cpu?rows=all", "", nil, &board); code != 200 {
			t.Fatalf("board: %d %+v", code, e)
		}
		if len(board.Entries) != 1 || board.Entries[0].SubmissionID != honestID {
			t.Fatalf("board %+v, want only the honest submission %d", board.Entries, honestID)
		}
		e := board.Entries[0]
		if e.Basis != d5list.BasisMeasured || honestSub.Measured == nil ||
			math.Abs(e.Value-honestSub.Measured.Score.Value) > 1e-9 || math.Abs(e.Claimed-honestSub.Claimed.Score.Value) > 1e-9 {
			t.Fatalf("entry %+v, want the measured olympic mean %v with the claimed %v beside it", e, honestSub.Measured.Score.Value, honestSub.Claimed.Score.Value)
		}
	})

	t.Run("honest re-run beside a CPU-heavy process", func(t *testing.T) {
		busy := exec.Command("sh", "-c", "while :; do :; done")
		if err := busy.Start(); err != nil {
			t.Fatal(err)
		}
		defer func() {
			_ = busy.Process.Kill()
			_ = busy.Wait()
		}()
		code, id, e := p.postBundle(t, honest)
		if code/100 != 2 {
			t.Fatalf("upload refused %d: %s", code, reasonsText(e.Error.Reasons))
		}
		got := p.honestVerdict(t, id)
		logRatios(t, got)
		if got.Status != d5list.StatusVerified {
			t.Fatalf("honest submission beside a busy loop ended %s: %s", got.Status, reasonsText(got.Reasons))
		}
	})

	// Rescore all: after the rules change, stored claims and re-runs are
	// judged again without training. A timing precision of 3 accepts claims
	// down to 1 / (1 + 0.25 + 3) = 0.24 of the measure, so the compressed copy
	// passes; the edited accuracy and the duplicated run still do not.
	t.Run("rescore after a rules change", func(t *testing.T) {
		org := p.organiserToken(t, "rita")
		if code, _ := p.call(t, http.MethodPost, "/api/v1/benchmarks/l2-digits-mlp-cpu/rescore", p.token, nil, nil); code != 403 {
			t.Fatalf("rescore with a competitor token: %d, want 403", code)
		}
		editVerifyPolicy(t, p, "l2-digits-mlp-cpu", func(v *d5list.VerifyPolicy) { v.TimingPrecision = 3 })
		var rep d5list.RescoreReport
		if code, e := p.call(t, http.MethodPost, "/api/v1/benchmarks/l2-digits-mlp-cpu/rescore", org, nil, &rep); code != 200 {
			t.Fatalf("rescore: %d %+v", code, e)
		}
		compressed := ids["every timestamp compressed"]
		changed := map[int64]d5list.AuditEntry{}
		for _, e := range rep.Changed {
			changed[e.SubmissionID] = e
		}
		for _, id := range []int64{ids["accuracy raised in one epoch"], ids["a run duplicated under another seed"]} {
			if _, ok := changed[id]; ok {
				t.Fatalf("rescore changed submission %d, whose accuracy differs from its re-run: %+v", id, changed[id])
			}
			if a := p.audit(t, id); len(a.Entries) != 0 || a.Status != d5list.StatusDiscrepancy {
				t.Fatalf("submission %d after rescore: %s %+v", id, a.Status, a.Entries)
			}
		}
		if v := verdicts["every timestamp compressed"]; v.Status != d5list.StatusDiscrepancy {
			skipForNoise(t, "the compressed copy ended %q, not a discrepancy, on this noisy host: no rescore of its times to check", v.Status)
		}
		if e, ok := changed[compressed]; !ok || e.FromStatus != d5list.StatusDiscrepancy || e.ToStatus != d5list.StatusVerified {
			t.Fatalf("rescore changed %+v, want submission %d discrepancy -> verified", rep.Changed, compressed)
		}
		// An organiser's re-run of a too-noisy measurement may precede it.
		a := p.audit(t, compressed)
		if n := len(a.Entries); n == 0 || a.Entries[n-1].Action != d5list.ActionRescore || a.Entries[n-1].Actor != "rita" {
			t.Fatalf("audit of the rescored submission: %+v", a.Entries)
		}
	})
	t.Logf("corpus total: %s", time.Since(start).Round(time.Millisecond))
}

// editVerifyPolicy changes how the portal p verifies a benchmark, as an
// organiser editing its catalogue entry does.
func editVerifyPolicy(t *testing.T, p *portalUnderTest, benchmark string, edit func(*d5list.VerifyPolicy)) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, p.data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bench, err := db.Benchmark(ctx, benchmark)
	if err != nil {
		t.Fatal(err)
	}
	edit(&bench.Verify)
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{*bench}); err != nil {
		t.Fatal(err)
	}
}

// postBundle packs dir and uploads it as the competitor.
func (p *portalUnderTest) postBundle(t *testing.T, dir string) (int, int64, reviewAPIError) {
	t.Helper()
	var buf bytes.Buffer
	if err := bundle.Pack(dir, &buf); err != nil {
		t.Fatalf("pack %s: %v", dir, err)
	}
	req, _ := http.NewRequest(http.MethodPost, p.url+"/api/v1/submissions", &buf)
	req.Header.Set("Content-Type", "application/gzip")
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	var e reviewAPIError
	var s struct {
		ID int64 `json:"id"`
	}
	if resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(data, &s); err != nil {
			t.Fatalf("upload answer %q: %v", data, err)
		}
	} else if err := json.Unmarshal(data, &e); err != nil {
		t.Fatalf("upload answer %q: %v", data, err)
	}
	return resp.StatusCode, s.ID, e
}

// anyRun asks hasReason for a reason naming some run, whichever.
const anyRun = -2

// hasReason reports whether rs holds a reason with code (and file, if
// given) that names run in its Run field and in its message or file; run
// -1 accepts a reason about no run in particular.
func hasReason(rs []d5list.Reason, code, file string, run int) bool {
	for _, r := range rs {
		if r.Code != code || (file != "" && r.File != file) {
			continue
		}
		if run == -1 {
			return true
		}
		if r.Run == nil || (run != anyRun && *r.Run != run) {
			continue
		}
		n := strconv.Itoa(*r.Run)
		if strings.Contains(r.Message, "run "+n) || r.File == "results/result_"+n+".txt" {
			return true
		}
	}
	return false
}

func hasEpochReason(rs []d5list.Reason, run int, epoch float64) bool {
	for _, r := range rs {
		if r.Run != nil && *r.Run == run && r.Epoch != nil && *r.Epoch == epoch {
			return true
		}
	}
	return false
}

func reasonsText(rs []d5list.Reason) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "\n  [%s] %s:%d %s", r.Code, r.File, r.Line, r.Message)
	}
	return b.String()
}

// claimedPace is how long an epoch of the logs of s took against one of
// its re-run's timed runs, both as olympic means, the re-run's corrected
// for the time it waited for a CPU: the comparison of the timing verdict,
// whose timed runs' fresh seeds train for other numbers of epochs than
// the claimed ones.
func claimedPace(t *testing.T, s submissionJSON) float64 {
	t.Helper()
	perEpoch := func(runs []d5list.RunMetrics, corrected bool) float64 {
		var out []d5list.RunMetrics
		for _, r := range runs {
			if n := len(r.Evals); n > 0 {
				r.TimeToTrain /= r.Evals[n-1].Epoch
			}
			if corrected {
				r.TimeToTrain *= r.Clock.Availability()
			}
			out = append(out, r)
		}
		return d5list.OlympicScore(out, d5list.MetricTimeToTrain, d5list.LowerIsBetter).Value
	}
	if s.Claimed == nil || s.Measured == nil {
		t.Fatalf("submission %d has no claimed and measured runs to compare", s.ID)
	}
	c, m := perEpoch(s.Claimed.Runs, false), perEpoch(s.Measured.TimedRuns(), true)
	if !(c > 0) || !(m > 0) {
		t.Fatalf("submission %d: olympic epochs %v s claimed, %v s measured", s.ID, c, m)
	}
	return c / m
}

// logRatios records claimed/measured time to train per run, the numbers
// behind a timing verdict, for whoever tunes the tolerance.
func logRatios(t *testing.T, s submissionJSON) {
	t.Helper()
	timed := s.Measured.TimedRuns()
	if s.Claimed == nil {
		return
	}
	var parts []string
	for i := range min(len(s.Claimed.Runs), len(timed)) {
		c, m := s.Claimed.Runs[i].TimeToTrain, timed[i].TimeToTrain
		parts = append(parts, fmt.Sprintf("%.2f/%.2f=%.2f", c, m, c/m))
	}
	t.Logf("submission %d %s: claimed/measured time to train %s", s.ID, s.Status, strings.Join(parts, " "))
}

// mllogLines reads an MLLOG file as decoded events (nil for other lines).
func mllogLines(t *testing.T, path string) ([]string, []map[string]any) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	evs := make([]map[string]any, len(lines))
	for i, l := range lines {
		if !strings.HasPrefix(l, ":::MLLOG ") {
			continue
		}
		if err := json.Unmarshal([]byte(strings.TrimPrefix(l, ":::MLLOG ")), &evs[i]); err != nil {
			t.Fatalf("%s:%d: %v", path, i+1, err)
		}
	}
	return lines, evs
}

func writeMLLOG(t *testing.T, path string, lines []string, evs []map[string]any) {
	t.Helper()
	for i, ev := range evs {
		if ev == nil {
			continue
		}
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		lines[i] = ":::MLLOG " + string(b)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func eventTime(t *testing.T, evs []map[string]any, key string) float64 {
	t.Helper()
	for _, ev := range evs {
		if ev != nil && ev["key"] == key {
			return ev["time_ms"].(float64)
		}
	}
	t.Fatalf("no %s event", key)
	return 0
}

// scaleTimes multiplies every time after start (ms) by f, about start.
func scaleTimes(t *testing.T, path string, start, f float64) {
	lines, evs := mllogLines(t, path)
	for _, ev := range evs {
		if ev == nil {
			continue
		}
		if tm := ev["time_ms"].(float64); tm > start {
			ev["time_ms"] = start + math.Round((tm-start)*f)
		}
	}
	writeMLLOG(t, path, lines, evs)
}

// keptRuns are the runs the olympic drop keeps: all but the fastest and
// the slowest.
func keptRuns(t *testing.T, dir string) []int {
	fastest, slowest := runExtremes(t, dir)
	var kept []int
	for i := range 5 {
		if i != fastest && i != slowest {
			kept = append(kept, i)
		}
	}
	return kept
}

// scaleInsideRun multiplies the time of every event strictly between
// run_start and run_stop by f, about run_start; run_stop stays.
func scaleInsideRun(t *testing.T, path string, f float64) {
	lines, evs := mllogLines(t, path)
	start, stop := eventTime(t, evs, "run_start"), eventTime(t, evs, "run_stop")
	for _, ev := range evs {
		if ev == nil {
			continue
		}
		if tm := ev["time_ms"].(float64); tm > start && tm < stop {
			ev["time_ms"] = start + math.Round((tm-start)*f)
		}
	}
	writeMLLOG(t, path, lines, evs)
}

// moveRunStart moves run_start later by half the run, shortening the time
// to train the way a clock started late would.
func moveRunStart(t *testing.T, path string) {
	lines, evs := mllogLines(t, path)
	start, stop := eventTime(t, evs, "run_start"), eventTime(t, evs, "run_stop")
	for _, ev := range evs {
		if ev != nil && ev["key"] == "run_start" {
			ev["time_ms"] = start + math.Round((stop-start)/2)
		}
	}
	writeMLLOG(t, path, lines, evs)
}

// duplicateRun writes the log of from over to with a new seed and its
// times moved into to's slot, so the runs stay consecutive.
func duplicateRun(t *testing.T, from, to string, seed int64) {
	_, target := mllogLines(t, to)
	slot := eventTime(t, target, "init_start")
	lines, evs := mllogLines(t, from)
	shift := slot - eventTime(t, evs, "init_start")
	for _, ev := range evs {
		if ev == nil {
			continue
		}
		ev["time_ms"] = ev["time_ms"].(float64) + shift
		if ev["key"] == "seed" {
			ev["value"] = float64(seed)
		}
	}
	writeMLLOG(t, to, lines, evs)
}

// closeGaps moves each run after the first, where needed, so that it
// starts 1 ms after the previous run's last event: earlier, as a cheater
// hides an edit that left a hole in the timeline, or later, where a run
// copied into a slot lasts longer than the run it replaced.
func closeGaps(t *testing.T, dir string) {
	path := func(i int) string { return filepath.Join(dir, "results", "result_"+strconv.Itoa(i)+".txt") }
	for i := 1; i < 5; i++ {
		_, prev := mllogLines(t, path(i-1))
		prevEnd := 0.0
		for _, ev := range prev {
			if ev != nil {
				prevEnd = math.Max(prevEnd, ev["time_ms"].(float64))
			}
		}
		lines, evs := mllogLines(t, path(i))
		shift := 0.0
		for _, ev := range evs {
			if ev != nil {
				shift = prevEnd + 1 - ev["time_ms"].(float64)
				break
			}
		}
		if shift == 0 {
			continue
		}
		for _, ev := range evs {
			if ev != nil {
				ev["time_ms"] = ev["time_ms"].(float64) + shift
			}
		}
		writeMLLOG(t, path(i), lines, evs)
	}
}

// epochTimes are runs 0..4 of a folder's logs, each as its time from
// run_start to run_stop over its epochs: the unit the verifier compares.
func epochTimes(t *testing.T, dir string) []float64 {
	t.Helper()
	out := make([]float64, 5)
	for i := range out {
		_, evs := mllogLines(t, filepath.Join(dir, "results", "result_"+strconv.Itoa(i)+".txt"))
		out[i] = (eventTime(t, evs, "run_stop") - eventTime(t, evs, "run_start")) / lastEvalEpoch(t, evs)
	}
	return out
}

// keptSpeedup is the factor that, applied to the runs the olympic drop
// keeps and to none other, brings the olympic mean of a folder's epoch
// times down to share of what it was. The mean grows with the factor, so a
// bisection finds it.
func keptSpeedup(t *testing.T, dir string, share float64) float64 {
	t.Helper()
	u := epochTimes(t, dir)
	target := share * stats.OlympicMean(u)
	kept := keptRuns(t, dir)
	meanAt := func(f float64) float64 {
		v := slices.Clone(u)
		for _, i := range kept {
			v[i] *= f
		}
		return stats.OlympicMean(v)
	}
	lo, hi := 0.0, 1.0
	if meanAt(lo) >= target || meanAt(hi) <= target {
		t.Fatalf("%s: no speed-up of the kept runs %v of %v brings the olympic mean to %v", dir, kept, u, target)
	}
	for range 60 {
		if mid := (lo + hi) / 2; meanAt(mid) > target {
			hi = mid
		} else {
			lo = mid
		}
	}
	return lo
}

// runExtremes returns the indices of the fastest and the slowest run, by
// time per epoch, the unit the verifier's olympic drop sorts runs by.
func runExtremes(t *testing.T, dir string) (fastest, slowest int) {
	short, long := math.Inf(1), math.Inf(-1)
	for i, d := range epochTimes(t, dir) {
		if d < short {
			fastest, short = i, d
		}
		if d >= long {
			slowest, long = i, d
		}
	}
	if fastest == slowest {
		t.Fatalf("%s: all runs took %v ms; cannot tell the fastest from the slowest", dir, short)
	}
	return fastest, slowest
}

// fastestConverged is the fastest run other than skip whose run_stop says
// it reached the target: a forger copies a run that counts, and a copy of
// one that did not would fail the upload's convergence rule instead.
func fastestConverged(t *testing.T, dir string, skip int) int {
	t.Helper()
	best, short := -1, math.Inf(1)
	for i := range 5 {
		_, evs := mllogLines(t, filepath.Join(dir, "results", "result_"+strconv.Itoa(i)+".txt"))
		if i == skip || !runSucceeded(evs) {
			continue
		}
		if d := (eventTime(t, evs, "run_stop") - eventTime(t, evs, "run_start")) / lastEvalEpoch(t, evs); d < short {
			best, short = i, d
		}
	}
	if best < 0 {
		t.Fatalf("%s: no run but %d reached the target", dir, skip)
	}
	return best
}

// runSucceeded is whether a log's run_stop has status "success".
func runSucceeded(evs []map[string]any) bool {
	for _, ev := range evs {
		if ev != nil && ev["key"] == "run_stop" {
			meta, _ := ev["metadata"].(map[string]any)
			return meta["status"] == "success"
		}
	}
	return false
}

// lastEvalEpoch is the epoch_num of a log's last eval_accuracy event.
func lastEvalEpoch(t *testing.T, evs []map[string]any) float64 {
	t.Helper()
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i] == nil || evs[i]["key"] != "eval_accuracy" {
			continue
		}
		if meta, ok := evs[i]["metadata"].(map[string]any); ok {
			if e, ok := meta["epoch_num"].(float64); ok && e > 0 {
				return e
			}
		}
	}
	t.Fatal("no eval_accuracy event with an epoch_num")
	return 0
}

// slowestAfterFirst is the slowest of runs 1..4 of a folder's logs.
func slowestAfterFirst(t *testing.T, dir string) int {
	slowest, long := 1, math.Inf(-1)
	for i := 1; i < 5; i++ {
		_, evs := mllogLines(t, filepath.Join(dir, "results", "result_"+strconv.Itoa(i)+".txt"))
		if d := eventTime(t, evs, "run_stop") - eventTime(t, evs, "run_start"); d > long {
			slowest, long = i, d
		}
	}
	return slowest
}

// olympicTime is the olympic mean time to train of a folder's logs, in
// seconds, the way the portal derives it.
func olympicTime(t *testing.T, dir string) float64 {
	var runs []d5list.RunMetrics
	for i := range 5 {
		_, evs := mllogLines(t, filepath.Join(dir, "results", "result_"+strconv.Itoa(i)+".txt"))
		runs = append(runs, d5list.RunMetrics{Index: i, Converged: true, EpochsToTarget: 1,
			TimeToTrain: (eventTime(t, evs, "run_stop") - eventTime(t, evs, "run_start")) / 1000})
	}
	return d5list.OlympicScore(runs, d5list.MetricTimeToTrain, d5list.LowerIsBetter).Value
}

func editFile(t *testing.T, path, old, new string) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, []byte(old)) {
		t.Fatalf("%s does not contain %q", path, old)
	}
	if err := os.WriteFile(path, bytes.Replace(data, []byte(old), []byte(new), 1), 0o644); err != nil {
		t.Fatal(err)
	}
}

func setClaim(t *testing.T, path, metric string, v float64) {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	m["claims"] = map[string]float64{metric: v}
	out, _ := json.MarshalIndent(m, "", "  ")
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
}
