package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/runner"
)

// runEntrypoint makes the claim of a benchmark that runs the bundle's own
// code the way a runner re-runs it: the folder packed as a bundle, each
// seed run in turn by the process executor in its bubblewrap sandbox (the
// same environment, the same cleared variables), the logs written to
// DIR/results. A claim made outside the sandbox can differ from its
// re-run in ways the competitor cannot see (a BLAS kernel chosen by an
// environment variable, a library found on another path). It returns the
// versions the runs recorded (RunClock.Environment's framework.* labels):
// what the python3 in the runs' own sandbox reports, an image's for an
// image recipe, and nothing where the sandbox has no python3.
func runEntrypoint(ctx context.Context, dir string, b *d5list.Benchmark, recipe d5list.Recipe, seeds []int64, opt runOptions, progress io.Writer) (map[string]string, error) {
	if recipe.Entrypoint == "" {
		return nil, fmt.Errorf("benchmark %s runs the bundle's own code: the recipe must name its entrypoint (entrypoint: code/run.sh)", b.ID)
	}
	archive, err := packForRun(dir)
	if err != nil {
		return nil, err
	}
	var mu sync.Mutex
	p, err := runner.NewProcess(runner.ProcessOptions{
		Fetch: func(ctx context.Context, spec d5list.JobSpec, w io.Writer) error {
			_, err := w.Write(archive)
			return err
		},
		AllowUnsandboxed: opt.unsandboxed,
		DataDir:          opt.datasets,
		ReadOnlyPaths:    opt.software.ReadOnly,
		ExtraPath:        opt.software.Path,
		// The competitor's own code on their own machine: capped like a
		// runner's job where the machine gives a cgroup, and run anyway
		// where it does not.
		AllowUnbounded: true,
		// The competitor's own machine pulls their registry image from
		// wherever it is, as their docker would, and keeps it in their
		// cache folder.
		Registries: []string{"*"},
		ImageCache: imageCache(),
		OnLine: func(run int, stream, line string) {
			if stream == d5list.StreamMLLOG {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(progress, "run %d: %s\n", run, line)
		},
	})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(progress, "%d runs of %s in the runner's sandbox, seeds %v ...\n", len(seeds), recipe.Entrypoint, seeds)
	logs, err := p.Execute(ctx, d5list.JobSpec{Benchmark: *b, Recipe: recipe, Seeds: seeds})
	if err != nil {
		return nil, err
	}
	// A run that breaks its window, or fails its audit, on this machine
	// does on a runner: say so now rather than after an upload and a re-run.
	for _, l := range logs {
		if l.Clock != nil && len(l.Clock.Breaches) > 0 {
			return nil, fmt.Errorf("run %d (seed %d) broke its timed window, as a runner would find: %s (%s); docs/bundle-format.md says how a run takes its seed and logs its window",
				l.Index, l.Seed, l.Clock.Breaches[0].Message, l.Clock.Breaches[0].Code)
		}
		if a := l.Clock.Audit; a != nil && len(a.Failures) > 0 {
			return nil, fmt.Errorf("run %d (seed %d) failed the runner's audit of its work, as a runner would find: %s (%s); docs/bundle-format.md says what the runner checks",
				l.Index, l.Seed, a.Failures[0].Message, a.Failures[0].Code)
		}
	}
	resultsDir := filepath.Join(dir, "results")
	runs := make([]d5list.RunMetrics, 0, len(logs))
	for i, l := range logs {
		if err := os.WriteFile(filepath.Join(resultsDir, "result_"+strconv.Itoa(i)+".txt"), l.Log, 0o644); err != nil {
			return nil, err
		}
		runs = append(runs, d5list.RunMetrics{Clock: l.Clock})
	}
	fmt.Fprintf(progress, "wrote %d result logs to %s\n", len(logs), resultsDir)
	// The same versions a re-run's result shows (Result.RecordedVersions).
	return (&d5list.Result{Runs: runs}).RecordedVersions(), nil
}

// packForRun packs a copy of dir whose results folder holds one
// placeholder log: a bundle needs one, and the runs replace it.
func packForRun(dir string) ([]byte, error) {
	tmp, err := os.MkdirTemp("", "d5list-run-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	if err := os.CopyFS(tmp, os.DirFS(dir)); err != nil {
		return nil, fmt.Errorf("copying %s: %w", dir, err)
	}
	results := filepath.Join(tmp, "results")
	if err := os.RemoveAll(results); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(results, 0o755); err != nil {
		return nil, err
	}
	placeholder := ":::MLLOG {\"namespace\": \"\", \"time_ms\": 0, \"event_type\": \"INTERVAL_START\", \"key\": \"run_start\", \"value\": null, \"metadata\": {}}\n"
	if err := os.WriteFile(filepath.Join(results, "result_0.txt"), []byte(placeholder), 0o644); err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := bundle.Pack(tmp, &buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// imageCache is where `d5list run` keeps pulled registry images: the
// user's cache folder, or the temp dir without one.
func imageCache() string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = os.TempDir()
	}
	return filepath.Join(dir, "d5list", "images")
}
