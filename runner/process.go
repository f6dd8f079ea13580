package runner

import (
	"context"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// FetchFunc writes the bundle archive of spec to w. The remote agent
// downloads it with the lease secret; in process it copies the stored blob.
type FetchFunc func(ctx context.Context, spec d5list.JobSpec, w io.Writer) error

// LineFunc receives each line a run prints, as it is printed. stream is
// "stdout" or "stderr". It is called from the executor's reader goroutines,
// one at a time per run.
type LineFunc func(run int, stream, line string)

// ResourceLimits bound a sandboxed job. Zero fields take the defaults of
// Process.rlimits; negative fields mean unlimited.
type ResourceLimits struct {
	CPUSeconds int64 // RLIMIT_CPU of each process
	// MemoryBytes caps the job's memory, the files of its work areas
	// included (its cgroup's memory cap), and each process's RLIMIT_DATA.
	// Default: DefaultJobMemory(1).
	MemoryBytes int64
	// Processes caps the job's processes and threads (its cgroup's pids
	// cap; RLIMIT_NPROC where it has no cgroup). Default 1024.
	Processes int64
	// DiskBytes is the size of each place a run may write (its run
	// folder, /dev/shm, an image's /tmp): a tmpfs, which the kernel
	// charges to the job's memory. Default: half of MemoryBytes. The
	// models a job's runs hand over for the benchmark's evaluation, kept
	// on the runner's disk, count against it together (modelSink).
	DiskBytes int64
	FileBytes int64 // RLIMIT_FSIZE: the largest file a run may write; default DiskBytes
}

// ProcessOptions configure the process executor.
type ProcessOptions struct {
	// Fetch provides the bundle; required.
	Fetch FetchFunc
	// WorkDir holds one fresh folder per job (the extracted bundle and the
	// scratch dirs); default os.TempDir(). Removed after the job unless
	// KeepWork is set.
	WorkDir  string
	KeepWork bool
	// DataDir is the datasets folder, mounted read-only as D5_DATA_DIR.
	DataDir string
	// AllowUnsandboxed runs competitor code without bubblewrap when bwrap
	// is not installed (the runner's --allow-unsandboxed flag). Never the
	// default: untrusted code does not run unsandboxed unless asked.
	AllowUnsandboxed bool
	// AllowUnbounded runs competitor code in the sandbox even where the
	// kernel cannot cap each job's memory and processes (no cgroup is
	// delegated to the runner: the runner's --allow-unbounded flag).
	// Never the default.
	AllowUnbounded bool
	// Bwrap is the bubblewrap binary; default: "bwrap" looked up in PATH.
	Bwrap string
	// Limits bounds the extracted bundle; zero means bundle.DefaultLimits().
	Limits bundle.Limits
	// RLimits bound each sandboxed run.
	RLimits ResourceLimits
	// DefaultTimeLimit bounds a job whose benchmark sets no
	// Verify.TimeLimitSeconds; default 6 hours.
	DefaultTimeLimit time.Duration
	// KillGrace is the wait between SIGTERM and SIGKILL; default 2 s.
	KillGrace time.Duration
	// TailLines is how many output lines of a run are kept for the error
	// message of a failed run; default 50.
	TailLines int
	// OnLine, when set, receives every output line (live progress).
	OnLine LineFunc
	// OnStart, when set, is told the pid (and process group id) of each
	// run's leader process: bwrap when sandboxed.
	OnStart func(run, pid int)
	// ReadOnlyPaths are extra host folders bound read-only into the sandbox
	// at the same path, for software outside /usr (for example /opt/conda).
	ReadOnlyPaths []string
	// ExtraPath is put before the minimal PATH of a run (for example
	// /opt/conda/bin, bound with ReadOnlyPaths).
	ExtraPath []string
	// GPUs are the devices the runner shares among its concurrent jobs,
	// as CUDA_VISIBLE_DEVICES names them (nvidia-smi indices or UUIDs).
	// Only a job whose benchmark requires an accelerator_* label takes a
	// share, GPUsPerJob of them (0, or more than there are: all), for all
	// its runs, waiting while other jobs hold them: its sandbox gets those
	// GPUs' /dev/nvidiaN nodes (with the shared NVIDIA nodes, or AMD's
	// /dev/kfd and /dev/dri/*, which are not narrowed to the share) and
	// CUDA_, NVIDIA_, ROCR_ and HIP_VISIBLE_DEVICES set to them; a CPU job
	// gets no GPU. Empty: a job that requires accelerators gets every GPU
	// node and the runner's own *_VISIBLE_DEVICES, and no job is kept
	// from another's GPUs.
	GPUs       []string
	GPUsPerJob int
	// ImageLimits bound a recipe's container image; zero means
	// DefaultImageLimits().
	ImageLimits ImageLimits
	// Registries are the hosts the runner pulls a recipe's registry image
	// from ("ghcr.io", "registry.site:5000"; "*" any); empty pulls from
	// none. The runner advertises each as a registry.HOST=yes label.
	Registries []string
	// ImageCache keeps pulled images, one archive per digest, so a job
	// pulls an image once per runner; default WorkDir/d5list-images.
	ImageCache string
	// Versions keeps what the sandbox's own python3 reports (its Python
	// and frameworks, asked after the runs of a job without an image) for
	// hostVersionsTTL. Executors that start the same python3 in the same
	// sandbox (the same Bwrap, ReadOnlyPaths and ExtraPath) may share one;
	// nil: the Process keeps its own.
	Versions *VersionCache
	Log      *slog.Logger
}

// Process runs the bundle's own entrypoint, sandboxed with bubblewrap.
type Process struct {
	opts    ProcessOptions
	bwrap   string // resolved bubblewrap path; "" when running unsandboxed
	prlimit string
	gpus    *gpuPool // nil without GPUs
	// cgroups cap each job; nil where the host delegates none (and the
	// options allow that).
	cgroups *cgroups
	jobs    atomic.Int64 // names the jobs' cgroups
	// unpack is unpackImage; a test slows it down to see that no run's
	// clock counts it.
	unpack func(ctx context.Context, archive, rootfs string, lim ImageLimits) (imageConfig, error)
	// hostVersions: what the sandbox's own python3 computes with.
	hostVersions *VersionCache
}

var _ Executor = (*Process)(nil)

// NewProcess checks the options and finds the sandbox. Without bubblewrap
// it fails unless AllowUnsandboxed is set, and without a cgroup to cap
// each job in unless AllowUnbounded is.
func NewProcess(opts ProcessOptions) (*Process, error) {
	return newProcess(opts)
}
