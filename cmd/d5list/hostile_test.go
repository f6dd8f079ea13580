package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/internal/slowtest"
	"github.com/deep500/d5list/runner"
	"github.com/deep500/d5list/store"
)

// The shell benchmark of TestHostileEntrypoints: the bundle's own
// entrypoint, three seeded runs, a ten-second limit a run.
const (
	hostileBench = "l2-shell-cpu"
	// A job runs 3 claimed seeds and 3 fresh ones of about 2 s each.
	hostileTimeLimit = 20 * time.Second
	// hostileGrace is what a job may take past its limit: the executor's
	// SIGTERM-to-SIGKILL wait (2 s), the read-back and the report.
	hostileGrace = 5 * time.Second
)

// shellTakeSeed sets $seed the way a shell entrypoint takes it: from the
// gate under a runner (opening it starts the runner's clock), from
// $D5_SEED when the test makes a claim by running the script itself.
const shellTakeSeed = `if [ -n "${D5_GATE:-}" ]; then
  read -r gate < "$D5_GATE"; seed=${gate#*\"seed\":}; seed=${seed%%[,\}]*}
else
  seed=$D5_SEED
fi`

// precomputingEntrypoint is the honest entrypoint with a shortcut: where
// when (a shell test) holds, it emits the honest log of the seed at once
// instead of "training".
func precomputingEntrypoint(when string) string {
	return strings.Replace(honestEntrypoint, "log INTERVAL_START run_start null ''", `replay() {
  log INTERVAL_START run_start null ''
  for epoch in 1 2 3; do log POINT_IN_TIME eval_accuracy "0.$((50 + seed % 7))$epoch" "\"epoch_num\": $epoch"; done
  log INTERVAL_END run_stop null '"status": "success"'
  exit 0
}
`+when+`
log INTERVAL_START run_start null ''`, 1)
}

// honestEntrypoint trains nothing but behaves as a training does: it logs
// its seed, three evaluations half a second apart, and its accuracy, a
// function of the seed; each line is appended as it happens.
const honestEntrypoint = `#!/bin/sh
set -e
log() { echo ":::MLLOG {\"namespace\": \"\", \"time_ms\": $(date +%s%3N), \"event_type\": \"$1\", \"key\": \"$2\", \"value\": $3, \"metadata\": {$4}}" >> "$D5_RESULT_LOG"; }
log POINT_IN_TIME submission_benchmark '"l2-shell-cpu"' ''
log POINT_IN_TIME global_batch_size 32 ''
` + shellTakeSeed + `
log POINT_IN_TIME seed "$seed" ''
log INTERVAL_START run_start null ''
for epoch in 1 2 3; do
  sleep 0.5
  log POINT_IN_TIME eval_accuracy "0.$((50 + seed % 7))$epoch" "\"epoch_num\": $epoch"
done
log INTERVAL_END run_stop null '"status": "success"'
`

