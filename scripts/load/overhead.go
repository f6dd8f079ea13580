package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/harness"
	"github.com/deep500/d5list/mllog"
	"github.com/deep500/d5list/workloads"
)

// overheadBench measures the runner's overhead (issue 8): the honest
// bundle is uploaded to the real server and re-run by a real `d5list
// runner --executor builtin` process over the HTTP protocol; its wall time
// is the server's own record, from the job queued (the submission's
// created_at) to the verdict stored (its updated_at). The same workload
// with the same recipe and seeds is then run directly through the
// workloads package in this process, as the builtin executor calls it.
// The two alternate -reps times, each pair in the other order than the
// one before (the same upload, hence the same recipe and seeds, every
// time); each pair gives an overhead.
//
// A bundle of the competitor's own code (executor "process": a PyTorch
// example) is re-run by `d5list runner --executor process`, sandboxed, and
// the baseline is its entrypoint run directly, unsandboxed, once per seed
// with the same environment the runner gives it.
//
// pythonPrefix, where set, is a Python outside /usr (a venv or conda
// prefix) that both sides use: the runner binds it into its sandbox
// (--sandbox-ro, --sandbox-path) and the direct runs find its bin first on
// PATH.
func overheadBench(bin, work string, small []byte, reps int, executor, pythonPrefix string) {
	s := startServer(bin, filepath.Join(work, "data"))
	defer s.stop()
	out, err := exec.Command(bin, "admin", "runner-token", "--data", s.data, "--name", "overhead").Output()
	if err != nil {
		log.Fatalf("admin runner-token: %v", err)
	}
	args := []string{"runner", "--server", s.url, "--token", strings.TrimSpace(string(out)),
		"--executor", executor, "--concurrency", "1", "--id", "overhead"}
	if executor == "process" {
		// The sandbox's user must be able to enter the runner's work dir.
		runs := filepath.Join(work, "runs")
		if err := os.MkdirAll(runs, 0o755); err != nil {
			log.Fatal(err)
		}
		if err := os.Chmod(work, 0o755); err != nil {
			log.Fatal(err)
		}
		args = append(args, "--work", runs)
		if pythonPrefix != "" {
			args = append(args, "--sandbox-ro", pythonPrefix, "--sandbox-path", filepath.Join(pythonPrefix, "bin"))
		}
	}
	runDirect := directRunner(work, small, pythonPrefix)
	var phaseDiffs [][3]float64 // per pair, runner minus direct, ms a run: start-up, window, end
	runner := exec.Command(bin, args...)
	runner.Stderr = io.Discard
	dieWithThisProcess(runner)
	if err := runner.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() { runner.Process.Kill(); runner.Wait() }()
	tok := s.token(bin, "overhead")
	benches, err := catalog.Benchmarks()
	if err != nil {
		log.Fatal(err)
	}
	var bench *d5list.Benchmark
	fmt.Printf("runner overhead: %d pairs, through the runner and directly, in alternating order\n", reps)
	fmt.Printf("%4s %12s %12s %10s %12s %10s", "pair", "runner", "direct", "overhead", "in-job runs", "in-job oh")
	if executor == "process" {
		fmt.Printf(" %10s %10s %10s %10s %10s", "runs CPU", "direct CPU", "CPU oh", "runner CPU", "portal CPU")
	}
	fmt.Println()
	var overheads, inJob, cpuOverheads []float64
	var through, direct []time.Duration
	var recipe *d5list.Recipe
	var seeds []int64
	for i := range reps {
		// Every other pair runs directly first, so that a drift in the
		// machine's load does not favour one side.
		var d time.Duration
		var directCPU float64
		var directPhases runPhases
		if i%2 == 1 {
			d, directCPU, directPhases = runDirect(bench, recipe, seeds)
		}
		runner0, server0 := cpuSeconds(runner.Process.Pid), cpuSeconds(s.cmd.Process.Pid)
		sub := rerunThroughRunner(s, tok, withSystemName(small, fmt.Sprintf("overhead pair %d", i+1)))
		// What the runner and the portal themselves computed during the
		// job (their own CPU time, not the sandbox's): on a machine whose
		// cores the runs fill, it is taken from the runs.
		runnerCPU, serverCPU := cpuSeconds(runner.Process.Pid)-runner0, cpuSeconds(s.cmd.Process.Pid)-server0
		for j := range benches {
			if benches[j].ID == sub.BenchmarkID {
				bench = &benches[j]
			}
		}
		if bench == nil || sub.Recipe == nil {
			log.Fatalf("submission %d: benchmark %q or recipe missing", sub.ID, sub.BenchmarkID)
		}
		// Every run the runner made, the fresh seeds it drew included: the
		// direct side runs the same work.
		recipe, seeds = sub.Recipe, measuredSeeds(sub)
		t := sub.UpdatedAt.Sub(sub.CreatedAt)
		if i%2 == 0 {
			d, directCPU, directPhases = runDirect(bench, recipe, seeds)
		}
		oh := (t.Seconds() - d.Seconds()) / d.Seconds()
		through, direct, overheads = append(through, t), append(direct, d), append(overheads, oh)
		// Within the job: the server's wall time against the runs' own
		// run_start..run_stop in the re-run logs. Both come from the same
		// job, so the workload's run-to-run noise cancels; what is left is
		// everything around the runs (dispatch, set-up, the HTTP report,
		// the verifier and its transaction), and the runs' initialisation,
		// so it overstates the runner's share.
		//
		// A process run's initialisation (a Python start, import torch)
		// is large and outside run_start..run_stop: there the runner's own
		// clock of each run (process start to exit, RunClock.WallS) is the
		// measure instead, and what is left of the job around its runs is
		// the runner's (dispatch, fetch, extract, report, verdict).
		var runs time.Duration
		var runsCPU float64
		var runnerPhases runPhases
		if sub.Measured != nil {
			for _, r := range sub.Measured.Runs {
				if executor == "process" && r.Clock != nil {
					runs += time.Duration(r.Clock.WallS * float64(time.Second))
					runsCPU += r.Clock.CPUS
					runnerPhases.add(r.Clock.BeforeWindowS, r.Clock.LogS, r.Clock.WallS-r.Clock.BeforeWindowS-r.Clock.LogS)
				} else {
					runs += time.Duration(r.StopMS-r.StartMS) * time.Millisecond
				}
			}
		}
		within := (t.Seconds() - runs.Seconds()) / runs.Seconds()
		inJob = append(inJob, within)
		fmt.Printf("%4d %12s %12s %9.2f%% %12s %9.2f%%", i+1, t.Round(time.Millisecond), d.Round(time.Millisecond), 100*oh, runs.Round(time.Millisecond), 100*within)
		if executor == "process" {
			// The same runs' CPU time, sandboxed (the runner's record of
			// each run's process tree) and direct: what the sandbox adds
			// to the work, apart from the machine's other tenants, who
			// stretch wall times but not a process's own CPU time.
			c := (runsCPU - directCPU) / directCPU
			cpuOverheads = append(cpuOverheads, c)
			fmt.Printf(" %9.2fs %9.2fs %9.2f%% %9.2fs %9.2fs", runsCPU, directCPU, 100*c, runnerCPU, serverCPU)
		}
		fmt.Println()
		if runnerPhases.n > 0 && directPhases.n > 0 {
			r, dp := runnerPhases.mean(), directPhases.mean()
			fmt.Printf("     a run, runner / direct (ms): start-up %.1f / %.1f, window %.1f / %.1f, end %.1f / %.1f\n",
				r[0], dp[0], r[1], dp[1], r[2], dp[2])
			phaseDiffs = append(phaseDiffs, [3]float64{r[0] - dp[0], r[1] - dp[1], r[2] - dp[2]})
		}
	}
	if len(phaseDiffs) > 0 {
		// Where the runner's time goes, run by run: before the window (the
		// sandbox's start, the run's start-up beside the runner's audit),
		// in it, and after it (the reveal, the exit, the sandbox's end).
		var col [3][]float64
		for _, d := range phaseDiffs {
			for k := range d {
				col[k] = append(col[k], d[k])
			}
		}
		for k := range col {
			sort.Float64s(col[k])
		}
		fmt.Printf("a run, runner minus direct, median of the pairs (ms): start-up %+.1f, window %+.1f, end %+.1f\n",
			median(col[0]), median(col[1]), median(col[2]))
	}
	if len(cpuOverheads) > 0 {
		sort.Float64s(cpuOverheads)
		fmt.Printf("CPU time of the runs, sandboxed against direct: median %.2f%%, min %.2f%%, max %.2f%%\n",
			100*median(cpuOverheads), 100*cpuOverheads[0], 100*cpuOverheads[len(cpuOverheads)-1])
	}
	sort.Float64s(inJob)
	fmt.Printf("within the job: median %.2f%%, min %.2f%%, max %.2f%% of the runs' own time\n", 100*median(inJob), 100*inJob[0], 100*inJob[len(inJob)-1])
	sort.Float64s(overheads)
	diffs := make([]time.Duration, len(through))
	for i := range through {
		diffs[i] = through[i] - direct[i]
	}
	fmt.Printf("median: runner %s, direct %s; overhead median %.2f%%, min %.2f%%, max %.2f%%; runner minus direct, median of the pairs: %s\n",
		medianDur(through).Round(time.Millisecond), medianDur(direct).Round(time.Millisecond),
		100*median(overheads), 100*overheads[0], 100*overheads[len(overheads)-1], medianDur(diffs).Round(time.Millisecond))
}

