package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/verifier"
)

// checkMLPerf checks an MLPerf Training submission as MLCommons' tools
// would: a whole submission tree (an organisation's systems/ and
// results/) or one benchmark's results folder, by the rules of the round's
// own release of mlcommons/logging, or today's (rules). With asJSON the answer on
// stdout is always JSON: the report, or {"error": ...} where the path
// cannot be read as either.
func checkMLPerf(path, round, rules string, asJSON bool, w io.Writer) error {
	rep, accepted, err := verifier.CheckMLPerfPathLimits(path, round, rules, verifier.LocalReadLimits)
	if verifier.RoundUnknown(err) {
		var de *d5list.Error
		if errors.As(err, &de) {
			err = &d5list.Error{Code: de.Code, Message: de.Message + " with --round X.Y", Reasons: de.Reasons}
		}
	}
	switch {
	case err != nil && asJSON:
		if jerr := printJSON(w, map[string]any{"error": cliError(err)}); jerr != nil {
			return jerr
		}
		return err
	case err != nil:
		return err
	case asJSON:
		if err := printJSON(w, rep); err != nil {
			return err
		}
	default:
		switch r := rep.(type) {
		case *verifier.MLPerfTreeReport:
			printMLPerfTree(w, r)
		case *verifier.MLPerfReport:
			printMLPerfFolder(w, r, "")
			if r.Accepted {
				fmt.Fprintln(w, "verdict: accepted")
			} else {
				fmt.Fprintln(w, "verdict: MLPerf's package checker would refuse this folder")
			}
		}
	}
	if !accepted {
		return errSilent
	}
	return nil
}

// printJSON writes v as indented JSON.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// cliError is an error as the JSON answer shows it, in the shape the
// portal's API gives its errors. The command line runs on the user's own
// files, so an error that is not one of d5list's says what it is.
func cliError(err error) map[string]any {
	msg := err.Error()
	var de *d5list.Error
	if errors.As(err, &de) {
		msg = de.Message
	}
	return map[string]any{"code": d5list.ErrorCode(err), "message": msg, "reasons": nonNil(d5list.ErrorReasons(err))}
}

// printMLPerfFolder prints one benchmark folder's report, each line
// after indent.
func printMLPerfFolder(w io.Writer, rep *verifier.MLPerfReport, indent string) {
	title := fmt.Sprintf("MLPerf Training %s, benchmark %s (rules: %s)", rep.Round, rep.Benchmark, rep.Rules)
	if rep.Folder != "" {
		title = rep.Folder
	}
	fmt.Fprintf(w, "%s%s, %s division, quality target %s\n", indent, title, rep.Division, rep.Quality)
	for _, r := range rep.Runs {
		verdict := "SUCCESS"
		if !r.Compliant {
			verdict = "FAILED"
		}
		fmt.Fprintf(w, "%s%-14s seed %-12d %-8s %10.3f s  final %-9.5g %s\n", indent, r.File, r.Seed, r.Status, r.Seconds, r.FinalAccuracy, verdict)
		for _, p := range r.Problems {
			fmt.Fprintln(w, indent+"    "+formatReason(p))
		}
	}
	if rep.RCP != nil {
		verdict := "passed"
		if !rep.RCP.Passed {
			verdict = "failed"
		}
		fmt.Fprintf(w, "%sRCP test %s: %s\n", indent, verdict, rep.RCP.Message)
	}
	for _, p := range rep.Reasons {
		fmt.Fprintln(w, indent+formatReason(p))
	}
	for _, p := range rep.Warnings {
		fmt.Fprintln(w, indent+"warning: "+formatReason(p))
	}
	if rep.Minutes != nil {
		scaling := ""
		if rep.ScalingFactor != 1 {
			scaling = fmt.Sprintf(" x RCP scaling %.4f", rep.ScalingFactor)
		}
		refused := ""
		if !rep.Accepted {
			refused = "; the result summarizer's, of a refused folder"
		}
		fmt.Fprintf(w, "%sscore: %.3f minutes (olympic mean %.3f s of the compliant runs, runs %v dropped%s%s)\n", indent, *rep.Minutes, rep.Score.Value, rep.Score.Dropped, scaling, refused)
	} else {
		fmt.Fprintf(w, "%sscore: invalid: %s\n", indent, rep.Score.Note)
	}
}

