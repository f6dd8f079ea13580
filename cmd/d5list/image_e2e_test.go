package main

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/internal/slowtest"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// imageBenchmark is l2-digits-mlp-cpu with the competitor's code in place
// of the portal's workload: what a benchmark of any framework looks like
// to a submission that brings its own software as an image.
const imageBenchmark = `benchmarks:
  - id: l2-digits-mlp-image
    name: Synthetic digits, MLP, the competitor's own image
    level: 2
    category: image-classification
    runs: 5
    division:
      fixed: {dataset: synthetic-digits, model: mlp, model_kwargs: {hidden: 64}, epochs: 80}
      mutable: {batch_size: 32, executor: builtin, optimizer: momentum, optimizer_args: {lr: 0.002, momentum: 0.9}, train_sampler: shuffle}
    quality: {metric: eval_accuracy, target: 0.945, mode: first, direction: higher}
    ranking: {metric: time_to_train_s, direction: lower, unit: s, secondary: final_accuracy, secondary_direction: higher}
    verify: {accuracy_tolerance: 0, timing_precision: 0.10, time_limit_s: 600, same_hardware: [cpu_model]}
`

// A submission that brings its software as a container image (issue 14) is
// claimed with `d5list run` and re-run by a process runner from that
// image, inside bubblewrap, to a verified, ranked entry. The image is
// built here (no registry is reachable): one layer holding a static
// trainer at /opt/d5/bin/d5-train and a config whose PATH names it. The
// bundle's entrypoint only hands over to the d5-train its PATH finds, and
// the runner's own PATH has none: a run that did not have the image as its
// / could not train at all.
func TestImageSubmissionEndToEnd(t *testing.T) {
	slowtest.Require(t, "an image's claim made and re-run ten times, judged on its times")
	needCappedSandbox(t) // a container image runs only in the sandbox
	src := filepath.Join(t.TempDir(), "submission")
	writeImageSubmission(t, src, bundle.Placeholder+": d5list run writes this machine's", "")

	data := t.TempDir()
	catalogue := filepath.Join(t.TempDir(), "image-benchmark.yaml")
	if err := os.WriteFile(catalogue, []byte(imageBenchmark), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"admin", "benchmarks", "import", "--data", data, catalogue}, io.Discard, io.Discard); err != nil {
		t.Fatalf("importing the benchmark: %v", err)
	}
	p := startPortalIn(t, data, 1)
	startProcessRunner(t, p, adminToken(t, "runner-token", "--data", p.data, "--name", "images"), 1)
	got, _ := claimVerified(t, p, src, "l2-digits-mlp-image", "run", "--server", p.url)
	if len(got.Measured.ClaimedSeedRuns()) != 5 || len(got.Measured.TimedRuns()) != 5 {
		t.Fatalf("measured %d runs, want the 5 claimed seeds' and 5 fresh ones", len(got.Measured.Runs))
	}
}

// writeImageArchive writes, as `docker save` would, a one-layer image
// whose file system is the static program at /opt/d5/bin/d5-train, with env
// as its config's environment.
func writeImageArchive(t *testing.T, path string, env []string, program []byte) {
	t.Helper()
	var layer bytes.Buffer
	tw := tar.NewWriter(&layer)
	for _, h := range []*tar.Header{
		{Name: "opt/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "opt/d5/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "opt/d5/bin/", Typeflag: tar.TypeDir, Mode: 0o755},
		{Name: "opt/d5/bin/d5-train", Typeflag: tar.TypeReg, Mode: 0o755, Size: int64(len(program))},
	} {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tw.Write(program); err != nil {
		t.Fatal(err)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(layer.Bytes())), nil })
	if err != nil {
		t.Fatal(err)
	}
	img, err := mutate.AppendLayers(empty.Image, l)
	if err != nil {
		t.Fatal(err)
	}
	if img, err = mutate.Config(img, v1.Config{Env: env}); err != nil {
		t.Fatal(err)
	}
	if err := tarball.WriteToFile(path, name.MustParseReference("d5list.test/image-team:1"), img); err != nil {
		t.Fatal(err)
	}
}

// writeImageSubmission writes to dir a submission of the
// l2-digits-mlp-image benchmark whose code is a static trainer (built
// from testdata/imagetrainer) in a one-layer image archive: the bundle's
// entrypoint only hands over to the trainer on the image's PATH. cpu is
// system.json's host CPU; environment, where not empty, is submission.json's
// "environment" object.
func writeImageSubmission(t *testing.T, dir, cpu, environment string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH: the image's static trainer cannot be built")
	}
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
	if environment != "" {
		environment = ",\n \"environment\": " + environment
	}
	files := map[string]string{
		"recipe.yaml": `fixed: {dataset: synthetic-digits, model: mlp, model_kwargs: {hidden: 64}, epochs: 80}
mutable: {batch_size: 32, executor: builtin, optimizer: momentum, optimizer_args: {lr: 0.002, momentum: 0.9}, train_sampler: shuffle}
metrics:
  - {name: test_accuracy, acceptable: 0.945, direction: higher}
entrypoint: code/launch
image: code/image.tar
`,
		"submission.json": `{"format": "d5list/v1", "benchmark": "l2-digits-mlp-image", "division": "closed", "availability": "available",
 "submitter": "Image team", "system_name": "cpu-image", "framework": "the image's own"` + environment + `}`,
		"system.json": `{"submitter": "Image team", "division": "closed", "status": "available", "system_name": "cpu-image",
 "number_of_nodes": "1", "host_processors_per_node": "1", "host_processor_model_name": "` + cpu + `",
 "host_processor_core_count": "2", "accelerators_per_node": "0", "accelerator_model_name": "", "framework": "the image's own",
 "operating_system": "Linux"}`,
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
