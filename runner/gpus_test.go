package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// Concurrent jobs get disjoint GPUs; a job waits for its share while
// others hold them, and a cancelled wait gives back what it took.
func TestGPUPoolSharesDevices(t *testing.T) {
	p := newGPUPool([]string{"0", "1", "2", "3"}, 2)
	ctx := context.Background()
	a, err := p.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	all := append(slices.Clone(a), b...)
	slices.Sort(all)
	if len(a) != 2 || len(b) != 2 || !slices.Equal(slices.Compact(all), []string{"0", "1", "2", "3"}) {
		t.Fatalf("two jobs got %v and %v, want two disjoint pairs", a, b)
	}
	short, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if _, err := p.acquire(short); err == nil {
		t.Fatal("a third job got GPUs while two jobs held all four")
	}
	var wg sync.WaitGroup
	var c []string
	wg.Go(func() { c, _ = p.acquire(ctx) })
	p.release(a)
	wg.Wait()
	slices.Sort(c)
	slices.Sort(a)
	if !slices.Equal(c, a) {
		t.Fatalf("the waiting job got %v, want the released %v", c, a)
	}
	if newGPUPool(nil, 1) != nil {
		t.Fatal("a runner without GPUs has a GPU pool")
	}
}

// A job's devices are what every GPU runtime is told; an unmanaged share
// passes the runner's own setting through, and no share sets nothing.
func TestGPUEnv(t *testing.T) {
	env := strings.Join(gpuEnv(gpuShare{ids: []string{"3", "5"}}), " ")
	for _, k := range visibleDevicesEnv {
		if !strings.Contains(env, k+"=3,5") {
			t.Errorf("%s not set to the job's devices: %s", k, env)
		}
	}
	t.Setenv("CUDA_VISIBLE_DEVICES", "7")
	if got := gpuEnv(gpuShare{unmanaged: true}); !slices.Contains(got, "CUDA_VISIBLE_DEVICES=7") {
		t.Errorf("without a pool: %v, want the runner's CUDA_VISIBLE_DEVICES", got)
	}
	if got := gpuEnv(gpuShare{}); got != nil {
		t.Errorf("a job without GPUs: %v, want no *_VISIBLE_DEVICES at all", got)
	}
}

