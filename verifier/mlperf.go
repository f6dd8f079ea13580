package verifier

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// MLPerfRun is the verdict on one result file of an MLPerf submission:
// Compliant is what MLPerf's compliance checker says of the file
// (SUCCESS), Problems why not; Warnings are what it lets through.
type MLPerfRun struct {
	File      string  `json:"file"`
	Seed      int64   `json:"seed"`
	Status    string  `json:"status"`
	Compliant bool    `json:"compliant"`
	Seconds   float64 `json:"seconds"`
	// Converged: run_stop's status is success. ConvergencePoint is what
	// the RCP checker reads of the run (epochs or samples to converge);
	// null for a run that did not converge.
	Converged        bool            `json:"converged"`
	ConvergencePoint *float64        `json:"convergence_point"`
	FinalAccuracy    float64         `json:"final_accuracy"`
	Problems         []d5list.Reason `json:"problems"`
	Warnings         []d5list.Reason `json:"warnings"`
}

// MLPerfReport is the verdict on one benchmark folder: the runs, the
// package checker's verdict and the score the result summarizer
// publishes.
type MLPerfReport struct {
	Round   string `json:"round"`
	Ruleset string `json:"ruleset"`
	// Rules names the rules that judged the folder: the round's own
	// release of mlcommons/logging, or today's.
	Rules     string `json:"rules"`
	Benchmark string `json:"benchmark"`
	// System and Folder name the folder in a submission tree.
	System   string      `json:"system,omitempty"`
	Folder   string      `json:"folder,omitempty"`
	Division string      `json:"division"`
	Quality  string      `json:"quality"`
	Runs     []MLPerfRun `json:"runs"`
	// Score is the olympic mean in seconds of the compliant runs, MLPerf's
	// way: as many fastest runs dropped as may fail (1, or 4 for unet3d),
	// and as many slowest as are left after the failed runs.
	Score d5list.Score `json:"score"`
	// ScalingFactor is the RCP normalisation of the score: the RCP
	// checker's where it compared the runs with a reference, else the
	// folder's scaling.json; 1 where neither gives one. Minutes is the
	// published score, the olympic mean in minutes times the factor (null
	// when invalid, or where MLCommons' result summarizer stops before it
	// publishes one).
	ScalingFactor float64  `json:"scaling_factor"`
	Minutes       *float64 `json:"minutes"`
	// RCP is the RCP checker's verdict, where the package checker runs
	// it (the closed division from round 1.0).
	RCP *MLPerfRCP `json:"rcp,omitempty"`
	// Accepted is the package checker's verdict; Reasons say why not.
	Accepted bool            `json:"accepted"`
	Reasons  []d5list.Reason `json:"reasons"`
	Warnings []d5list.Reason `json:"warnings"`
	// summarizerStops says why MLCommons' result summarizer stops on the
	// folder, if it does: it then publishes no table for the tree.
	summarizerStops string
}

// Codes of the MLPerf checks' reasons beyond the bundle checks' own.
const (
	CodeMLPerfCompliance  = "mlperf_compliance"
	CodeMLPerfFailedFiles = "too_many_failed_files"
	CodeMLPerfRCP         = "mlperf_rcp"
	// CodeMLPerfStops: MLCommons' own tool would stop with an exception
	// here, which refuses the package.
	CodeMLPerfStops     = "mlperf_checker_stops"
	CodeMLPerfSkipped   = "mlperf_benchmark_skipped"
	CodeMLPerfParams    = "package_checker_params"
	CodeMLPerfExtraFile = "mlperf_extra_file"
)

// CheckMLPerf checks an MLPerf Training result folder (result_*.txt, and
// system.json, scaling.json and package_checker_params where present) as
// MLPerf's own tools would: each file against its round's compliance
// rules, the folder against the package checker's (file count, failed
// files, seeds and RCP in the closed division), and the score as the
// result summarizer computes it. The round is the one a folder name such
// as "v3.1-dell-resnet" starts with, else the one its parent folder
// names, else the only round that has the folder's benchmark; where
// several do, the check refuses to guess.
func CheckMLPerf(dir string) (*MLPerfReport, error) {
	return CheckMLPerfRound(dir, "")
}

