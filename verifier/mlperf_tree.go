package verifier

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// MLPerfTreeReport is the verdict on a whole submission tree, the unit
// MLCommons' package checker takes: an organisation's folder with
// systems/<system>.json and results/<system>/<benchmark>/result_*.txt.
// Accepted is the package checker's verdict on the whole; each system
// description and each benchmark folder has its own, and Summary is the
// result summarizer's table.
type MLPerfTreeReport struct {
	Round   string `json:"round"`
	Ruleset string `json:"ruleset"`
	// Rules names the rules that judged the tree: the round's own release
	// of mlcommons/logging, or today's.
	Rules        string               `json:"rules"`
	Organization string               `json:"organization"`
	Accepted     bool                 `json:"accepted"`
	Systems      []MLPerfSystemReport `json:"systems"`
	Benchmarks   []*MLPerfReport      `json:"benchmarks"`
	Summary      []MLPerfSummaryRow   `json:"summary"`
	// Reasons are what refuses the tree beyond its systems and benchmark
	// folders; Warnings what the package checker only warns of (a
	// benchmark folder it skips).
	Reasons  []d5list.Reason `json:"reasons"`
	Warnings []d5list.Reason `json:"warnings"`
}

// MLPerfSystemReport is the system description checker's verdict on one
// systems/*.json.
type MLPerfSystemReport struct {
	File       string          `json:"file"`
	System     string          `json:"system"`
	SystemName string          `json:"system_name"`
	Submitter  string          `json:"submitter"`
	Division   string          `json:"division"`
	Status     string          `json:"status"`
	Accepted   bool            `json:"accepted"`
	Reasons    []d5list.Reason `json:"reasons"`
	Warnings   []d5list.Reason `json:"warnings"`
}

// MLPerfSummaryRow is one row of the result summarizer's table: a system
// and its score in minutes on each benchmark of the round (null where it
// has none).
type MLPerfSummaryRow struct {
	System                 string              `json:"system"`
	Division               string              `json:"division"`
	Availability           string              `json:"availability"`
	Submitter              string              `json:"submitter"`
	SystemName             string              `json:"system_name"`
	Nodes                  string              `json:"number_of_nodes"`
	HostProcessorModelName string              `json:"host_processor_model_name"`
	HostProcessors         *int                `json:"host_processors_count"`
	AcceleratorModelName   string              `json:"accelerator_model_name"`
	Accelerators           *int                `json:"accelerators_count"`
	Framework              string              `json:"framework"`
	Scores                 map[string]*float64 `json:"scores"`
	// Refused names the benchmarks whose folder the package checker
	// refuses: their scores are what MLCommons' result summarizer
	// computes (it does not check compliance), not compliant results.
	Refused []string `json:"refused"`
}

// IsMLPerfTree says whether dir is a submission tree (it has systems/ and
// results/), as the result summarizer tells an organisation's folder.
func IsMLPerfTree(dir string) bool {
	for _, sub := range []string{"systems", "results"} {
		if st, err := os.Stat(filepath.Join(dir, sub)); err != nil || !st.IsDir() {
			return false
		}
	}
	return true
}

// CheckMLPerfTree checks a submission tree as MLCommons' package checker
// and result summarizer do, for a round ("5.0"; "" to infer it from the
// folder's vX.Y- prefix or its parent's vX.Y, else the only round that
// has every benchmark folder of the tree; where several do, it refuses
// to guess). What cannot be read at all (no systems/ or
// results/, an unknown round) is an error; everything else is a verdict.
func CheckMLPerfTree(dir, round string) (*MLPerfTreeReport, error) {
	return CheckMLPerfTreeRules(dir, round, RulesRelease)
}

// CheckMLPerfTreeRules is CheckMLPerfTree judged by rules: RulesRelease
// (the round's own release of mlcommons/logging; also "") or RulesToday.
func CheckMLPerfTreeRules(dir, round, which string) (*MLPerfTreeReport, error) {
	return checkMLPerfTree(dir, round, which, UploadReadLimits())
}

