package verifier

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/mllog"
)

// MLPerfRun is the verdict on one result_<i>.txt of an MLPerf submission:
// Compliant is what MLPerf's compliance checker would say of the file
// (SUCCESS), Problems why not.
type MLPerfRun struct {
	File           string          `json:"file"`
	Seed           int64           `json:"seed"`
	Status         string          `json:"status"`
	Compliant      bool            `json:"compliant"`
	Converged      bool            `json:"converged"`
	Seconds        float64         `json:"seconds"`
	EpochsToTarget float64         `json:"epochs_to_target"`
	FinalAccuracy  float64         `json:"final_accuracy"`
	Problems       []d5list.Reason `json:"problems"`
}

// MLPerfReport is CheckMLPerf's answer for one benchmark folder: the runs,
// the score MLPerf publishes, and whether MLPerf's package checker would
// accept the folder.
type MLPerfReport struct {
	Round     string      `json:"round"`
	Benchmark string      `json:"benchmark"`
	Division  string      `json:"division"`
	Quality   string      `json:"quality"`
	Runs      []MLPerfRun `json:"runs"`
	// Score is the olympic mean in seconds of the compliant runs, MLPerf's
	// way: as many fastest runs dropped as may fail (1, or 4 for unet3d),
	// and as many slowest as are left after the failed runs.
	Score d5list.Score `json:"score"`
	// ScalingFactor is the review committee's RCP scaling (scaling.json),
	// 1 where the folder has none; Minutes is the published score, the
	// olympic mean in minutes times the factor (null when invalid).
	ScalingFactor float64  `json:"scaling_factor"`
	Minutes       *float64 `json:"minutes"`
	// Accepted is the package checker's verdict; Reasons say why not, and
	// hold the folder-level notes.
	Accepted bool            `json:"accepted"`
	Reasons  []d5list.Reason `json:"reasons"`
	// Warnings are what MLPerf lets through but a reader should see (an
	// empty field of system.json, a count that is not a number).
	Warnings []d5list.Reason `json:"warnings"`
}

// Codes of CheckMLPerf's reasons beyond the bundle checks' own.
const (
	CodeMLPerfMissingKey  = "mlperf_missing_key"
	CodeMLPerfRepeatedKey = "mlperf_repeated_key"
	CodeMLPerfValue       = "mlperf_value_out_of_rule"
	CodeMLPerfTarget      = "target_not_reached"
	CodeMLPerfNoStatus    = "missing_run_status"
	CodeMLPerfInitTooLong = "init_too_long"
	CodeMLPerfFailedFiles = "too_many_failed_files"
)

// CheckMLPerf checks an MLPerf Training result folder (result_*.txt, and
// system.json and scaling.json where present) as MLPerf's own tools would:
// each file against its round's compliance rules, the folder against the
// package checker's, and the score as the result summarizer computes it.
// The round is the one a folder name such as "v3.1-dell-resnet" starts
// with, else the newest round that has the folder's benchmark.
func CheckMLPerf(dir string) (*MLPerfReport, error) {
	return CheckMLPerfRound(dir, "")
}

var reRoundPrefix = regexp.MustCompile(`^v(\d+\.\d+)[-_]`)