var reRoundPrefix = regexp.MustCompile(`^v(\d+\.\d+)[-_]`)

// CheckMLPerfRound is CheckMLPerf for a given round ("3.1"; "" to infer it).
func CheckMLPerfRound(dir, round string) (*MLPerfReport, error) {
	return CheckMLPerfRoundRules(dir, round, RulesRelease)
}

// CheckMLPerfRoundRules is CheckMLPerfRound judged by rules: RulesRelease
// (the round's own release of mlcommons/logging; also "") or RulesToday.
func CheckMLPerfRoundRules(dir, round, which string) (*MLPerfReport, error) {
	return checkMLPerfRound(dir, round, which, UploadReadLimits())
}

func checkMLPerfRound(dir, round, which string, lim ReadLimits) (*MLPerfReport, error) {
	if err := validRules(which); err != nil {
		return nil, err
	}
	if err := checkMLPerfInput(dir); err != nil {
		return nil, err
	}
	rules, err := namedRound(dir, round, which)
	if err != nil {
		return nil, err
	}
	files, err := mlperfResultFiles(dir)
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, d5list.Errorf(d5list.EINVALID, "%s: no result_<i>.txt files", dir)
	}
	format := formatMLLOG
	if rules != nil {
		format = rules.Format
	}
	logs, err := readMLPerfLogs(dir, files, format, lim)
	if err != nil {
		return nil, err
	}
	benchmark := folderBenchmark(logs)
	if benchmark == "" && rules == nil {
		// Round 0.6's own format, which only round 0.6's rules read.
		if rules, err = loadMLPerfRound("0.6"); err != nil {
			return nil, err
		}
		if logs, err = readMLPerfLogs(dir, files, rules.Format, lim); err != nil {
			return nil, err
		}
		benchmark = folderBenchmark(logs)
	}
	if benchmark == "" {
		return nil, d5list.Errorf(d5list.EINVALID, "%s: no result file logs submission_benchmark", dir)
	}
	if rules == nil {
		if rules, err = roundOfBenchmarks(dir, []string{benchmark}); err != nil {
			return nil, err
		}
	}
	if _, ok := rules.Benchmarks[benchmark]; !ok {
		return nil, d5list.Errorf(d5list.EINVALID, "%s: submission_benchmark %q is not a benchmark of MLPerf Training %s (%s)", dir, benchmark, rules.Round, strings.Join(rules.BenchmarkNames(), ", "))
	}
	if rules, err = rules.as(which); err != nil {
		return nil, err
	}
	f := mlperfFolder{dir: dir, benchmark: benchmark, logs: logs, division: folderDivision(dir, logs)}
	var sysWarnings []d5list.Reason
	var sysReasons []d5list.Reason
	if data, err := os.ReadFile(filepath.Join(dir, "system.json")); err == nil {
		sys, err := bundle.CheckMLPerfSystem("system.json", data, rules.statusesFor(data))
		sysWarnings = sys.Warnings
		if err != nil && rules.runs(packageSystems) {
			sysReasons = d5list.ErrorReasons(err)
		}
	}
	if data, err := os.ReadFile(filepath.Join(dir, packageParamsFile)); err == nil {
		f.params = readPackageParams(packageParamsFile, data)
	}
	rep := rules.checkFolder(f)
	rep.Reasons = append(rep.Reasons, sysReasons...)
	rep.Warnings = append(rep.Warnings, sysWarnings...)
	rep.Accepted = len(rep.Reasons) == 0
	return rep, nil
}

// mlperfFolder is one benchmark folder as the package checker meets it.
type mlperfFolder struct {
	dir       string
	benchmark string
	system    string
	rel       string // the folder's path in its tree
	division  string
	logs      []*mlperfLog
	params    packageParams
	limits    ReadLimits
}