// getAs is a GET with a bearer token: the body and the status.
func getAs(url, token string) ([]byte, int) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b, resp.StatusCode
}

// measuredSeeds are the seeds of the runs the portal's re-run made, in
// order: the claim's, then the fresh ones it drew.
func measuredSeeds(sub *d5list.Submission) []int64 {
	if sub.Measured == nil {
		return sub.Seeds()
	}
	seeds := make([]int64, len(sub.Measured.Runs))
	for i, r := range sub.Measured.Runs {
		seeds[i] = r.Seed
	}
	return seeds
}

// rerunThroughRunner uploads the bundle and waits for its verdict.
func rerunThroughRunner(s *server, tok string, small []byte) *d5list.Submission {
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/v1/submissions", bytes.NewReader(small))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	var sub d5list.Submission
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || json.Unmarshal(b, &sub) != nil {
		log.Fatalf("upload: %d %s", resp.StatusCode, b)
	}
	// Polled slowly: the times compared are the server's own records.
	for deadline := time.Now().Add(10 * time.Minute); time.Now().Before(deadline); time.Sleep(250 * time.Millisecond) {
		// As its owner: an entry is not public before its verdict.
		b, code := getAs(s.url+"/api/v1/submissions/"+strconv.FormatInt(sub.ID, 10), tok)
		var now d5list.Submission
		if code != 200 || json.Unmarshal(b, &now) != nil {
			log.Fatalf("submission %d: %d %s", sub.ID, code, b)
		}
		switch now.Status {
		case d5list.StatusVerified:
			return &now
		case d5list.StatusDiscrepancy, d5list.StatusNeedsReview:
			// A re-run in a slow minute of a shared machine can be judged
			// on its timing; its times are still the runner's.
			if now.Measured == nil {
				log.Fatalf("submission %d ended %s without a measurement: %+v", now.ID, now.Status, now.Reasons)
			}
			log.Printf("submission %d: %s, counted (its times are the runner's): %s", now.ID, now.Status, now.Reasons[0].Code)
			return &now
		case d5list.StatusQueued, d5list.StatusRunning, d5list.StatusChecking:
		default:
			log.Fatalf("submission %d ended %s: %+v", sub.ID, now.Status, now.Reasons)
		}
	}
	log.Fatalf("submission %d: no verdict in 10 minutes", sub.ID)
	return nil
}