// CheckMLPerfRound is CheckMLPerf for a given round ("3.1"; "" to infer it).
func CheckMLPerfRound(dir, round string) (*MLPerfReport, error) {
	rounds, err := MLPerfRounds()
	if err != nil {
		return nil, err
	}
	files, err := mlperfResultFiles(dir)
	if err != nil {
		return nil, err
	}
	logs := make([][]mllog.Event, len(files))
	parseErr := make([]error, len(files))
	events, decoded := 0, 0
	for i, f := range files {
		logs[i], parseErr[i], err = parseMLPerfFile(f.path)
		if err != nil {
			return nil, err
		}
		events, decoded = events+len(logs[i]), decoded+mllog.DecodedBytes(logs[i])
		if tooMuch := readTooMuch(events, decoded); tooMuch != "" {
			return nil, d5list.Errorf(d5list.ETOOLARGE, "%s: the result files up to %s hold %s together (MLPerf's largest published folder, unet3d's 40 runs, some 26,000 events and 2.9 MB); the rest is not read", dir, filepath.Base(f.path), tooMuch)
		}
	}
	benchmark := folderBenchmark(logs)
	if benchmark == "" {
		return nil, d5list.Errorf(d5list.EINVALID, "%s: no result file logs submission_benchmark", dir)
	}
	rep := &MLPerfReport{Benchmark: benchmark, ScalingFactor: 1, Reasons: []d5list.Reason{}, Warnings: []d5list.Reason{}}

	if round == "" {
		if m := reRoundPrefix.FindStringSubmatch(filepath.Base(filepath.Clean(dir))); m != nil {
			round = m[1]
		}
	}
	var rules *MLPerfRound
	if round != "" {
		for _, r := range rounds {
			if r.Round == round {
				rules = r
			}
		}
		if rules == nil {
			return nil, d5list.Errorf(d5list.EINVALID, "%s: MLPerf Training round %s is not one d5list knows (%s)", dir, round, knownRounds(rounds))
		}
	} else {
		for _, r := range rounds {
			if _, ok := r.Benchmarks[benchmark]; ok {
				rules = r // the newest that has it
			}
		}
		if rules == nil {
			return nil, d5list.Errorf(d5list.EINVALID, "%s: submission_benchmark %q is in no MLPerf Training round d5list knows (%s)", dir, benchmark, knownRounds(rounds))
		}
	}
	bench, ok := rules.Benchmarks[benchmark]
	if !ok {
		known := slices.Sorted(maps.Keys(rules.Benchmarks))
		return nil, d5list.Errorf(d5list.EINVALID, "%s: submission_benchmark %q is not a benchmark of MLPerf Training %s (%s)", dir, benchmark, rules.Round, strings.Join(known, ", "))
	}
	rep.Round = rules.Round
	var q []string
	for _, b := range bench.Quality {
		q = append(q, b.String())
	}
	rep.Quality = mllog.KeyEvalAccuracy + ": " + strings.Join(q, ", ")
	rep.Division = folderDivision(dir, logs)

	seeds := map[seedSite]string{}
	// The package checker's own escape, granted by MLPerf's review: a
	// package_checker_params file with the line seed-checker-bypass.
	bypassSeeds := false
	if data, err := os.ReadFile(filepath.Join(dir, "package_checker_params")); err == nil {
		bypassSeeds = slices.Contains(strings.Split(strings.ReplaceAll(string(data), "\r", ""), "\n"), "seed-checker-bypass")
	}
	failed := 0
	var scored []scoredRun
	for i, f := range files {
		file := filepath.Base(f.path)
		run := checkMLPerfFile(rules, benchmark, bench, rep.Division, file, f.idx, logs[i], parseErr[i])
		if rep.Division == "closed" && !bypassSeeds {
			rep.Reasons = append(rep.Reasons, checkSeeds(bench, file, f.idx, logs[i], parseErr[i], seeds)...)
		}
		if run.Compliant {
			scored = append(scored, scoredRun{idx: f.idx, seconds: run.Seconds})
		} else {
			failed++
		}
		rep.Runs = append(rep.Runs, run)
	}

	if len(files) != bench.Runs {
		rep.Reasons = append(rep.Reasons, d5list.Reason{Code: CodeRunCount, File: dir,
			Message: fmt.Sprintf("MLPerf Training %s %s needs exactly %d result files; the folder has %d", rules.Round, benchmark, bench.Runs, len(files))})
	}
	if failed > bench.MaxFailed {
		rep.Reasons = append(rep.Reasons, d5list.Reason{Code: CodeMLPerfFailedFiles, File: dir,
			Message: fmt.Sprintf("%d files do not comply; olympic scoring accepts at most %d for %s", failed, bench.MaxFailed, benchmark)})
	}
	rep.Score = mlperfOlympic(scored, failed, bench.MaxFailed)
	if !rep.Score.Valid {
		rep.Reasons = append(rep.Reasons, d5list.Reason{Code: CodeTooManyUnconverged, File: dir, Message: rep.Score.Note})
	}
	if data, err := os.ReadFile(filepath.Join(dir, "system.json")); err == nil {
		sys, err := bundle.CheckMLPerfSystem("system.json", data, rules.Round)
		rep.Warnings = append(rep.Warnings, sys.Warnings...)
		if err != nil {
			rep.Reasons = append(rep.Reasons, d5list.ErrorReasons(err)...)
		}
	}
	if factor, ok, err := readScalingFactor(dir); err != nil {
		rep.Reasons = append(rep.Reasons, d5list.Reason{Code: "scaling_json", File: "scaling.json", Message: err.Error()})
	} else if ok {
		rep.ScalingFactor = factor
	}
	if rep.Score.Valid {
		m := rep.Score.Value / 60 * rep.ScalingFactor
		rep.Minutes = &m
	}
	rep.Accepted = len(rep.Reasons) == 0
	return rep, nil
}

