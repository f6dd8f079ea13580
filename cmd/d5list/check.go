package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/verifier"
	"github.com/deep500/d5list/workloads"
)

func checkCmd(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("check", stderr)
	asJSON := fs.Bool("json", false, "print the result as JSON")
	mlperf := fs.Bool("mlperf", false, "score an MLPerf results folder (result_*.txt) the MLPerf way")
	pos, err := parseInterleaved(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return fmt.Errorf("usage: d5list check DIR|BUNDLE [--json]  or  d5list check --mlperf DIR")
	}
	if *mlperf {
		return checkMLPerf(pos[0], *asJSON, stdout)
	}
	claimed, reasons, err := checkBundle(pos[0])
	if err != nil {
		reasons = d5list.ErrorReasons(err)
		if len(reasons) == 0 {
			return err
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"ok": len(reasons) == 0, "reasons": nonNil(reasons), "claimed": claimed}); err != nil {
			return err
		}
	} else if len(reasons) == 0 {
		printResult(stdout, claimed)
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

// checkBundle applies the portal's upload checks to a folder or archive.
func checkBundle(path string) (*d5list.Result, []d5list.Reason, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, nil, err
	}
	var b *bundle.Bundle
	if st.IsDir() {
		b, err = bundle.ReadDir(path, bundle.DefaultLimits())
	} else {
		b, err = bundle.Open(path, bundle.DefaultLimits())
	}
	if err != nil {
		return nil, nil, err
	}
	bs, err := catalog.Benchmarks()
	if err != nil {
		return nil, nil, err
	}
	bench, err := catalog.Lookup(bs, b.Manifest.Benchmark)
	if err != nil {
		return nil, []d5list.Reason{{Code: "unknown_benchmark", File: b.ManifestFile, Message: d5list.ErrorMessage(err)}}, nil
	}
	claimed, reasons := verifier.Check(b, bench)
	reasons = append(reasons, verifier.Runnable(b, bench, claimed, workloads.PlanRecipe)...)
	return claimed, reasons, nil
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

func checkMLPerf(dir string, asJSON bool, w io.Writer) error {
	rep, err := verifier.CheckMLPerf(dir)
	if err != nil {
		return err
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	fmt.Fprintf(w, "benchmark %s, quality target %.4f\n", rep.Benchmark, rep.Target)
	for _, r := range rep.Runs {
		verdict := "SUCCESS"
		if len(r.Problems) > 0 || !r.Converged {
			verdict = "FAILED"
		}
		fmt.Fprintf(w, "%-14s seed %-8d %-8s %10.3f s  final %.5f  %s\n", r.File, r.Seed, r.Status, r.Seconds, r.FinalAccuracy, verdict)
		for _, p := range r.Problems {
			fmt.Fprintln(w, "    "+formatReason(p))
		}
	}
	for _, p := range rep.Reasons {
		fmt.Fprintln(w, formatReason(p))
	}
	if rep.Score.Valid {
		fmt.Fprintf(w, "score: %.3f s (%.2f min), olympic mean, runs %v dropped\n", rep.Score.Value, rep.Score.Value/60, rep.Score.Dropped)
		return nil
	}
	fmt.Fprintf(w, "score: invalid: %s\n", rep.Score.Note)
	return errSilent
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
