package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/harness"
)

// sandboxUID is the user a root runner drops to before starting bwrap. The
// kernel never applies RLIMIT_NPROC to processes whose real user is root
// (even as another uid inside a user namespace), so without this drop the
// process limit would be a fiction.
const sandboxUID = 65534 // nobody

func newProcess(opts ProcessOptions) (*Process, error) {
	if opts.Fetch == nil {
		return nil, d5list.Errorf(d5list.EINVALID, "process executor: ProcessOptions.Fetch is required")
	}
	if opts.WorkDir == "" {
		opts.WorkDir = os.TempDir()
	}
	if opts.Limits == (bundle.Limits{}) {
		opts.Limits = bundle.DefaultLimits()
	}
	if opts.DefaultTimeLimit <= 0 {
		opts.DefaultTimeLimit = 6 * time.Hour
	}
	if opts.KillGrace <= 0 {
		opts.KillGrace = 2 * time.Second
	}
	if opts.TailLines <= 0 {
		opts.TailLines = 50
	}
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	if opts.ImageLimits == (ImageLimits{}) {
		opts.ImageLimits = DefaultImageLimits()
	}
	if opts.ImageCache == "" {
		opts.ImageCache = filepath.Join(opts.WorkDir, "d5list-images")
	}
	p := &Process{opts: opts, gpus: newGPUPool(opts.GPUs, opts.GPUsPerJob), unpack: unpackImage}
	if p.gpus != nil {
		// Which /dev/nvidiaN each shared GPU is, once: a job's sandbox
		// gets its own GPUs' nodes only.
		p.gpus.minors = detectGPUMinors()
	}
	bw := opts.Bwrap
	if bw == "" {
		bw = "bwrap"
	}
	if found, err := exec.LookPath(bw); err == nil {
		p.bwrap = found
	} else if !opts.AllowUnsandboxed {
		return nil, errNoSandbox(bw, err)
	}
	if p.bwrap != "" {
		pl, err := exec.LookPath("prlimit")
		if err != nil {
			return nil, d5list.Errorf(d5list.EUNAVAILABLE, "process executor: prlimit (util-linux) is needed to set the sandbox's rlimits: %v", err)
		}
		p.prlimit = pl
	}
	if p.bwrap != "" && os.Geteuid() == 0 {
		// Runs drop to the sandbox user, which must reach every job's
		// folder: a work dir it cannot enter would fail every job, three
		// times each, so the runner refuses to start instead.
		if err := os.MkdirAll(opts.WorkDir, 0o755); err != nil {
			return nil, d5list.Errorf(d5list.EUNAVAILABLE, "process executor: work dir %s: %v", opts.WorkDir, err)
		}
		if err := traversable(opts.WorkDir); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func errNoSandbox(bw string, err error) error {
	return d5list.Errorf(d5list.EUNAVAILABLE,
		"process executor: bubblewrap (%s) is not available (%v): competitor code runs only inside a sandbox; "+
			"install bubblewrap (Debian: apt-get install bubblewrap) or start the runner with --allow-unsandboxed "+
			"on a machine dedicated to trusted code", bw, err)
}

// Sandboxed reports whether runs go through bubblewrap.
func (p *Process) Sandboxed() bool { return p.bwrap != "" }

// Execute fetches and extracts the bundle into a fresh folder and runs its
// entrypoint once per seed, in order.
func (p *Process) Execute(ctx context.Context, spec d5list.JobSpec) ([]d5list.RunLog, error) {
	if p.bwrap == "" && !p.opts.AllowUnsandboxed {
		return nil, errNoSandbox("bwrap", errors.New("not found"))
	}
	task, err := harness.For(&spec.Benchmark, &spec.Recipe)
	if err != nil {
		return nil, err
	}
	setup := jobSetup{fetch: p.opts.Fetch, dir: p.opts.WorkDir, limits: p.opts.Limits, keep: p.opts.KeepWork, timeLimit: p.opts.DefaultTimeLimit}
	pj := processJob{task: task, dropUID: p.bwrap != "" && os.Geteuid() == 0}
	switch { // no GPUs, unless the benchmark runs on accelerators
	case !needsGPUs(&spec.Benchmark):
	case p.gpus != nil:
		if pj.gpus.ids, err = p.gpus.acquire(ctx); err != nil {
			return nil, err
		}
		defer p.gpus.release(pj.gpus.ids)
	default:
		pj.gpus.unmanaged = true
	}
	// The recipe's image is pulled and unpacked once per job, before any
	// run's clock starts: run 0's wall time is the run's alone, and a
	// log that arrives all at once is timed by it.
	if spec.Recipe.Image != "" {
		setup.prepare = func(ctx context.Context, job string) error {
			var err error
			pj.img.rootfs, pj.img.env, err = p.image(ctx, job, spec.Recipe.Image, pj.dropUID)
			return err
		}
	}
	// What the job's runs ran with is asked in their own sandbox, started
	// as the first run's was, once the runs are done (off their clocks).
	setup.record = func(ctx context.Context) map[string]string {
		if spec.Recipe.Image != "" {
			return p.probeEnvironment(ctx, spec, pj.launch)
		}
		return p.hostVersions.get(func() map[string]string { return p.probeEnvironment(ctx, spec, pj.launch) })
	}
	return setup.execute(ctx, spec, func(ctx context.Context, spec d5list.JobSpec, job, entry string, mode os.FileMode, i int, seed int64) ([]byte, *d5list.RunClock, error) {
		return p.run(ctx, spec, job, entry, mode, i, seed, &pj)
	})
}

// processJob is what every run of a job shares: its GPUs, its unpacked
// image, whether the sandbox drops to its own user, its harness task, and
// how its first run's sandbox was started (for probeEnvironment).
type processJob struct {
	gpus    gpuShare
	img     jobImage
	dropUID bool
	task    *harness.Task
	launch  sandboxLaunch
}

// jobImage is a job's unpacked recipe image: its root filesystem and the
// environment its configuration sets. Empty for a job without an image.
type jobImage struct {
	rootfs string
	env    []string
}

// jobSetup is what the bundle-running executors share: where a job's
// bundle is extracted, and the time limit when its benchmark sets none.
type jobSetup struct {
	fetch     FetchFunc
	dir       string
	limits    bundle.Limits
	keep      bool // keep the job folder after the job
	timeLimit time.Duration
	// prepare, when set, readies the extracted job folder for its runs
	// (a recipe's image) before the first run's clock starts, so that
	// no run is timed with it.
	prepare func(ctx context.Context, job string) error
	// record, when set, is asked after the runs, in the job folder still
	// there, for what they ran with; its labels go into every run's
	// RunClock.Environment.
	record func(ctx context.Context) map[string]string
}

// runFunc runs one seed of the entrypoint (mode: its file mode) in job and
// returns that run's MLLOG.
type runFunc func(ctx context.Context, spec d5list.JobSpec, job, entry string, mode os.FileMode, i int, seed int64) ([]byte, *d5list.RunClock, error)

// execute checks the entrypoint, extracts the bundle, and runs each seed in
// order under the benchmark's time limit.
func (s jobSetup) execute(ctx context.Context, spec d5list.JobSpec, run runFunc) ([]d5list.RunLog, error) {
	entry, err := checkEntrypoint(spec.Recipe.Entrypoint)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, jobTimeLimit(spec, s.timeLimit),
		d5list.Errorf(d5list.ECONFLICT, "job %d exceeded the benchmark's time limit", spec.JobID))
	defer cancel()

	job, err := prepareJob(ctx, s.fetch, spec, s.dir, s.limits)
	if err != nil {
		return nil, err
	}
	if !s.keep {
		defer os.RemoveAll(job)
	}
	info, err := os.Stat(filepath.Join(job, "bundle", filepath.FromSlash(entry)))
	if err != nil || !info.Mode().IsRegular() {
		return nil, d5list.Errorf(d5list.EINVALID, "recipe: entrypoint %q is not a file of the bundle", entry)
	}
	if err := harness.Stage(filepath.Join(job, "lib")); err != nil {
		return nil, err
	}
	if s.prepare != nil {
		if err := s.prepare(ctx, job); err != nil {
			if c := context.Cause(ctx); c != nil {
				return nil, c
			}
			return nil, err
		}
	}
	runs := spec.Runs()
	logs := make([]d5list.RunLog, 0, len(runs))
	for _, r := range runs {
		i, seed := r.Index, r.Seed
		start := time.Now()
		log, clock, err := run(ctx, spec, job, entry, info.Mode(), i, seed)
		if err != nil {
			if c := context.Cause(ctx); c != nil {
				return nil, fmt.Errorf("run %d (seed %d): %w", i, seed, c)
			}
			return nil, fmt.Errorf("run %d (seed %d): %w", i, seed, err)
		}
		// The runner's clock, not the entrypoint's: the log's timestamps
		// are the run's claim about itself.
		if clock == nil {
			clock = &d5list.RunClock{}
		}
		clock.WallS = time.Since(start).Seconds()
		logs = append(logs, d5list.RunLog{Index: i, Seed: seed, Fresh: r.Fresh, Log: log, Clock: clock})
	}
	if s.record != nil {
		versions := s.record(ctx)
		for _, l := range logs {
			if len(versions) > 0 && l.Clock.Environment == nil {
				l.Clock.Environment = map[string]string{}
			}
			for k, v := range versions {
				l.Clock.Environment[k] = v
			}
		}
	}
	return logs, nil
}

// jobTimeLimit is the benchmark's bound on one re-run job.
func jobTimeLimit(spec d5list.JobSpec, def time.Duration) time.Duration {
	if s := spec.Benchmark.Verify.TimeLimitSeconds; s > 0 {
		return time.Duration(s) * time.Second
	}
	return def
}

// checkEntrypoint accepts only a clean path inside the bundle.
func checkEntrypoint(e string) (string, error) {
	if e == "" {
		return "", d5list.Errorf(d5list.EINVALID, "recipe: entrypoint is empty; the process executor needs one (for example code/run.sh)")
	}
	if strings.Contains(e, `\`) || path.IsAbs(e) || path.Clean(e) != e || e == "." || e == ".." || strings.HasPrefix(e, "../") {
		return "", d5list.Errorf(d5list.EINVALID, "recipe: entrypoint %q must be a relative path inside the bundle", e)
	}
	return e, nil
}

// prepareJob makes <work>/d5job-*/bundle with the extracted bundle. The job
// folder is world-traversable so that the sandbox user can reach the bind
// sources.
func prepareJob(ctx context.Context, fetch FetchFunc, spec d5list.JobSpec, work string, lim bundle.Limits) (string, error) {
	if err := os.MkdirAll(work, 0o755); err != nil {
		return "", err
	}
	job, err := os.MkdirTemp(work, fmt.Sprintf("d5job-%d-", spec.JobID))
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(job)
		}
	}()
	if err := os.Chmod(job, 0o755); err != nil {
		return "", err
	}
	archive := filepath.Join(job, "bundle.archive")
	f, err := os.OpenFile(archive, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
	if err != nil {
		return "", err
	}
	err = fetch(ctx, spec, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("fetching the bundle of job %d: %w", spec.JobID, err)
	}
	if err := bundle.Extract(archive, filepath.Join(job, "bundle"), lim); err != nil {
		return "", fmt.Errorf("extracting the bundle of job %d: %w", spec.JobID, err)
	}
	if err := os.Remove(archive); err != nil {
		return "", err
	}
	ok = true
	return job, nil
}

// layout is where a run sees its folders: the same paths as on the host
// when unsandboxed, fixed paths under /d5 inside the sandbox. ctl is the
// runner's folder of the run's gate and result log (window.go), which the
// sandbox sees read-only; lib holds the runner's harness (harness.go).
type layout struct {
	bundle, run, result, gate, ctl, lib, scratch, data string
	// devices are the GPU device nodes of the job's share, bound into the
	// sandbox at the same paths (gpuDevices).
	devices []string
}

// hostLayout is run i's folders on the host, with its scratch folder made.
func hostLayout(job, dataDir string, i int) (layout, error) {
	run := filepath.Join(job, fmt.Sprintf("run-%d", i))
	ctl := filepath.Join(job, fmt.Sprintf("ctl-%d", i))
	l := layout{
		bundle:  filepath.Join(job, "bundle"),
		run:     run,
		ctl:     ctl,
		lib:     filepath.Join(job, "lib"),
		result:  filepath.Join(ctl, windowLogName),
		gate:    filepath.Join(ctl, windowGateName),
		scratch: filepath.Join(run, "scratch"),
		data:    dataDir,
	}
	return l, os.MkdirAll(l.scratch, 0o755)
}

func (p *Process) run(ctx context.Context, spec d5list.JobSpec, job, entry string, mode os.FileMode, i int, seed int64, pj *processJob) ([]byte, *d5list.RunClock, error) {
	gpus, img, dropUID := pj.gpus, pj.img, pj.dropUID
	host, err := hostLayout(job, p.opts.DataDir, i)
	if err != nil {
		return nil, nil, err
	}
	host.devices = gpuDevices("/", gpus, p.gpus.nodeMinors())
	if dropUID {
		if err := traversable(job); err != nil {
			return nil, nil, err
		}
		for _, d := range []string{host.run, host.scratch} {
			if err := os.Chown(d, sandboxUID, sandboxUID); err != nil {
				return nil, nil, err
			}
		}
	}
	in := host
	if p.bwrap != "" {
		in = sandboxLayout
		if p.opts.DataDir != "" {
			in.data = "/d5/data"
		}
	}
	argv, err := entryArgv(path.Join(in.bundle, entry), mode)
	if err != nil {
		return nil, nil, err
	}
	entryArgs := len(argv)
	env := runEnv(spec, in, i, gpus, pj.task)
	if len(p.opts.ExtraPath) > 0 {
		env[0] = "PATH=" + strings.Join(p.opts.ExtraPath, ":") + ":" + strings.TrimPrefix(env[0], "PATH=")
	}
	switch {
	case img.rootfs != "":
		// The image's own environment (its PATH, its library paths), then
		// the run's, which the image cannot override.
		hasPath := false
		for _, kv := range img.env {
			hasPath = hasPath || strings.HasPrefix(kv, "PATH=")
		}
		if hasPath {
			env = env[1:]
		}
		env = append(slices.Clone(img.env), env...)
		// The image has no prlimit of its own: the limits are set on the
		// sandbox from outside, bwrap and all, which they leave room for.
		// The run's /tmp, a folder of its own beside its scratch folder.
		tmp := filepath.Join(host.run, "tmp")
		if err := os.MkdirAll(tmp, 0o755); err != nil {
			return nil, nil, err
		}
		if dropUID {
			if err := os.Chown(tmp, sandboxUID, sandboxUID); err != nil {
				return nil, nil, err
			}
		}
		argv = append(p.prlimitArgs(spec), append(p.bwrapImageArgs(img.rootfs, tmp, host, in, env), argv...)...)
	case p.bwrap != "":
		argv = append(p.bwrapArgs(host, in, env, spec), append(p.prlimitArgs(spec), argv...)...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	if p.bwrap == "" {
		cmd.Dir = host.bundle
	}
	cmd.Env = env
	if p.bwrap != "" {
		// bwrap, and prlimit around it for an image, run on the host: they
		// get the runner's minimal environment, never the run's or the
		// image's (an image's LD_PRELOAD or LD_LIBRARY_PATH would load
		// into them). The run's reaches the sandbox through --setenv only.
		cmd.Env = hostEnv
	}
	if i == 0 {
		// The sandbox (or, unsandboxed, the plain start) of the job's runs,
		// for probeEnvironment.
		pj.launch = sandboxLaunch{started: true, argv: slices.Clone(argv[:len(argv)-entryArgs]), env: cmd.Env, dir: cmd.Dir, dropUID: dropUID}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if dropUID {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: sandboxUID, Gid: sandboxUID}
	}
	tail := newTail(p.opts.TailLines)
	tree := newTreeClock()
	// The run's gate and result log: the runner times its window as the
	// run takes its seed and its lines arrive, and live progress shows its
	// events as they do, so an entrypoint need not print them.
	var beforeWindow time.Duration
	win, err := openWindow(host.ctl, windowRun{index: i, seed: seed, fresh: i >= len(spec.Seeds), task: pj.task,
		maxBytes: p.opts.Limits.MaxResultBytes, onLine: LinesFrom(ctx), onGate: func() { beforeWindow = tree.cpuNow() }})
	if err != nil {
		return nil, nil, err
	}
	onStart := func(run, pid int) {
		tree.follow(pid)
		if p.opts.OnStart != nil {
			p.opts.OnStart(run, pid)
		}
	}
	started := time.Now()
	err = runGroup(ctx, cmd, p.opts.KillGrace, i, tail, bothLines(p.opts.OnLine, LinesFrom(ctx)), onStart)
	foreign, computing, treeCPU := tree.finish()
	clock := &d5list.RunClock{}
	log, logErr := win.close(clock)
	if err != nil {
		return nil, nil, fmt.Errorf("%w%s", err, tail.String())
	}
	if logErr != nil {
		return nil, nil, logErr
	}
	if len(log) == 0 {
		return nil, nil, fmt.Errorf("the entrypoint wrote nothing to $D5_RESULT_LOG%s", tail.String())
	}
	// WaitS, as the builtin workloads report it: the share of the run
	// that foreign work delayed its processes by, times its wall time.
	// The tree's CPU time where it was read: bwrap's rusage leaves out
	// the sandbox's processes, which its own init reaps.
	cpu := processCPU(cmd.ProcessState)
	if treeCPU > 0 {
		cpu = max(cpu, treeCPU.Seconds())
	}
	clock.CPUS, clock.WaitS, clock.Processes = cpu, foreign*time.Since(started).Seconds(), &computing
	clock.BeforeWindowCPUS = beforeWindow.Seconds()
	clock.Audit = win.audit(seed)
	clock.Environment = envRecord(env)
	return log, clock, nil
}

// sandboxLayout is where a sandboxed run sees its folders.
var sandboxLayout = layout{bundle: "/d5/bundle", run: "/d5/run", ctl: "/d5/ctl", lib: "/d5/lib",
	result: "/d5/ctl/" + windowLogName, gate: "/d5/ctl/" + windowGateName, scratch: "/d5/run/scratch"}

// hostVersionsTTL is how long the runner reuses what its own sandbox's
// python3 reported: a probe starts Python and imports torch (about a
// second), which every job would otherwise pay after its runs; a package
// upgraded on the runner shows within this time.
const hostVersionsTTL = 10 * time.Minute

// versionCache keeps the last probe of the runner's own sandbox (jobs
// without an image all run the same python3); an empty probe is not kept.
type versionCache struct {
	mu sync.Mutex
	at time.Time
	v  map[string]string
}

func (c *versionCache) get(probe func() map[string]string) map[string]string {
	c.mu.Lock()
	if c.v != nil && time.Since(c.at) <= hostVersionsTTL {
		defer c.mu.Unlock()
		return maps.Clone(c.v)
	}
	c.mu.Unlock()
	// Probed without the lock: a slow probe (up to probeTimeout) holds up
	// only its own job; two jobs ending together may both probe.
	v := probe()
	if len(v) > 0 {
		c.mu.Lock()
		c.v, c.at = maps.Clone(v), time.Now()
		c.mu.Unlock()
	}
	return v
}

// sandboxLaunch is how a job's first run was started on the host: the
// command line up to its entrypoint (prlimit, bwrap and their options;
// nothing unsandboxed), and the environment and folder it started in.
type sandboxLaunch struct {
	started bool
	argv    []string
	env     []string
	dir     string
	dropUID bool
}

// probeEnvironment asks the python3 on the job's sandbox PATH (an image's
// own, in an image) what it computes with (environmentProbe), in the same
// sandbox, limits and environment as the job's runs, bounded in time and
// output. A job whose sandbox has no python3, or whose probe fails, records
// no versions; that is not the job's failure.
func (p *Process) probeEnvironment(ctx context.Context, spec d5list.JobSpec, l sandboxLaunch) map[string]string {
	if !l.started {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	argv := append(slices.Clone(l.argv), "python3", probeFlag, "-c", environmentProbe)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = l.dir
	cmd.Env = l.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if l.dropUID {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: sandboxUID, Gid: sandboxUID}
	}
	var lines []string
	size := 0
	keep := func(_ int, stream, line string) {
		if stream == "stdout" && size+len(line) <= maxProbeOutput {
			lines = append(lines, line)
			size += len(line)
		}
	}
	if err := runGroup(ctx, cmd, p.opts.KillGrace, 0, newTail(0), keep, nil); err != nil {
		p.opts.Log.Info("the versions the job ran with were not recorded: no python3 in its sandbox answered the probe", "job", spec.JobID, "err", err)
		return nil
	}
	return parseEnvironmentProbe(lines)
}

// image pulls (a registry image) or finds (an archive in the bundle) the
// recipe's container image and unpacks it into the job's rootfs, once per
// job, before its runs; it returns the rootfs and the image's
// environment. An image runs only in the sandbox.
func (p *Process) image(ctx context.Context, job, image string, dropUID bool) (string, []string, error) {
	if p.bwrap == "" {
		return "", nil, d5list.Errorf(d5list.EUNAVAILABLE, "recipe image: a container image runs only in the sandbox, and bubblewrap is not installed")
	}
	rootfs := filepath.Join(job, "rootfs")
	var archive string
	if d5list.IsRegistryImage(image) {
		var err error
		if archive, err = p.pull(ctx, image); err != nil {
			return "", nil, err
		}
	} else {
		rel, err := checkEntrypoint(image)
		if err != nil {
			return "", nil, d5list.Errorf(d5list.EINVALID, "recipe: image %q must be a relative path inside the bundle", image)
		}
		archive = filepath.Join(job, "bundle", filepath.FromSlash(rel))
	}
	if err := os.Mkdir(rootfs, 0o755); err != nil {
		return "", nil, err
	}
	cfg, err := p.unpack(ctx, archive, rootfs, p.opts.ImageLimits)
	if err != nil {
		return "", nil, err
	}
	if dropUID {
		// The sandbox user reads the image as its owner would.
		if err := chownTree(rootfs, sandboxUID); err != nil {
			return "", nil, err
		}
	}
	return rootfs, cfg.Env, nil
}

// traversable checks that the sandbox user can reach dir, since bwrap,
// started as that user, opens the bind sources itself.
func traversable(dir string) error {
	for d := dir; ; d = filepath.Dir(d) {
		fi, err := os.Stat(d)
		if err != nil {
			return err
		}
		if fi.Mode().Perm()&0o001 == 0 {
			return d5list.Errorf(d5list.EUNAVAILABLE, "process executor: the sandbox user (uid %d) cannot enter %s (mode %v), on the way to the work dir %s: "+
				"choose a work dir (the runner's --work) whose parents are all world-searchable, or chmod o+x %s", sandboxUID, d, fi.Mode().Perm(), dir, d)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// entryArgv runs an executable entrypoint directly, and a script without
// the exec bit through its interpreter, as competitors often forget chmod.
func entryArgv(entry string, mode os.FileMode) ([]string, error) {
	if mode&0o111 != 0 {
		return []string{entry}, nil
	}
	switch path.Ext(entry) {
	case ".sh":
		return []string{"/bin/sh", entry}, nil
	case ".py":
		return []string{"python3", entry}, nil
	}
	return nil, d5list.Errorf(d5list.EINVALID, "recipe: entrypoint %q is not executable (set its exec bit, or use a .sh or .py file)", entry)
}

// hostEnv is the environment of the sandbox's own programs on the host.
var hostEnv = []string{"PATH=/usr/sbin:/usr/bin:/sbin:/bin"}

// sandboxPath and sandboxLang are the sandbox's PATH and locale, which
// FrameworkLabels probes with too: what a run sees is what the runner
// advertises.
const (
	sandboxPath = "PATH=/usr/local/bin:/usr/bin:/bin"
	sandboxLang = "LANG=C.UTF-8"
)

// runEnv is the whole environment of a run: nothing leaks from the runner
// except the GPU selection.
func runEnv(spec d5list.JobSpec, l layout, i int, gpus gpuShare, task *harness.Task) []string {
	env := []string{
		sandboxPath,
		"HOME=" + l.scratch,
		"TMPDIR=" + l.scratch,
		sandboxLang,
		"D5_RESULT_LOG=" + l.result,
		"D5_GATE=" + l.gate,
		"PYTHONPATH=" + l.lib,
		"D5_RUN_INDEX=" + strconv.Itoa(i),
		"D5_RUNS=" + strconv.Itoa(len(spec.Seeds)+len(spec.FreshSeeds)),
		"D5_DATA_DIR=" + l.data,
		"D5_BENCHMARK=" + spec.Benchmark.ID,
		"D5_SCRATCH=" + l.scratch,
		"D5_BUNDLE=" + l.bundle,
	}
	if task != nil {
		env = append(env, "D5_TASK="+task.JSON(), "D5_AUDIT="+filepath.Join(l.ctl, windowAuditName), "D5_REVEAL="+filepath.Join(l.ctl, windowRevealName))
	}
	return append(env, gpuEnv(gpus)...)
}

// readResult reads the MLLOG file a run wrote, through openRunFile: a link,
// FIFO or device in its place fails the run, with what it was.
func readResult(name string, max int64, tail *lineTail) ([]byte, error) {
	f, err := openRunFile(name)
	if errors.Is(err, errNotRegular) {
		return nil, fmt.Errorf("$D5_RESULT_LOG: %v; the runner reads back only a regular file the run wrote%s", err, tail.String())
	}
	if err != nil {
		return nil, fmt.Errorf("the entrypoint exited without writing $D5_RESULT_LOG%s", tail.String())
	}
	defer f.Close()
	if max <= 0 {
		max = bundle.DefaultLimits().MaxResultBytes
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, d5list.Errorf(d5list.ETOOLARGE, "the result log is larger than %d bytes", max)
	}
	if len(b) == 0 {
		return nil, fmt.Errorf("the entrypoint wrote an empty $D5_RESULT_LOG%s", tail.String())
	}
	return b, nil
}

// runGroup runs cmd as the leader of its own process group, feeds its
// output to tail and onLine, and on ctx's end sends the group SIGTERM and,
// grace later, SIGKILL. Whatever of the group outlives the leader is killed
// as well, so that nothing a run started survives it.
func runGroup(ctx context.Context, cmd *exec.Cmd, grace time.Duration, run int, tail *lineTail, onLine LineFunc, onStart func(int, int)) error {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	// A grandchild holding the pipes must not keep Wait waiting.
	cmd.WaitDelay = grace + time.Second
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	pgid := cmd.Process.Pid
	if onStart != nil {
		onStart(run, pgid)
	}
	var mu sync.Mutex // onLine is called one line at a time per run
	var wg sync.WaitGroup
	for _, s := range []struct {
		name string
		r    io.Reader
	}{{"stdout", stdout}, {"stderr", stderr}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			readLines(s.r, func(line string) {
				mu.Lock()
				defer mu.Unlock()
				tail.add(s.name, line)
				if onLine != nil {
					onLine(run, s.name, line)
				}
			})
		}()
	}
	done := make(chan struct{})
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}()
	wg.Wait()
	err = cmd.Wait()
	close(done)
	<-killed
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err != nil {
		return fmt.Errorf("the entrypoint failed: %w", err)
	}
	return nil
}

// readLines splits r into lines, cutting lines longer than 4 KiB so that a
// run cannot make the runner hold unbounded text.
func readLines(r io.Reader, fn func(string)) {
	const maxLine = 4096
	buf := make([]byte, 32<<10)
	var line []byte
	cut := false
	for {
		n, err := r.Read(buf)
		for _, c := range buf[:n] {
			if c == '\n' {
				fn(strings.TrimSuffix(string(line), "\r"))
				line, cut = line[:0], false
				continue
			}
			if len(line) < maxLine {
				line = append(line, c)
			} else if !cut {
				line = append(line, " [cut]"...)
				cut = true
			}
		}
		if err != nil {
			if len(line) > 0 {
				fn(string(line))
			}
			return
		}
	}
}

// lineTail keeps the last n output lines for error messages.
type lineTail struct {
	mu    sync.Mutex
	n     int
	lines []string
}

func newTail(n int) *lineTail { return &lineTail{n: n} }

func (t *lineTail) add(stream, line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, stream+": "+line)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
}

func (t *lineTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return ""
	}
	return d5list.FailureOutputMarker + "\n" + strings.Join(t.lines, "\n")
}

// defaultRLimits derives limits from the job's time limit and the machine.
func (p *Process) rlimits(spec d5list.JobSpec) ResourceLimits {
	l := p.opts.RLimits
	if l.CPUSeconds == 0 {
		l.CPUSeconds = int64(jobTimeLimit(spec, p.opts.DefaultTimeLimit)/time.Second) * int64(runtime.NumCPU())
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = memTotal()
	}
	if l.Processes == 0 {
		l.Processes = 1024
	}
	if l.FileBytes == 0 {
		l.FileBytes = 16 << 30
	}
	return l
}

// prlimitArgs sets the rlimits inside the sandbox, after bwrap has set it
// up (bwrap itself needs to fork). Memory is RLIMIT_DATA rather than
// RLIMIT_AS: CUDA reserves terabytes of address space it never touches, so
// an address-space limit would break every GPU run, while RLIMIT_DATA
// counts only private writable memory.
func (p *Process) prlimitArgs(spec d5list.JobSpec) []string {
	l := p.rlimits(spec)
	arg := func(name string, v int64) string {
		if v < 0 {
			return "--" + name + "=unlimited"
		}
		return "--" + name + "=" + strconv.FormatInt(v, 10)
	}
	return []string{p.prlimit,
		arg("cpu", l.CPUSeconds), arg("data", l.MemoryBytes),
		arg("nproc", l.Processes), arg("fsize", l.FileBytes), "--"}
}

func memTotal() int64 {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
			if kb, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				return kb << 10
			}
		}
	}
	return -1
}