type indexedFile struct {
	path string
	idx  int
}

func mlperfResultFiles(dir string) ([]indexedFile, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "result_*.txt"))
	if err != nil {
		return nil, err
	}
	var files []indexedFile
	for _, p := range paths {
		n := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "result_"), ".txt")
		i, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		files = append(files, indexedFile{p, i})
	}
	if len(files) == 0 {
		return nil, d5list.Errorf(d5list.EINVALID, "%s: no result_<i>.txt files", dir)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].idx < files[j].idx })
	return files, nil
}

// parseMLPerfFile streams one result file through the parser, which keeps
// its events and not its bytes: a file may be as large as the upload's
// file limit.
func parseMLPerfFile(path string) (events []mllog.Event, parseErr, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	events, parseErr = mllog.Parse(f, filepath.Base(path))
	return events, parseErr, nil
}

// folderBenchmark is the submission_benchmark most files log: the
// folder's benchmark, as MLPerf's tools take it from the folder's name.
func folderBenchmark(logs [][]mllog.Event) string {
	votes := map[string]int{}
	for _, evs := range logs {
		for _, e := range evs {
			if e.Key == mllog.KeySubmissionBenchmark {
				if s, ok := e.Value.(string); ok {
					votes[s]++
				}
				break
			}
		}
	}
	best := ""
	for _, b := range slices.Sorted(maps.Keys(votes)) {
		if votes[b] > votes[best] {
			best = b
		}
	}
	return best
}

// folderDivision is system.json's division, as the package checker reads
// it, else what the logs' submission_division says.
func folderDivision(dir string, logs [][]mllog.Event) string {
	if data, err := os.ReadFile(filepath.Join(dir, "system.json")); err == nil {
		var sys struct {
			Division string `json:"division"`
		}
		if json.Unmarshal(data, &sys) == nil && sys.Division != "" {
			return sys.Division
		}
	}
	for _, evs := range logs {
		for _, e := range evs {
			if e.Key == "submission_division" {
				if s, ok := e.Value.(string); ok {
					return s
				}
			}
		}
	}
	return ""
}

func knownRounds(rounds []*MLPerfRound) string {
	names := make([]string, len(rounds))
	for i, r := range rounds {
		names[i] = r.Round
	}
	return strings.Join(names, ", ")
}

