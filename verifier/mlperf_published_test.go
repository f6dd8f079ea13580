package verifier

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// testdata/mlperf holds published MLPerf Training submissions, as
// organisation trees per round (v<round>/<organisation>/systems and
// results), and in recorded/ what MLCommons' own tools said of each:
// testdata/mlperf/README.md says where the files come from and how the
// verdicts were recorded.
const mlperfTestdata = "testdata/mlperf"

// recordedTree is what MLCommons' tools said of one tree: the package
// checker on the whole tree and on each benchmark folder alone, the
// result summarizer's table, and each file's and each system
// description's verdict.
type recordedTree struct {
	Ruleset        string                       `json:"ruleset"`
	PackageChecker recordedBenchmark            `json:"package_checker"`
	Systems        map[string]recordedVerdict   `json:"systems"`
	Benchmarks     map[string]recordedBenchmark `json:"benchmarks"`
	Summary        struct {
		Outcome string `json:"outcome"`
		Stop    string `json:"stop"`
		Rows    []struct {
			System         string              `json:"system"`
			Division       string              `json:"division"`
			Accelerators   int                 `json:"accelerators_count"`
			HostProcessors int                 `json:"host_processors_count"`
			Scores         map[string]*float64 `json:"scores"`
			SystemName     string              `json:"system_name"`
			Availability   string              `json:"availability"`
		} `json:"rows"`
	} `json:"summary"`
}

type recordedVerdict struct {
	Valid    bool     `json:"valid"`
	Stop     string   `json:"stop"`
	Messages []string `json:"messages"`
	Warnings []string `json:"warnings"`
}

// recordedBenchmark: Outcome is accepted, refused or stopped (the tool
// ended with an exception); Errors are its ERROR lines.
type recordedBenchmark struct {
	Outcome     string                     `json:"outcome"`
	Stop        string                     `json:"stop"`
	Errors      []string                   `json:"errors"`
	RCP         *string                    `json:"rcp"`
	RCPPassed   *bool                      `json:"rcp_passed"`
	SeedsFailed bool                       `json:"seeds_failed"`
	Skipped     []string                   `json:"skipped"`
	Minutes     *float64                   `json:"minutes"`
	Files       map[string]recordedVerdict `json:"files"`
}

func loadRecorded(t *testing.T, name string) map[string]recordedTree {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(mlperfTestdata, "recorded", name))
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]recordedTree
	if err := json.Unmarshal(data, &rec); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return rec
}

// benchmarkAccepted is the recorded verdict on the benchmark folder
// itself: the package checker's on the folder alone, less what it said
// of the system description it checked with it (a verdict of its own).
func (b recordedBenchmark) benchmarkAccepted() bool {
	for _, e := range b.Errors {
		if !strings.Contains(e, "System description") {
			return false
		}
	}
	return b.Outcome != "stopped"
}

// sameScore compares scores in minutes to 3 significant digits.
func sameScore(a, b *float64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return strconv.FormatFloat(*a, 'g', 3, 64) == strconv.FormatFloat(*b, 'g', 3, 64) || math.Abs(*a-*b) <= 1e-9*math.Abs(*b)
}

func showMinutes(m *float64) string {
	if m == nil {
		return "none"
	}
	return strconv.FormatFloat(*m, 'g', 6, 64)
}

// checkAgainstRecorded checks tree by today's rules, those of the tools
// the verdicts were recorded with (mlcommons/logging at 7bbf792), and
// compares every verdict and score with what they said of it.
func checkAgainstRecorded(t *testing.T, dir, round string, want recordedTree) *MLPerfTreeReport {
	t.Helper()
	rep, diffs, err := compareWithRecorded(dir, round, RulesToday, want)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diffs {
		t.Error(d)
	}
	return rep
}

// disagreement is one place where d5list and MLCommons' recorded tools
// differ: Subject names it (tree, system <file>, <system>/<benchmark>,
// <system>/<benchmark>/<file>, summary <system>), Detail says how.
type disagreement struct{ Subject, Detail string }

func (d disagreement) String() string { return d.Subject + ": " + d.Detail }

