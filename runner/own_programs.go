package runner

import (
	"context"
	"maps"
	"os"
	"sync"
	"syscall"
	"time"

	d5list "github.com/deep500/d5list"
)

// The runner's own programs in a job's sandbox, once its runs are over:
// the probe of what the runs computed with, and the benchmark's
// evaluation of their models (model.go).

// hostVersionsTTL is how long the runner reuses what its own sandbox's
// python3 reported: a probe starts Python and imports torch (about a
// second), which every job would otherwise pay after its runs; a package
// upgraded on the runner shows within this time.
const hostVersionsTTL = 10 * time.Minute

// VersionCache keeps the last probe of the runner's own sandbox (jobs
// without an image all run the same python3); an empty probe is not kept.
// The zero value is ready to use.
type VersionCache struct {
	mu sync.Mutex
	at time.Time
	v  map[string]string
}

func (c *VersionCache) get(probe func() map[string]string) map[string]string {
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

// sandboxLaunch is how a job's first run was started on the host: bwrap's
// options (none unsandboxed), the environment and folder it started in,
// and the job's cgroup.
type sandboxLaunch struct {
	started bool
	sandbox []string
	env     []string
	dir     string
	dropUID bool
	cgroup  *jobCgroup
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
	out := stdoutLines{max: maxProbeOutput}
	if _, err := p.runTrusted(ctx, spec, l, []string{"python3", probeFlag, "-c", environmentProbe}, newTail(0), out.keep); err != nil {
		p.opts.Log.Info("the versions the job ran with were not recorded: no python3 in its sandbox answered the probe", "job", spec.JobID, "err", err)
		return nil
	}
	return parseEnvironmentProbe(out.lines)
}

// runTrusted runs the runner's own argv (a probe, the benchmark's
// evaluation) in the sandbox, limits and environment the job's runs had
// (l), within ctx, with its output lines to keep and the last of them in
// tail; it returns the CPU time it took.
func (p *Process) runTrusted(ctx context.Context, spec d5list.JobSpec, l sandboxLaunch, argv []string, tail *lineTail, keep LineFunc) (float64, error) {
	argv, opts, err := p.startArgv(spec, l.sandbox, argv)
	if err != nil {
		return 0, err
	}
	if opts != nil {
		defer opts.Close()
	}
	cmd, admission := l.cgroup.hold(argv)
	if opts != nil {
		cmd.ExtraFiles = []*os.File{opts}
	}
	cmd.Dir = l.dir
	cmd.Env = l.env
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if l.dropUID {
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: sandboxUID, Gid: sandboxUID}
	}
	used0, counted := l.cgroup.cpuUsage()
	err = admission.verdict(runGroup(ctx, cmd, admission.start, p.opts.KillGrace, 0, tail, keep, nil))
	cpu := processCPU(cmd.ProcessState)
	if used1, ok := l.cgroup.cpuUsage(); counted && ok {
		cpu = max(cpu, (used1 - used0).Seconds())
	}
	return cpu, err
}

// stdoutLines keeps the standard output of one of the runner's own
// programs, max bytes of lines in all: its answer is short, and a program
// that prints more cannot make the runner hold it.
type stdoutLines struct {
	lines     []string
	size, max int
}

func (o *stdoutLines) keep(_ int, stream, line string) {
	if stream == "stdout" && o.size+len(line) <= o.max {
		o.lines = append(o.lines, line)
		o.size += len(line)
	}
}