// checkMLPerfFile is the compliance checker on one file: every required
// key logged as often as the round says, with an allowed value; run_stop
// with a status; at least one evaluation at the quality target; and the
// initialisation within its time (30 minutes closed, 240 open). The run's
// status does not matter: an aborted run that reached the target counts,
// as it does for MLPerf. A line that cannot be read is a problem of the
// file, as MLPerf's parser makes it, and the rest is still read.
func checkMLPerfFile(rules *MLPerfRound, benchmark string, bench MLPerfBenchmarkRules, division, file string, idx int, evs []mllog.Event, parseErr error) MLPerfRun {
	run := MLPerfRun{File: file, EpochsToTarget: -1, Problems: []d5list.Reason{}}
	problem := func(code string, line int, format string, args ...any) {
		i := idx
		run.Problems = append(run.Problems, d5list.Reason{Code: code, File: file, Line: line, Run: &i, Message: fmt.Sprintf(format, args...)})
	}
	if parseErr != nil {
		var de *d5list.Error
		if errors.As(parseErr, &de) {
			for _, r := range de.Reasons {
				i := idx
				r.Run = &i
				run.Problems = append(run.Problems, r)
			}
		} else {
			problem(mllog.CodeSyntax, 0, "%v", parseErr)
		}
	}
	lastLine := 0
	if n := len(evs); n > 0 {
		lastLine = evs[n-1].Line
	}

	keyRules := slices.Clone(rules.Common)
	if division == "closed" {
		keyRules = append(keyRules, rules.ClosedCommon...)
		keyRules = append(keyRules, bench.Closed...)
		if by := bench.ClosedBy; by != nil {
			for _, e := range evs {
				if e.Key == by.Key {
					if s, ok := e.Value.(string); ok {
						keyRules = append(keyRules, by.Rules[s]...)
					}
					break
				}
			}
		}
	}
	seen := map[string][]mllog.Event{}
	for _, e := range evs {
		seen[e.Key] = append(seen[e.Key], e)
	}
	for _, r := range keyRules {
		got := seen[r.Key]
		switch {
		case len(got) == 0:
			problem(CodeMLPerfMissingKey, lastLine, "%s is never logged; MLPerf Training %s requires it (%s)", r.Key, rules.Round, strings.ReplaceAll(r.Req, "_", " "))
		case r.Req == reqExactlyOne && len(got) > 1:
			problem(CodeMLPerfRepeatedKey, got[1].Line, "%s is logged %d times; MLPerf Training %s requires exactly one", r.Key, len(got), rules.Round)
		}
		for _, e := range got {
			if why := r.check(e.Value); why != "" {
				problem(CodeMLPerfValue, e.Line, "%s %s (MLPerf Training %s, %s division)", r.Key, why, rules.Round, division)
			}
		}
	}

	for _, e := range seen[mllog.KeySubmissionBenchmark] {
		if e.Value != benchmark {
			// MLPerf checks such a file against the other benchmark's rules,
			// which it cannot meet: the file fails, and olympic scoring may
			// still drop it.
			problem(CodeWrongBenchmarkKey, e.Line, "submission_benchmark is %v; the folder's other files are %s", e.Value, benchmark)
		}
	}
	for _, e := range seen[mllog.KeySeed] {
		if s, ok := mllog.Int(e.Value); ok {
			run.Seed = s
			break
		}
	}
	starts, stops := seen[mllog.KeyRunStart], seen[mllog.KeyRunStop]
	if len(stops) > 0 {
		st, ok := stops[0].Meta("status").(string)
		if !ok {
			problem(CodeMLPerfNoStatus, stops[0].Line, "run_stop has no metadata.status")
		}
		run.Status = st
	}
	if len(starts) > 0 && len(stops) > 0 {
		run.Seconds = float64(stops[0].TimeMS-starts[0].TimeMS) / 1000
	}
	if inits, stopsInit := seen[mllog.KeyInitStart], seen[mllog.KeyInitStop]; len(inits) > 0 && len(stopsInit) > 0 {
		limit := 30.0
		if division == "open" {
			limit = 240
		}
		first := inits[0].TimeMS
		for _, e := range inits {
			first = min(first, e.TimeMS)
		}
		if mins := float64(stopsInit[0].TimeMS-first) / 60000; mins >= limit {
			problem(CodeMLPerfInitTooLong, stopsInit[0].Line, "initialisation took %.1f minutes from the first init_start; the %s division allows less than %v", mins, division, limit)
		}
	}

	evals := seen[mllog.KeyEvalAccuracy]
	if bench.EvalAggregate != "" {
		evals = aggregateEvals(evals, bench.EvalAggregate)
	}
	reached := -1
	for i, e := range evals {
		ok := true
		for _, b := range bench.Quality {
			if b.check(e.Value) != "" {
				ok = false
				break
			}
		}
		if ok && reached < 0 {
			reached = i
		}
	}
	if n := len(evals); n > 0 {
		if x, ok := mlperfNumber(evals[n-1].Value); ok {
			run.FinalAccuracy = x
		}
	}
	if reached >= 0 {
		run.Converged = true
		run.EpochsToTarget = float64(reached + 1)
		if f, ok := mllog.Float(evals[reached].Meta("epoch_num")); ok {
			run.EpochsToTarget = f
		}
	} else {
		line := lastLine
		if n := len(evals); n > 0 {
			line = evals[n-1].Line
		}
		var q []string
		for _, b := range bench.Quality {
			q = append(q, b.String())
		}
		problem(CodeMLPerfTarget, line, "no eval_accuracy meets the quality target of %s in MLPerf Training %s (%s); %d evaluations logged", benchmark, rules.Round, strings.Join(q, ", "), len(evals))
	}
	run.Compliant = len(run.Problems) == 0 && len(starts) == 1 && len(stops) == 1
	return run
}

