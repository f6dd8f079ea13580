package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/runner"
	"github.com/deep500/d5list/sysinfo"
)

// recipeFiles are the recipe names a submission folder may use, in the
// order they are looked for.
var recipeFiles = []string{"recipe.yaml", "recipe.yml", "recipe.json", "recipe.py"}

func initCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("init", stderr)
	submitter := fs.String("submitter", "", "submitter (organisation) name; default: the user name")
	server := fs.String("server", "", serverFlagHelp)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("usage: d5list init BENCHMARK DIR [--server URL]")
	}
	bs, err := benchmarksOf(context.Background(), *server)
	if err != nil {
		return err
	}
	if err := writeStarter(bs, pos[0], pos[1], *submitter); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: edit recipe.yaml (mutable part), submission.json and system.json, then run `d5list run %s`\n", pos[1], pos[1])
	return nil
}

// writeStarter writes a submission folder for benchmark id into dir:
// the recipe with the benchmark's fixed part and default mutable part,
// the cover sheet, and a system description of this machine.
func writeStarter(bs []d5list.Benchmark, id, dir, submitter string) error {
	b, err := catalog.Lookup(bs, id)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Join(dir, "results"), 0o755); err != nil {
		return err
	}
	recipe := struct {
		Fixed   map[string]any      `yaml:"fixed"`
		Mutable map[string]any      `yaml:"mutable"`
		Metrics []d5list.MetricSpec `yaml:"metrics"`
	}{b.Division.Fixed, b.Division.Mutable, starterMetrics(b)}
	y, err := yaml.Marshal(recipe)
	if err != nil {
		return err
	}
	header := "# Deep500 recipe for " + b.ID + ". In the closed division `fixed` must stay as it is;\n# the keys of `mutable` may change.\n"
	if err := os.WriteFile(filepath.Join(dir, "recipe.yaml"), append([]byte(header), y...), 0o644); err != nil {
		return err
	}
	if submitter == "" {
		submitter = os.Getenv("USER")
		if submitter == "" {
			submitter = "anonymous"
		}
	}
	host := sysinfo.Detect()
	hostname, _ := os.Hostname()
	systemName := "cpu-" + hostname
	manifest := d5list.Manifest{
		Format: d5list.ManifestFormat, Benchmark: b.ID, Division: d5list.DivisionClosed,
		Availability: d5list.AvailabilityAvailable, Submitter: submitter, SystemName: systemName,
		Framework: "d5list-builtin",
	}
	system := map[string]any{
		"submitter":                 submitter,
		"division":                  d5list.DivisionClosed,
		"status":                    "available",
		"system_name":               systemName,
		"number_of_nodes":           "1",
		"host_processors_per_node":  "1",
		"host_processor_model_name": host.CPUModel,
		"host_processor_core_count": strconv.Itoa(host.Cores),
		"host_memory_capacity":      strconv.FormatFloat(host.MemoryGiB, 'f', -1, 64) + " GB",
		"accelerators_per_node":     strconv.Itoa(host.GPUCount),
		"accelerator_model_name":    host.GPUModel,
		"framework":                 "d5list-builtin",
		"operating_system":          host.OS,
	}
	if err := writeJSON(filepath.Join(dir, "submission.json"), manifest); err != nil {
		return err
	}
	return writeJSON(filepath.Join(dir, "system.json"), system)
}

// starterMetrics is the recipe's acceptable metric set for b, in Deep500's
// sense: the quality target (test accuracy at least the target for
// training, an operator error at most the tolerance), or, for a benchmark
// without one, its ranking metric reported unchecked.
func starterMetrics(b *d5list.Benchmark) []d5list.MetricSpec {
	q := b.Quality
	switch q.Metric {
	case "", "eval_accuracy":
		if q.Metric == "" && q.Target == 0 {
			return []d5list.MetricSpec{{Name: b.Ranking.Metric, Direction: b.Ranking.Direction}}
		}
		target := q.Target
		return []d5list.MetricSpec{{Name: "test_accuracy", Acceptable: &target, Direction: d5list.HigherIsBetter}}
	}
	target := q.Target
	return []d5list.MetricSpec{{Name: q.Metric, Acceptable: &target, Direction: q.Direction}}
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func runCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("run", stderr)
	runs := fs.Int("runs", 0, "number of runs; default the benchmark's count. Fewer is a quick trial; a submission needs exactly the benchmark's count")
	server := fs.String("server", "", serverFlagHelp)
	unsandboxed := fs.Bool("allow-unsandboxed", false, "a benchmark that runs the bundle's own code: run it without bubblewrap when bwrap is not installed (a runner re-runs it sandboxed)")
	datasets := fs.String("datasets", "", "a benchmark that runs the bundle's own code: the folder of data sets its runs read ($D5_DATA_DIR, read-only), as a runner's --datasets")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("usage: d5list run [--runs N] [--allow-unsandboxed] [--datasets DIR] [--server URL] DIR")
	}
	if *runs < 0 {
		return fmt.Errorf("--runs: %d is negative", *runs)
	}
	bs, err := benchmarksOf(ctx, *server)
	if err != nil {
		return err
	}
	return runRecipeRuns(ctx, bs, pos[0], runOptions{runs: *runs, unsandboxed: *unsandboxed, datasets: *datasets}, stdout)
}

