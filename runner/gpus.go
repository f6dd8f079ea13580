package runner

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
)

// gpuPool shares a runner's GPUs among its concurrent jobs: each job takes
// its own devices for all its runs and gives them back after, so two jobs
// never compute on one GPU and a job's timing is its GPUs' alone.
type gpuPool struct {
	free   chan string
	perJob int
	// minors are the device minor numbers of the pool's NVIDIA GPUs.
	minors gpuMinors
}

// nodeMinors is the pool's minors; nil without a pool.
func (p *gpuPool) nodeMinors() gpuMinors {
	if p == nil {
		return nil
	}
	return p.minors
}

func newGPUPool(devices []string, perJob int) *gpuPool {
	if len(devices) == 0 {
		return nil
	}
	if perJob < 1 || perJob > len(devices) {
		perJob = len(devices)
	}
	p := &gpuPool{free: make(chan string, len(devices)), perJob: perJob}
	for _, d := range devices {
		p.free <- d
	}
	return p
}

// acquire waits for the job's devices; release gives them back.
func (p *gpuPool) acquire(ctx context.Context) ([]string, error) {
	got := make([]string, 0, p.perJob)
	for len(got) < p.perJob {
		select {
		case d := <-p.free:
			got = append(got, d)
		case <-ctx.Done():
			p.release(got)
			return nil, context.Cause(ctx)
		}
	}
	return got, nil
}

func (p *gpuPool) release(devices []string) {
	for _, d := range devices {
		p.free <- d
	}
}

// needsGPUs reports whether a benchmark's jobs run on accelerators: it
// requires a runner label about them (accelerator_count "*" in the
// catalogue, accelerator_model, ...). Only such a job takes a share of the
// runner's GPUs; a CPU job takes none, so it never waits for GPUs or
// keeps a GPU job from them.
func needsGPUs(b *d5list.Benchmark) bool {
	for k := range b.Requires {
		if strings.HasPrefix(k, "accelerator_") {
			return true
		}
	}
	return false
}

// gpuShare is what one job gets of the runner's GPUs. The zero value is
// none: no GPU device node in its sandbox and no *_VISIBLE_DEVICES.
type gpuShare struct {
	// ids are the job's GPUs as CUDA_VISIBLE_DEVICES names them (the
	// pool's entries: nvidia-smi indices, or UUIDs).
	ids []string
	// unmanaged: the runner has no pool (it knows of no GPU it could
	// share out), so a job that needs GPUs gets what the runner was
	// started with: its own *_VISIBLE_DEVICES and every GPU device node.
	unmanaged bool
}

// visibleDevicesEnv are the variables each GPU runtime reads for the
// devices a process may use.
var visibleDevicesEnv = []string{"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"}