// aggregateEvals folds eval_accuracy lines that log one metric each
// (metadata.metric) into one evaluation per value of metadata[by], whose
// value maps each metric to its value, timed at its last line.
func aggregateEvals(evals []mllog.Event, by string) []mllog.Event {
	var out []mllog.Event
	at := map[string]int{}
	for _, e := range evals {
		metric, ok := e.Meta("metric").(string)
		if !ok {
			out = append(out, e)
			continue
		}
		group := fmt.Sprint(e.Meta(by))
		i, seen := at[group]
		if !seen {
			i = len(out)
			at[group] = i
			agg := e
			agg.Value = map[string]any{}
			out = append(out, agg)
		}
		out[i].Value.(map[string]any)[metric] = e.Value
		if e.TimeMS > out[i].TimeMS {
			out[i].TimeMS, out[i].Line = e.TimeMS, e.Line
		}
	}
	return out
}

type seedSite struct {
	file string
	line int64
	seed int64
}

// checkSeeds is MLPerf's seed checker for a closed-division file: every
// file logs a seed, and no two files log the same seed from the same
// source line (metadata file and lineno), which is how MLPerf tells a
// seed reused from one chosen afresh.
func checkSeeds(bench MLPerfBenchmarkRules, file string, idx int, evs []mllog.Event, parseErr error, seen map[seedSite]string) []d5list.Reason {
	var out []d5list.Reason
	i := idx
	logged := false
	lastLine := 0
	for _, e := range evs {
		lastLine = e.Line
		if e.Key != mllog.KeySeed {
			continue
		}
		logged = true
		s, ok := mllog.Int(e.Value)
		if !ok {
			out = append(out, d5list.Reason{Code: CodeMissingSeed, File: file, Line: e.Line, Run: &i, Message: fmt.Sprintf("seed %v is not an integer", e.Value)})
			continue
		}
		src, _ := e.Meta("file").(string)
		line, _ := mllog.Int(e.Meta("lineno"))
		site := seedSite{src, line, s}
		if other, dup := seen[site]; dup {
			out = append(out, d5list.Reason{Code: CodeDuplicateSeed, File: file, Line: e.Line, Run: &i,
				Message: fmt.Sprintf("seed %d is logged from %s:%d as in %s; each run of the closed division must draw its own", s, src, line, other)})
			continue
		}
		seen[site] = file
	}
	if parseErr != nil {
		// MLPerf's seed checker refuses to read seeds from a file with a
		// line it cannot parse, and with that the folder.
		line := 0
		if rs := d5list.ErrorReasons(parseErr); len(rs) > 0 {
			line = rs[0].Line
		}
		return append(out, d5list.Reason{Code: CodeMissingSeed, File: file, Line: line, Run: &i,
			Message: "the seed checker cannot read seeds from a file with a line that does not parse"})
	}
	if !logged && !bench.SeedOptional {
		out = append(out, d5list.Reason{Code: CodeMissingSeed, File: file, Line: lastLine, Run: &i, Message: "no seed is logged; the closed division's seed checker needs one per run"})
	}
	return out
}

type scoredRun struct {
	idx     int
	seconds float64
}

// mlperfOlympic is result_summarizer's olympic average: maxFailed fastest
// runs dropped, and maxFailed - failed of the slowest (the failed runs
// count as the slowest already). Invalid when more runs failed than may.
func mlperfOlympic(runs []scoredRun, failed, maxFailed int) d5list.Score {
	s := d5list.Score{Metric: d5list.MetricTimeToTrain, Value: math.Inf(1), Min: math.NaN(), Max: math.NaN()}
	if failed > maxFailed {
		s.Note = fmt.Sprintf("%d runs failed; at most %d may", failed, maxFailed)
		return s
	}
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

// readScalingFactor reads the review committee's scaling.json, if any.
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
