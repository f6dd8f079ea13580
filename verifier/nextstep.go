package verifier

import (
	d5list "github.com/deep500/d5list"
)

// NextStep says, in a sentence or two, what the competitor can do about
// a submission's verdict, from the first kind of finding that explains it:
// a verdict is only useful if it says what to fix. It is one step: where
// there is nothing to fix, and the competitor may contest the verdict
// (discrepancy, needs review, failed), asking the organisers for a review,
// since a finding can be the portal's mistake. It is "" for a verified
// submission, one still on its way, and a rejection with no advice.
func NextStep(status d5list.Status, reasons []d5list.Reason) string {
	if status == d5list.StatusVerified || !status.Final() {
		return ""
	}
	if step := nextStep(status, reasons); step != "" {
		return step
	}
	if d5list.ActionAppeal.Allowed(status) {
		return AskForReview
	}
	return ""
}

// AskForReview is the next step of a verdict its competitor may contest
// and has nothing to fix: the entry's page has the form (id "appeal"),
// and the message lands beside the entry in the organisers' review queue.
const AskForReview = "If you think the verdict is wrong, ask the organisers for a review with the form below: " +
	"say what they should look at; their decision shows on this page."

func nextStep(status d5list.Status, reasons []d5list.Reason) string {
	has := func(codes ...string) bool {
		for _, r := range reasons {
			for _, c := range codes {
				if r.Code == c {
					return true
				}
			}
		}
		return false
	}
	switch {
	case status == d5list.StatusRejected:
		return "An organiser rejected it, for the reason listed under Findings on this page. Fix what it names, run `d5list check` and submit a new entry."
	case has("rerun_failed"):
		return "The portal could not re-run your recipe: its reason is listed under Findings, and your log tail (visible to you) shows where the run stopped. " +
			"Run `d5list run` on your folder, which runs it the way a runner does, fix what breaks, and submit again."
	case has(d5list.BreachGateNotOpened, d5list.BreachWindowMissing, d5list.BreachWindowRepeated):
		return "Your code broke its timed window on the runner. Take the run's seed from $D5_GATE when you are ready to start timing (opening it starts the runner's clock), " +
			"then write run_start, your run's events and one run_stop into $D5_RESULT_LOG, once each, as the examples do. " +
			"`d5list run` runs your code the way a runner does and stops on the same breach, so you can check before you submit again."
	case has(CodeSeedMismatch, CodeRunMissing, CodeRunExtra, CodeRunDuplicate, CodeFreshSeedIgnored):
		return "The re-run did not run the seeds it was given: log each run's `seed` event with the seed $D5_GATE hands over, and use that seed for everything random, " +
			"regenerate the logs with `d5list run`, and submit again."
	case has(CodeFreshNotConverged):
		return "With seeds the portal drew, your recipe reached the quality target less often than your logs do. Check that it converges for any seed, " +
			"not only the seeds you ran (`d5list run` draws new ones each time), and submit again."
	case has(CodeAccuracyMismatch, CodeFinalAccuracy, CodeEpochsToTarget, CodeConvergenceMismatch, CodeEpochMissing, CodeEpochExtra,
		CodeMetricMismatch, CodeMetricMissing, CodeClaimTargetNotMet):
		step := "The re-run with your seeds did not give your logs' values. Make each run deterministic for its seed (seed every random generator, " +
			"use deterministic kernels, fix the thread count), regenerate the logs with `d5list run`, check that two runs with one seed agree, and submit again."
		if has(CodeEnvironmentDiffers) {
			step += " The findings name what differed between your machine and the runner."
		}
		return step
	case has(CodeTimingMismatch, CodeRunTimingMismatch, CodeEpochTimeMismatch):
		return "Your logs claim faster times than the portal measured on the hardware you declared. Measure again on that hardware, with nothing else running, " +
			"and submit the new logs; the board ranks the portal's measurement in any case."
	case has(CodeTimingNotReproduced):
		return "No runner of the hardware you declared could re-measure the times, so they are shown as claimed, not re-measured. " +
			"Declare the hardware you ran on exactly (system.json's host_processor_model_name, accelerators), or wait for an organiser's decision."
	case has(CodeRerunMuchFaster, CodeTimingTooNoisy):
		return "The timing needs an organiser's eye; the accuracies were reproduced. You will see the decision on this page."
	case status == d5list.StatusNeedsReview:
		return "An organiser will look at it; the decision will show on this page."
	}
	return ""
}

// FindingQuantity names what a finding's claimed and measured numbers are
// (a metric's name is returned as its MLLOG key) and their unit, so
// that a page can print "time to train: claimed 12.5 s, measured 15.1 s"
// rather than bare numbers. Both are "" where the code does not say.
func FindingQuantity(code string, bench *d5list.Benchmark) (quantity, unit string) {
	switch code {
	case CodeSeedMismatch:
		return "seed", ""
	case CodeAccuracyMismatch, CodeFinalAccuracy, CodeEpochMissing, CodeEpochExtra, CodeConvergenceMismatch, CodeConvergenceBorder:
		if bench == nil {
			return "", ""
		}
		return bench.Quality.Metric, ""
	case CodeEpochsToTarget:
		return "epochs to target", "epochs"
	case CodeEvalTimeOrder, CodeEvalAfterStop:
		return "evaluation time since run start", "s"
	case CodeEpochTimeMismatch:
		return "median time between evaluations", "s"
	case CodeTimingMismatch, CodeRunTimingMismatch, CodeRerunMuchFaster:
		// The timing checks compare each timed metric; a finding names
		// which one only in its message, so the unit is known only where
		// the benchmark times one.
		if bench == nil {
			return "", ""
		}
		timed := timedMetricsOf(bench)
		if len(timed) > 1 {
			return "", ""
		}
		return timed[0], timedUnit(timed[0])
	}
	return "", ""
}

// timedUnit is the unit of a timed metric, as findings and timedValue
// print it.
func timedUnit(metric string) string {
	switch metric {
	case d5list.MetricTimeToTrain, d5list.MetricTTA:
		return "s"
	case d5list.MetricOpTime, d5list.MetricLatencyP50, d5list.MetricLatencyP99:
		return "ms"
	case d5list.MetricThroughput:
		return "samples/s"
	}
	return ""
}
