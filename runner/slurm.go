package runner

import (
	"log/slog"
	"time"

	"github.com/deep500/d5list/bundle"
)

// SlurmOptions configure the Slurm executor.
type SlurmOptions struct {
	// Fetch provides the bundle; required.
	Fetch FetchFunc
	// SharedDir is a folder the submitting host and the compute nodes see
	// at the same path: each job's bundle, result logs and batch output
	// live under it. Required.
	SharedDir string
	KeepWork  bool
	// DataDir is the datasets folder on the compute nodes (D5_DATA_DIR).
	DataDir string
	// Partition and Account are passed to sbatch when set.
	Partition string
	Account   string
	// TasksPerNode, when set, caps a data-parallel job's workers per node
	// (sbatch --ntasks-per-node): 1 puts each worker on a node of its own.
	TasksPerNode int
	// GPUsPerNode is what a job asks of each node's GPUs (sbatch
	// --gres=gpu:N) when its benchmark requires accelerators but fixes no
	// count (accelerator_count "*", as the catalogue's GPU entries have):
	// set it to the per-node count the runner advertises as
	// accelerator_count. Zero asks for 1, the least a GPU job needs.
	GPUsPerNode int
	// ExtraArgs are appended to every sbatch command line.
	ExtraArgs []string
	// BinDir holds sbatch, squeue, sacct and scancel; default: PATH.
	BinDir string
	// Poll is the interval between squeue polls; default 2 s.
	Poll time.Duration
	// DefaultTimeLimit is used when the benchmark sets none; default 6 h.
	DefaultTimeLimit time.Duration
	// Limits bounds the extracted bundle; zero means bundle.DefaultLimits().
	Limits bundle.Limits
	// OnLine, when set, receives the lines of each run's batch output once
	// the run has ended.
	OnLine LineFunc
	Log    *slog.Logger
}

// Slurm submits each run of a job as a Slurm batch job.
type Slurm struct {
	opts SlurmOptions
}

var _ Executor = (*Slurm)(nil)

// NewSlurm checks the options and that sbatch can be found.
func NewSlurm(opts SlurmOptions) (*Slurm, error) {
	return newSlurm(opts)
}
