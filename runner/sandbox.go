package runner

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"

	d5list "github.com/deep500/d5list"
)

// bwrapArgs builds bubblewrap's options for one run: every namespace
// unshared (no network: only a private loopback), a read-only root made of
// /usr and a few files of /etc, the job's folders read-only and the run's
// work areas the only writable places (runMounts). The root tmpfs is
// remounted read-only last, so nothing else is writable even in memory.
// They reach bwrap in a file (sandboxCommand), not on its command line.
func (p *Process) bwrapArgs(host, in layout, env []string, spec d5list.JobSpec) []string {
	a := []string{
		"--unshare-all", "--die-with-parent", "--new-session",
		"--clearenv",
		"--ro-bind", "/usr", "/usr",
		"--proc", "/proc", "--dev", "/dev",
	}
	// /bin, /lib... are symlinks into /usr on merged-/usr systems and real
	// folders on older ones.
	for _, d := range []string{"/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32"} {
		if t, err := os.Readlink(d); err == nil {
			a = append(a, "--symlink", t, d)
		} else if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			a = append(a, "--ro-bind", d, d)
		}
	}
	for _, f := range []string{"/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/hosts",
		"/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
		"/etc/localtime", "/etc/ssl/certs"} {
		a = append(a, "--ro-bind-try", f, f)
	}
	for _, d := range p.opts.ReadOnlyPaths {
		a = append(a, "--ro-bind", d, d)
	}
	a = append(a, gpuSandboxArgs(host.devices, "")...)
	a = append(a, runMounts(p.rlimits(spec).DiskBytes, host, in)...)
	a = append(a, "--remount-ro", "/")
	return append(a, bwrapStart(in, env)...)
}

// bwrapImageArgs is bwrapArgs for a recipe with a container image: the
// image's unpacked file system, read-only, is the sandbox's /, in place of
// the runner's /usr and /etc; the rest (namespaces, /proc, /dev, GPUs, the
// bundle, the work areas, the data sets) is as without one, and /tmp is
// one more work area. Every mount point is a folder of rootfs already
// (imageMountpoints): the image is mounted read-only, so bwrap could not
// make one.
func (p *Process) bwrapImageArgs(rootfs string, host, in layout, env []string, spec d5list.JobSpec) []string {
	a := []string{
		"--unshare-all", "--die-with-parent", "--new-session",
		"--clearenv",
		"--ro-bind", rootfs, "/",
		"--proc", "/proc", "--dev", "/dev",
	}
	a = append(a, gpuSandboxArgs(host.devices, rootfs)...)
	a = append(a, runMounts(p.rlimits(spec).DiskBytes, host, in, "/tmp")...)
	return append(a, bwrapStart(in, env)...)
}

// runMounts are what a run sees of its job, read-only: the bundle, the
// runner's control folder of the run (its FIFOs: window.go), the harness
// and the data sets; and its work areas (workAreas).
func runMounts(size int64, host, in layout, extra ...string) []string {
	a := []string{
		"--ro-bind", host.bundle, in.bundle,
		"--ro-bind", host.ctl, in.ctl,
		"--ro-bind", host.lib, in.lib,
	}
	if host.data != "" {
		a = append(a, "--ro-bind", host.data, in.data)
	}
	return append(a, workAreas(size, in, extra...)...)
}

// bwrapStart ends bwrap's options: the run starts in its bundle with env
// as its whole environment.
func bwrapStart(in layout, env []string) []string {
	a := []string{"--chdir", in.bundle}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	return a
}

// bwrapArgsFD is the descriptor bwrap reads its options from: the first of
// a command's ExtraFiles.
const bwrapArgsFD = 3

// sandboxCommand is the command line that starts cmd in a sandbox made by
// opts (bwrapArgs or bwrapImageArgs), and the file that hands bwrap opts.
// In its PID namespace the sandbox's pid 1 is bwrap's own init, a fork
// that keeps bwrap's command line, which every process of the run reads
// as /proc/1/cmdline: on it, the options would show the runner's work
// path, the job's caps and the run's environment. Given through --args
// they leave bwrap and the entrypoint only, the same for every run. The
// file is in memory, readable once, and bwrap closes it before the run
// starts; the caller closes its own copy once the command has started.
func (p *Process) sandboxCommand(opts, cmd []string) ([]string, *os.File, error) {
	fd, err := unix.MemfdCreate("bwrap-args", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, nil, fmt.Errorf("making the sandbox's options file: %w", err)
	}
	f := os.NewFile(uintptr(fd), "bwrap-args")
	var b strings.Builder
	for _, o := range opts {
		b.WriteString(o)
		b.WriteByte(0)
	}
	if _, err := f.WriteString(b.String()); err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("writing the sandbox's options: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		f.Close()
		return nil, nil, err
	}
	return append([]string{p.bwrap, "--args", strconv.Itoa(bwrapArgsFD), "--"}, cmd...), f, nil
}

