package runner

import (
	"os"
	"strings"

	d5list "github.com/deep500/d5list"
)

// bwrapArgs builds the bubblewrap command line of one run: every namespace
// unshared (no network: only a private loopback), a read-only root made of
// /usr and a few files of /etc, the bundle and data sets read-only, and the
// run's own folder as the only writable place. The root tmpfs is remounted
// read-only last, so nothing is writable outside the run folder even
// in memory.
func (p *Process) bwrapArgs(host, in layout, env []string, spec d5list.JobSpec) []string {
	a := []string{p.bwrap,
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
	a = append(a,
		"--ro-bind", host.bundle, in.bundle,
		"--bind", host.run, in.run,
		"--ro-bind", host.ctl, in.ctl,
		"--ro-bind", host.lib, in.lib,
	)
	if host.data != "" {
		a = append(a, "--ro-bind", host.data, in.data)
	}
	a = append(a, "--chdir", in.bundle, "--remount-ro", "/")
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	return append(a, "--")
}

// bwrapImageArgs is bwrapArgs for a recipe with a container image: the
// image's unpacked file system, read-only, is the sandbox's /, in place of
// the runner's /usr and /etc; the rest (namespaces, /proc, /dev, GPUs, the
// bundle, the run folder, the data sets) is as without one. /tmp is tmp, a
// folder of the run's on the host, rather than a tmpfs: what a run writes
// there is on disk like its run folder, not memory outside its limits.
// Every mount point is a folder of rootfs already (imageMountpoints): the
// image is mounted read-only, so bwrap could not make one.
func (p *Process) bwrapImageArgs(rootfs, tmp string, host, in layout, env []string) []string {
	a := []string{p.bwrap,
		"--unshare-all", "--die-with-parent", "--new-session",
		"--clearenv",
		"--ro-bind", rootfs, "/",
		"--proc", "/proc", "--dev", "/dev", "--bind", tmp, "/tmp",
	}
	a = append(a, gpuSandboxArgs(host.devices, rootfs)...)
	a = append(a,
		"--ro-bind", host.bundle, in.bundle,
		"--bind", host.run, in.run,
		"--ro-bind", host.ctl, in.ctl,
		"--ro-bind", host.lib, in.lib,
	)
	if host.data != "" {
		a = append(a, "--ro-bind", host.data, in.data)
	}
	a = append(a, "--chdir", in.bundle)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		a = append(a, "--setenv", k, v)
	}
	return append(a, "--")
}
