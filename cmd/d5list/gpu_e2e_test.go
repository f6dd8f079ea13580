package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/runner"
)

// TestGPUExampleEndToEnd is the GPU runner's path as a site runs it: the
// CIFAR-10 example's claims made with `d5list run` on the GPU, uploaded,
// re-run by a `d5list runner --executor process` that gives the job the
// GPU inside bubblewrap, with PyTorch from wherever the host keeps it (a
// venv or conda prefix is bound in with --sandbox-ro), and verified. The
// benchmark is the catalogue's CIFAR-10 GPU one on synthetic data, two
// epochs of a small ResNet, so that no data set is needed and the target
// is one chance reaches. Where there is no NVIDIA GPU with a CUDA build
// of PyTorch, as in CI, it skips; scripts/gpu-check.sh runs it on one.
func TestGPUExampleEndToEnd(t *testing.T) {
	if _, err := os.Stat("/dev/nvidia0"); err != nil {
		t.Skip("no NVIDIA GPU on this machine (/dev/nvidia0)")
	}
	software := cudaTorch(t)
	if _, err := exec.LookPath("bwrap"); err != nil || runner.JobCaps() != nil {
		t.Skipf("needs bubblewrap and a cgroup to cap the runner's jobs in (bwrap: %v; caps: %v)", err, runner.JobCaps())
	}
	data := t.TempDir()
	importBenchmark(t, data, syntheticGPUBenchmark(t))
	p := startPortalIn(t, data, 0)
	startProcessRunner(t, p, adminToken(t, "runner-token", "--data", p.data, "--name", "gpu"), 1, software...)

	dir := filepath.Join(t.TempDir(), "cifar")
	copyDir(t, "../../examples/pytorch-cifar10-resnet", dir)
	setManifestField(t, dir, "benchmark", syntheticGPUID)
	entry := "#!/bin/sh\nexec python3 \"$(dirname \"$0\")/train.py\" --synthetic --epochs 2 --depth 8 --target 0.02\n"
	if err := os.WriteFile(filepath.Join(dir, "code", "run.sh"), []byte(entry), 0o755); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), append([]string{"run", "--server", p.url}, append(software, dir)...), &out, &out); err != nil {
		t.Fatalf("d5list run: %v\n%s", err, out.String())
	}
	id := p.submitFolder(t, dir)
	got := p.honestVerdict(t, id)
	if got.Status != d5list.StatusVerified || got.Measured == nil {
		t.Fatalf("%s, want verified; reasons %+v", got.Status, got.Reasons)
	}
	for _, r := range got.Measured.Runs {
		if r.Clock == nil || !strings.HasPrefix(r.Clock.Environment["env.CUDA_VISIBLE_DEVICES"], "0") || r.Clock.Environment["framework.cuda"] == "" {
			t.Fatalf("run %d (seed %d): the runner recorded %+v, want the job's GPU and PyTorch's CUDA", r.Index, r.Seed, r.Clock)
		}
	}
	t.Logf("verified on the GPU: claimed %.3f s, measured %.3f s, %d runs re-run (fresh seeds among them)",
		got.Claimed.Score.Value, got.Measured.Score.Value, len(got.Measured.Runs))
}

const syntheticGPUID = "l2-cifar10-synthetic-gpu"

// syntheticGPUBenchmark is the catalogue's CIFAR-10 GPU benchmark made
// into a check of the GPU path: two runs and one fresh seed, no data set,
// a target that a network trained on random labels reaches, and room for
// cuDNN's nondeterminism on 512 random test images.
func syntheticGPUBenchmark(t *testing.T) d5list.Benchmark {
	t.Helper()
	bs, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	b, err := catalog.Lookup(bs, "l2-cifar10-resnet44-gpu")
	if err != nil {
		t.Fatal(err)
	}
	b.ID, b.Name = syntheticGPUID, "CIFAR-10 example on synthetic data, GPU (the GPU path's check)"
	b.Runs, b.Verify.FreshRuns, b.Verify.TimeLimitSeconds = 2, 1, 900
	b.Quality.Target, b.Verify.AccuracyTolerance = 0.02, 0.05
	delete(b.Requires, "dataset.cifar10")
	return *b
}

// importBenchmark stores b as the portal's own in the data folder.
func importBenchmark(t *testing.T, data string, b d5list.Benchmark) {
	t.Helper()
	raw, err := yaml.Marshal([]d5list.Benchmark{b})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "ours.yaml")
	if err := os.WriteFile(file, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	adminToken(t, "benchmarks", "import", "--data", data, file)
}

// cudaTorch finds a python3 whose PyTorch sees a GPU, and returns the
// runner's flags that give it to the sandbox: none for the sandbox's own
// /usr/bin/python3, else its prefix bound read-only and its bin first on
// PATH. It skips where there is none.
func cudaTorch(t *testing.T) []string {
	t.Helper()
	const probe = "import sys, torch; assert torch.cuda.is_available(); print(sys.prefix)"
	if exec.Command(runner.SandboxPython, "-c", probe).Run() == nil {
		return nil
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 with a CUDA build of PyTorch")
	}
	prefix, err := exec.Command(py, "-c", probe).Output()
	if err != nil {
		t.Skipf("neither %s nor %s has a PyTorch that sees the GPU", runner.SandboxPython, py)
	}
	root := strings.TrimSpace(string(prefix))
	return []string{"--sandbox-ro", root, "--sandbox-path", filepath.Join(root, "bin")}
}