// workAreas mounts the places a run may write, each a tmpfs of size bytes
// (negative: bwrap's default, half the host's memory), which the kernel
// charges to the job's memory cgroup, so that a run can fill neither the
// runner's disk nor its memory: the run folder, holding its scratch
// folder; /dev/shm; and the extra folders (an image's /tmp). Nothing of
// the host is writable: the run hands the runner its log through the
// FIFOs of its read-only control folder. /dev itself is made read-only
// (bwrap's --dev is a tmpfs of half the host's memory): its device nodes
// still work. It comes after every other bind into /dev (the GPUs'),
// which could not be made in a read-only /dev.
func workAreas(size int64, in layout, extra ...string) []string {
	var a []string
	tmpfs := func(dir string) {
		if size >= 0 {
			a = append(a, "--size", strconv.FormatInt(size, 10))
		}
		a = append(a, "--tmpfs", dir)
	}
	tmpfs(in.run)
	a = append(a, "--dir", in.scratch)
	for _, d := range append([]string{"/dev/shm"}, extra...) {
		tmpfs(d)
	}
	return append(a, "--remount-ro", "/dev")
}

// readySandbox readies what every run of p starts from: no descriptor the
// runner inherited reaches a run (closeInheritedFiles), and each job gets
// a cgroup with its caps, which a sandboxed executor does not go without
// unless its options allow it.
func (p *Process) readySandbox() error {
	if err := closeInheritedFiles(); err != nil {
		return err
	}
	if p.bwrap != "" {
		if out, err := exec.Command(p.bwrap, "--help").CombinedOutput(); err != nil || !strings.Contains(string(out), "--size") {
			return d5list.Errorf(d5list.EUNAVAILABLE, "process executor: %s does not size a tmpfs (--size): bubblewrap 0.7 or later is needed to cap a run's work areas", p.bwrap)
		}
	}
	cg, err := processCgroups()
	switch {
	case err == nil:
		p.cgroups = cg
	case p.bwrap != "" && !p.opts.AllowUnbounded:
		return d5list.Errorf(d5list.EUNAVAILABLE,
			"process executor: the kernel cannot cap each job's memory and processes here (%v): competitor code runs only under those caps; "+
				"delegate a cgroup to the runner (%s, or Delegate=yes in its systemd unit; on a cgroup v1 host, run it as root), "+
				"or start the runner with --allow-unbounded on a machine dedicated to trusted code", err, CgroupSetup)
	default:
		p.opts.Log.Warn("runs go without the kernel's caps on each job's memory and processes", "err", err)
	}
	return nil
}

// jobCgroup makes the cgroup of a job with its caps; nil where the
// executor has no cgroups.
func (p *Process) jobCgroup(spec d5list.JobSpec) (*jobCgroup, error) {
	if p.cgroups == nil {
		return nil, nil
	}
	l := p.rlimits(spec)
	j, err := p.cgroups.job(fmt.Sprintf("job-%d-%d", spec.JobID, p.jobs.Add(1)), l.MemoryBytes, l.Processes)
	if err != nil {
		return nil, fmt.Errorf("making the cgroup of job %d: %w", spec.JobID, err)
	}
	return j, nil
}

// closeInheritedFiles marks every descriptor above 2 close-on-exec. Go
// opens its own files so, but not the ones the runner was started with: a
// wrapper that left a descriptor open on a host file (a log, a socket)
// would hand it to every run, and bwrap does not close them. Marking them
// once is enough: a process inherits descriptors only when it starts.
func closeInheritedFiles() error {
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("listing the runner's descriptors: %w", err)
	}
	for _, e := range fds {
		// The listing's own descriptor is among them, closed by now.
		if fd, err := strconv.Atoi(e.Name()); err == nil && fd > 2 {
			syscall.CloseOnExec(fd)
		}
	}
	return nil
}
