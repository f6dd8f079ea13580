package runner

import (
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
)

// DefaultJobMemory is a job's memory cap when the runner is told none:
// three quarters of the host's memory, shared among the jobs it runs at
// once, so that the runner and the host keep the rest.
func DefaultJobMemory(jobs int) int64 {
	total := memTotal()
	if total <= 0 {
		return -1
	}
	return total / 4 * 3 / int64(max(jobs, 1))
}

// rlimits fills the zero fields of the job's limits from its time limit
// and the machine.
func (p *Process) rlimits(spec d5list.JobSpec) ResourceLimits {
	l := p.opts.RLimits
	if l.CPUSeconds == 0 {
		l.CPUSeconds = int64(jobTimeLimit(spec, p.opts.DefaultTimeLimit)/time.Second) * int64(runtime.NumCPU())
	}
	if l.MemoryBytes == 0 {
		l.MemoryBytes = DefaultJobMemory(1)
	}
	if l.Processes == 0 {
		l.Processes = 1024
	}
	if l.DiskBytes == 0 {
		// The work areas are memory: half the job's leaves it the rest.
		l.DiskBytes = l.MemoryBytes / 2
		if l.MemoryBytes < 0 {
			l.DiskBytes = 16 << 30
		}
	}
	if l.FileBytes == 0 {
		l.FileBytes = l.DiskBytes
	}
	return l
}

// prlimitArgs sets the rlimits on the sandbox from outside, bwrap and all,
// which they leave room for (bwrap's setup forks twice and uses little
// memory): see startArgv. Memory is RLIMIT_DATA rather than
// RLIMIT_AS: CUDA reserves terabytes of address space it never touches, so
// an address-space limit would break every GPU run, while RLIMIT_DATA
// counts only private writable memory. Where the job has a cgroup, its
// pids cap bounds its processes, and RLIMIT_NPROC, which counts every
// process of the sandbox's user on the host, all jobs' together, is left
// as it was.
func (p *Process) prlimitArgs(spec d5list.JobSpec) []string {
	l := p.rlimits(spec)
	arg := func(name string, v int64) string {
		if v < 0 {
			return "--" + name + "=unlimited"
		}
		return "--" + name + "=" + strconv.FormatInt(v, 10)
	}
	a := []string{p.prlimit, arg("cpu", l.CPUSeconds), arg("data", l.MemoryBytes), arg("fsize", l.FileBytes)}
	if p.cgroups == nil {
		a = append(a, arg("nproc", l.Processes))
	}
	return append(a, "--")
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
