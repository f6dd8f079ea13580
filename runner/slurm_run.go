package runner

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/harness"
)

func newSlurm(opts SlurmOptions) (*Slurm, error) {
	if opts.Fetch == nil {
		return nil, d5list.Errorf(d5list.EINVALID, "slurm executor: SlurmOptions.Fetch is required")
	}
	if opts.SharedDir == "" {
		return nil, d5list.Errorf(d5list.EINVALID, "slurm executor: SlurmOptions.SharedDir is required (a folder the compute nodes see at the same path)")
	}
	if opts.Poll <= 0 {
		opts.Poll = 2 * time.Second
	}
	if opts.DefaultTimeLimit <= 0 {
		opts.DefaultTimeLimit = 6 * time.Hour
	}
	if opts.Limits == (bundle.Limits{}) {
		opts.Limits = bundle.DefaultLimits()
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	s := &Slurm{opts: opts}
	if _, err := exec.LookPath(s.bin("sbatch")); err != nil {
		return nil, d5list.Errorf(d5list.EUNAVAILABLE, "slurm executor: sbatch not found (%v): install the Slurm client or set the bin dir", err)
	}
	return s, nil
}

func (s *Slurm) bin(name string) string {
	if s.opts.BinDir != "" {
		return filepath.Join(s.opts.BinDir, name)
	}
	return name
}

// Execute fetches and extracts the bundle into the shared folder and
// submits one batch job per seed, in order, each waiting for the last.
func (s *Slurm) Execute(ctx context.Context, spec d5list.JobSpec) ([]d5list.RunLog, error) {
	if spec.Recipe.Image != "" {
		// Sites run images with their own tools (enroot, Apptainer);
		// this executor does not start one, so it does not pretend to.
		return nil, d5list.Errorf(d5list.EINVALID, "recipe image: the Slurm executor does not run container images; a process-executor runner does")
	}
	// A harness benchmark's runs get their task, but no audit: the audit
	// is a FIFO the runner answers after run_stop, which a compute node
	// cannot reach, so the verifier sends such runs to an organiser.
	task, err := harness.For(&spec.Benchmark, &spec.Recipe)
	if err != nil {
		return nil, err
	}
	setup := jobSetup{fetch: s.opts.Fetch, dir: s.opts.SharedDir, limits: s.opts.Limits, keep: s.opts.KeepWork, timeLimit: s.opts.DefaultTimeLimit}
	return setup.execute(ctx, spec, func(ctx context.Context, spec d5list.JobSpec, job, entry string, mode os.FileMode, i int, seed int64) ([]byte, *d5list.RunClock, error) {
		return s.run(ctx, spec, task, job, entry, mode, i, seed)
	})
}

// run submits one seed as a batch job whose Slurm time limit is what is
// left of the job's.
func (s *Slurm) run(ctx context.Context, spec d5list.JobSpec, task *harness.Task, job, entry string, mode os.FileMode, i int, seed int64) ([]byte, *d5list.RunClock, error) {
	deadline, _ := ctx.Deadline()
	left := time.Until(deadline)
	l, err := hostLayout(job, s.opts.DataDir)
	if err != nil {
		return nil, nil, err
	}
	// A compute node reaches the runner only through the shared folder, so
	// the log is a file there and the gate a file holding the seed from the
	// start: a Slurm run's window is its log's (docs/SECURITY.md).
	l.result, l.gate = filepath.Join(l.run, "result.txt"), filepath.Join(l.run, "gate.json")
	if err := writeGateFile(l.gate, seed); err != nil {
		return nil, nil, err
	}
	argv, err := entryArgv(filepath.Join(l.bundle, filepath.FromSlash(entry)), mode)
	if err != nil {
		return nil, nil, err
	}
	script := filepath.Join(l.run, "batch.sh")
	output := filepath.Join(l.run, "slurm.out")
	workers, _ := spec.Benchmark.FixedWorkers()
	env := runEnv(spec, l, gpuShare{}, nil)
	if task != nil {
		env = append(env, "D5_TASK="+task.JSON())
	}
	if err := os.WriteFile(script, []byte(s.batchScript(env, l.bundle, argv, workers)), 0o755); err != nil {
		return nil, nil, err
	}
	id, err := s.submit(ctx, s.sbatchArgs(spec, left, output, l.bundle, script))
	if err != nil {
		return nil, nil, err
	}
	s.opts.Log.Info("slurm job submitted", "job", spec.JobID, "run", i, "slurm_job", id)
	// The output (one file for both streams, reported as stdout) and, for
	// live progress, the MLLOG file are followed while the job runs.
	var stops []func()
	if onLine := bothLines(s.opts.OnLine, LinesFrom(ctx)); onLine != nil {
		stops = append(stops, tailFile(output, i, d5list.StreamStdout, onLine, s.opts.Poll))
	}
	if progress := LinesFrom(ctx); progress != nil {
		stops = append(stops, tailFile(l.result, i, d5list.StreamMLLOG, progress, s.opts.Poll))
	}
	state, err := s.follow(ctx, id)
	for _, stop := range stops {
		stop()
	}
	if err != nil {
		return nil, nil, err
	}
	if state != "COMPLETED" {
		return nil, nil, fmt.Errorf("slurm job %s ended %s%s", id, state, outputTail(output))
	}
	// The runner's clock covers the queue wait too; the job's CPU time is
	// on the compute node, where sacct would have to be asked.
	log, err := readResult(l.result, s.opts.Limits.MaxResultBytes, newTail(0))
	return log, nil, err
}

// sbatchArgs asks for the benchmark's accelerators and the time left to the
// job, rounded up to whole minutes as Slurm counts them.
func (s *Slurm) sbatchArgs(spec d5list.JobSpec, left time.Duration, output, dir, script string) []string {
	mins := int((left + time.Minute - 1) / time.Minute)
	if mins < 1 {
		mins = 1
	}
	a := []string{"--parsable",
		// The run reads its Slurm job's name ($SLURM_JOB_NAME): no run index.
		"--job-name=d5-" + strconv.FormatInt(spec.JobID, 10),
		"--output=" + output,
		"--time=" + strconv.Itoa(mins),
		"--chdir=" + dir,
		"--export=NONE",
	}
	// A data-parallel benchmark's workers are Slurm tasks, as many as its
	// fixed part sets, placed on as many nodes as the site's options and
	// Slurm decide; any other run is one task on one node.
	if workers, _ := spec.Benchmark.FixedWorkers(); workers > 1 {
		a = append(a, "--ntasks="+strconv.Itoa(workers))
		if s.opts.TasksPerNode > 0 {
			a = append(a, "--ntasks-per-node="+strconv.Itoa(s.opts.TasksPerNode))
		}
	} else {
		a = append(a, "--nodes=1")
	}
	if gpus := s.gpusPerNode(&spec.Benchmark); gpus > 0 {
		a = append(a, "--gres=gpu:"+strconv.Itoa(gpus))
	}
	if s.opts.Partition != "" {
		a = append(a, "--partition="+s.opts.Partition)
	}
	if s.opts.Account != "" {
		a = append(a, "--account="+s.opts.Account)
	}
	a = append(a, s.opts.ExtraArgs...)
	return append(a, script)
}

// gpusPerNode is the GPUs a job asks of each node: the count its benchmark
// fixes, or for one that requires accelerators with any count ("*") or
// only a model, the site's GPUsPerNode (at least 1); none for a CPU job.
func (s *Slurm) gpusPerNode(b *d5list.Benchmark) int {
	if !needsGPUs(b) {
		return 0
	}
	if n, err := strconv.Atoi(b.Requires["accelerator_count"]); err == nil && n > 0 {
		return n
	}
	return max(s.opts.GPUsPerNode, 1)
}

// batchScript sets exactly the D5_* environment (sbatch --export=NONE
// passes none of the runner's) and execs the entrypoint. For a
// data-parallel benchmark (workers > 1) it starts one entrypoint per
// worker with srun, each with the rendezvous variables torch.distributed's
// env:// and torchrun's workers read: MASTER_ADDR (the job's first node),
// MASTER_PORT (from the job id, so that two jobs on a node do not meet),
// WORLD_SIZE, RANK and LOCAL_RANK. The entrypoint then is one worker, not
// their launcher.
func (s *Slurm) batchScript(env []string, dir string, argv []string, workers int) string {
	var b strings.Builder
	b.WriteString("#!/bin/sh\n# Written by the d5list Slurm executor.\n")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		fmt.Fprintf(&b, "export %s=%s\n", k, shellQuote(v))
	}
	fmt.Fprintf(&b, "cd %s || exit 1\n", shellQuote(dir))
	if workers > 1 {
		fmt.Fprintf(&b, "export WORLD_SIZE=%d\n", workers)
		fmt.Fprintf(&b, "MASTER_ADDR=$(%s show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1) || exit 1\n", shellQuote(s.bin("scontrol")))
		b.WriteString("export MASTER_ADDR\nexport MASTER_PORT=$((20000 + SLURM_JOB_ID % 20000))\n")
		// sbatch's --export=NONE would pass on to the steps: srun is told
		// to give the tasks the environment set above.
		fmt.Fprintf(&b, "exec %s --export=ALL --kill-on-bad-exit=1 --ntasks=%d sh -c 'export RANK=$SLURM_PROCID LOCAL_RANK=$SLURM_LOCALID; exec \"$@\"' d5-worker", shellQuote(s.bin("srun")), workers)
	} else {
		b.WriteString("exec")
	}
	for _, a := range argv {
		b.WriteString(" " + shellQuote(a))
	}
	b.WriteString("\n")
	return b.String()
}

