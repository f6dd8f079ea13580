package templates

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/verifier"
)

// VerdictSummary explains a final status in one or two plain sentences, so
// a reader need not decode the findings table to know what happened.
// Pending submissions have no verdict yet and get "".
func VerdictSummary(sub *d5list.Submission, bench *d5list.Benchmark) string {
	metric := AxisName(bench.Ranking.Metric, bench.Ranking.Unit)
	first := ""
	if len(sub.Reasons) > 0 {
		first = reasonSentence(sub.Reasons[0])
	}
	more := ""
	if n := len(sub.Reasons) - 1; n > 0 {
		more = fmt.Sprintf(" (and %d more finding%s below)", n, plural(n))
	}
	switch sub.Status {
	case d5list.StatusVerified:
		runs := bench.Runs
		if sub.Measured != nil && len(sub.Measured.Runs) > 0 {
			runs = len(sub.Measured.Runs)
		}
		s := fmt.Sprintf("The portal re-ran the %d runs with the submitted seeds and the re-run agrees with the claim: %s claimed %s, measured %s.",
			runs, metric, scoreValue(sub.Claimed, bench.Ranking.Unit), scoreValue(sub.Measured, bench.Ranking.Unit))
		if len(sub.Reasons) > 0 {
			s += " An organiser accepted it after review; the findings below stay on record."
		}
		return s
	case d5list.StatusDiscrepancy:
		return "The portal's re-run does not support the claim: " + first + more + ". It is not ranked unless an organiser accepts it."
	case d5list.StatusNeedsReview:
		return "The re-run could not settle every claim: " + first + more + ". An organiser will decide; until then it is not ranked."
	case d5list.StatusFailed:
		return "The verification re-run broke: " + first + more + ". This does not count against the submission; an organiser can run it again."
	case d5list.StatusRejected:
		return "The submission was refused: " + first + more + "."
	}
	return ""
}

// reasonSentence is a reason's message with the run it names, without a
// trailing full stop (the caller ends the sentence).
func reasonSentence(r d5list.Reason) string {
	msg := strings.TrimRight(strings.TrimSpace(r.Message), ".")
	if msg == "" {
		msg = r.Code
	}
	if r.Run != nil && !strings.Contains(msg, fmt.Sprintf("run %d", *r.Run)) {
		msg = fmt.Sprintf("run %d: %s", *r.Run, msg)
	}
	return msg
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// findingValues shows a finding's claimed and measured numbers with what
// they measure and their unit ("time to train: claimed 12.50 s, measured
// 15.10 s"), as far as the finding's code says; without a benchmark (a
// refused upload) the bare numbers.
func findingValues(r d5list.Reason, bench *d5list.Benchmark) string {
	if bench == nil {
		return reasonValues(r)
	}
	if r.Claimed == nil && r.Measured == nil {
		return ""
	}
	quantity, unit := verifier.FindingQuantity(r.Code, bench)
	var parts []string
	if r.Claimed != nil {
		parts = append(parts, "claimed "+findingNumber(*r.Claimed, unit))
	}
	if r.Measured != nil {
		parts = append(parts, "measured "+findingNumber(*r.Measured, unit))
	}
	s := strings.Join(parts, ", ")
	if quantity != "" {
		s = MetricLabel(quantity) + ": " + s
	}
	return s
}

// findingNumber prints a whole number (a seed, an epoch count) whole and
// any other as the page prints values, with its unit.
func findingNumber(v float64, unit string) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		s := strconv.FormatFloat(v, 'f', -1, 64)
		if unit != "" {
			s += " " + unit
		}
		return s
	}
	return FormatValue(v, unit)
}