// directRunner is the baseline of a pair: the builtin workload through the
// workloads package, or, for a benchmark of the bundle's own code, its
// entrypoint run directly, which also gives its CPU time.
func directRunner(work string, small []byte, pythonPrefix string) func(*d5list.Benchmark, *d5list.Recipe, []int64) (time.Duration, float64, runPhases) {
	var extracted string
	return func(bench *d5list.Benchmark, recipe *d5list.Recipe, seeds []int64) (time.Duration, float64, runPhases) {
		if bench.Workload != "" {
			return runDirectly(bench, recipe, seeds), 0, runPhases{}
		}
		if extracted == "" {
			archive := filepath.Join(work, "direct.tar.gz")
			if err := os.WriteFile(archive, small, 0o644); err != nil {
				log.Fatal(err)
			}
			extracted = filepath.Join(work, "direct")
			if err := bundle.Extract(archive, extracted, bundle.DefaultLimits()); err != nil {
				log.Fatal(err)
			}
		}
		return runEntrypointDirectly(extracted, bench, recipe, seeds, pythonPrefix)
	}
}

// runPhases sums the runs' start-ups (start to window), windows and ends
// (window to exit), in seconds.
type runPhases struct {
	sum [3]float64
	n   int
}

func (p *runPhases) add(before, window, end float64) {
	p.sum[0], p.sum[1], p.sum[2] = p.sum[0]+before, p.sum[1]+window, p.sum[2]+end
	p.n++
}

// mean is a run's start-up, window and end, in milliseconds.
func (p runPhases) mean() [3]float64 {
	var m [3]float64
	for k := range m {
		m[k] = 1000 * p.sum[k] / float64(p.n)
	}
	return m
}

