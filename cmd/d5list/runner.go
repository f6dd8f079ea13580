package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/runner"
	"github.com/deep500/d5list/sysinfo"
)

// runnerConfig is everything `d5list runner` is told.
type runnerConfig struct {
	Server           string
	Token            string
	Labels           string
	Executor         string
	Concurrency      int
	WorkDir          string
	Datasets         string
	AllowUnsandboxed bool
	// AllowUnbounded runs competitor code without the kernel's caps on
	// each job where the host gives the runner none; Jobs are the caps.
	AllowUnbounded bool
	Jobs           runner.ResourceLimits
	ID             string
	Heartbeat      time.Duration
	// GPUs and GPUsPerJob: the process executor's devices and each job's
	// share of them (shareGPUs).
	GPUs       []string
	GPUsPerJob int
	// Registries and Images: the process executor's registries to pull
	// recipe images from, and where it keeps them.
	Registries []string
	Images     string
	// Software is what the process executor binds into its sandbox from
	// outside /usr.
	Software sandboxSoftware
	// ImageLimits bound what a recipe's image may unpack to (zero fields
	// take runner.DefaultImageLimits).
	ImageLimits runner.ImageLimits
	// Slurm is where the slurm executor submits: partition, account, a
	// data-parallel job's workers per node, and the GPUs per node a job
	// asks for when its benchmark fixes no count.
	Slurm struct {
		Partition, Account string
		TasksPerNode       int
		GPUsPerNode        int
	}
}

// shareGPUs splits the runner's GPUs among its concurrent jobs: the
// devices its CUDA_VISIBLE_DEVICES names (when set) or 0..count-1, and
// an equal whole share for each job, at least one.
func shareGPUs(count int, visible string, concurrency int) ([]string, int) {
	var devices []string
	if v := strings.TrimSpace(visible); v != "" {
		for _, d := range strings.Split(v, ",") {
			if d = strings.TrimSpace(d); d != "" {
				devices = append(devices, d)
			}
		}
	} else {
		for i := range count {
			devices = append(devices, strconv.Itoa(i))
		}
	}
	if len(devices) == 0 {
		return nil, 0
	}
	return devices, max(1, len(devices)/max(concurrency, 1))
}

func runnerCmd(ctx context.Context, args []string, stderr io.Writer) error {
	cfg, err := parseRunnerFlags(args, stderr)
	if err != nil {
		return err
	}
	return runRunner(ctx, cfg, newLogger(stderr))
}

