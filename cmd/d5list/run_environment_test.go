package main

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/runner"
	"gopkg.in/yaml.v3"
)

// `d5list run` records in submission.json what the runs ran with as the
// runner records it, asked inside the runs' own sandbox: for an image
// recipe the image's python3, not this machine's. The image here is a
// static trainer and nothing else, so it has no python3, and the claim
// records no framework version at all, though this machine's
// /usr/bin/python3 would report one.
func TestRunRecordsTheImagesVersionsNotTheHosts(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("bubblewrap is not installed: a container image runs only in the sandbox (apt-get install bubblewrap)")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: the image's static trainer cannot be built")
	}
	host := runner.FrameworkLabels(context.Background())
	if host["framework.python"] == "" {
		t.Skip("this machine's " + runner.SandboxPython + " reports no version: nothing to tell apart")
	}
	dir := filepath.Join(t.TempDir(), "submission")
	trainer := filepath.Join(dir, "code", "launch")
	if err := os.MkdirAll(filepath.Dir(trainer), 0o755); err != nil {
		t.Fatal(err)
	}
	build := exec.Command(goTool, "build", "-trimpath", "-o", trainer, "./testdata/imagetrainer")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the trainer: %v\n%s", err, out)
	}
	binary, err := os.ReadFile(trainer)
	if err != nil {
		t.Fatal(err)
	}
	writeImageArchive(t, filepath.Join(dir, "code", "image.tar"), []string{"PATH=/opt/d5/bin"}, binary)
	files := map[string]string{
		"recipe.yaml": `fixed: {dataset: synthetic-digits, model: mlp, model_kwargs: {hidden: 64}, epochs: 80}
mutable: {batch_size: 32, executor: builtin, optimizer: momentum, optimizer_args: {lr: 0.002, momentum: 0.9}, train_sampler: shuffle}
metrics:
  - {name: test_accuracy, acceptable: 0.945, direction: higher}
entrypoint: code/launch
image: code/image.tar
`,
		"submission.json": `{"format": "d5list/v1", "benchmark": "l2-digits-mlp-image", "division": "closed", "availability": "available",
 "submitter": "Image team", "system_name": "cpu-image", "framework": "the image's own",
 "environment": {"framework.python": "stale, from an earlier run"}}`,
		"system.json": `{"submitter": "Image team", "division": "closed", "status": "available", "system_name": "cpu-image",
 "number_of_nodes": "1", "host_processors_per_node": "1", "host_processor_model_name": "any",
 "host_processor_core_count": "2", "accelerators_per_node": "0", "accelerator_model_name": "", "framework": "the image's own",
 "operating_system": "Linux"}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var cat struct {
		Benchmarks []d5list.Benchmark `yaml:"benchmarks"`
	}
	if err := yaml.Unmarshal([]byte(imageBenchmark), &cat); err != nil {
		t.Fatal(err)
	}
	if err := runRecipeRuns(context.Background(), cat.Benchmarks, dir, 1, false, io.Discard); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(filepath.Join(dir, "submission.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Environment map[string]string `json:"environment"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Environment[d5list.LabelRuns] != d5list.RunsEntrypoint || m.Environment["cpu_model"] == "" {
		t.Errorf("recorded %v, want the machine's labels and runs=entrypoint", m.Environment)
	}
	for k, v := range m.Environment {
		if strings.HasPrefix(k, "framework.") {
			t.Errorf("recorded %s=%s for a run in an image without python3 (this machine's python3: %v)", k, v, host)
		}
	}
}