// checkFolder is the package checker and the result summarizer on one
// benchmark folder whose logs are read.
func (r *MLPerfRound) checkFolder(f mlperfFolder) *MLPerfReport {
	bench := r.Benchmarks[f.benchmark]
	rep := &MLPerfReport{Round: r.Round, Ruleset: r.Ruleset, Rules: r.Judge, Benchmark: f.benchmark, System: f.system, Folder: f.rel,
		Division: f.division, Quality: r.quality(f.benchmark, f.division), ScalingFactor: 1,
		Runs: []MLPerfRun{}, Reasons: []d5list.Reason{}, Warnings: nonNilReasons(slices.Clone(f.params.warnings))}
	where := f.rel
	if where == "" {
		where = f.dir
	}
	refuse := func(code, format string, args ...any) {
		rep.Reasons = append(rep.Reasons, d5list.Reason{Code: code, File: where, Message: fmt.Sprintf(format, args...)})
	}
	if len(f.logs) != bench.Runs {
		refuse(CodeRunCount, "Incorrect number of files in dir, or wrong file names in directory, found %d, expected %d (MLPerf Training %s %s)", len(f.logs), bench.Runs, r.Round, f.benchmark)
	}
	closed := f.division == divisionClosed
	failed, nonCompliant := 0, 0
	stopped := false
	summarizerStops := "" // why MLCommons' result summarizer stops on the folder
	var scored []scoredRun
	for i, log := range f.logs {
		c := r.checkCompliance(log.name, i, log.lines, log.bad)
		run := MLPerfRun{File: log.name, Compliant: c.valid(), Problems: nonNilReasons(c.Problems), Warnings: nonNilReasons(c.Warnings)}
		if c.Stop != "" {
			run.Problems = append(run.Problems, d5list.Reason{Code: CodeMLPerfStops, File: log.name, Run: &i, Message: c.Stop})
			if !stopped { // MLCommons' package checker stops at the first
				refuse(CodeMLPerfStops, "%s: %s", log.name, c.Stop)
				stopped = true
			}
			// The summarizer runs the same checker on each file and catches
			// only a ValueError, which no check that stops it raises.
			if summarizerStops == "" {
				summarizerStops = log.name + ": " + c.Stop
			}
		}
		describeRun(&run, log.lines)
		start, stop, timed := runStartStop(log.lines)
		if timed {
			run.Seconds = (stop - start) * r.secondsPerTimeUnit()
		}
		if run.Compliant && timed {
			scored = append(scored, scoredRun{idx: i, seconds: run.Seconds})
		} else {
			failed++
		}
		if !run.Compliant {
			nonCompliant++
		}
		rep.Runs = append(rep.Runs, run)
	}
	switch n := nonCompliant; {
	case n > bench.MaxFailed:
		refuse(CodeMLPerfFailedFiles, "%d files do not comply, directory cannot be accepted (at most %d may, for olympic scoring)", n, bench.MaxFailed)
	case n > 0:
		rep.Warnings = append(rep.Warnings, d5list.Reason{Code: CodeMLPerfFailedFiles, File: where, Message: fmt.Sprintf("%d file(s) do not comply, accepting this under olympic scoring", n)})
	}
	if closed && r.runs(packageSeeds) && !f.params.seedBypass {
		if seeds := checkSeeds(f.logs, r.seedsOptional); len(seeds) > 0 {
			rep.Reasons = append(rep.Reasons, seeds...)
			refuse(CodeMissingSeed, "Seed checker failed")
		}
	}
	scaling, fromRCP := 1.0, false
	if closed && r.runs(packageRCP) && !(bench.RCP != nil && bench.RCP.Skip) {
		runs := r.readRCPRuns(f.dir, f.logs)
		for i := range runs {
			if runs[i].converged {
				p := runs[i].point
				rep.Runs[i].ConvergencePoint = &p
			}
		}
		res := r.checkRCP(runs, f.params.rcpBypass)
		rep.RCP = &res
		switch {
		case res.stop != "":
			res.Message = res.stop
			refuse(CodeMLPerfStops, "%s", res.stop)
		case !res.Passed:
			refuse(CodeMLPerfRCP, "RCP Test Failed: %s", res.Message)
		}
		scaling, fromRCP = res.Scaling, res.compared
	}
	switch r.scoreScaling {
	case scoreScalingNone, scoreScalingJSON:
		// the release's summarizer read no RCP normalisation
		scaling, fromRCP = 1, r.scoreScaling == scoreScalingNone
	case scoreScalingKept:
		// the release's RCP checker wrote scaling.json only where it
		// normalised, and left the folder's own in place otherwise
		fromRCP = scaling != 1
	}
	if !fromRCP {
		factor, ok, err := readScalingFactor(f.dir)
		switch {
		case err != nil:
			refuse("scaling_json", "scaling.json: %v", err)
		case ok:
			scaling = factor
		}
	}
	rep.ScalingFactor = scaling
	rep.Score = mlperfOlympic(scored, failed, bench.MaxFailed)
	if !rep.Score.Valid {
		refuse(CodeTooManyUnconverged, "%s", rep.Score.Note)
	}
	switch {
	case summarizerStops != "":
		rep.unpublished(fmt.Sprintf("MLCommons' result summarizer stops on %s, and publishes nothing", summarizerStops))
	case rep.Score.Valid:
		m := rep.Score.Value / 60 * scaling
		rep.Minutes = &m
	}
	rep.Accepted = len(rep.Reasons) == 0
	return rep
}

