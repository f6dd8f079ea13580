package main

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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
	submitter := fs.String("submitter", "", "submitter (organisation) name; default: your account's organisation on --server, read with --token")
	server := fs.String("server", "", serverFlagHelp)
	token := fs.String("token", os.Getenv("D5LIST_TOKEN"), "API token (or D5LIST_TOKEN): with --server, your account's organisation is the submitter")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return fmt.Errorf("usage: d5list init BENCHMARK DIR [--server URL [--token T]] [--submitter NAME]")
	}
	ctx := context.Background()
	bs, err := benchmarksOf(ctx, *server)
	if err != nil {
		return err
	}
	if *submitter == "" && *server != "" && *token != "" {
		account, err := accountOf(ctx, *server, *token)
		if err != nil {
			return err
		}
		*submitter = account.Organisation
		if *submitter == "" {
			*submitter = fillInNewOrganisation
		}
	}
	left, err := writeStarter(bs, pos[0], pos[1], *submitter)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: edit recipe.yaml (mutable part), then run `d5list run %s`\n", pos[1], pos[1])
	for _, field := range left {
		fmt.Fprintf(stdout, "  fill in %s: nothing here can know it\n", field)
	}
	return nil
}

// Placeholders of the starter files, for what nothing on this machine can
// know; `d5list check` and the portal refuse a bundle that still has one.
const (
	fillInSubmitter       = bundle.Placeholder + ": your organisation, as your account on the portal names it (init --server URL --token T writes it)"
	fillInNewOrganisation = bundle.Placeholder + ": your organisation (your account names none yet: your first upload names it)"
	fillInFramework       = bundle.Placeholder + ": the framework your code runs on and its version (d5list run writes the one it finds)"
)

// writeStarter writes a submission folder for benchmark id into dir:
// the recipe with the benchmark's fixed part and default mutable part,
// the cover sheet, and a system description of this machine, from the
// probe a runner labels itself with. Where nothing can be known (no
// submitter given, the framework of code yet to be written) it writes a
// bundle.Placeholder, and it returns the fields that hold one.
func writeStarter(bs []d5list.Benchmark, id, dir, submitter string) ([]string, error) {
	b, err := catalog.Lookup(bs, id)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, "results"), 0o755); err != nil {
		return nil, err
	}
	recipe := struct {
		Fixed   map[string]any      `yaml:"fixed"`
		Mutable map[string]any      `yaml:"mutable"`
		Metrics []d5list.MetricSpec `yaml:"metrics"`
	}{b.Division.Fixed, b.Division.Mutable, starterMetrics(b)}
	y, err := yaml.Marshal(recipe)
	if err != nil {
		return nil, err
	}
	header := "# Deep500 recipe for " + b.ID + ". In the closed division `fixed` must stay as it is;\n# the keys of `mutable` may change.\n"
	if err := os.WriteFile(filepath.Join(dir, "recipe.yaml"), append([]byte(header), y...), 0o644); err != nil {
		return nil, err
	}
	if submitter == "" {
		submitter = fillInSubmitter
	}
	framework := fillInFramework
	if b.Workload != "" {
		framework = builtinFramework
	}
	hostname, _ := os.Hostname()
	systemName := "cpu-" + hostname
	manifest := d5list.Manifest{
		Format: d5list.ManifestFormat, Benchmark: b.ID, Division: d5list.DivisionClosed,
		Availability: d5list.AvailabilityAvailable, Submitter: submitter, SystemName: systemName,
		Framework: framework,
	}
	system := machineFields(sysinfo.Detect())
	maps.Copy(system, map[string]string{
		"submitter":                submitter,
		"division":                 d5list.DivisionClosed,
		"status":                   "available",
		"system_name":              systemName,
		"number_of_nodes":          "1",
		"host_processors_per_node": "1",
		"framework":                framework,
	})
	if err := writeJSON(filepath.Join(dir, "submission.json"), manifest); err != nil {
		return nil, err
	}
	if err := writeJSON(filepath.Join(dir, "system.json"), system); err != nil {
		return nil, err
	}
	var left []string
	for _, f := range []struct{ name, value string }{{"submitter (submission.json, system.json)", submitter}, {"framework (submission.json, system.json)", framework}} {
		if bundle.IsPlaceholder(f.value) {
			left = append(left, f.name)
		}
	}
	return left, nil
}