func checkMLPerfTree(dir, round, which string, lim ReadLimits) (*MLPerfTreeReport, error) {
	if err := validRules(which); err != nil {
		return nil, err
	}
	if !IsMLPerfTree(dir) {
		return nil, d5list.Errorf(d5list.EINVALID, "%s: not a submission tree: an organisation's folder has systems/ and results/", dir)
	}
	systemDirs, err := subfolders(filepath.Join(dir, "results"))
	if err != nil {
		return nil, err
	}
	rules, err := namedRound(dir, round, which)
	if err == nil && rules == nil {
		rules, err = roundOfTree(dir, systemDirs)
	}
	if err == nil {
		rules, err = rules.as(which)
	}
	if err != nil {
		return nil, err
	}
	rep := &MLPerfTreeReport{Round: rules.Round, Ruleset: rules.Ruleset, Rules: rules.Judge, Organization: filepath.Base(filepath.Clean(dir)),
		Systems: []MLPerfSystemReport{}, Benchmarks: []*MLPerfReport{}, Summary: []MLPerfSummaryRow{},
		Reasons: []d5list.Reason{}, Warnings: []d5list.Reason{}}
	descs := map[string]bundle.System{}
	sysFiles, _ := filepath.Glob(filepath.Join(dir, "systems", "*.json"))
	sort.Strings(sysFiles)
	for _, path := range sysFiles {
		sr, sys := rules.checkSystemFile(dir, path)
		descs[sr.System] = sys
		rep.Systems = append(rep.Systems, sr)
	}
	for _, system := range systemDirs {
		rep.checkSystemResults(rules, dir, system, lim)
	}
	rep.summarize(rules, dir, systemDirs)
	rep.Accepted = len(rep.Reasons) == 0
	for _, s := range rep.Systems {
		rep.Accepted = rep.Accepted && s.Accepted
	}
	for _, b := range rep.Benchmarks {
		rep.Accepted = rep.Accepted && b.Accepted
	}
	return rep, nil
}

// roundOfTree is the only round that has every benchmark folder of the
// tree; where several or none do, the round cannot be told.
func roundOfTree(dir string, systems []string) (*MLPerfRound, error) {
	var benchmarks []string
	for _, s := range systems {
		bs, err := subfolders(filepath.Join(dir, "results", s))
		if err != nil {
			return nil, err
		}
		for _, b := range bs {
			if !slices.Contains(benchmarks, b) {
				benchmarks = append(benchmarks, b)
			}
		}
	}
	sort.Strings(benchmarks)
	return roundOfBenchmarks(dir, benchmarks)
}