// parseRunnerFlags reads `d5list runner`'s command line.
func parseRunnerFlags(args []string, stderr io.Writer) (runnerConfig, error) {
	fs := newFlags("runner", stderr)
	cfg := runnerConfig{}
	host, _ := os.Hostname()
	fs.StringVar(&cfg.Server, "server", envOr("D5LIST_SERVER", ""), "portal URL, e.g. https://portal.example:8080")
	fs.StringVar(&cfg.Token, "token", envOr("D5LIST_RUNNER_TOKEN", ""), "runner token (d5r_...) from `d5list admin runner-token`; give it in D5LIST_RUNNER_TOKEN or --token-file instead: a command line is visible to every user of the machine")
	tokenFile := fs.String("token-file", envOr("D5LIST_RUNNER_TOKEN_FILE", ""), "file holding the runner token (readable by the runner's user only)")
	fs.StringVar(&cfg.Labels, "labels", "", "extra or overriding labels, k=v,k=v")
	fs.StringVar(&cfg.Executor, "executor", "builtin", "builtin, process or slurm")
	fs.IntVar(&cfg.Concurrency, "concurrency", 1, "jobs run at the same time")
	fs.StringVar(&cfg.WorkDir, "work", "", "folder for extracted bundles and run output (process: default the temp dir; slurm: required, shared with the compute nodes)")
	fs.StringVar(&cfg.Datasets, "datasets", "", "folder of datasets; each sub-folder NAME is advertised as label dataset.NAME=yes")
	fs.BoolVar(&cfg.AllowUnsandboxed, "allow-unsandboxed", false, "process executor: run competitor code without bubblewrap when it is not installed")
	fs.BoolVar(&cfg.AllowUnbounded, "allow-unbounded", false, "run competitor code without the kernel's caps on each job's memory and processes: the process executor where no cgroup is delegated to the runner, and the slurm executor, whose jobs are capped by Slurm alone")
	fs.Int64Var(&cfg.Jobs.MemoryBytes, "job-memory", 0, "process executor: each job's memory cap in bytes, its work areas' files included (0: three quarters of the host's memory, shared among --concurrency jobs)")
	fs.Int64Var(&cfg.Jobs.DiskBytes, "job-disk", 0, "process executor: the size in bytes of each place a run writes (its folder, /dev/shm, an image's /tmp), held in its memory, and of the models a job's runs hand over for an evaluation, together (0: half of --job-memory)")
	fs.Int64Var(&cfg.Jobs.Processes, "job-processes", 1024, "process executor: each job's cap on processes and threads")
	fs.StringVar(&cfg.ID, "id", sanitizeID(host), "agent id prefix; agents are ID-0, ID-1, ...")
	fs.Func("registry", "process executor: a registry HOST[:PORT] to pull recipes' images from (repeat or comma-separate; each is advertised as registry.HOST=yes)", func(v string) error {
		for _, h := range strings.Split(v, ",") {
			if h = strings.TrimSpace(h); h == "" || strings.ContainsAny(h, "/ ") || h == "*" {
				return fmt.Errorf("%q is not a registry host (HOST or HOST:PORT, as in ghcr.io)", h)
			}
			cfg.Registries = append(cfg.Registries, h)
		}
		return nil
	})
	cfg.Software.register(fs)
	fs.StringVar(&cfg.Images, "images", "", "process executor: folder of pulled images, one archive per digest (default: WORK/d5list-images)")
	imageDefaults := runner.DefaultImageLimits()
	fs.Int64Var(&cfg.ImageLimits.Bytes, "image-max-bytes", imageDefaults.Bytes, "process executor: the most bytes a recipe's image may unpack to, whatever its archive's size")
	fs.Float64Var(&cfg.ImageLimits.Ratio, "image-max-ratio", imageDefaults.Ratio, "process executor: the most bytes a recipe's image may unpack to per byte of its archive, beyond --image-floor-bytes")
	fs.Int64Var(&cfg.ImageLimits.Floor, "image-floor-bytes", imageDefaults.Floor, "process executor: the bytes any recipe image may unpack to, whatever its ratio")
	fs.IntVar(&cfg.ImageLimits.Entries, "image-max-entries", imageDefaults.Entries, "process executor: the most files, folders and links a recipe's image may hold")
	fs.StringVar(&cfg.Slurm.Partition, "slurm-partition", "", "slurm executor: sbatch --partition")
	fs.StringVar(&cfg.Slurm.Account, "slurm-account", "", "slurm executor: sbatch --account")
	fs.IntVar(&cfg.Slurm.TasksPerNode, "slurm-tasks-per-node", 0, "slurm executor: a data-parallel job's workers per node (sbatch --ntasks-per-node; 1 spreads them over nodes); 0 lets Slurm place them")
	fs.IntVar(&cfg.Slurm.GPUsPerNode, "slurm-gpus-per-node", 0, "slurm executor: GPUs a job asks of each node (sbatch --gres=gpu:N) when its benchmark needs accelerators but fixes no count (accelerator_count \"*\"); 0 asks for 1. Set it to the nodes' GPU count, and advertise that as --labels accelerator_count=N")
	fs.DurationVar(&cfg.Heartbeat, "heartbeat", 2*time.Second, "lease renewal interval; a cancelled job stops within about this long")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	onCommandLine := false
	fs.Visit(func(f *flag.Flag) { onCommandLine = onCommandLine || f.Name == "token" })
	switch {
	case onCommandLine && *tokenFile != "":
		return cfg, fmt.Errorf("runner: give the token with --token or --token-file, not both")
	case *tokenFile != "":
		token, err := readTokenFile(*tokenFile, stderr)
		cfg.Token = token
		return cfg, err
	case onCommandLine:
		fmt.Fprintln(stderr, "d5list runner: warning: --token is visible to every user of this machine (ps, /proc/PID/cmdline); give it in D5LIST_RUNNER_TOKEN or a file (--token-file)")
	}
	return cfg, nil
}

