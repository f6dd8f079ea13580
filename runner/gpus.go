package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
)

// gpuPool shares a runner's GPUs among its concurrent jobs: each job takes
// its own devices for all its runs and gives them back after, so two jobs
// never compute on one GPU and a job's timing is its GPUs' alone.
type gpuPool struct {
	free   chan string
	perJob int
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

// visibleDevicesEnv are the variables each GPU runtime reads for the
// devices a process may use.
var visibleDevicesEnv = []string{"CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES"}

// gpuEnv is a job's devices for every GPU runtime; with no pool, the
// runner's own settings pass through as they are.
func gpuEnv(devices []string) []string {
	var env []string
	if devices == nil {
		for _, k := range visibleDevicesEnv {
			if v, ok := os.LookupEnv(k); ok {
				env = append(env, k+"="+v)
			}
		}
		return env
	}
	list := strings.Join(devices, ",")
	for _, k := range visibleDevicesEnv {
		env = append(env, k+"="+list)
	}
	return env
}

// gpuDeviceGlobs are the device nodes GPU drivers use: NVIDIA's, and AMD's
// (KFD and the DRM render nodes).
var gpuDeviceGlobs = []string{"/dev/nvidia*", "/dev/nvidia-caps/*", "/dev/dri/*", "/dev/kfd"}

// gpuDevices lists the GPU device nodes under root ("/" on a runner).
func gpuDevices(root string) []string {
	var out []string
	for _, pat := range gpuDeviceGlobs {
		devs, _ := filepath.Glob(filepath.Join(root, pat))
		for _, d := range devs {
			if fi, err := os.Stat(d); err == nil && !fi.IsDir() {
				out = append(out, strings.TrimPrefix(d, filepath.Clean(root)))
			}
		}
	}
	return out
}

// gpuSandboxArgs passes a runner's GPUs into the sandbox: the device nodes,
// and read-only the /sys and /proc entries the drivers' libraries read to
// find and describe them (PCI topology, the kernel module's version). The
// drivers' user-space libraries are under /usr, bound read-only already.
// Nothing when the runner has no GPU.
func gpuSandboxArgs(devices []string) []string {
	if len(devices) == 0 {
		return nil
	}
	var a []string
	for _, d := range devices {
		a = append(a, "--dev-bind", d, d)
	}
	for _, d := range []string{"/sys/bus/pci", "/sys/devices", "/sys/class/drm", "/sys/class/kfd",
		"/sys/module/nvidia", "/sys/module/nvidia_uvm", "/sys/module/amdgpu", "/proc/driver/nvidia"} {
		a = append(a, "--ro-bind-try", d, d)
	}
	return a
}