func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func (s *Slurm) submit(ctx context.Context, args []string) (string, error) {
	out, err := exec.CommandContext(ctx, s.bin("sbatch"), args...).CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("sbatch: %v: %s", err, bytes.TrimSpace(out))
	}
	// --parsable prints "jobid" or "jobid;cluster".
	id, _, _ := strings.Cut(strings.TrimSpace(string(out)), ";")
	if _, err := strconv.ParseUint(id, 10, 64); err != nil {
		return "", fmt.Errorf("sbatch printed %q, not a job id", out)
	}
	return id, nil
}

// follow polls squeue until the job has left it, then asks sacct (or,
// without accounting, scontrol) how it ended. On ctx's end it cancels the
// Slurm job.
func (s *Slurm) follow(ctx context.Context, id string) (string, error) {
	t := time.NewTicker(s.opts.Poll)
	defer t.Stop()
	for {
		out, err := exec.Command(s.bin("squeue"), "-h", "-j", id, "-o", "%T").Output()
		st := strings.TrimSpace(string(out))
		if err == nil && st == "" || isFinal(st) {
			return s.finalState(id), nil
		}
		if err != nil {
			// squeue fails for a job the controller has already purged;
			// anything else is taken for a passing controller hiccup.
			if fin := s.finalState(id); isFinal(fin) || fin == "UNKNOWN" && strings.Contains(string(exitStderr(err)), "Invalid job id") {
				return fin, nil
			}
		}
		select {
		case <-ctx.Done():
			s.cancel(id)
			return "", context.Cause(ctx)
		case <-t.C:
		}
	}
}