func subfolders(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, d5list.Errorf(d5list.EINVALID, "%s: %v", dir, err)
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// checkSystemFile is the system description checker on one file, where
// the round runs it; a file that is not JSON refuses the tree either way,
// since the package checker reads each system's division from it.
func (r *MLPerfRound) checkSystemFile(dir, path string) (MLPerfSystemReport, bundle.System) {
	rel, _ := filepath.Rel(dir, path)
	sr := MLPerfSystemReport{File: rel, System: strings.TrimSuffix(filepath.Base(path), ".json"), Reasons: []d5list.Reason{}, Warnings: []d5list.Reason{}}
	data, err := os.ReadFile(path)
	if err != nil {
		sr.Reasons = append(sr.Reasons, d5list.Reason{Code: bundle.CodeSystem, File: rel, Message: "cannot be read: " + ioReason(err)})
		return sr, bundle.System{}
	}
	sys, err := bundle.CheckMLPerfSystem(rel, data, r.statusesFor(data))
	sr.SystemName, sr.Submitter, sr.Division, sr.Status = sys.SystemName, sys.Submitter, sys.Division, sys.Status
	sr.Warnings = append(sr.Warnings, sys.Warnings...)
	for _, reason := range d5list.ErrorReasons(err) {
		if r.runs(packageSystems) || !strings.HasPrefix(reason.Message, "Missing field") && !strings.HasPrefix(reason.Message, "Field status") {
			sr.Reasons = append(sr.Reasons, reason)
		} else {
			sr.Warnings = append(sr.Warnings, reason) // the round does not check descriptions
		}
	}
	if err != nil && len(d5list.ErrorReasons(err)) == 0 {
		sr.Reasons = append(sr.Reasons, d5list.Reason{Code: bundle.CodeSystem, File: rel, Message: err.Error()})
	}
	sr.Accepted = len(sr.Reasons) == 0
	return sr, sys
}

// checkSystemResults checks each benchmark folder of results/<system>.
func (rep *MLPerfTreeReport) checkSystemResults(r *MLPerfRound, dir, system string, lim ReadLimits) {
	sysDir := filepath.Join(dir, "results", system)
	benchmarks, err := subfolders(sysDir)
	if err != nil {
		rep.Reasons = append(rep.Reasons, d5list.Reason{Code: CodeMLPerfStops, File: filepath.Join("results", system), Message: d5list.ErrorMessage(err)})
		return
	}
	var sysParams packageParams
	if data, err := os.ReadFile(filepath.Join(sysDir, packageParamsFile)); err == nil {
		sysParams = readPackageParams(filepath.Join("results", system, packageParamsFile), data)
	}
	division, divErr := systemDivision(dir, system)
	for _, b := range benchmarks {
		rel := filepath.Join("results", system, b)
		if _, ok := r.Benchmarks[b]; !ok {
			rep.Warnings = append(rep.Warnings, d5list.Reason{Code: CodeMLPerfSkipped, File: rel,
				Message: fmt.Sprintf("Skipping benchmark: %s (not a benchmark of MLPerf Training %s: %s)", b, r.Round, strings.Join(r.BenchmarkNames(), ", "))})
			continue
		}
		f := mlperfFolder{dir: filepath.Join(dir, rel), benchmark: b, system: system, rel: rel, division: division, params: sysParams, limits: lim}
		if data, err := os.ReadFile(filepath.Join(f.dir, packageParamsFile)); err == nil {
			f.params = f.params.or(readPackageParams(filepath.Join(rel, packageParamsFile), data))
		}
		rep.Benchmarks = append(rep.Benchmarks, r.checkTreeFolder(f, divErr))
	}
}

// checkTreeFolder reads and checks one benchmark folder of a tree; what
// stops MLCommons' package checker before the folder's checks (a system
// without its description) refuses the folder.
func (r *MLPerfRound) checkTreeFolder(f mlperfFolder, divErr string) *MLPerfReport {
	stopped := func(code, msg string) *MLPerfReport {
		return &MLPerfReport{Round: r.Round, Ruleset: r.Ruleset, Rules: r.Judge, Benchmark: f.benchmark, System: f.system, Folder: f.rel,
			Division: f.division, Quality: r.quality(f.benchmark, f.division), Runs: []MLPerfRun{}, ScalingFactor: 1,
			Score:   invalidScore(msg),
			Reasons: []d5list.Reason{{Code: code, File: f.rel, Message: msg}}, Warnings: []d5list.Reason{}}
	}
	if divErr != "" {
		return stopped(CodeMLPerfStops, divErr)
	}
	files, err := mlperfResultFiles(f.dir)
	if err != nil {
		return stopped(CodeMLPerfStops, err.Error())
	}
	if f.logs, err = readMLPerfLogs(f.rel, files, r.Format, f.limits); err != nil {
		code, msg := d5list.ErrorCode(err), err.Error()
		if de := (*d5list.Error)(nil); errors.As(err, &de) {
			msg = de.Message
		}
		return stopped(code, msg)
	}
	rep := r.checkFolder(f)
	if extra := unknownFiles(f.dir); len(extra) > 0 {
		rep.Warnings = append(rep.Warnings, d5list.Reason{Code: CodeMLPerfExtraFile, File: f.rel,
			Message: fmt.Sprintf("Unknown files in result directory: %s (the package checker reads result_*.txt and %s)", strings.Join(extra, ", "), packageParamsFile)})
	}
	return rep
}

// systemDivision is the division the package checker reads from
// systems/<system>.json for the system's results; where it cannot read
// one it stops, which the second result says.
func systemDivision(dir, system string) (string, string) {
	rel := filepath.Join("systems", system+".json")
	data, err := os.ReadFile(filepath.Join(dir, rel))
	if err != nil {
		return "", fmt.Sprintf("%s: no system description for results/%s, which MLCommons' package checker reads and stops without", rel, system)
	}
	var desc map[string]any
	if err := json.Unmarshal(data, &desc); err != nil {
		return "", fmt.Sprintf("%s: not JSON (%v); MLCommons' package checker stops reading it", rel, err)
	}
	div, ok := desc["division"]
	if !ok {
		return "", fmt.Sprintf("%s: no division, which MLCommons' package checker reads and stops without", rel)
	}
	return pyStr(div), ""
}

func unknownFiles(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		n := e.Name()
		if n == packageParamsFile || strings.HasPrefix(n, "result_") && strings.HasSuffix(n, ".txt") {
			continue
		}
		out = append(out, n)
	}
	return out
}

// summarizerFields are the system description's fields MLCommons' result
// summarizer reads for its table.
var summarizerFields = []string{"division", "status", "submitter", "system_name", "host_processor_model_name", "number_of_nodes",
	"host_processor_core_count", "host_processors_per_node", "accelerator_model_name", "accelerators_per_node", "framework",
	"hw_notes", "sw_notes"}