// runEntrypointDirectly runs the entrypoint of the bundle extracted in dir
// once per seed, unsandboxed, with the variables the process executor
// sets and nothing else of this process's environment, as the sandbox
// clears it. It returns the wall time and the CPU time (user and system,
// the entrypoint's whole process tree) of the runs, and their phases: a
// direct run has no gate, so its window is its log's, from run_start
// (logged right after it took its seed) to run_stop, on the same clock as
// its start and exit.
func runEntrypointDirectly(dir string, bench *d5list.Benchmark, recipe *d5list.Recipe, seeds []int64, pythonPrefix string) (time.Duration, float64, runPhases) {
	path := "PATH=/usr/local/bin:/usr/bin:/bin"
	if pythonPrefix != "" {
		path = "PATH=" + filepath.Join(pythonPrefix, "bin") + ":/usr/local/bin:/usr/bin:/bin"
	}
	runs := filepath.Join(dir, "..", "direct-runs")
	lib := filepath.Join(runs, "lib")
	if err := os.MkdirAll(runs, 0o755); err != nil {
		log.Fatal(err)
	}
	if err := harness.Stage(lib); err != nil {
		log.Fatal(err)
	}
	task, err := harness.For(bench, recipe)
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	cpu := 0.0
	var phases runPhases
	for i, seed := range seeds {
		scratch := filepath.Join(runs, strconv.Itoa(i), "scratch")
		if err := os.MkdirAll(scratch, 0o755); err != nil {
			log.Fatal(err)
		}
		cmd := exec.Command("/bin/sh", filepath.Join(dir, filepath.FromSlash(recipe.Entrypoint)))
		cmd.Dir = dir
		cmd.Env = []string{path, "HOME=" + scratch, "TMPDIR=" + scratch, "LANG=C.UTF-8",
			"D5_RESULT_LOG=" + filepath.Join(runs, strconv.Itoa(i), "result.txt"), "D5_SEED=" + strconv.FormatInt(seed, 10), "PYTHONPATH=" + lib,
			"D5_DATA_DIR=",
			"D5_BENCHMARK=" + bench.ID, "D5_SCRATCH=" + scratch, "D5_BUNDLE=" + dir}
		if task != nil {
			// No audit: a direct run has no runner to answer it.
			cmd.Env = append(cmd.Env, "D5_TASK="+task.JSON())
		}
		began := time.Now()
		if out, err := cmd.CombinedOutput(); err != nil {
			log.Fatalf("running %s directly, seed %d: %v\n%s", recipe.Entrypoint, seed, err, out)
		}
		ended := time.Now()
		if at, ok := windowOfLog(filepath.Join(runs, strconv.Itoa(i), "result.txt")); ok {
			opened, closed := time.UnixMilli(at[0]), time.UnixMilli(at[1])
			phases.add(opened.Sub(began).Seconds(), closed.Sub(opened).Seconds(), ended.Sub(closed).Seconds())
		}
		// The shell's usage includes python's, which it waited for.
		cpu += (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	}
	elapsed := time.Since(start)
	os.RemoveAll(runs)
	return elapsed, cpu, phases
}

// windowOfLog is the time_ms of a result log's run_start and run_stop.
func windowOfLog(path string) ([2]int64, bool) {
	f, err := os.Open(path)
	if err != nil {
		return [2]int64{}, false
	}
	defer f.Close()
	events, err := mllog.Parse(f, path)
	if err != nil {
		return [2]int64{}, false
	}
	var at [2]int64
	for _, e := range events {
		switch e.Key {
		case mllog.KeyRunStart:
			at[0] = e.TimeMS
		case mllog.KeyRunStop:
			at[1] = e.TimeMS
		}
	}
	return at, at[0] > 0 && at[1] >= at[0]
}

// runDirectly is what runner.Builtin does for a job, without the runner:
// each seed's run of the workload into a buffer, in order.
func runDirectly(bench *d5list.Benchmark, recipe *d5list.Recipe, seeds []int64) time.Duration {
	work, ok := workloads.Lookup(bench.Workload)
	if !ok {
		log.Fatalf("no workload %q", bench.Workload)
	}
	start := time.Now()
	for _, seed := range seeds {
		var buf bytes.Buffer
		if err := work(context.Background(), bench, recipe, seed, &buf); err != nil {
			log.Fatal(err)
		}
	}
	return time.Since(start)
}

func medianDur(v []time.Duration) time.Duration {
	f := make([]float64, len(v))
	for i, d := range v {
		f[i] = float64(d)
	}
	return time.Duration(median(f))
}
