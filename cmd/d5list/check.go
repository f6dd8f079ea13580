package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/verifier"
	"github.com/deep500/d5list/workloads"
)

func checkCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("check", stderr)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	mlperf := fs.Bool("mlperf", false, "check and score an MLPerf Training submission the way MLCommons' tools do: a benchmark's results folder (result_*.txt), or a whole submission tree (systems/ and results/)")
	round := fs.String("round", "", "with --mlperf: the MLPerf Training round (0.6 ... 6.1); default: the folder name's vX.Y- prefix or a parent folder's vX.Y, else the one round that has all the benchmarks; where several do, check refuses and lists them")
	rules := fs.String("rules", verifier.RulesRelease, "with --mlperf: whose rules judge the round: release (the round's own release of mlcommons/logging, which judged its published results) or today (today's mlcommons/logging, which later tightened some)")
	server := fs.String("server", "", serverFlagHelp)
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("usage: d5list check DIR|BUNDLE|RECIPE [--json] [--server URL]  or  d5list check --mlperf [--round X.Y] [--rules release|today] [--json] FOLDER|TREE")
	}
	if *mlperf {
		return checkMLPerf(pos[0], *round, *rules, *asJSON, stdout)
	}
	if isRecipeFile(pos[0]) {
		return checkRecipe(pos[0], *asJSON, stdout, stderr)
	}
	bs, err := benchmarksOf(context.Background(), *server)
	if err != nil {
		return err
	}
	b, claimed, reasons, err := checkBundle(pos[0], bs)
	if err != nil {
		reasons = d5list.ErrorReasons(err)
		if len(reasons) == 0 {
			return err
		}
	}
	var recipe *d5list.Recipe
	var warnings []d5list.Reason
	if b != nil {
		recipe, warnings = &b.Recipe, b.System.Warnings
	}
	if *asJSON {
		if err := printJSON(stdout, map[string]any{"ok": len(reasons) == 0, "reasons": nonNil(reasons), "warnings": nonNil(warnings),
			"recipe": recipe, "claimed": claimed}); err != nil {
			return err
		}
	} else if len(reasons) == 0 {
		for _, w := range warnings {
			fmt.Fprintln(stdout, "warning: "+formatReason(w))
		}
		printRecipe(stdout, recipe)
		printResult(stdout, claimed)
		if b != nil && claimed != nil {
			fmt.Fprintf(stdout, "OK: %s passes every check the portal applies on upload (%s, %d runs)\n%s",
				pos[0], b.Manifest.Benchmark, len(claimed.Runs), submitHint(pos[0], *server))
		}
	} else {
		for _, r := range reasons {
			fmt.Fprintln(stdout, formatReason(r))
		}
	}
	if len(reasons) > 0 {
		fmt.Fprintf(stderr, "%d problem(s) found\n", len(reasons))
		return errSilent
	}
	return nil
}

// submitHint is the command that uploads the checked path, whole: submit
// needs the portal and an API token, which check does not know, so the
// token is the variable submit reads and the portal the one check was
// given, else the one submit would use.
func submitHint(path, server string) string {
	if server == "" {
		server = envOr("D5LIST_SERVER", defaultServer)
	}
	server = strings.TrimRight(server, "/")
	return fmt.Sprintf("Submit it with:\n  d5list submit %s --server %s --token \"$D5LIST_TOKEN\"\n"+
		"with D5LIST_TOKEN set to an API token of your account (log in at %s and make one on %s/account).\n",
		shellWord(path), shellWord(server), server, server)
}

