package verifier

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
)

// MLPerfRun is the verdict on one result_<i>.txt of an MLPerf submission.
type MLPerfRun struct {
	File           string          `json:"file"`
	Seed           int64           `json:"seed"`
	Status         string          `json:"status"`
	Converged      bool            `json:"converged"`
	Seconds        float64         `json:"seconds"`
	EpochsToTarget float64         `json:"epochs_to_target"`
	FinalAccuracy  float64         `json:"final_accuracy"`
	Problems       []d5list.Reason `json:"problems"`
}

// MLPerfReport is CheckMLPerf's answer for one benchmark folder.
type MLPerfReport struct {
	Benchmark string          `json:"benchmark"`
	Target    float64         `json:"target"`
	Runs      []MLPerfRun     `json:"runs"`
	Score     d5list.Score    `json:"score"`
	Reasons   []d5list.Reason `json:"reasons"`
}

// MLPerfBenchmark is what the portal knows of one MLPerf Training
// benchmark: the quality target (the ATLEAST_ONE_CHECK on eval_accuracy in
// the compliance checker's closed_<benchmark>.yaml) and the number of runs.
type MLPerfBenchmark struct {
	Quality d5list.QualityTarget
	Runs    int
}

func mlperfTarget(target float64, dir d5list.Direction) d5list.QualityTarget {
	return d5list.QualityTarget{Metric: mllog.KeyEvalAccuracy, Target: target, Mode: "first", Direction: dir}
}

// MLPerfTrainingV4 holds the v4.0 (ruleset training_4.0.0) benchmarks.
// resnet and ssd come from the rules files in peer-data; the others from
// the v4.0 training rules (gpt3 and llama2_70b_lora log a loss or log
// perplexity as eval_accuracy, where lower is better). stable_diffusion is
// left out: its target is two metrics (FID and CLIP) that a single
// eval_accuracy cannot express.
var MLPerfTrainingV4 = map[string]MLPerfBenchmark{
	"resnet":          {mlperfTarget(0.759, d5list.HigherIsBetter), 5},
	"ssd":             {mlperfTarget(0.340, d5list.HigherIsBetter), 5},
	"bert":            {mlperfTarget(0.720, d5list.HigherIsBetter), 10},
	"unet3d":          {mlperfTarget(0.908, d5list.HigherIsBetter), 40},
	"dlrm_dcnv2":      {mlperfTarget(0.80275, d5list.HigherIsBetter), 10},
	"gnn":             {mlperfTarget(0.72, d5list.HigherIsBetter), 10},
	"gpt3":            {mlperfTarget(2.69, d5list.LowerIsBetter), 3},
	"llama2_70b_lora": {mlperfTarget(0.925, d5list.LowerIsBetter), 10},
}

