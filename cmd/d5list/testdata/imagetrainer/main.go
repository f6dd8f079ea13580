// Command imagetrainer is the competitor's code of the container-image
// end-to-end test (image_e2e_test.go): built static, one copy lives in
// the image as /opt/d5/bin/d5-train, the other is the bundle's
// entrypoint, which finds the image's copy on the image's PATH and hands
// over to it, as a run.sh calling the image's python would. The training
// is the portal's reference MLP at the defaults of l2-digits-mlp-cpu, so
// that the claim and the re-run can be compared exactly.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/mllog"
	"github.com/deep500/d5list/workloads"
)

const inImage = "d5-train"

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "imagetrainer:", err)
		os.Exit(1)
	}
}

func run() error {
	if filepath.Base(os.Args[0]) != inImage {
		path, err := exec.LookPath(inImage)
		if err != nil {
			return fmt.Errorf("the image's trainer: %w", err)
		}
		return syscall.Exec(path, []string{inImage}, os.Environ())
	}
	// The seed is handed over at the gate, which starts the runner's clock.
	gate, err := os.ReadFile(os.Getenv("D5_GATE"))
	if err != nil {
		return fmt.Errorf("D5_GATE: %w", err)
	}
	var taken struct{ Seed int64 }
	if err := json.Unmarshal(gate, &taken); err != nil {
		return fmt.Errorf("D5_GATE: %w", err)
	}
	seed := taken.Seed
	benchmarks, err := catalog.Benchmarks()
	if err != nil {
		return err
	}
	b, err := catalog.Lookup(benchmarks, "l2-digits-mlp-cpu")
	if err != nil {
		return err
	}
	cfg, err := workloads.MLPConfigFromRecipe(b, &d5list.Recipe{Fixed: b.Division.Fixed, Mutable: b.Division.Mutable})
	if err != nil {
		return err
	}
	// The benchmark the portal runs this code for, as MLLOG must name it.
	cfg.Benchmark = os.Getenv("D5_BENCHMARK")
	// The result log is the runner's FIFO: open it for writing only.
	out, err := os.OpenFile(os.Getenv("D5_RESULT_LOG"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	if _, err := workloads.TrainMLP(context.Background(), cfg, seed, mllog.NewWriter(out, nil)); err != nil {
		return err
	}
	return out.Close()
}