// compareWithRecorded checks the tree in dir by rules (RulesToday or
// RulesRelease) and lists every verdict and score that differs from
// what the tools recorded in want said.
func compareWithRecorded(dir, round, which string, want recordedTree) (*MLPerfTreeReport, []disagreement, error) {
	var diffs []disagreement
	differ := func(subject, format string, args ...any) {
		diffs = append(diffs, disagreement{subject, fmt.Sprintf(format, args...)})
	}
	rep, err := CheckMLPerfTreeRules(dir, round, which)
	if err != nil {
		return nil, nil, err
	}
	if rep.Ruleset != want.Ruleset {
		differ("tree", "ruleset %s, recorded under %s", rep.Ruleset, want.Ruleset)
	}
	if got := rep.Accepted; got != (want.PackageChecker.Outcome == "accepted") {
		differ("tree", "accepted %v; MLCommons' package checker: %s %s %v", got, want.PackageChecker.Outcome, want.PackageChecker.Stop, want.PackageChecker.Errors)
	}
	rules, err := loadMLPerfRoundRules(rep.Round, which)
	if err != nil {
		return nil, nil, err
	}
	for _, s := range rep.Systems {
		subject := "system " + filepath.Base(s.File)
		w, ok := want.Systems[filepath.Base(s.File)]
		if !ok {
			differ(subject, "no recorded verdict")
			continue
		}
		if rules.runs(packageSystems) && s.Accepted != (w.Valid && w.Stop == "") {
			differ(subject, "accepted %v; MLCommons' system description checker: valid %v %s; reasons %v", s.Accepted, w.Valid, w.Stop, s.Reasons)
		}
	}
	var folders []string
	for _, b := range rep.Benchmarks {
		key := b.System + "/" + b.Benchmark
		folders = append(folders, key)
		w, ok := want.Benchmarks[key]
		if !ok {
			differ(key, "no recorded verdict")
			continue
		}
		if b.Accepted != w.benchmarkAccepted() {
			differ(key, "accepted %v, reasons %v; MLCommons' package checker: %s %s %v", b.Accepted, b.Reasons, w.Outcome, w.Stop, w.Errors)
		}
		if !sameScore(b.Minutes, w.Minutes) {
			differ(key, "%s minutes; MLCommons' result summarizer: %s", showMinutes(b.Minutes), showMinutes(w.Minutes))
		}
		for _, r := range b.Runs {
			f, ok := w.Files[r.File]
			if !ok {
				differ(key+"/"+r.File, "no recorded verdict")
				continue
			}
			if r.Compliant != f.Valid {
				differ(key+"/"+r.File, "compliant %v, problems %v; MLCommons' compliance checker: %v %s %v", r.Compliant, r.Problems, f.Valid, f.Stop, f.Messages)
			}
			if len(r.Warnings) != len(f.Warnings) {
				differ(key+"/"+r.File, "warnings %v; MLCommons' compliance checker warns %v", r.Warnings, f.Warnings)
			}
		}
		switch {
		case w.RCP == nil && b.RCP != nil && b.RCP.stop == "" && w.Outcome != "stopped":
			differ(key, "RCP %q; MLCommons' package checker runs no RCP check", b.RCP.Message)
		case w.RCP != nil && b.RCP == nil:
			differ(key, "no RCP check; MLCommons' RCP checker: %s", *w.RCP)
		case w.RCP != nil && (b.RCP.Message != *w.RCP || b.RCP.Passed != *w.RCPPassed):
			differ(key, "RCP %v %q; MLCommons' RCP checker: %v %q", b.RCP.Passed, b.RCP.Message, *w.RCPPassed, *w.RCP)
		}
	}
	for key, w := range want.Benchmarks {
		if !slices.Contains(folders, key) && len(w.Skipped) == 0 {
			differ(key, "not checked; MLCommons' package checker: %s", w.Outcome)
		}
	}
	if want.Summary.Outcome == "stopped" && len(rep.Summary) > 0 {
		differ("summary", "%d rows; MLCommons' result summarizer stops (%s) and publishes none", len(rep.Summary), want.Summary.Stop)
	}
	if want.Summary.Outcome == "ok" {
		rows := map[string]MLPerfSummaryRow{}
		for _, r := range rep.Summary {
			rows[r.System] = r
		}
		for _, w := range want.Summary.Rows {
			subject := "summary " + w.System
			got, ok := rows[w.System]
			if !ok {
				differ(subject, "no row")
				continue
			}
			if got.Accelerators == nil || *got.Accelerators != w.Accelerators || got.Division != w.Division || got.SystemName != w.SystemName {
				differ(subject, "%+v; MLCommons' result summarizer: %+v", got, w)
			}
			for b, m := range w.Scores {
				if !sameScore(got.Scores[b], m) {
					differ(subject, "%s %s minutes; MLCommons' result summarizer: %s", b, showMinutes(got.Scores[b]), showMinutes(m))
				}
			}
		}
	}
	return rep, diffs, nil
}