// unpublished drops the folder's score where MLCommons' result
// summarizer stops before it publishes one.
func (rep *MLPerfReport) unpublished(why string) {
	rep.Score, rep.Minutes, rep.summarizerStops = invalidScore(why), nil, why
}

// quality is the quality target of the benchmark's rules file in a
// division: the at-least-one checks it makes.
func (r *MLPerfRound) quality(benchmark, division string) string {
	var q []string
	for _, name := range []string{division + "_" + benchmark, benchmark} {
		cfg := r.Configs[name]
		if cfg == nil {
			continue
		}
		for _, k := range cfg.Keys {
			if k.AtLeastOne != nil {
				q = append(q, k.Key+": "+k.AtLeastOne.String())
			}
		}
		break
	}
	return strings.Join(q, "; ")
}

// describeRun fills in what the report shows of a run besides its
// verdict: the first seed, run_stop's status and the last accuracy.
func describeRun(run *MLPerfRun, lines []ruleLine) {
	seeded := false
	for _, ln := range lines {
		switch ln.Key {
		case "seed":
			if s, why := pyInt(ln.Value); why == "" && !seeded {
				run.Seed, seeded = s, true
			}
		case "run_stop":
			if st, ok := ln.Meta["status"].(string); ok && run.Status == "" {
				run.Status = st
				run.Converged = st == "success"
			}
		case "eval_accuracy":
			if x, ok := pyFloat(ln.Value); ok {
				run.FinalAccuracy = x
			}
		}
	}
}

// runStartStop is the result summarizer's reading of a run's time: the
// first run_start and the first run_stop, in the logs' time unit.
func runStartStop(lines []ruleLine) (start, stop float64, ok bool) {
	var haveStart, haveStop bool
	for _, ln := range lines {
		switch {
		case ln.Key == "run_start" && !haveStart:
			start, haveStart = ln.Time, true
		case ln.Key == "run_stop" && !haveStop:
			stop, haveStop = ln.Time, true
		}
		if haveStart && haveStop {
			break
		}
	}
	return start, stop, haveStart && haveStop
}

// secondsPerTimeUnit converts the logs' timestamps: milliseconds in the
// MLLOG format, seconds in the MLL format.
func (r *MLPerfRound) secondsPerTimeUnit() float64 {
	if r.Format == formatMLL {
		return 1
	}
	return 0.001
}

func knownRounds() string { return strings.Join(MLPerfRoundNames(), ", ") }