// builtinFramework is the framework of the benchmarks the runner's own
// workloads re-run.
const builtinFramework = "d5list-builtin"

// machineFields are the system.json fields that this machine's probe
// (sysinfo.Detect, which a runner's labels come from) knows: its
// processor, cores, memory and operating system, and its accelerators,
// none where it has no GPU.
func machineFields(info sysinfo.Info) map[string]string {
	return map[string]string{
		"host_processor_model_name": info.CPUModel,
		"host_processor_core_count": strconv.Itoa(info.Cores),
		"host_memory_capacity":      strconv.FormatFloat(info.MemoryGiB, 'f', -1, 64) + " GB",
		"accelerators_per_node":     strconv.Itoa(info.GPUCount),
		"accelerator_model_name":    info.GPUModel,
		"operating_system":          info.OS,
	}
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
	var software sandboxSoftware
	software.register(fs)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("usage: d5list run [--runs N] [--allow-unsandboxed] [--datasets DIR] [--sandbox-ro DIR --sandbox-path DIR] [--server URL] DIR")
	}
	if err := software.check(); err != nil {
		return err
	}
	if *runs < 0 {
		return fmt.Errorf("--runs: %d is negative", *runs)
	}
	bs, err := benchmarksOf(ctx, *server)
	if err != nil {
		return err
	}
	return runRecipeRuns(ctx, bs, pos[0], runOptions{runs: *runs, unsandboxed: *unsandboxed, datasets: *datasets, software: software}, stdout)
}

// runOptions are how `d5list run` runs a folder's recipe: the number of
// runs (0: the benchmark's count), and for the bundle's own code whether
// to run it without bubblewrap, the data sets it reads and the software
// outside /usr it needs.
type runOptions struct {
	runs        int
	unsandboxed bool
	datasets    string
	software    sandboxSoftware
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
		return recordEnvironment(dir, manifest, b, versions, progress)
	}
	if err := recordEnvironment(dir, manifest, b, nil, progress); err != nil {
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
// What the same probe knows it also writes where submission.json and
// system.json still hold a bundle.Placeholder, saying so on progress.
func recordEnvironment(dir string, manifest d5list.Manifest, b *d5list.Benchmark, versions map[string]string, progress io.Writer) error {
	info := sysinfo.Detect()
	env := info.Labels()
	env[d5list.LabelRuns] = b.ReRunBy()
	for k, v := range versions {
		env[k] = v
	}
	manifest.Environment = env
	known := machineFields(info)
	if info.GPUCount == 0 {
		// No GPU here says nothing of the machine the folder describes.
		delete(known, "accelerators_per_node")
		delete(known, "accelerator_model_name")
	}
	if fw := frameworkOf(b, versions); fw != "" {
		known["framework"] = fw
		if bundle.IsPlaceholder(manifest.Framework) {
			manifest.Framework = fw
			fmt.Fprintf(progress, "wrote framework %q into submission.json\n", fw)
		}
	}
	if err := writeJSON(filepath.Join(dir, "submission.json"), manifest); err != nil {
		return err
	}
	return fillSystem(filepath.Join(dir, bundle.SystemName), known, progress)
}

// frameworkOf names what the runs computed with: the builtin workloads,
// or the first framework the runs' sandbox has of those it knows, with
// its version; "" when none.
func frameworkOf(b *d5list.Benchmark, versions map[string]string) string {
	if b.Workload != "" {
		return builtinFramework
	}
	for _, f := range []struct{ label, name string }{{"framework.torch", "PyTorch"}, {"framework.tensorflow", "TensorFlow"}, {"framework.jax", "JAX"}} {
		if v := versions[f.label]; v != "" {
			return f.name + " " + v
		}
	}
	return ""
}

// fillSystem writes known values into the placeholders of the system
// description at path, leaving the rest of the file as it is.
func fillSystem(path string, known map[string]string, progress io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, filled, err := bundle.FillPlaceholders(filepath.Base(path), data, known)
	if err != nil || len(filled) == 0 {
		return err
	}
	for _, f := range filled {
		fmt.Fprintf(progress, "wrote %s %q into %s, from this machine\n", f, known[f], filepath.Base(path))
	}
	return os.WriteFile(path, out, 0o644)
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
