// Package examples holds a smoke test of the PyTorch CIFAR-10 example: it
// runs the example's entrypoint through the process executor on synthetic
// data. It needs python3 with torch; CI installs Debian's (python3-torch),
// elsewhere it skips without.
package examples

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/mllog"
	"github.com/deep500/d5list/runner"
)

func TestSyntheticSmoke(t *testing.T) {
	// Debian's python3-torch, the sandbox's own /usr/bin/python3, first;
	// else a python3 on PATH that has torch (a pip or conda install),
	// bound into the sandbox read-only.
	py := runner.SandboxPython
	var readOnly, extraPath []string
	if exec.Command(py, "-c", "import torch").Run() != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must install python3-torch for %s (.ci/install-packages.sh)", py)
		}
		onPath, err := exec.LookPath("python3")
		if err != nil {
			t.Skip("python3 is not installed: example smoke test skipped")
		}
		prefix, err := exec.Command(onPath, "-c", "import sys, torch; print(sys.prefix)").Output()
		if err != nil {
			t.Skipf("neither %s nor %s has torch: example smoke test skipped (apt-get install python3-torch)", runner.SandboxPython, onPath)
		}
		py = onPath
		readOnly = []string{strings.TrimSpace(string(prefix))}
		extraPath = []string{filepath.Dir(onPath), filepath.Join(readOnly[0], "bin")}
	}
	_, bwrapErr := exec.LookPath("bwrap")
	// On a GPU host the job asks for accelerators and gets the first GPU,
	// as a GPU runner gives its jobs theirs, and must train on it.
	var gpus []string
	spec := d5list.JobSpec{
		JobID:     1,
		Benchmark: d5list.Benchmark{ID: "l2-cifar10-resnet44-gpu", Verify: d5list.VerifyPolicy{TimeLimitSeconds: 600}},
		Recipe:    d5list.Recipe{Entrypoint: "code/run.sh"},
		Seeds:     []int64{3},
	}
	if _, err := os.Stat("/dev/nvidia0"); err == nil {
		gpus = []string{"0"}
		spec.Benchmark.Requires = map[string]string{"accelerator_count": "*"}
	}
	dir := filepath.Join(t.TempDir(), "bundle")
	if err := os.CopyFS(dir, os.DirFS("pytorch-cifar10-resnet")); err != nil {
		t.Fatal(err)
	}
	// The bundle layout needs a results folder; the re-run replaces it.
	os.MkdirAll(filepath.Join(dir, "results"), 0o755)
	os.WriteFile(filepath.Join(dir, "results", "result_0.txt"), []byte(":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": \"INTERVAL_START\", \"key\": \"run_start\", \"value\": null, \"metadata\": {}}\n"), 0o644)
	run := "#!/bin/sh\nexec " + filepath.Base(py) + " \"$(dirname \"$0\")/train.py\" --synthetic --epochs 1 --depth 8\n"
	if err := os.WriteFile(filepath.Join(dir, "code", "run.sh"), []byte(run), 0o755); err != nil {
		t.Fatal(err)
	}
	var archive bytes.Buffer
	if err := bundle.Pack(dir, &archive); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	os.Chmod(filepath.Dir(work), 0o755)
	os.Chmod(work, 0o755)
	p, err := runner.NewProcess(runner.ProcessOptions{
		Fetch: func(ctx context.Context, spec d5list.JobSpec, w io.Writer) error {
			_, err := w.Write(archive.Bytes())
			return err
		},
		WorkDir:          work,
		AllowUnsandboxed: bwrapErr != nil,
		AllowUnbounded:   true, // the example's training, not the caps, is under test
		ReadOnlyPaths:    readOnly,
		ExtraPath:        extraPath,
		GPUs:             gpus,
	})
	if err != nil {
		t.Fatal(err)
	}
	logs, err := p.Execute(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	events, err := mllog.Parse(bytes.NewReader(logs[0].Log), "result")
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	device := ""
	for _, e := range events {
		keys[e.Key] = true
		if e.Key == "device" {
			device = fmt.Sprint(e.Value)
		}
	}
	t.Logf("trained on %s (sandboxed: %v), the runner's window %.2f s, the process tree %.2f s", device, bwrapErr == nil, logs[0].Clock.LogS, logs[0].Clock.WallS)
	if gpus != nil && !strings.HasPrefix(device, "cuda") {
		t.Errorf("the job was given GPU 0 but trained on %q", device)
	}
	for _, k := range []string{"seed", "global_batch_size", "run_start", "eval_accuracy", "run_stop"} {
		if !keys[k] {
			t.Errorf("the log has no %s event:\n%s", k, logs[0].Log)
		}
	}
}