// CheckMLPerf scores the result_*.txt logs in dir the MLPerf way and checks
// the essentials of MLPerf's compliance checker per file: run_start and
// run_stop exactly once, a run_stop status, a seed, and an eval_accuracy at
// the quality target (for a "success" run the final evaluation must be at
// target). A run is SUCCESS when it converged and has no problems. Files
// may be numbered from 0 or 1; run order in time is not checked, because
// MLPerf does not require it.
func CheckMLPerf(dir string) (*MLPerfReport, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "result_*.txt"))
	if err != nil {
		return nil, err
	}
	type indexed struct {
		path string
		idx  int
	}
	var files []indexed
	for _, p := range paths {
		n := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "result_"), ".txt")
		i, err := strconv.Atoi(n)
		if err != nil {
			continue
		}
		files = append(files, indexed{p, i})
	}
	if len(files) == 0 {
		return nil, d5list.Errorf(d5list.EINVALID, "%s: no result_<i>.txt files", dir)
	}
	sort.Slice(files, func(i, j int) bool { return files[i].idx < files[j].idx })

	rep := &MLPerfReport{Reasons: []d5list.Reason{}}
	logs := make([][]mllog.Event, len(files))
	parseErr := make([]error, len(files))
	for i, f := range files {
		data, err := os.ReadFile(f.path)
		if err != nil {
			return nil, err
		}
		logs[i], parseErr[i] = mllog.Parse(bytes.NewReader(data), filepath.Base(f.path))
		if rep.Benchmark != "" || parseErr[i] != nil {
			continue
		}
		for _, e := range logs[i] {
			if e.Key == mllog.KeySubmissionBenchmark {
				rep.Benchmark, _ = e.Value.(string)
				break
			}
		}
	}
	if rep.Benchmark == "" {
		return nil, d5list.Errorf(d5list.EINVALID, "%s: no result file logs submission_benchmark", dir)
	}
	bench, ok := MLPerfTrainingV4[rep.Benchmark]
	if !ok {
		known := make([]string, 0, len(MLPerfTrainingV4))
		for k := range MLPerfTrainingV4 {
			known = append(known, k)
		}
		sort.Strings(known)
		return nil, d5list.Errorf(d5list.EINVALID, "%s: submission_benchmark %q is not an MLPerf Training v4.0 benchmark this checker knows (%s)", dir, rep.Benchmark, strings.Join(known, ", "))
	}
	q := bench.Quality
	rep.Target = q.Target

	var metrics []d5list.RunMetrics
	seedOwner := map[int64]string{}
	for i, f := range files {
		file := filepath.Base(f.path)
		run := MLPerfRun{File: file, EpochsToTarget: -1, Problems: []d5list.Reason{}}
		idx := f.idx
		problem := func(code string, line int, format string, args ...any) {
			run.Problems = append(run.Problems, d5list.Reason{Code: code, File: file, Line: line, Run: &idx, Message: fmt.Sprintf(format, args...)})
		}
		if err := parseErr[i]; err != nil {
			var de *d5list.Error
			if errors.As(err, &de) {
				run.Problems = append(run.Problems, de.Reasons...)
			} else {
				problem(mllog.CodeSyntax, 0, "%v", err)
			}
			rep.Runs = append(rep.Runs, run)
			metrics = append(metrics, d5list.RunMetrics{Index: idx, File: file, EpochsToTarget: -1})
			continue
		}
		evs := logs[i]
		m, rs := mllog.Derive(evs, q, file, idx)
		run.Problems = append(run.Problems, rs...)
		run.Seed, run.Status, run.Converged = m.Seed, m.Status, m.Converged
		run.Seconds, run.EpochsToTarget, run.FinalAccuracy = m.TimeToTrain, m.EpochsToTarget, m.FinalAccuracy

		counts := map[string]int{}
		lastLine := 0
		seeds := map[int64]bool{}
		for _, e := range evs {
			counts[e.Key]++
			lastLine = e.Line
			if (e.Key == mllog.KeyRunStart || e.Key == mllog.KeyRunStop) && counts[e.Key] == 2 {
				problem("duplicate_"+e.Key, e.Line, "%s occurs more than once; the rules require exactly one", e.Key)
			}
			if e.Key == mllog.KeySeed {
				if s, ok := mllog.Int(e.Value); ok {
					seeds[s] = true
				}
			}
			if e.Key == mllog.KeySubmissionBenchmark && e.Value != rep.Benchmark {
				problem(CodeWrongBenchmarkKey, e.Line, "submission_benchmark is %v; other files say %q", e.Value, rep.Benchmark)
			}
		}
		if len(seeds) == 0 {
			problem(CodeMissingSeed, lastLine, "no integer seed is logged")
		}
		for s := range seeds {
			if other, dup := seedOwner[s]; dup {
				rep.Reasons = append(rep.Reasons, d5list.Reason{Code: CodeDuplicateSeed, File: file, Run: &idx,
					Message: fmt.Sprintf("seed %d is also logged by %s", s, other)})
			}
			seedOwner[s] = file
		}
		if m.EpochsToTarget < 0 {
			problem("target_not_reached", lastEvalLine(evs, q.Metric, lastLine), "no eval_accuracy reaches the target %v (final %v)", q.Target, m.FinalAccuracy)
		} else if m.Status == mllog.StatusSuccess && len(m.Evals) > 0 && !q.Reached(m.FinalAccuracy) {
			problem("final_eval_below_target", lastEvalLine(evs, q.Metric, lastLine), "the run stopped with status success but its final eval_accuracy %v misses the target %v", m.FinalAccuracy, q.Target)
		}
		rep.Runs = append(rep.Runs, run)
		metrics = append(metrics, m)
	}
	if len(files) != bench.Runs {
		rep.Reasons = append(rep.Reasons, d5list.Reason{Code: CodeRunCount, File: dir,
			Message: fmt.Sprintf("%s needs %d runs; the folder has %d (scored anyway)", rep.Benchmark, bench.Runs, len(files))})
	}
	rep.Score = d5list.OlympicScore(metrics, d5list.MetricTimeToTrain, d5list.LowerIsBetter)
	if !rep.Score.Valid && rep.Score.Note != "" {
		rep.Reasons = append(rep.Reasons, d5list.Reason{Code: CodeTooManyUnconverged, File: dir, Message: rep.Score.Note})
	}
	return rep, nil
}

func lastEvalLine(evs []mllog.Event, metric string, fallback int) int {
	for i := len(evs) - 1; i >= 0; i-- {
		if evs[i].Key == metric {
			return evs[i].Line
		}
	}
	return fallback
}