// printMLPerfTree prints a submission tree's report: each system
// description, each benchmark folder, and the summary table in minutes.
func printMLPerfTree(w io.Writer, rep *verifier.MLPerfTreeReport) {
	fmt.Fprintf(w, "MLPerf Training %s (rules %s), submission tree %s: %d system description(s), %d benchmark folder(s)\njudged by the rules of %s\n",
		rep.Round, rep.Ruleset, rep.Organization, len(rep.Systems), len(rep.Benchmarks), rep.Rules)
	for _, s := range rep.Systems {
		verdict := "accepted"
		if !s.Accepted {
			verdict = "refused"
		}
		fmt.Fprintf(w, "%s: %s (%s, %s division, %s)\n", s.File, verdict, s.SystemName, s.Division, s.Status)
		for _, p := range s.Reasons {
			fmt.Fprintln(w, "  "+formatReason(p))
		}
		for _, p := range s.Warnings {
			fmt.Fprintln(w, "  warning: "+formatReason(p))
		}
	}
	for _, b := range rep.Benchmarks {
		fmt.Fprintln(w)
		printMLPerfFolder(w, b, "")
		verdict := "accepted"
		if !b.Accepted {
			verdict = "refused"
		}
		fmt.Fprintf(w, "%s: %s\n", b.Folder, verdict)
	}
	for _, p := range rep.Reasons {
		fmt.Fprintln(w, formatReason(p))
	}
	for _, p := range rep.Warnings {
		fmt.Fprintln(w, "warning: "+formatReason(p))
	}
	fmt.Fprintln(w)
	printMLPerfSummary(w, rep)
	if rep.Accepted {
		fmt.Fprintln(w, "verdict: accepted")
	} else {
		fmt.Fprintln(w, "verdict: MLPerf's package checker would refuse this tree")
	}
}

// printMLPerfSummary prints the result summarizer's table: a row per
// system, a column per benchmark the tree has.
func printMLPerfSummary(w io.Writer, rep *verifier.MLPerfTreeReport) {
	if len(rep.Summary) == 0 {
		fmt.Fprintln(w, "summary: none, as MLCommons' result summarizer publishes none for this tree")
		return
	}
	var cols []string
	for _, b := range rep.Benchmarks {
		if !slices.Contains(cols, b.Benchmark) {
			cols = append(cols, b.Benchmark)
		}
	}
	fmt.Fprintf(w, "summary, minutes:\n%-40s %-8s %-12s", "system", "division", "accelerators")
	for _, c := range cols {
		fmt.Fprintf(w, " %16s", c)
	}
	fmt.Fprintln(w)
	marked := false
	for _, row := range rep.Summary {
		acc := "-"
		if row.Accelerators != nil {
			acc = fmt.Sprint(*row.Accelerators)
		}
		fmt.Fprintf(w, "%-40s %-8s %-12s", row.SystemName, row.Division, acc)
		for _, c := range cols {
			cell := "-"
			if m := row.Scores[c]; m != nil {
				cell = fmt.Sprintf("%.3f", *m)
			}
			if slices.Contains(row.Refused, c) {
				cell, marked = cell+" (refused)", true
			}
			fmt.Fprintf(w, " %16s", cell)
		}
		fmt.Fprintln(w)
	}
	if marked {
		fmt.Fprintln(w, "(refused): the package checker refuses the folder; the score is the one MLCommons' result summarizer computes all the same, not a compliant result")
	}
}