// summarize is the result summarizer's table: a row per system folder
// whose description it can read, with the score of each benchmark of the
// round (null where the system has none, or no valid score). Where the
// summarizer stops, it publishes no table, and a warning says why: a
// description without one of summarizerFields (a FieldError, which it
// then fails to print: a NameError; that system's benchmarks get no
// score), a benchmark folder the package checker skips (the summarizer
// scores it, and its compliance checker has no rules file for it), or a
// folder on which it stops.
func (rep *MLPerfTreeReport) summarize(r *MLPerfRound, dir string, systems []string) {
	stop := func(file, why string) {
		rep.Warnings = append(rep.Warnings, d5list.Reason{Code: CodeMLPerfStops, File: file, Message: why})
	}
	rows := []MLPerfSummaryRow{}
	for _, system := range systems {
		file := filepath.Join("systems", system+".json")
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			continue
		}
		var desc map[string]any
		if json.Unmarshal(data, &desc) != nil {
			continue
		}
		if i := slices.IndexFunc(summarizerFields, func(k string) bool { _, ok := desc[k]; return !ok }); i >= 0 {
			why := fmt.Sprintf("%s has no %s, which MLCommons' result summarizer reads for its table: it stops there (a FieldError it fails to print, NameError) and publishes nothing", file, summarizerFields[i])
			for _, b := range rep.Benchmarks {
				if b.System == system && b.Minutes != nil {
					b.unpublished(why)
				}
			}
			stop(file, why)
			return
		}
		for _, w := range rep.Warnings {
			if w.Code == CodeMLPerfSkipped && filepath.Dir(w.File) == filepath.Join("results", system) {
				stop(w.File, "MLCommons' result summarizer scores the benchmark folder its package checker skips, and stops there: its compliance checker has no rules file for it")
				return
			}
		}
		for _, b := range rep.Benchmarks {
			if b.System == system && b.summarizerStops != "" {
				stop(b.Folder, b.summarizerStops)
				return
			}
		}
		field := func(k string) string {
			if v, ok := desc[k]; ok {
				return pyStr(v)
			}
			return ""
		}
		count := func(per string) *int { // int(per) * int(number_of_nodes), as Python's int() reads them
			a, why1 := pyInt(desc[per])
			b, why2 := pyInt(desc["number_of_nodes"])
			if why1 != "" || why2 != "" {
				return nil
			}
			n := int(a * b)
			return &n
		}
		row := MLPerfSummaryRow{System: system, Division: field("division"), Availability: field("status"), Submitter: field("submitter"),
			SystemName: field("system_name"), Nodes: field("number_of_nodes"), HostProcessorModelName: field("host_processor_model_name"),
			HostProcessors: count("host_processors_per_node"), AcceleratorModelName: field("accelerator_model_name"),
			Accelerators: count("accelerators_per_node"), Framework: field("framework"), Scores: map[string]*float64{}, Refused: []string{}}
		for _, b := range r.BenchmarkNames() {
			row.Scores[b] = nil
		}
		for _, b := range rep.Benchmarks {
			if b.System == system {
				row.Scores[b.Benchmark] = b.Minutes
				if b.Minutes != nil && !b.Accepted {
					row.Refused = append(row.Refused, b.Benchmark)
				}
			}
		}
		rows = append(rows, row)
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Division != b.Division {
			return a.Division < b.Division
		}
		return a.SystemName < b.SystemName
	})
	rep.Summary = rows
}

// CheckMLPerfPath checks dir as a submission tree where it is one, else
// as one benchmark's result folder. The report is a *MLPerfTreeReport or
// a *MLPerfReport; accepted is its verdict.
func CheckMLPerfPath(dir, round string) (report any, accepted bool, err error) {
	return CheckMLPerfPathRules(dir, round, RulesRelease)
}

// CheckMLPerfPathRules is CheckMLPerfPath judged by rules: RulesRelease
// (the round's own release of mlcommons/logging; also "") or RulesToday.
func CheckMLPerfPathRules(dir, round, which string) (report any, accepted bool, err error) {
	return CheckMLPerfPathLimits(dir, round, which, UploadReadLimits())
}

// CheckMLPerfPathLimits is CheckMLPerfPathRules reading at most lim of
// each folder's logs: UploadReadLimits for an upload, LocalReadLimits for
// a folder on the checker's own disk.
func CheckMLPerfPathLimits(dir, round, which string, lim ReadLimits) (report any, accepted bool, err error) {
	if err := validRules(which); err != nil {
		return nil, false, err
	}
	if err := checkMLPerfInput(dir); err != nil {
		return nil, false, err
	}
	if IsMLPerfTree(dir) {
		t, err := checkMLPerfTree(dir, round, which, lim)
		if err != nil {
			return nil, false, err
		}
		return t, t.Accepted, nil
	}
	f, err := checkMLPerfRound(dir, round, which, lim)
	if err != nil {
		return nil, false, err
	}
	return f, f.Accepted, nil
}