// TestCheckMLPerfPublishedTrees walks the published submissions of every
// round with published results (0.6 to 5.1; 6.0 and 6.1 are checked on
// round 5.1's trees in TestCheckMLPerfBrokenVariants) and agrees with
// MLCommons' recorded verdicts and scores on each: each file's
// compliance, each system description, each benchmark folder's package
// verdict and RCP message, the scores, and the whole tree's verdict.
func TestCheckMLPerfPublishedTrees(t *testing.T) {
	rounds, _ := filepath.Glob(filepath.Join(mlperfTestdata, "v*"))
	sort.Slice(rounds, func(i, j int) bool { return roundLess(filepath.Base(rounds[i])[1:], filepath.Base(rounds[j])[1:]) })
	var seen []string
	for _, rd := range rounds {
		if st, err := os.Stat(rd); err != nil || !st.IsDir() {
			continue
		}
		round := filepath.Base(rd)[1:]
		seen = append(seen, round)
		rec := loadRecorded(t, filepath.Base(rd)+".json")
		orgs, _ := os.ReadDir(rd)
		for _, org := range orgs {
			t.Run(filepath.Base(rd)+"/"+org.Name(), func(t *testing.T) {
				want, ok := rec[org.Name()]
				if !ok {
					t.Fatal("no recorded verdicts")
				}
				checkAgainstRecorded(t, filepath.Join(rd, org.Name()), round, want)
			})
		}
	}
	if got := strings.Join(seen, " "); got != "0.6 0.7 1.0 1.1 2.0 2.1 3.0 3.1 4.0 4.1 5.0 5.1" {
		t.Errorf("rounds with published trees: %s", got)
	}
}

// mlperfVariant is a published tree broken on purpose (testdata/mlperf/
// variants.json): the same edits the recording applied before asking
// MLCommons' tools, and the round whose rules they applied where it is
// not the tree's own.
type mlperfVariant struct {
	Name    string `json:"name"`
	Tree    string `json:"tree"`
	Ruleset string `json:"ruleset"`
	Edits   []struct {
		Op         string `json:"op"`
		File       string `json:"file"`
		Old        string `json:"old"`
		New        string `json:"new"`
		Count      int    `json:"count"`
		Containing string `json:"containing"`
		Line       string `json:"line"`
		Content    string `json:"content"`
	} `json:"edits"`
}

// apply makes the variant from a copy of its tree in dir.
func (v mlperfVariant) apply(t *testing.T, dir string) {
	t.Helper()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(mlperfTestdata, v.Tree))); err != nil {
		t.Fatal(err)
	}
	for _, e := range v.Edits {
		paths, _ := filepath.Glob(filepath.Join(dir, e.File))
		if e.Op == "write" {
			paths = []string{filepath.Join(dir, e.File)}
		}
		if len(paths) == 0 {
			t.Fatalf("%s: no file %s", v.Name, e.File)
		}
		for _, p := range paths {
			if e.Op == "delete" {
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				continue
			}
			data, _ := os.ReadFile(p)
			text := string(data)
			lines := strings.Split(text, "\n")
			switch e.Op {
			case "write":
				text = e.Content
			case "replace":
				if !strings.Contains(text, e.Old) {
					t.Fatalf("%s: %s has no %q", v.Name, p, e.Old)
				}
				n := e.Count
				if n == 0 {
					n = -1
				}
				text = strings.Replace(text, e.Old, e.New, n)
			case "drop_lines":
				text = strings.Join(slices.DeleteFunc(lines, func(l string) bool { return strings.Contains(l, e.Containing) }), "\n")
			case "insert_after":
				i := slices.IndexFunc(lines, func(l string) bool { return strings.Contains(l, e.Containing) })
				if i < 0 {
					t.Fatalf("%s: %s has no line with %q", v.Name, p, e.Containing)
				}
				text = strings.Join(slices.Insert(lines, i+1, e.Line), "\n")
			default:
				t.Fatalf("%s: unknown edit %s", v.Name, e.Op)
			}
			if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestCheckMLPerfBrokenVariants breaks published trees the ways a
// submission goes wrong (a repeated seed, a file short, a hyperparameter
// out of rule, a wrong submission_benchmark on the first or a middle
// line, a key logged twice with the same value, NaN, a line that is not
// JSON, aborted runs, no or differing batch sizes, a system description
// without a field or with a status of the old list, results without a
// description, the package checker's bypasses with and without their
// newline, a stable_diffusion evaluation without its FID, on which
// MLCommons' checker stops) and checks round 5.1's trees under the rules
// of 6.0 and 6.1, whose results are not published yet; each agrees with
// what MLCommons' tools said of the same edits.
func TestCheckMLPerfBrokenVariants(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(mlperfTestdata, "variants.json"))
	if err != nil {
		t.Fatal(err)
	}
	var variants []mlperfVariant
	if err := json.Unmarshal(data, &variants); err != nil {
		t.Fatal(err)
	}
	rec := loadRecorded(t, "variants.json")
	for _, v := range variants {
		t.Run(v.Name, func(t *testing.T) {
			want, ok := rec[v.Name]
			if !ok {
				t.Fatal("no recorded verdicts")
			}
			dir := filepath.Join(t.TempDir(), filepath.Base(v.Tree))
			v.apply(t, dir)
			round := strings.TrimPrefix(strings.Split(v.Tree, "/")[0], "v")
			if v.Ruleset != "" {
				round = strings.TrimSuffix(v.Ruleset, ".0")
			}
			checkAgainstRecorded(t, dir, round, want)
		})
	}
}