// readTokenFile reads a runner token kept in a file, and warns when other
// users may read the file too.
func readTokenFile(path string, stderr io.Writer) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("runner: --token-file: %w", err)
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(stderr, "d5list runner: warning: %s is readable by other users (mode %v); chmod 600 it\n", path, st.Mode().Perm())
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return "", fmt.Errorf("runner: --token-file %s: %w", path, err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("runner: --token-file %s is empty", path)
	}
	return token, nil
}

func runRunner(ctx context.Context, cfg runnerConfig, log *slog.Logger) error {
	switch {
	case cfg.Server == "":
		return fmt.Errorf("runner: --server is required")
	case cfg.Token == "":
		return fmt.Errorf("runner: a token is required in D5LIST_RUNNER_TOKEN or --token-file (d5list admin runner-token --name NAME prints one)")
	case !strings.HasPrefix(cfg.Token, "d5r_"):
		return fmt.Errorf("runner: the token is not a runner token (they start with d5r_)")
	case cfg.Concurrency < 1:
		return fmt.Errorf("runner: --concurrency must be at least 1, got %d", cfg.Concurrency)
	case cfg.Slurm.TasksPerNode < 0:
		return fmt.Errorf("runner: --slurm-tasks-per-node must be 0 or more, got %d", cfg.Slurm.TasksPerNode)
	case cfg.Slurm.GPUsPerNode < 0:
		return fmt.Errorf("runner: --slurm-gpus-per-node must be 0 or more, got %d", cfg.Slurm.GPUsPerNode)
	case cfg.ImageLimits.Bytes <= 0 || cfg.ImageLimits.Ratio <= 0 || cfg.ImageLimits.Floor <= 0 || cfg.ImageLimits.Entries <= 0:
		// Zero would silently mean the default (ImageLimits.withDefaults),
		// never "unbounded": refuse it rather than surprise.
		return fmt.Errorf("runner: --image-max-bytes, --image-max-ratio, --image-floor-bytes and --image-max-entries must be positive")
	case cfg.Jobs.MemoryBytes < 0 || cfg.Jobs.DiskBytes < 0 || cfg.Jobs.Processes <= 0:
		return fmt.Errorf("runner: --job-memory and --job-disk must be 0 (the default) or more, and --job-processes positive")
	case cfg.Executor == "slurm" && cfg.WorkDir == "":
		return fmt.Errorf("runner: --executor slurm needs --work, a folder the compute nodes see at the same path")
	case cfg.Executor == "slurm" && !cfg.AllowUnbounded:
		return fmt.Errorf("runner: --executor slurm runs competitor code on the compute nodes, where the runner caps neither its memory, its processes nor its disk: " +
			"confine the jobs in Slurm (TaskPlugin=task/cgroup, with ConstrainRAMSpace=yes in cgroup.conf) and start the runner with --allow-unbounded")
	case cfg.Heartbeat <= 0:
		return fmt.Errorf("runner: --heartbeat must be positive, got %s", cfg.Heartbeat)
	case cfg.ID == "" || sanitizeID(cfg.ID) != cfg.ID:
		return fmt.Errorf("runner: --id %q: use letters, digits, '-', '_' and '.'", cfg.ID)
	case cfg.ID+"-" == localRunnerPrefix:
		return fmt.Errorf("runner: --id %q is the portal's in-process runners' (their jobs are requeued when the portal restarts): choose another", cfg.ID)
	}
	if err := cfg.Software.check(); err != nil {
		return fmt.Errorf("runner: %w", err)
	}
	info := sysinfo.Detect()
	if cfg.Executor == "process" {
		cfg.GPUs, cfg.GPUsPerJob = shareGPUs(info.GPUCount, os.Getenv("CUDA_VISIBLE_DEVICES"), cfg.Concurrency)
		if cfg.Jobs.MemoryBytes == 0 {
			cfg.Jobs.MemoryBytes = runner.DefaultJobMemory(cfg.Concurrency)
		}
	}
	client := &runner.Client{Server: cfg.Server, Token: cfg.Token, HTTP: &http.Client{Timeout: 2 * time.Minute}}
	book := &leaseBook{client: client, secrets: map[int64]string{}, log: log}
	// The executor first: one that cannot work here (no sandbox, a work
	// dir the sandbox user cannot enter) stops the runner before the
	// frameworks are probed, which takes seconds.
	exec, err := newExecutor(cfg, book, log)
	if err != nil {
		return err
	}
	detected := info.Labels()
	if cfg.Executor != "builtin" {
		for k, v := range runner.FrameworkLabels(ctx, cfg.Software.Path...) {
			detected[k] = v
		}
	}
	if cfg.Executor == "process" {
		for k, v := range runner.RegistryLabels(cfg.Registries) {
			detected[k] = v
		}
		if len(cfg.GPUs) > 0 {
			// A job sees its own share; that is the hardware it runs on.
			detected["accelerator_count"] = strconv.Itoa(cfg.GPUsPerJob)
		}
	}
	labels, err := runnerLabels(detected, cfg.Datasets, cfg.Labels)
	if err != nil {
		return err
	}
	log.Info("runner starting", "server", cfg.Server, "executor", cfg.Executor, "agents", cfg.Concurrency, "labels", labels)
	var wg sync.WaitGroup
	for i := range cfg.Concurrency {
		agent := &runner.Agent{
			ID: cfg.ID + "-" + strconv.Itoa(i), Labels: labels, Queue: book, Executor: exec,
			// The server holds each lease request up to 20 s, so there is
			// no need to wait between them; errors back off in leaseBook.
			Poll: 50 * time.Millisecond, Heartbeat: cfg.Heartbeat, Log: log,
		}
		wg.Go(func() { _ = agent.Run(ctx) })
	}
	wg.Wait()
	log.Info("runner stopped")
	return nil
}