// packageParams are what a package_checker_params file grants.
type packageParams struct {
	rcpBypass, seedBypass bool
	warnings              []d5list.Reason
}

const packageParamsFile = "package_checker_params"

// readPackageParams reads a package_checker_params file as the package
// checker does: it compares each line with its newline to "rcp-bypass"
// and "seed-checker-bypass", so only a last line without a newline
// counts. A flag that MLCommons' reading misses is a warning.
func readPackageParams(name string, data []byte) packageParams {
	var p packageParams
	text := strings.ReplaceAll(strings.ReplaceAll(string(data), "\r\n", "\n"), "\r", "\n")
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		last := i == len(lines)-1
		if l != "rcp-bypass" && l != "seed-checker-bypass" {
			continue
		}
		if !last {
			p.warnings = append(p.warnings, d5list.Reason{Code: CodeMLPerfParams, File: name, Line: i + 1,
				Message: fmt.Sprintf("%q is followed by a newline, so MLPerf's package checker does not read it: it compares each line with its newline", l)})
			continue
		}
		p.rcpBypass = p.rcpBypass || l == "rcp-bypass"
		p.seedBypass = p.seedBypass || l == "seed-checker-bypass"
	}
	return p
}

func (p packageParams) or(q packageParams) packageParams {
	return packageParams{rcpBypass: p.rcpBypass || q.rcpBypass, seedBypass: p.seedBypass || q.seedBypass, warnings: slices.Concat(p.warnings, q.warnings)}
}

type scoredRun struct {
	idx     int
	seconds float64
}

// mlperfOlympic is result_summarizer's olympic average: maxFailed fastest
// runs dropped, and maxFailed - failed of the slowest (the failed runs
// count as the slowest already). Invalid when more runs failed than may.
func mlperfOlympic(runs []scoredRun, failed, maxFailed int) d5list.Score {
	if failed > maxFailed {
		return invalidScore(fmt.Sprintf("%d runs failed; at most %d may", failed, maxFailed))
	}
	s := invalidScore("")
	sorted := slices.Clone(runs)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].seconds < sorted[j].seconds })
	hi := len(sorted) - (maxFailed - failed)
	if maxFailed >= hi {
		s.Note = "no runs left after the olympic drop"
		return s
	}
	kept := sorted[maxFailed:hi]
	sum := 0.0
	for _, r := range kept {
		sum += r.seconds
	}
	for _, r := range sorted[:maxFailed] {
		s.Dropped = append(s.Dropped, r.idx)
	}
	for _, r := range sorted[hi:] {
		s.Dropped = append(s.Dropped, r.idx)
	}
	s.Value = sum / float64(len(kept))
	s.Min, s.Max = sorted[0].seconds, sorted[len(sorted)-1].seconds
	s.Valid = true
	return s
}

// invalidScore is a time to train with no valid value, and why.
func invalidScore(note string) d5list.Score {
	return d5list.Score{Metric: d5list.MetricTimeToTrain, Value: math.Inf(1), Min: math.NaN(), Max: math.NaN(), Note: note}
}

// readScalingFactor reads the folder's scaling.json, if any.
func readScalingFactor(dir string) (float64, bool, error) {
	data, err := os.ReadFile(filepath.Join(dir, "scaling.json"))
	if errors.Is(err, os.ErrNotExist) {
		return 1, false, nil
	}
	if err != nil {
		return 1, false, err
	}
	var sc struct {
		Factor *float64 `json:"scaling_factor"`
	}
	if err := json.Unmarshal(data, &sc); err != nil {
		return 1, false, fmt.Errorf("not JSON: %v", err)
	}
	if sc.Factor == nil || !(*sc.Factor > 0) || math.IsInf(*sc.Factor, 0) {
		return 1, false, errors.New("scaling_factor missing or not a positive number")
	}
	return *sc.Factor, true, nil
}

func nonNilReasons(r []d5list.Reason) []d5list.Reason {
	if r == nil {
		return []d5list.Reason{}
	}
	return r
}