// shellWord quotes s for a POSIX shell where it needs quoting.
func shellWord(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=@+,%", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// checkBundle applies the portal's upload checks to a folder or archive,
// and returns the bundle it read with the claimed result.
func checkBundle(path string, bs []d5list.Benchmark) (*bundle.Bundle, *d5list.Result, []d5list.Reason, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, nil, err
	}
	var b *bundle.Bundle
	if st.IsDir() {
		b, err = bundle.ReadDir(path, bundle.DefaultLimits())
	} else {
		b, err = bundle.Open(path, bundle.DefaultLimits())
	}
	if err != nil {
		return nil, nil, nil, err
	}
	bench, err := catalog.Lookup(bs, b.Manifest.Benchmark)
	if err != nil {
		return b, nil, []d5list.Reason{{Code: "unknown_benchmark", File: b.ManifestFile, Message: d5list.ErrorMessage(err)}}, nil
	}
	claimed, reasons := verifier.Check(b, bench)
	reasons = append(reasons, verifier.Runnable(b, bench, claimed, workloads.PlanRecipe)...)
	return b, claimed, reasons, nil
}

// isRecipeFile tells a recipe checked on its own (recipe.py, a published
// Deep500 recipe such as cifar10_resnet44.py, recipe.yaml or recipe.json)
// from a bundle folder or archive.
func isRecipeFile(path string) bool {
	if st, err := os.Stat(path); err != nil || st.IsDir() {
		return false
	}
	switch base := filepath.Base(path); {
	case filepath.Ext(base) == ".py", base == "recipe.yaml", base == "recipe.yml", base == "recipe.json":
		return true
	}
	return false
}

// checkRecipe reads one recipe file as the portal would, without running
// it, and prints the FIXED, MUTABLE and METRICS it read.
func checkRecipe(path string, asJSON bool, stdout, stderr io.Writer) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	name := filepath.Base(path)
	if filepath.Ext(name) == ".py" {
		name = "recipe.py" // a published recipe is named for what it trains
	}
	recipe, err := bundle.ParseRecipe(name, data)
	reasons := d5list.ErrorReasons(err)
	if err != nil && len(reasons) == 0 {
		return err
	}
	for i := range reasons {
		reasons[i].File = path
	}
	if asJSON {
		var r *d5list.Recipe
		if err == nil {
			r = &recipe
		}
		if err := printJSON(stdout, map[string]any{"ok": err == nil, "reasons": nonNil(reasons), "recipe": r}); err != nil {
			return err
		}
	} else if err == nil {
		printRecipe(stdout, &recipe)
	}
	if err != nil {
		if !asJSON {
			for _, r := range reasons {
				fmt.Fprintln(stdout, formatReason(r))
			}
		}
		fmt.Fprintf(stderr, "%d problem(s) found\n", len(reasons))
		return errSilent
	}
	return nil
}

// printRecipe prints a recipe's sections the way Deep500 would receive
// them, in Python notation with sorted keys.
func printRecipe(w io.Writer, r *d5list.Recipe) {
	if r == nil {
		return
	}
	section := func(name string, m map[string]any) {
		fmt.Fprintln(w, name)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			fmt.Fprintf(w, "  %s: %s\n", k, pyValue(m[k]))
		}
	}
	section("FIXED", r.Fixed)
	section("MUTABLE", r.Mutable)
	fmt.Fprintln(w, "METRICS")
	for _, m := range r.Metrics {
		call := m.Name
		if len(m.Args) > 0 {
			call += "(" + pyKwargs(m.Args) + ")"
		}
		switch {
		case m.Acceptable == nil:
			fmt.Fprintf(w, "  %s, reported\n", call)
		case m.Direction == d5list.LowerIsBetter:
			fmt.Fprintf(w, "  %s <= %s\n", call, pyValue(*m.Acceptable))
		default:
			fmt.Fprintf(w, "  %s >= %s\n", call, pyValue(*m.Acceptable))
		}
	}
	if r.Entrypoint != "" {
		fmt.Fprintf(w, "ENTRYPOINT %s\n", r.Entrypoint)
	}
}

