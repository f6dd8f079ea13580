package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
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
	p := &Process{opts: opts, gpus: newGPUPool(opts.GPUs, opts.GPUsPerJob), unpack: unpackImage, hostVersions: opts.Versions}
	if p.hostVersions == nil {
		p.hostVersions = new(VersionCache)
	}
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
	if err := p.readySandbox(); err != nil {
		return nil, err
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
	if task != nil {
		pj.audits = newAuditor()
		// The fresh runs' audits recompute epochs: run first, they are
		// done while the later runs start up, not after the last.
		setup.freshFirst = true
	}
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
	if pj.cgroup, err = p.jobCgroup(spec); err != nil {
		return nil, err
	}
	defer pj.cgroup.remove()
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
	if e := spec.Benchmark.Verify.Evaluation; e != nil && task == nil {
		pj.models = map[int]modelHandover{}
		if spec.Benchmark.Verify.Steps != nil {
			pj.steps = map[int]stepHandover{}
		}
		setup.afterRuns = func(ctx context.Context, job string, logs []d5list.RunLog) error {
			if err := p.evaluateModels(ctx, spec, job, &pj, logs); err != nil || pj.steps == nil {
				return err
			}
			return p.checkSteps(ctx, spec, job, &pj, logs)
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
	logs, err := setup.execute(ctx, spec, func(ctx context.Context, spec d5list.JobSpec, job, entry string, mode os.FileMode, i int, seed int64) ([]byte, *d5list.RunClock, error) {
		return p.run(ctx, spec, job, entry, mode, i, seed, &pj)
	})
	if pj.audits != nil {
		pj.audits.wait()
	}
	return logs, err
}

// processJob is what every run of a job shares: its GPUs, its unpacked
// image, whether the sandbox drops to its own user, its cgroup (nil: no
// caps), its harness task and the auditor of its runs (nil: no task), and
// how its first run's sandbox was started (for probeEnvironment).
type processJob struct {
	gpus    gpuShare
	img     jobImage
	dropUID bool
	cgroup  *jobCgroup
	task    *harness.Task
	audits  *auditor
	launch  sandboxLaunch
	// ownLaunch is launch without the recipe's image: the runner's own
	// /usr, for what the runner runs of its own in the job's sandbox.
	ownLaunch sandboxLaunch
	// models are what each run handed over for the benchmark's
	// evaluation, by run index (nil: the benchmark has none), and
	// modelBytes their sizes together, on the job's disk cap.
	models     map[int]modelHandover
	modelBytes int64
	// steps are what each run handed over for the benchmark's step
	// audit, by run index (nil: the benchmark has none).
	steps map[int]stepHandover
}

// jobImage is a job's unpacked recipe image: its root filesystem and the
// environment its configuration sets. Empty for a job without an image.
type jobImage struct {
	rootfs string
	env    []string
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

// hostLayout is a run's folders on the host, with its scratch folder made.
// Every run of a job has the same ones, emptied of the run before's: a
// run sees its folders' host paths (a bind mount's source is in
// /proc/self/mountinfo; unsandboxed, they are its paths), which must not
// tell it which of the job's runs it is. The control folder is made by
// openWindow.
func hostLayout(job, dataDir string) (layout, error) {
	run := filepath.Join(job, "run")
	ctl := filepath.Join(job, "ctl")
	for _, d := range []string{run, ctl} {
		if err := os.RemoveAll(d); err != nil {
			return layout{}, err
		}
	}
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
	host, err := hostLayout(job, p.opts.DataDir)
	if err != nil {
		return nil, nil, err
	}
	host.devices = gpuDevices("/", gpus, p.gpus.nodeMinors())
	if dropUID {
		// The sandbox user reaches the bundle, the harness and the run's
		// control folder on the host; what it writes is in its work areas.
		if err := traversable(job); err != nil {
			return nil, nil, err
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
	env := runEnv(spec, in, gpus, pj.task)
	if len(p.opts.ExtraPath) > 0 {
		env[0] = "PATH=" + strings.Join(p.opts.ExtraPath, ":") + ":" + strings.TrimPrefix(env[0], "PATH=")
	}
	ownEnv := slices.Clone(env)
	var sandbox []string // bwrap's options; none unsandboxed
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
		sandbox = p.bwrapImageArgs(img.rootfs, host, in, env, spec)
	case p.bwrap != "":
		sandbox = p.bwrapArgs(host, in, env, spec)
	}
	argv, opts, err := p.startArgv(spec, sandbox, argv)
	if err != nil {
		return nil, nil, err
	}
	if opts != nil {
		defer opts.Close()
	}
	cmd, admission := pj.cgroup.hold(argv)
	if opts != nil {
		cmd.ExtraFiles = []*os.File{opts}
	}
	if p.bwrap == "" {
		cmd.Dir = host.bundle
	}
	cmd.Env = env
	if p.bwrap != "" {
		// bwrap, and prlimit around it, run on the host: they get the
		// runner's minimal environment, never the run's or the image's (an
		// image's LD_PRELOAD or LD_LIBRARY_PATH would load into them). The
		// run's reaches the sandbox through --setenv only.
		cmd.Env = hostEnv
	}
	if i == 0 {
		// The sandbox (or, unsandboxed, the plain start) of the job's runs,
		// for probeEnvironment; and the runner's own, for the benchmark's
		// evaluation, which never runs in the competitor's image: its
		// python3 would be theirs to write.
		pj.launch = sandboxLaunch{started: true, sandbox: sandbox, env: cmd.Env, dir: cmd.Dir, dropUID: dropUID, cgroup: pj.cgroup}
		pj.ownLaunch = pj.launch
		if img.rootfs != "" {
			pj.ownLaunch.sandbox = p.bwrapArgs(host, in, ownEnv, spec)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if dropUID {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: sandboxUID, Gid: sandboxUID}
	}
	tail := newTail(p.opts.TailLines)
	tree := newTreeClock()
	if pj.audits != nil {
		tree.notForeign(pj.audits.cpu)
	}
	// The run's gate and result log: the runner times its window as the
	// run takes its seed and its lines arrive, and live progress shows its
	// events as they do, so an entrypoint need not print them.
	var beforeWindow time.Duration
	var model *modelSink
	if pj.models != nil {
		dir := filepath.Join(job, "models")
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, err
		}
		disk := p.rlimits(spec).DiskBytes
		model = &modelSink{path: filepath.Join(dir, strconv.Itoa(i)), max: spec.Benchmark.Verify.Evaluation.ModelBytes(),
			disk: disk, room: max(disk-pj.modelBytes, 0)}
	}
	var states *stateSink
	if pj.steps != nil {
		states = &stateSink{audit: spec.Benchmark.Verify.Steps, freshRuns: spec.Benchmark.FreshRunCount(), fresh: i >= len(spec.Seeds), full: spec.FullAudit}
	}
	win, err := openWindow(host.ctl, windowRun{index: i, seed: seed, fresh: i >= len(spec.Seeds), full: spec.FullAudit, task: pj.task, audits: pj.audits,
		maxBytes: p.opts.Limits.MaxResultBytes, onLine: LinesFrom(ctx), onGate: func() { beforeWindow = tree.cpuNow() }, model: model, states: states})
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
	used0, counted := pj.cgroup.cpuUsage()
	err = runGroup(ctx, cmd, admission.start, p.opts.KillGrace, i, tail, bothLines(p.opts.OnLine, LinesFrom(ctx)), onStart)
	seen := tree.finish()
	if used1, ok := pj.cgroup.cpuUsage(); counted && ok {
		seen.ownIs(used1 - used0)
	}
	clock := &d5list.RunClock{}
	log, logErr := win.close(clock)
	if err = admission.verdict(err); err != nil {
		return nil, nil, fmt.Errorf("%w%s", err, tail.String())
	}
	if logErr != nil {
		return nil, nil, logErr
	}
	if len(log) == 0 {
		return nil, nil, fmt.Errorf("the entrypoint wrote nothing to $D5_RESULT_LOG%s", tail.String())
	}
	if model != nil {
		h, err := win.handover(model)
		if err != nil {
			return nil, nil, err
		}
		// A model that fails its audit is not evaluated: its bytes leave
		// the job's disk to the runs after it.
		if h.fault != nil {
			if err := os.Remove(model.path); err != nil && !os.IsNotExist(err) {
				return nil, nil, err
			}
		}
		pj.modelBytes += h.size
		pj.models[i] = h
	}
	if states != nil {
		dir := filepath.Join(job, "states", strconv.Itoa(i))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, nil, err
		}
		h, err := win.stepStates(states.audit.Stretches, dir, seed)
		if err != nil {
			return nil, nil, err
		}
		pj.steps[i] = h
	}
	// WaitS, as the builtin workloads report it: the share of the run
	// that foreign work delayed its processes by, times its wall time.
	// The tree's CPU time where it was read: bwrap's rusage leaves out
	// the sandbox's processes, which its own init reaps.
	cpu := processCPU(cmd.ProcessState)
	if seen.own > 0 {
		cpu = max(cpu, seen.own.Seconds())
	}
	clock.CPUS, clock.WaitS, clock.Processes = cpu, seen.delayShare*time.Since(started).Seconds(), &seen.computing
	clock.ForeignCPUS = seen.foreign.Seconds()
	clock.BeforeWindowCPUS = beforeWindow.Seconds()
	if at := win.openedAt(); !at.IsZero() && at.After(started) {
		clock.BeforeWindowS = at.Sub(started).Seconds()
	}
	if pj.audits != nil {
		// Checked while the job goes on; in clock once Execute returns.
		pj.audits.audit(clock, func(pace func()) *d5list.Audit { return win.audit(seed, pace) })
	}
	clock.Environment = envRecord(env)
	return log, clock, nil
}

// startArgv is the command line that runs argv in the sandbox bwrap's
// options make (sandboxCommand), under the job's rlimits, and the file
// that hands bwrap its options; argv itself, and no file, unsandboxed.
// prlimit sets the rlimits on bwrap, which passes them on to the run:
// inside the sandbox, prlimit's options (the job's caps) would be on the
// command line of bwrap's init, which the run reads.
func (p *Process) startArgv(spec d5list.JobSpec, sandbox, argv []string) ([]string, *os.File, error) {
	if sandbox == nil {
		return argv, nil, nil
	}
	start, opts, err := p.sandboxCommand(sandbox, argv)
	if err != nil {
		return nil, nil, err
	}
	return append(p.prlimitArgs(spec), start...), opts, nil
}

// sandboxLayout is where a sandboxed run sees its folders.
var sandboxLayout = layout{bundle: "/d5/bundle", run: "/d5/run", ctl: "/d5/ctl", lib: "/d5/lib",
	result: "/d5/ctl/" + windowLogName, gate: "/d5/ctl/" + windowGateName, scratch: "/d5/run/scratch"}

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
// except the GPU selection, and it is the same for every run of the job
// (the seed comes through the gate), so that no run can tell a fresh,
// audited one from a claimed one by anything but its seed.
func runEnv(spec d5list.JobSpec, l layout, gpus gpuShare, task *harness.Task) []string {
	env := []string{
		sandboxPath,
		"HOME=" + l.scratch,
		"TMPDIR=" + l.scratch,
		sandboxLang,
		"D5_RESULT_LOG=" + l.result,
		"D5_GATE=" + l.gate,
		"PYTHONPATH=" + l.lib,
		"D5_DATA_DIR=" + l.data,
		"D5_BENCHMARK=" + spec.Benchmark.ID,
		"D5_SCRATCH=" + l.scratch,
		"D5_BUNDLE=" + l.bundle,
	}
	if task != nil {
		env = append(env, "D5_TASK="+task.JSON(), "D5_AUDIT="+filepath.Join(l.ctl, windowAuditName), "D5_REVEAL="+filepath.Join(l.ctl, windowRevealName))
	} else if spec.Benchmark.Verify.Evaluation != nil {
		env = append(env, "D5_MODEL="+filepath.Join(l.ctl, windowModelName))
		if spec.Benchmark.Verify.Steps != nil {
			env = append(env, "D5_STATES="+filepath.Join(l.ctl, windowStatesName))
		}
	}
	return append(env, gpuEnv(gpus)...)
}
