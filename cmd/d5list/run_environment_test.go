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
	host := runner.FrameworkLabels(context.Background())
	if host["framework.python"] == "" {
		t.Skip("this machine's " + runner.SandboxPython + " reports no version: nothing to tell apart")
	}
	dir := filepath.Join(t.TempDir(), "submission")
	writeImageSubmission(t, dir, "any", `{"framework.python": "stale, from an earlier run"}`)
	var cat struct {
		Benchmarks []d5list.Benchmark `yaml:"benchmarks"`
	}
	if err := yaml.Unmarshal([]byte(imageBenchmark), &cat); err != nil {
		t.Fatal(err)
	}
	if err := runRecipeRuns(context.Background(), cat.Benchmarks, dir, runOptions{runs: 1}, io.Discard); err != nil {
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