// runOptions are how `d5list run` runs a folder's recipe: the number of
// runs (0: the benchmark's count), and for the bundle's own code whether
// to run it without bubblewrap and the data sets it reads.
type runOptions struct {
	runs        int
	unsandboxed bool
	datasets    string
}

// runRecipe executes a submission folder's recipe exactly as a portal
// runner would, with fresh distinct seeds, into DIR/results.
func runRecipe(ctx context.Context, dir string, progress io.Writer) error {
	bs, err := catalog.Benchmarks()
	if err != nil {
		return err
	}
	return runRecipeRuns(ctx, bs, dir, runOptions{}, progress)
}

// runRecipeRuns is runRecipe as opt says.
func runRecipeRuns(ctx context.Context, bs []d5list.Benchmark, dir string, opt runOptions, progress io.Writer) error {
	manifest, recipe, err := readFolder(dir)
	if err != nil {
		return err
	}
	b, err := catalog.Lookup(bs, manifest.Benchmark)
	if err != nil {
		return fmt.Errorf("submission.json: benchmark: %w", err)
	}
	resultsDir := filepath.Join(dir, "results")
	old, _ := filepath.Glob(filepath.Join(resultsDir, "result_*.txt"))
	for _, f := range old {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(resultsDir, 0o755); err != nil {
		return err
	}
	n := opt.runs
	if n == 0 {
		n = b.Runs
	}
	seeds := distinctSeeds(n)
	if b.Workload == "" {
		versions, err := runEntrypoint(ctx, dir, b, recipe, seeds, opt, progress)
		if err != nil {
			return err
		}
		return recordEnvironment(dir, manifest, b, versions)
	}
	if err := recordEnvironment(dir, manifest, b, nil); err != nil {
		return err
	}
	for i, seed := range seeds {
		fmt.Fprintf(progress, "run %d/%d (seed %d) ...\n", i+1, len(seeds), seed)
		// One run at a time through the runner's own executor, written as
		// soon as it ends, so the runs stay consecutive in time.
		logs, err := runner.Builtin{}.Execute(ctx, d5list.JobSpec{Benchmark: *b, Recipe: recipe, Seeds: []int64{seed}})
		if err != nil {
			return fmt.Errorf("run %d: %w", i, err)
		}
		name := filepath.Join(resultsDir, "result_"+strconv.Itoa(i)+".txt")
		if err := os.WriteFile(name, logs[0].Log, 0o644); err != nil {
			return err
		}
	}
	fmt.Fprintf(progress, "wrote %d result logs to %s\n", len(seeds), resultsDir)
	return nil
}

// recordEnvironment writes into DIR/submission.json what the runs ran
// with: the labels a runner of this machine would report (its CPU, the
// executor kind) and, for the bundle's own code, versions, the framework.*
// labels the runs recorded as a runner records them (asked inside the
// runs' own sandbox, so an image's python3, not this machine's). A re-run
// whose accuracies differ names the labels that differ from its own.
func recordEnvironment(dir string, manifest d5list.Manifest, b *d5list.Benchmark, versions map[string]string) error {
	env := sysinfo.Detect().Labels()
	env[d5list.LabelRuns] = b.ReRunBy()
	for k, v := range versions {
		env[k] = v
	}
	manifest.Environment = env
	return writeJSON(filepath.Join(dir, "submission.json"), manifest)
}

func readFolder(dir string) (d5list.Manifest, d5list.Recipe, error) {
	name := filepath.Join(dir, "submission.json")
	data, err := os.ReadFile(name)
	if err != nil {
		return d5list.Manifest{}, d5list.Recipe{}, err
	}
	manifest, err := bundle.ParseManifest("submission.json", data)
	if err != nil {
		return d5list.Manifest{}, d5list.Recipe{}, err
	}
	for _, rf := range recipeFiles {
		data, err := os.ReadFile(filepath.Join(dir, rf))
		if os.IsNotExist(err) {
			continue
		} else if err != nil {
			return manifest, d5list.Recipe{}, err
		}
		recipe, err := bundle.ParseRecipe(rf, data)
		return manifest, recipe, err
	}
	return manifest, d5list.Recipe{}, fmt.Errorf("%s: no recipe (one of %v)", dir, recipeFiles)
}

// distinctSeeds draws n different positive seeds.
func distinctSeeds(n int) []int64 {
	seen := map[int64]bool{}
	seeds := make([]int64, 0, n)
	for len(seeds) < n {
		var b [8]byte
		_, _ = rand.Read(b[:])
		s := int64(binary.LittleEndian.Uint64(b[:]) % (1 << 31))
		if s == 0 || seen[s] {
			continue
		}
		seen[s] = true
		seeds = append(seeds, s)
	}
	return seeds
}

func packCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("pack", stderr)
	out := fs.String("o", "bundle.tar.gz", "output file")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("usage: d5list pack DIR -o bundle.tar.gz")
	}
	if err := packTo(pos[0], *out); err != nil {
		return err
	}
	fmt.Fprintln(stdout, *out)
	return nil
}

// packTo writes the bundle of dir to path, via a temporary file so that a
// failed pack leaves no half-written bundle behind.
func packTo(dir, path string) error {
	absDir, err1 := filepath.Abs(dir)
	absOut, err2 := filepath.Abs(path)
	if err1 == nil && err2 == nil && strings.HasPrefix(absOut, absDir+string(filepath.Separator)) {
		return fmt.Errorf("pack: the output %s must be outside the submission folder %s", path, dir)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".pack-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := bundle.Pack(dir, tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