// TestHostileEntrypoints runs the real portal and a real process-executor
// runner (bubblewrap) against entrypoints that attack the runner or cheat
// its clock, beside an honest one: the honest one is verified, each attack
// ends with its reason, each cheat either ends with its reason or is
// ranked by a time at least the honest work's, no secret of the runner's
// host reaches a stored byte or an API answer, and every job ends within
// its limit plus a grace. (The cheats that need real work to audit, a
// replay and shipped weights, are TestTorchExamplesEndToEnd's.)
func TestHostileEntrypoints(t *testing.T) {
	slowtest.Require(t, "a minute and a half of hostile entrypoints, honest ones among them judged on their times")
	needCappedSandbox(t)
	// The runner host's secrets: a private file, and its environment.
	secretDir := sandboxTraversable(t)
	const fileSecret = "d5-host-secret-7f3a9c"
	secretFile := filepath.Join(secretDir, "host.env")
	if err := os.WriteFile(secretFile, []byte("SECRET="+fileSecret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	const envSecret = "d5-env-secret-41b7e2"
	t.Setenv("D5_TEST_HOST_SECRET", envSecret)

	p, runnerToken := shellPortal(t)
	data := p.data
	organiser := adminToken(t, "token", "--data", data, "--user", "olga", "--role", "organiser")

	startProcessRunner(t, p, runnerToken, 2)

	honest := hostileBundle(t, honestEntrypoint)
	cases := []struct {
		name       string
		entrypoint string
		status     d5list.Status
		code       string
		words      string // in the reason's message
		// ownClaim: the bundle's results are this entrypoint's own runs on
		// this host; otherwise the honest ones.
		ownClaim bool
	}{
		{"honest", honestEntrypoint, d5list.StatusVerified, "", "", false},
		// Uploaded second, so that its three attempts start at once: the
		// bound below is on them, not on the queue ahead.
		{"a run that ignores SIGTERM and never ends", "#!/bin/sh\ntrap '' TERM\nwhile :; do sleep 1; done\n",
			d5list.StatusFailed, "rerun_failed", "time limit", false},
		// The result log is the runner's FIFO in a folder the sandbox sees
		// read-only: it cannot be swapped for anything.
		{"a link to a private file of the runner's host", "#!/bin/sh\nln -sf " + secretFile + " \"$D5_RESULT_LOG\"\n",
			d5list.StatusFailed, "rerun_failed", "entrypoint failed", false},
		{"a link to the runner's environment", "#!/bin/sh\nln -sf /proc/" + strconv.Itoa(os.Getpid()) + "/environ \"$D5_RESULT_LOG\"\n",
			d5list.StatusFailed, "rerun_failed", "entrypoint failed", false},
		{"a link to a device", "#!/bin/sh\nln -sf /dev/zero \"$D5_RESULT_LOG\"\n",
			d5list.StatusFailed, "rerun_failed", "entrypoint failed", false},
		{"a FIFO", "#!/bin/sh\nrm -f \"$D5_RESULT_LOG\" && mkfifo \"$D5_RESULT_LOG\"\n",
			d5list.StatusFailed, "rerun_failed", "entrypoint failed", false},
		// The runs sleep as the honest ones do and log times at 0.6 of the
		// clock's pace, on the host and on the runner alike.
		{"a forged clock", strings.Replace(honestEntrypoint, "$(date +%s%3N)", "$(( $(date +%s%3N) * 3 / 5 ))", 1),
			d5list.StatusDiscrepancy, "timing_mismatch", "the re-run's", true},
		// The claim's own logs written back at once, without taking a seed.
		{"a copied claim", "#!/bin/sh\ncat \"$D5_BUNDLE/results/result_0.txt\" >> \"$D5_RESULT_LOG\"\n",
			d5list.StatusDiscrepancy, d5list.BreachGateNotOpened, "never opened", false},
		// A fast run_start/run_stop pair first, then the real log: both
		// pairs arrive, in order.
		{"an early fake pair", strings.Replace(honestEntrypoint, "log INTERVAL_START run_start null ''",
			"log INTERVAL_START run_start null ''\nlog INTERVAL_END run_stop null '\"status\": \"success\"'\nlog INTERVAL_START run_start null ''", 1),
			d5list.StatusDiscrepancy, d5list.BreachWindowRepeated, "once", false},
		// The log emptied and written again, faster: a FIFO keeps both.
		{"a truncated and rewritten log", honestEntrypoint + ": > \"$D5_RESULT_LOG\"\n" +
			"log INTERVAL_START run_start null ''\nlog POINT_IN_TIME eval_accuracy 0.99 '\"epoch_num\": 3'\nlog INTERVAL_END run_stop null '\"status\": \"success\"'\n",
			d5list.StatusDiscrepancy, d5list.BreachWindowRepeated, "what it logged first stays logged", false},
		// The claimed seeds' runs worked out before the gate and replayed in
		// no time; a seed the portal drew is worked honestly (the seed is
		// all that tells a run which runs are the runner's fresh ones): the
		// board ranks the fresh runs, so the cheat gains nothing.
		{"work done before the window", precomputingEntrypoint("case \" 11 12 13 \" in *\" $seed \"*) replay;; esac"),
			d5list.StatusVerified, "", "", false},
	}
	type outcome struct {
		sub     submissionJSON
		elapsed time.Duration
	}
	results := make([]outcome, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		dir := filepath.Join(t.TempDir(), "bundle")
		if c.ownClaim {
			dir = hostileBundle(t, c.entrypoint)
		} else {
			copyDir(t, honest, dir)
			if err := os.WriteFile(filepath.Join(dir, "code", "run.sh"), []byte(c.entrypoint), 0o755); err != nil {
				t.Fatal(err)
			}
		}
		code, id, apiErr := p.postBundle(t, dir)
		if code != http.StatusCreated {
			t.Fatalf("%s: upload answered %d %+v", c.name, code, apiErr)
		}
		start := time.Now()
		wg.Go(func() { results[i] = outcome{p.waitFinal(t, id), time.Since(start)} })
	}
	wg.Wait()

	honestScore := results[0].sub.Measured.Score.Value
	for i, c := range cases {
		got := results[i].sub
		if got.Status != c.status {
			t.Errorf("%s: %s, want %s; reasons %s", c.name, got.Status, c.status, reasonsText(got.Reasons))
			continue
		}
		if c.code != "" && !hasWords(got.Reasons, c.code, c.words) {
			t.Errorf("%s: reasons %s, want %s naming %q", c.name, reasonsText(got.Reasons), c.code, c.words)
		}
		// A cheat that is verified ranks by the work it did: its measured
		// time is the honest one's (its fresh runs did that work), within
		// the noise of a shared machine, never a replay's near nothing.
		if i > 0 && got.Status == d5list.StatusVerified {
			if m := got.Measured.Score.Value; !(m >= 0.8*honestScore) {
				t.Errorf("%s: ranked at %.3f s, the honest entry at %.3f s: a cheat gained rank", c.name, m, honestScore)
			}
		}
	}
	// The endless run is tried three times, each attempt ending within the
	// limit and its grace: leased at once (the honest job holds the other
	// slot), and first in line again after each failed attempt.
	limit := 3*(hostileTimeLimit+hostileGrace) + 10*time.Second
	if results[1].elapsed > limit {
		t.Errorf("%s took %v to end; bound %v", cases[1].name, results[1].elapsed.Round(time.Second), limit)
	}

	// No secret in any stored byte...
	secrets := []string{fileSecret, envSecret, runnerToken}
	err := filepath.WalkDir(data, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds a secret of the runner's host (%.8s…)", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// ...nor in any answer, to the public, the competitor or an organiser.
	paths := []string{"/api/v1/queue", "/api/v1/review", "/console/queue", "/console/runners"}
	for i := range cases {
		id := strconv.FormatInt(results[i].sub.ID, 10)
		paths = append(paths, "/api/v1/submissions/"+id, "/api/v1/submissions/"+id+"/audit", "/submissions/"+id)
	}
	for _, path := range paths {
		for _, token := range []string{"", p.token, organiser} {
			body := getAs(t, p.url+path, token)
			for _, s := range secrets {
				if strings.Contains(body, s) {
					t.Errorf("GET %s (token %.5s…) answers a secret of the runner's host (%.8s…)", path, token, s)
				}
			}
		}
	}
	for i, c := range cases {
		t.Logf("%s: %s in %v", c.name, results[i].sub.Status, results[i].elapsed.Round(100*time.Millisecond))
	}
}

// needCappedSandbox skips where the process executor does not start: no
// bubblewrap, or no cgroup to cap its jobs in (CI has both).
func needCappedSandbox(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap (bwrap) is not installed: the process executor runs nothing unsandboxed (CI installs it)")
	}
	if err := runner.JobCaps(); err != nil {
		t.Skipf("no cgroup to cap the runner's jobs in (%v): the process executor runs nothing unbounded", err)
	}
}

// shellPortal is a portal whose catalogue has the shell benchmark, and a
// token for its runners.
func shellPortal(t *testing.T) (*portalUnderTest, string) {
	t.Helper()
	data := t.TempDir()
	db, err := store.Open(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	bench := d5list.Benchmark{ID: hostileBench, Name: "Shell entrypoint (tests)", Level: 2, Category: "training",
		Runs:    3,
		Quality: d5list.QualityTarget{Metric: "eval_accuracy", Target: 0.5, Mode: "first", Direction: d5list.HigherIsBetter},
		Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter, Unit: "s"},
		Verify:  d5list.VerifyPolicy{TimeLimitSeconds: int(hostileTimeLimit / time.Second)}}
	if err := db.UpsertBenchmarks(context.Background(), []d5list.Benchmark{bench}); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return startPortalIn(t, data, 0), adminToken(t, "runner-token", "--data", data, "--name", "sandboxed")
}

// hostileBundle is a submission folder for the shell benchmark whose
// results are the given entrypoint's own runs on this host, seeds 11 to
// 13, as a competitor makes them.
func hostileBundle(t *testing.T, entrypoint string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "honest")
	for _, sub := range []string{"code", "results"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		"submission.json": `{"format": "d5list/v1", "benchmark": "` + hostileBench + `", "division": "open", "availability": "available",
 "submitter": "d5list tests", "system_name": "cpu-box", "framework": "sh"}`,
		"system.json": `{"submitter": "d5list tests", "division": "open", "status": "available", "system_name": "cpu-box",
 "number_of_nodes": "1", "host_processors_per_node": "1", "host_processor_model_name": "any",
 "host_processor_core_count": "1", "accelerators_per_node": "0", "accelerator_model_name": "",
 "framework": "sh", "operating_system": "Linux"}`,
		"recipe.yaml": "fixed: {dataset: none, model: none, epochs: 3}\nmutable: {batch_size: 32, executor: sh, optimizer: none}\nmetrics: [{name: test_accuracy, acceptable: 0.5}]\nentrypoint: code/run.sh\n",
		"code/run.sh": entrypoint,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for i, seed := range []int{11, 12, 13} {
		cmd := exec.Command("/bin/sh", filepath.Join(dir, "code", "run.sh"))
		cmd.Env = []string{"PATH=/usr/bin:/bin", "D5_SEED=" + strconv.Itoa(seed),
			"D5_RESULT_LOG=" + filepath.Join(dir, "results", fmt.Sprintf("result_%d.txt", i))}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("the honest entrypoint, seed %d: %v\n%s", seed, err, out)
		}
	}
	return dir
}

// startProcessRunner runs `d5list runner --executor process` against p,
// with slots jobs at once and any more flags, until the test ends.
func startProcessRunner(t *testing.T, p *portalUnderTest, token string, slots int, flags ...string) {
	t.Helper()
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	args := append([]string{"runner", "--server", p.url, "--token", token, "--executor", "process",
		"--work", sandboxTraversable(t), "--concurrency", strconv.Itoa(slots), "--heartbeat", "500ms", "--id", "sandboxed"}, flags...)
	go func() { done <- run(ctx, args, io.Discard, testWriter{t}) }()
	t.Cleanup(func() {
		stop()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("runner: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("the runner did not stop within 30 s")
		}
	})
}

// sandboxTraversable is a temp folder the sandbox's user can enter, as the
// runner's default (the system temp dir) is; t.TempDir() is private.
func sandboxTraversable(t *testing.T) string {
	t.Helper()
	d := t.TempDir()
	for _, dir := range []string{filepath.Dir(d), d} {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

func adminToken(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), append([]string{"admin"}, args...), &out, io.Discard); err != nil {
		t.Fatalf("admin %s: %v", args[0], err)
	}
	return strings.TrimSpace(out.String())
}

func getAs(t *testing.T, url, token string) string {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

// hasWords reports whether rs holds a reason with code whose message
// holds words.
func hasWords(rs []d5list.Reason, code, words string) bool {
	for _, r := range rs {
		if r.Code == code && strings.Contains(r.Message, words) {
			return true
		}
	}
	return false
}