// fakeDev makes a fake GPU host's device tree under root.
func fakeDev(t *testing.T, nodes ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, d := range nodes {
		name := filepath.Join(root, d)
		if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(name, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// A job's sandbox gets the device node of each of its own GPUs and the
// shared NVIDIA nodes, never another GPU's; a job without GPUs gets no
// GPU node at all, and an unmanaged share every one.
func TestGPUDevicesOfAShare(t *testing.T) {
	root := fakeDev(t, "dev/nvidia0", "dev/nvidia1", "dev/nvidia2", "dev/nvidiactl", "dev/nvidia-uvm",
		"dev/nvidia-uvm-tools", "dev/nvidia-modeset", "dev/nvidia-caps/nvidia-cap1", "dev/dri/renderD128", "dev/null")
	got := gpuDevices(root, gpuShare{ids: []string{"1"}}, nil)
	want := []string{"/dev/nvidia1", "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools", "/dev/nvidia-modeset", "/dev/nvidia-caps/nvidia-cap1"}
	if !slices.Equal(got, want) {
		t.Errorf("GPU 1's nodes: %v, want %v", got, want)
	}
	// nvidia-smi's index 1 is the driver's minor 2 on this host.
	if got := gpuDevices(root, gpuShare{ids: []string{"1"}}, gpuMinors{"0": "0", "1": "2"}); !slices.Contains(got, "/dev/nvidia2") || slices.Contains(got, "/dev/nvidia1") {
		t.Errorf("GPU 1 with minor 2: %v, want /dev/nvidia2 and not /dev/nvidia1", got)
	}
	// An id nvidia-smi does not list (a typo, a MIG id) binds no GPU.
	if got := gpuDevices(root, gpuShare{ids: []string{"GPU-unknown"}}, gpuMinors{"0": "0"}); slices.ContainsFunc(got, func(d string) bool { return strings.HasPrefix(d, "/dev/nvidia") }) {
		t.Errorf("an unknown GPU id: %v, want no NVIDIA node", got)
	}
	if got := gpuDevices(root, gpuShare{}, nil); got != nil {
		t.Errorf("a job without GPUs: %v, want no device node", got)
	}
	all := gpuDevices(root, gpuShare{unmanaged: true}, nil)
	for _, d := range []string{"/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidiactl", "/dev/dri/renderD128"} {
		if !slices.Contains(all, d) {
			t.Errorf("an unmanaged share lacks %s: %v", d, all)
		}
	}
	if slices.Contains(all, "/dev/null") {
		t.Errorf("an unmanaged share holds a non-GPU node: %v", all)
	}
	// On the runner's own root the paths stay absolute (bwrap needs them so).
	if got := existing("/", []string{"/dev/null"}); !slices.Equal(got, []string{"/dev/null"}) {
		t.Errorf("existing under /: %v, want [/dev/null]", got)
	}
	// On an AMD host (no NVIDIA node for the share) KFD and the render
	// nodes go in whole.
	amd := fakeDev(t, "dev/kfd", "dev/dri/renderD128")
	if got := gpuDevices(amd, gpuShare{ids: []string{"0"}}, nil); !slices.Equal(got, []string{"/dev/kfd", "/dev/dri/renderD128"}) {
		t.Errorf("an AMD host's share: %v", got)
	}
}

// The driver's minor of each GPU is found by its PCI bus id, whatever
// nvidia-smi's index; a GPU whose information file is missing keeps its
// index.
func TestParseGPUMinors(t *testing.T) {
	proc := t.TempDir()
	for bus, minor := range map[string]string{"0000:3b:00.0": "1", "0000:5e:00.0": "0"} {
		if err := os.MkdirAll(filepath.Join(proc, bus), 0o755); err != nil {
			t.Fatal(err)
		}
		info := "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 1\nDevice Minor: \t " + minor + "\nBus Location: \t " + bus + "\n"
		if err := os.WriteFile(filepath.Join(proc, bus, "information"), []byte(info), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	smi := "0, GPU-aaaa, 00000000:3B:00.0\n1, GPU-bbbb, 00000000:5E:00.0\n2, GPU-cccc, 00000000:86:00.0\n"
	got := parseGPUMinors(smi, proc)
	want := gpuMinors{"0": "1", "GPU-aaaa": "1", "1": "0", "GPU-bbbb": "0", "2": "2", "GPU-cccc": "2"}
	if len(got) != len(want) {
		t.Fatalf("minors %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("minor of %s: %q, want %q", k, got[k], v)
		}
	}
}

// The device nodes of a job's GPUs go into the sandbox with the /sys and
// /proc entries the drivers read; a job without GPUs adds nothing. In an
// image, a /sys entry it has no mount point for is left out.
func TestGPUSandboxArgs(t *testing.T) {
	root := fakeDev(t, "dev/nvidia0", "dev/nvidiactl", "dev/nvidia-uvm")
	devs := gpuDevices(root, gpuShare{ids: []string{"0"}}, nil)
	args := strings.Join(gpuSandboxArgs(devs, ""), " ")
	for _, want := range []string{"--dev-bind /dev/nvidia0 /dev/nvidia0", "--dev-bind /dev/nvidiactl /dev/nvidiactl",
		"--ro-bind-try /sys/bus/pci /sys/bus/pci",
		"--ro-bind-try /sys/module/nvidia /sys/module/nvidia", "--ro-bind-try /proc/driver/nvidia /proc/driver/nvidia"} {
		if !strings.Contains(args, want) {
			t.Errorf("sandbox arguments lack %q: %s", want, args)
		}
	}
	if got := gpuSandboxArgs(gpuDevices(t.TempDir(), gpuShare{ids: []string{"0"}}, nil), ""); got != nil {
		t.Errorf("a host without GPUs: %v, want nothing", got)
	}
	image := t.TempDir()
	if err := os.MkdirAll(filepath.Join(image, "sys", "devices"), 0o755); err != nil {
		t.Fatal(err)
	}
	args = strings.Join(gpuSandboxArgs(devs, image), " ")
	if !strings.Contains(args, "--ro-bind-try /sys/devices /sys/devices") || strings.Contains(args, "/sys/bus/pci") ||
		!strings.Contains(args, "/proc/driver/nvidia") {
		t.Errorf("in an image with only /sys/devices: %s", args)
	}
}

// In the sandbox a job sees its own devices in CUDA_VISIBLE_DEVICES.
func TestProcessGivesEachJobItsGPUs(t *testing.T) {
	needBwrap(t)
	p, err := NewProcess(ProcessOptions{
		Versions: testVersions[true],
		Fetch:    fixtureBundle(t, "#!/bin/sh\necho \"devices=$CUDA_VISIBLE_DEVICES\" > \"$D5_RESULT_LOG\"\n"),
		WorkDir:  workDir(t), GPUs: []string{"3", "5", "6", "7"}, GPUsPerJob: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	logs, err := p.Execute(context.Background(), gpuSpec(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		if got := strings.TrimSpace(string(l.Log)); got != "devices=3,5" {
			t.Errorf("run %d saw %q, want devices=3,5 (the job's two GPUs for every run)", l.Index, got)
		}
	}
}

// gpuSpec is testSpec for a benchmark that runs on accelerators, as the
// catalogue's GPU entries require them.
func gpuSpec(seeds ...int64) d5list.JobSpec {
	spec := testSpec(seeds...)
	spec.Benchmark.Requires = map[string]string{"accelerator_count": "*"}
	return spec
}

// Only a benchmark that requires accelerators takes GPUs: a CPU job runs
// while GPU jobs hold every GPU, and sees no *_VISIBLE_DEVICES (nor, in
// the sandbox, any GPU node: TestGPUDevicesOfAShare), where a GPU job
// waits for its share.
func TestProcessCPUJobTakesNoGPU(t *testing.T) {
	needBwrap(t)
	cpu, gpu := testSpec(1), gpuSpec(1)
	if needsGPUs(&cpu.Benchmark) || !needsGPUs(&gpu.Benchmark) {
		t.Fatal("needsGPUs does not follow the benchmark's accelerator requirement")
	}
	var started atomic.Int32
	p, err := NewProcess(ProcessOptions{
		Versions: testVersions[true],
		Fetch:    fixtureBundle(t, "#!/bin/sh\necho \"devices=${CUDA_VISIBLE_DEVICES-unset}\" > \"$D5_RESULT_LOG\"\n"),
		WorkDir:  workDir(t), GPUs: []string{"0"},
		OnStart: func(int, int) { started.Add(1) },
	})
	if err != nil {
		t.Fatal(err)
	}
	held, err := p.gpus.acquire(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer p.gpus.release(held)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	logs, err := p.Execute(ctx, cpu)
	if err != nil {
		t.Fatalf("a CPU job while the GPUs are held: %v", err)
	}
	if got := strings.TrimSpace(string(logs[0].Log)); got != "devices=unset" {
		t.Errorf("a CPU job saw %q, want no CUDA_VISIBLE_DEVICES", got)
	}
	short, cancelShort := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancelShort()
	before := started.Load()
	if _, err := p.Execute(short, gpu); err == nil || started.Load() != before {
		t.Errorf("a GPU job started %d runs (%v) while another job held the only GPU, want it to wait", started.Load()-before, err)
	}
}

// On a machine with an NVIDIA GPU, the sandbox reaches it: nvidia-smi,
// run inside, lists the job's GPU. Without one the test says so and skips.
func TestProcessSandboxSeesNVIDIAGPU(t *testing.T) {
	needBwrap(t)
	if _, err := os.Stat("/dev/nvidia0"); err != nil {
		t.Skip("no NVIDIA GPU on this machine (/dev/nvidia0): GPU pass-through not tested here")
	}
	if _, err := exec.LookPath("nvidia-smi"); err != nil {
		t.Skip("nvidia-smi is not installed: GPU pass-through not tested here")
	}
	p, err := NewProcess(ProcessOptions{
		Versions: testVersions[true],
		Fetch:    fixtureBundle(t, "#!/bin/sh\n"+takeSeed+"nvidia-smi -L > \"$D5_RESULT_LOG\" 2>&1\n"),
		WorkDir:  workDir(t), GPUs: []string{"0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	logs, err := p.Execute(context.Background(), gpuSpec(1))
	if err != nil {
		t.Fatal(err)
	}
	if out := string(logs[0].Log); !strings.HasPrefix(out, "GPU 0:") {
		t.Fatalf("nvidia-smi -L in the sandbox: %q, want GPU 0", out)
	}
}