func isFinal(st string) bool {
	switch st {
	case "COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE", "PREEMPTED":
		return true
	}
	return false
}

func (s *Slurm) finalState(id string) string {
	if out, err := exec.Command(s.bin("sacct"), "-n", "-X", "-P", "-j", id, "-o", "State").Output(); err == nil {
		if f := strings.Fields(string(out)); len(f) > 0 {
			return f[0] // "CANCELLED by 0" keeps the first word
		}
	}
	out, err := exec.Command(s.bin("scontrol"), "show", "job", "-o", id).Output()
	if err != nil {
		return "UNKNOWN"
	}
	for _, f := range strings.Fields(string(out)) {
		if v, ok := strings.CutPrefix(f, "JobState="); ok {
			return v
		}
	}
	return "UNKNOWN"
}

// cancel runs scancel with a context of its own: the job's is already done.
func (s *Slurm) cancel(id string) {
	ctx, done := context.WithTimeout(context.Background(), 30*time.Second)
	defer done()
	if out, err := exec.CommandContext(ctx, s.bin("scancel"), id).CombinedOutput(); err != nil {
		s.opts.Log.Warn("scancel failed", "slurm_job", id, "err", err, "output", string(out))
	}
}

func outputTail(output string) string {
	t := newTail(50)
	if f, err := openRunFile(output); err == nil {
		readLines(f, func(line string) { t.add("output", line) })
		f.Close()
	}
	return t.String()
}

func exitStderr(err error) []byte {
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.Stderr
	}
	return nil
}