// gpuEnv is a job's devices for every GPU runtime; an unmanaged share
// passes the runner's own settings through, and no share sets nothing.
func gpuEnv(share gpuShare) []string {
	var env []string
	if share.unmanaged {
		for _, k := range visibleDevicesEnv {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
		return env
	}
	if len(share.ids) == 0 {
		return nil
	}
	list := strings.Join(share.ids, ",")
	for _, k := range visibleDevicesEnv {
		env = append(env, k+"="+list)
	}
	return env
}

// nvidiaShared are the NVIDIA device nodes that are not one GPU's: the
// control node every CUDA process opens, unified memory, modesetting, and
// the MIG capability nodes. A job with GPUs needs them all.
var nvidiaShared = []string{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset", "/dev/nvidia-caps/*"}

// amdDevices are AMD's device nodes (KFD and the DRM render nodes). They
// are not narrowed to a job's GPUs: ROCm's device indices are not mapped
// to render nodes here, so an AMD job is held to its share only by
// ROCR_VISIBLE_DEVICES.
var amdDevices = []string{"/dev/kfd", "/dev/dri/*"}

// gpuDevices lists the device nodes under root ("/" on a runner) that a
// job with this share may open: for each of its NVIDIA GPUs /dev/nvidiaN
// (N its minor number, from minors), the shared NVIDIA nodes, and AMD's
// nodes where the share resolves to no NVIDIA GPU. A job without a share
// gets none, so unsetting CUDA_VISIBLE_DEVICES reaches no other job's GPU;
// an unmanaged share gets every GPU node the host has.
func gpuDevices(root string, share gpuShare, minors gpuMinors) []string {
	switch {
	case share.unmanaged:
		return existing(root, append(append([]string{"/dev/nvidia[0-9]*"}, nvidiaShared...), amdDevices...))
	case len(share.ids) > 0:
		var own []string
		for _, id := range share.ids {
			if m, ok := minors.minor(id); ok {
				own = append(own, "/dev/nvidia"+m)
			}
		}
		if own = existing(root, own); len(own) > 0 {
			return append(own, existing(root, nvidiaShared)...)
		}
		return existing(root, amdDevices)
	}
	return nil
}

// existing lists the device nodes under root that match the patterns, as
// absolute paths inside root.
func existing(root string, patterns []string) []string {
	var out []string
	for _, pat := range patterns {
		devs, _ := filepath.Glob(filepath.Join(root, pat))
		for _, d := range devs {
			rel, err := filepath.Rel(root, d)
			if fi, serr := os.Stat(d); err == nil && serr == nil && !fi.IsDir() {
				out = append(out, "/"+rel)
			}
		}
	}
	return out
}

// gpuMinors maps the ids a runner's NVIDIA GPUs go by in
// CUDA_VISIBLE_DEVICES (nvidia-smi's index and UUID) to their device minor
// number, the N of /dev/nvidiaN. nvidia-smi numbers GPUs in PCI bus order
// and the driver numbers minors in the order it probed them: the two
// usually agree, but not always, and binding the wrong node would hand a
// job another job's GPU. Nil when nvidia-smi could not be asked: then a
// numeric id is taken for the minor.
type gpuMinors map[string]string

func (g gpuMinors) minor(id string) (string, bool) {
	if m, ok := g[id]; ok {
		return m, true
	}
	if g == nil {
		if _, err := strconv.ParseUint(id, 10, 32); err == nil {
			return id, true
		}
	}
	return "", false
}

// detectGPUMinors asks nvidia-smi for each GPU's index, UUID and PCI bus
// id, and the driver (/proc/driver/nvidia/gpus/BUS/information) for the
// minor number of each bus id.
func detectGPUMinors() gpuMinors {
	smi, err := exec.LookPath("nvidia-smi")
	if err != nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, smi, "--query-gpu=index,uuid,pci.bus_id", "--format=csv,noheader").Output()
	if err != nil {
		return nil
	}
	return parseGPUMinors(string(out), "/proc/driver/nvidia/gpus")
}

// parseGPUMinors reads nvidia-smi's "index, uuid, pci.bus_id" lines and
// the driver's information file of each bus id under procGPUs. A GPU whose
// file says no minor keeps its index as the minor.
func parseGPUMinors(smi, procGPUs string) gpuMinors {
	g := gpuMinors{}
	for _, line := range strings.Split(strings.TrimSpace(smi), "\n") {
		f := strings.Split(line, ",")
		if len(f) != 3 {
			continue
		}
		index, uuid, bus := strings.TrimSpace(f[0]), strings.TrimSpace(f[1]), strings.TrimSpace(f[2])
		if _, err := strconv.ParseUint(index, 10, 32); err != nil {
			continue
		}
		minor := index
		if m, ok := deviceMinor(filepath.Join(procGPUs, procBusID(bus), "information")); ok {
			minor = m
		}
		g[index] = minor
		if uuid != "" {
			g[uuid] = minor
		}
	}
	return g
}

// procBusID writes nvidia-smi's PCI bus id ("00000000:3B:00.0") as the
// driver names its folder under /proc ("0000:3b:00.0").
func procBusID(bus string) string {
	bus = strings.ToLower(bus)
	domain, rest, ok := strings.Cut(bus, ":")
	if d, err := strconv.ParseUint(domain, 16, 32); ok && err == nil {
		return fmt.Sprintf("%04x:%s", d, rest)
	}
	return bus
}

// deviceMinor reads "Device Minor: N" from a driver information file.
func deviceMinor(name string) (string, bool) {
	f, err := os.Open(name)
	if err != nil {
		return "", false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "Device Minor" {
			v = strings.TrimSpace(v)
			if _, err := strconv.ParseUint(v, 10, 32); err == nil {
				return v, true
			}
		}
	}
	return "", false
}

// gpuSysPaths are the /sys and /proc entries the drivers' libraries read to
// find and describe the GPUs (PCI topology, the kernel module's version).
var gpuSysPaths = []string{"/sys/bus/pci", "/sys/devices", "/sys/class/drm", "/sys/class/kfd",
	"/sys/module/nvidia", "/sys/module/nvidia_uvm", "/sys/module/amdgpu", "/proc/driver/nvidia"}

// gpuSandboxArgs passes a job's GPU device nodes into the sandbox, with,
// read-only, the /sys and /proc entries the drivers' libraries read. The
// drivers' user-space libraries are under /usr, bound read-only already.
// Nothing when the job has no GPU. imageRoot is the unpacked image that is
// the sandbox's read-only /, or "" for the runner's own: a mount point
// cannot be made in an image, so a /sys entry the image has no folder for
// is left out rather than failing the sandbox (/proc is the sandbox's own
// procfs and has the driver's entries).
func gpuSandboxArgs(devices []string, imageRoot string) []string {
	if len(devices) == 0 {
		return nil
	}
	var a []string
	for _, d := range devices {
		a = append(a, "--dev-bind", d, d)
	}
	for _, d := range gpuSysPaths {
		if imageRoot != "" && strings.HasPrefix(d, "/sys/") {
			if fi, err := os.Stat(filepath.Join(imageRoot, d)); err != nil || !fi.IsDir() {
				continue
			}
		}
		a = append(a, "--ro-bind-try", d, d)
	}
	return a
}