// newExecutor builds the executor --executor names.
func newExecutor(cfg runnerConfig, book *leaseBook, log *slog.Logger) (runner.Executor, error) {
	switch cfg.Executor {
	case "builtin":
		return runner.Builtin{}, nil
	case "process":
		return runner.NewProcess(runner.ProcessOptions{
			Fetch: book.fetch, WorkDir: cfg.WorkDir, DataDir: cfg.Datasets,
			AllowUnsandboxed: cfg.AllowUnsandboxed, AllowUnbounded: cfg.AllowUnbounded, RLimits: cfg.Jobs,
			GPUs: cfg.GPUs, GPUsPerJob: cfg.GPUsPerJob, Log: log,
			Registries: cfg.Registries, ImageCache: cfg.Images, ImageLimits: cfg.ImageLimits,
			ReadOnlyPaths: cfg.Software.ReadOnly, ExtraPath: cfg.Software.Path,
		})
	case "slurm":
		return runner.NewSlurm(runner.SlurmOptions{Fetch: book.fetch, SharedDir: cfg.WorkDir, DataDir: cfg.Datasets, Log: log,
			Partition: cfg.Slurm.Partition, Account: cfg.Slurm.Account, TasksPerNode: cfg.Slurm.TasksPerNode, GPUsPerNode: cfg.Slurm.GPUsPerNode})
	}
	return nil, fmt.Errorf("runner: --executor %q: use builtin, process or slurm", cfg.Executor)
}