// pyValue writes a recipe value in Python notation.
func pyValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return strconv.Quote(x)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = pyValue(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		parts := make([]string, 0, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			parts = append(parts, strconv.Quote(k)+": "+pyValue(x[k]))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case d5list.Symbol:
		if !x.Call {
			return x.Name
		}
		args := make([]string, 0, len(x.Args)+1)
		for _, a := range x.Args {
			args = append(args, pyValue(a))
		}
		if len(x.Kwargs) > 0 {
			args = append(args, pyKwargs(x.Kwargs))
		}
		return x.Name + "(" + strings.Join(args, ", ") + ")"
	}
	return fmt.Sprint(v)
}

func pyKwargs(m map[string]any) string {
	parts := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+pyValue(m[k]))
	}
	return strings.Join(parts, ", ")
}

func formatReason(r d5list.Reason) string {
	loc := r.File
	if loc != "" && r.Line > 0 {
		loc = fmt.Sprintf("%s:%d", r.File, r.Line)
	}
	if loc == "" {
		return fmt.Sprintf("%s: %s", r.Code, r.Message)
	}
	return fmt.Sprintf("%s: %s: %s", loc, r.Code, r.Message)
}

func printResult(w io.Writer, res *d5list.Result) {
	if cols := runMetricColumns(res); len(cols) > 0 {
		// Operator and inference runs have no curve: show what they logged.
		fmt.Fprintf(w, "%-4s %-12s %-9s %10s", "run", "seed", "status", "time (s)")
		for _, c := range cols {
			fmt.Fprintf(w, " %16s", c)
		}
		fmt.Fprintln(w)
		for _, r := range res.Runs {
			fmt.Fprintf(w, "%-4d %-12d %-9s %10.3f", r.Index, r.Seed, r.Status, r.TimeToTrain)
			for _, c := range cols {
				v, _ := r.Metric(c)
				fmt.Fprintf(w, " %16.6g", v)
			}
			fmt.Fprintln(w)
		}
	} else {
		// Training runs that log more (Level 3: scaling efficiency, bytes
		// communicated) show it after the curve's summary.
		extra := extraColumns(res)
		fmt.Fprintf(w, "%-4s %-12s %-9s %12s %10s %10s", "run", "seed", "status", "time (s)", "epochs", "final acc")
		for _, c := range extra {
			fmt.Fprintf(w, " %19s", c)
		}
		fmt.Fprintln(w)
		for _, r := range res.Runs {
			fmt.Fprintf(w, "%-4d %-12d %-9s %12.3f %10.0f %10.4f", r.Index, r.Seed, r.Status, r.TimeToTrain, r.EpochsToTarget, r.FinalAccuracy)
			for _, c := range extra {
				fmt.Fprintf(w, " %19.6g", r.Extra[c])
			}
			fmt.Fprintln(w)
		}
	}
	s := res.Score
	if s.Valid {
		fmt.Fprintf(w, "score (%s, olympic mean, runs %v dropped): %.3f\n", s.Metric, s.Dropped, s.Value)
	} else {
		fmt.Fprintf(w, "score (%s): invalid: %s\n", s.Metric, s.Note)
	}
}

func nonNil(r []d5list.Reason) []d5list.Reason {
	if r == nil {
		return []d5list.Reason{}
	}
	return r
}

// runMetricColumns are the per-run metrics of a result without evaluation
// curves (throughput and the Extra values), sorted; none for a training
// result.
// extraColumns lists the Extra metrics of any run, sorted.
func extraColumns(res *d5list.Result) []string {
	set := map[string]bool{}
	for _, r := range res.Runs {
		for k := range r.Extra {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}

func runMetricColumns(res *d5list.Result) []string {
	set := map[string]bool{}
	for _, r := range res.Runs {
		if len(r.Evals) > 0 {
			return nil
		}
		if r.Throughput > 0 {
			set[d5list.MetricThroughput] = true
		}
		for k := range r.Extra {
			set[k] = true
		}
	}
	return slices.Sorted(maps.Keys(set))
}
