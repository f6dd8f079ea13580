package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
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

// A job's devices are what every GPU runtime is told; without a pool the
// runner's own setting passes through.
func TestGPUEnv(t *testing.T) {
	env := strings.Join(gpuEnv([]string{"3", "5"}), " ")
	for _, k := range visibleDevicesEnv {
		if !strings.Contains(env, k+"=3,5") {
			t.Errorf("%s not set to the job's devices: %s", k, env)
		}
	}
	t.Setenv("CUDA_VISIBLE_DEVICES", "7")
	if got := gpuEnv(nil); !slices.Contains(got, "CUDA_VISIBLE_DEVICES=7") {
		t.Errorf("without a pool: %v, want the runner's CUDA_VISIBLE_DEVICES", got)
	}
}

// The device nodes of a GPU host go into the sandbox with the /sys and
// /proc entries the drivers read; a host without them adds nothing.
func TestGPUSandboxArgs(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "dev", "dri"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"dev/nvidia0", "dev/nvidiactl", "dev/nvidia-uvm", "dev/dri/renderD128"} {
		if err := os.WriteFile(filepath.Join(root, d), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	devs := gpuDevices(root)
	args := strings.Join(gpuSandboxArgs(devs), " ")
	for _, want := range []string{"--dev-bind /dev/nvidia0 /dev/nvidia0", "--dev-bind /dev/nvidiactl /dev/nvidiactl",
		"--dev-bind /dev/dri/renderD128 /dev/dri/renderD128", "--ro-bind-try /sys/bus/pci /sys/bus/pci",
		"--ro-bind-try /sys/module/nvidia /sys/module/nvidia", "--ro-bind-try /proc/driver/nvidia /proc/driver/nvidia"} {
		if !strings.Contains(args, want) {
			t.Errorf("sandbox arguments lack %q: %s", want, args)
		}
	}
	if got := gpuSandboxArgs(gpuDevices(t.TempDir())); got != nil {
		t.Errorf("a host without GPUs: %v, want nothing", got)
	}
}

// In the sandbox a job sees its own devices in CUDA_VISIBLE_DEVICES.
func TestProcessGivesEachJobItsGPUs(t *testing.T) {
	needBwrap(t)
	p, err := NewProcess(ProcessOptions{
		Fetch:   fixtureBundle(t, "#!/bin/sh\necho \"devices=$CUDA_VISIBLE_DEVICES\" > \"$D5_RESULT_LOG\"\n"),
		WorkDir: workDir(t), GPUs: []string{"3", "5", "6", "7"}, GPUsPerJob: 2,
	})
	if err != nil {
		t.Fatal(err)
	}
	logs, err := p.Execute(context.Background(), testSpec(1, 2))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range logs {
		if got := strings.TrimSpace(string(l.Log)); got != "devices=3,5" {
			t.Errorf("run %d saw %q, want devices=3,5 (the job's two GPUs for every run)", l.Index, got)
		}
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
		Fetch:   fixtureBundle(t, "#!/bin/sh\nnvidia-smi -L > \"$D5_RESULT_LOG\" 2>&1\n"),
		WorkDir: workDir(t), GPUs: []string{"0"},
	})
	if err != nil {
		t.Fatal(err)
	}
	logs, err := p.Execute(context.Background(), testSpec(1))
	if err != nil {
		t.Fatal(err)
	}
	if out := string(logs[0].Log); !strings.HasPrefix(out, "GPU 0:") {
		t.Fatalf("nvidia-smi -L in the sandbox: %q, want GPU 0", out)
	}
}