// runnerLabels is what the host advertises: the detected hardware, one
// dataset.NAME=yes per folder under datasets, then the overrides.
func runnerLabels(detected map[string]string, datasets, overrides string) (map[string]string, error) {
	labels := map[string]string{}
	for k, v := range detected {
		if v != "" {
			labels[k] = v
		}
	}
	if datasets != "" {
		entries, err := os.ReadDir(datasets)
		if err != nil {
			return nil, fmt.Errorf("runner: --datasets: %w", err)
		}
		for _, e := range entries {
			if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
				labels[d5list.LabelDatasetPrefix+e.Name()] = "yes"
			}
		}
	}
	if strings.TrimSpace(overrides) == "" {
		return labels, nil
	}
	for i, item := range strings.Split(overrides, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(item), "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("runner: --labels item %d %q: want key=value", i+1, item)
		}
		labels[k] = strings.TrimSpace(v)
	}
	return labels, nil
}

func sanitizeID(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' {
			b.WriteRune(c)
		} else {
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "runner"
	}
	if b.Len() > 48 {
		return b.String()[:48]
	}
	return b.String()
}

// leaseBook is the portal as the agents of this process see it. It keeps
// the secret of each job held, so that an executor fetching a bundle by
// job proves the lease, and it backs off while the portal is unreachable.
type leaseBook struct {
	client *runner.Client
	log    *slog.Logger

	mu       sync.Mutex
	secrets  map[int64]string
	failures int
}

func (b *leaseBook) Lease(ctx context.Context, runnerID string, labels map[string]string) (*d5list.Lease, error) {
	lease, err := b.client.Lease(ctx, runnerID, labels)
	b.mu.Lock()
	if err != nil {
		b.failures++
	} else {
		b.failures = 0
	}
	failures := b.failures
	if lease != nil {
		b.secrets[lease.Job.ID] = lease.Secret
	}
	b.mu.Unlock()
	if err != nil && ctx.Err() == nil {
		// Back off while the portal is down: 250 ms, doubling up to 5 s.
		wait := min(250*time.Millisecond<<min(failures-1, 5), 5*time.Second)
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
	return lease, err
}

func (b *leaseBook) Heartbeat(ctx context.Context, jobID int64, secret string) error {
	return b.client.Heartbeat(ctx, jobID, secret)
}

// Progress streams a held job's output lines (runner.ProgressQueue).
func (b *leaseBook) Progress(ctx context.Context, jobID int64, secret string, lines []d5list.LogLine) error {
	return b.client.Progress(ctx, jobID, secret, lines)
}

func (b *leaseBook) Complete(ctx context.Context, jobID int64, secret string, logs []d5list.RunLog, labels map[string]string) error {
	err := b.client.Complete(ctx, jobID, secret, logs, labels)
	b.forget(jobID, err)
	return err
}

func (b *leaseBook) Fail(ctx context.Context, jobID int64, secret, message string) error {
	err := b.client.Fail(ctx, jobID, secret, message)
	b.forget(jobID, err)
	return err
}

// forget drops a secret once the job is reported: nothing is fetched for
// it any more, and retried reports carry the secret themselves.
func (b *leaseBook) forget(jobID int64, _ error) {
	b.mu.Lock()
	delete(b.secrets, jobID)
	b.mu.Unlock()
}

// fetch downloads the bundle of a held job (runner.FetchFunc).
func (b *leaseBook) fetch(ctx context.Context, spec d5list.JobSpec, w io.Writer) error {
	b.mu.Lock()
	secret, ok := b.secrets[spec.JobID]
	b.mu.Unlock()
	if !ok {
		return fmt.Errorf("job %d: no lease held by this runner", spec.JobID)
	}
	return b.client.Bundle(ctx, spec.JobID, secret, w)
}
