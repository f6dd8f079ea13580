package templates

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/verifier"
)

// VerdictSummary explains a final status in one or two plain sentences, so
// a reader need not decode the findings table to know what happened: it
// leads with the decisive finding (decisiveFinding), in plain words where
// the finding's own message is a measurement's working. Pending
// submissions have no verdict yet and get "".
func VerdictSummary(sub *d5list.Submission, bench *d5list.Benchmark) string {
	lead := leadSentence(sub.Reasons, bench)
	switch sub.Status {
	case d5list.StatusVerified:
		label := RankedLabel(bench)
		claimed, measured := scoreValue(sub.Claimed, bench.Ranking.Unit), scoreValue(sub.Measured, bench.Ranking.Unit)
		reran := reranRuns(sub, bench)
		if sub.Accepted() {
			return fmt.Sprintf("Verified after review: the portal re-ran the recipe (%s) and measured the %s at %s against the claimed %s; it found differences from the claim, and an organiser reviewed them and accepted the entry. The findings below stay on record.", reran, label, measured, claimed)
		}
		s := fmt.Sprintf("Verified: the portal re-ran the recipe (%s), every check held, and it ranks its own measurement of the %s, %s (the claim said %s).", reran, label, measured, claimed)
		if slowerThanClaimed(sub, bench) {
			s += " The re-run was slower than the claim; the board uses the portal's value, not the claim's."
		}
		return s
	case d5list.StatusDiscrepancy:
		return "The portal's re-run does not support the claim: " + lead + ". It is not ranked unless an organiser accepts it."
	case d5list.StatusNeedsReview:
		return "The re-run could not settle every claim: " + lead + ". An organiser will decide; until then it is not ranked."
	case d5list.StatusFailed:
		return "The verification re-run broke: " + lead + ". This does not count against the submission; an organiser can run it again."
	case d5list.StatusRejected:
		return "The submission was refused: " + lead + "."
	}
	return ""
}

// leadSentence is the decisive finding as a clause, and how many more
// findings of its kind and of others the list below holds.
func leadSentence(reasons []d5list.Reason, bench *d5list.Benchmark) string {
	if len(reasons) == 0 {
		return "no finding was recorded"
	}
	lead := decisiveFinding(reasons)
	s := findingHeadline(lead, bench)
	same := 0
	for _, r := range reasons {
		if r.Code == lead.Code {
			same++
		}
	}
	switch others := len(reasons) - same; {
	case same > 1 && others > 0:
		s += fmt.Sprintf(" (one of %d such findings below, with %d other%s)", same, others, plural(others))
	case same > 1:
		s += fmt.Sprintf(" (one of %d such findings below)", same)
	case others > 0:
		s += fmt.Sprintf(" (and %d more finding%s below)", others, plural(others))
	}
	return s
}

// findingWeight orders the kinds of finding by how much they decide a
// verdict, the most first: runs the re-run could not pair with the claim
// or whose timed window the code broke, then results it did not reproduce
// (which no timing can excuse), then
// times the claim beat, then what an organiser must weigh, and last what
// only explains the others (what differed between the machines).
func findingWeight(code string) int {
	switch code {
	case verifier.CodeSeedMismatch, verifier.CodeRunMissing, verifier.CodeRunExtra, verifier.CodeRunDuplicate,
		verifier.CodeNoMeasurement, verifier.CodeNoClaim, verifier.CodeFreshSeedIgnored,
		d5list.BreachGateNotOpened, d5list.BreachWindowMissing, d5list.BreachWindowRepeated:
		return 0
	case verifier.CodeTimingMismatch, verifier.CodeRunTimingMismatch, verifier.CodeEpochTimeMismatch:
		return 2
	case verifier.CodeRerunMuchFaster, verifier.CodeTimingTooNoisy, verifier.CodeConvergenceBorder,
		verifier.CodeTimingNotReproduced, verifier.CodeTimingNotCompared:
		return 3
	case verifier.CodeEnvironmentDiffers:
		return 4
	}
	// Every other finding of a re-run is a result it did not reproduce
	// (accuracies, epochs, an operator's errors), and every finding of a
	// failure or a refusal is its reason.
	return 1
}

// orderedFindings are reasons with the decisive kinds first, in the
// verifier's order (by run, then epoch) within a kind.
func orderedFindings(reasons []d5list.Reason) []d5list.Reason {
	out := slices.Clone(reasons)
	slices.SortStableFunc(out, func(a, b d5list.Reason) int { return findingWeight(a.Code) - findingWeight(b.Code) })
	return out
}

// decisiveFinding is the finding a verdict turns on: a tampered entry's
// accuracy that the re-run did not reproduce, not the timing finding the
// verifier lists first because it names no run.
func decisiveFinding(reasons []d5list.Reason) d5list.Reason {
	if len(reasons) == 0 {
		return d5list.Reason{}
	}
	return orderedFindings(reasons)[0]
}

// findingHeadline is a finding as a verdict's headline: its plain words
// where it has some (plainFinding), with its figures, else its message.
func findingHeadline(r d5list.Reason, bench *d5list.Benchmark) string {
	plain := plainFinding(r)
	if plain == "" {
		return reasonSentence(r)
	}
	if v := findingValues(r, bench); v != "" {
		plain += " (" + v + ")"
	}
	if r.Run != nil {
		plain = fmt.Sprintf("run %d: %s", *r.Run, plain)
	}
	return plain
}

// plainFinding says in plain words what a timing finding found, for
// readers who do not want the verifier's working (its ratios, bounds and
// spreads), which the findings list keeps folded under it; "" where the
// finding's message is plain already.
func plainFinding(r d5list.Reason) string {
	switch r.Code {
	case verifier.CodeTimingMismatch:
		return "the logs claim faster times than the portal measured on the declared hardware"
	case verifier.CodeRunTimingMismatch:
		return "the log claims a faster time than its re-run with the same seed took"
	case verifier.CodeEpochTimeMismatch:
		return "the log's evaluations come faster than the re-run's"
	case verifier.CodeTimingTooNoisy:
		return "the re-run's own times varied too much from run to run to tell whether the claimed times are right"
	case verifier.CodeRerunMuchFaster:
		return "the re-run was much faster than the logs claim, which a run that replays logs instead of training would also be"
	}
	return ""
}

// Finding is one finding as the entry page lists it and the API and the
// CLI give it, so that all three quote the same words and figures: Text
// is its plain words where it has some (plainFinding), else the
// verifier's message; Where its file, run and epoch; Values its claimed
// and measured numbers with what they measure and their unit; Working the
// verifier's message where Text is plain words, which the page folds
// under "How the portal judged it".
type Finding struct {
	Code    string `json:"code"`
	Text    string `json:"text"`
	Where   string `json:"where,omitempty"`
	Values  string `json:"values,omitempty"`
	Working string `json:"working,omitempty"`
}

// Findings are reasons as the entry page lists them, the decisive kinds
// first (orderedFindings); bench may be nil (a refused upload).
func Findings(reasons []d5list.Reason, bench *d5list.Benchmark) []Finding {
	out := make([]Finding, 0, len(reasons))
	for _, r := range orderedFindings(reasons) {
		f := Finding{Code: r.Code, Text: r.Message, Where: reasonWhere(r), Values: findingValues(r, bench)}
		if plain := plainFinding(r); plain != "" {
			f.Text, f.Working = plain, r.Message
		}
		out = append(out, f)
	}
	return out
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
		parts = append(parts, "claimed "+findingNumber(*r.Claimed, quantity, unit))
	}
	if r.Measured != nil {
		parts = append(parts, "measured "+findingNumber(*r.Measured, quantity, unit))
	}
	s := strings.Join(parts, ", ")
	switch quantity {
	case "":
	case bench.Ranking.Metric:
		s = RankedLabel(bench) + ": " + s // as the board names it
	default:
		s = MetricLabel(quantity) + ": " + s
	}
	return s
}

// findingNumber prints a seed whole, an epoch count as a count, and any
// other value as the page prints values of quantity, with its unit: a
// time of 6 s is "6.00 s" here as on the board, not "6 s".
func findingNumber(v float64, quantity, unit string) string {
	switch {
	case quantity == "seed" && v == math.Trunc(v) && math.Abs(v) < 1e15:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case unit == "epochs":
		return leaderboard.FormatCount(v) + " " + unit
	}
	return metricValue(quantity, v, unit)
}

// Reader is who reads an entry's page, as far as what to do about its
// verdict goes: a step meant for the competitor, or a form only they see,
// means nothing to anyone else.
type Reader int

const (
	// Visitor is anyone but the entry's competitor and the organisers.
	Visitor Reader = iota
	// Competitor is the account that uploaded the entry.
	Competitor
	// Organiser is an organiser who did not upload it.
	Organiser
)

// NextStep is the one thing the reader of an entry's page can do about
// its verdict, and where, if it is done on another page or form.
type NextStep struct {
	Text     string
	Link     string
	LinkText string
}

// NextStepFor is the next step of sub's verdict for reader: the
// competitor's is the verifier's advice (verifier.NextStep), an
// organiser's is the decision the review queue waits for, and a visitor
// has none.
func NextStepFor(reader Reader, sub *d5list.Submission) NextStep {
	switch reader {
	case Competitor:
		step := NextStep{Text: verifier.NextStep(sub.Status, sub.Reasons)}
		if step.Text == verifier.AskForReview {
			step.Link, step.LinkText = "#appeal", "Ask the organisers for a review"
		}
		return step
	case Organiser:
		if d5list.ActionAccept.Allowed(sub.Status) {
			return NextStep{Text: "Decide in the review queue: accept it to rank it, reject it with a reason its competitor will read, or run it again.",
				Link: "/console#review-" + i64toa(sub.ID), LinkText: "Open it in the review queue"}
		}
	}
	return NextStep{}
}

// AuditCoverage says how much of the work the runner's audit would catch
// skipped (VerifyPolicy.AuditEscape), beside the verdict: "" for the
// portal's own workloads, which it does not audit because it wrote them.
func AuditCoverage(bench *d5list.Benchmark) string {
	p := bench.Verify.AuditEscape
	share := strconv.FormatFloat(d5list.AuditSkipShare*100, 'f', -1, 64) + " %"
	switch {
	case bench.Workload != "" || p < 0:
		return ""
	case p >= 1 && bench.Verify.Evaluation != nil:
		return "Audit coverage: the model each run ends with. The runner scores every run's final weights itself, with the benchmark's own evaluation on its own copy of the test data, so the accuracy that counts is the runner's; it does not check the training steps, so work skipped that the final model does not show goes unseen."
	case p >= 1:
		return "Audit coverage: none. The runner times this benchmark's runs but does not check their work; the verdict rests on its clock and on the accuracy the runs logged."
	case p == 0:
		return "Audit coverage: every call. The runner checks all the work of the ranked runs."
	case bench.Verify.Steps != nil:
		return fmt.Sprintf("Audit coverage: the model each run ends with, scored by the runner with the benchmark's own evaluation, and stretches of its training steps, recomputed by the runner from the states the run handed over as it trained. An entry whose ranked runs skipped %s of their steps would pass every check of the re-run with probability %s (1 in %s).",
			share, strconv.FormatFloat(p, 'g', 2, 64), strconv.FormatFloat(math.Round(1/p), 'f', 0, 64))
	}
	return fmt.Sprintf("Audit coverage: an entry whose ranked runs skipped %s of their work would pass every check of the re-run with probability %s (1 in %s).",
		share, strconv.FormatFloat(p, 'g', 2, 64), strconv.FormatFloat(math.Round(1/p), 'f', 0, 64))
}

// reranRuns says how many runs the re-run made with the submitted seeds
// and how many with seeds the portal drew.
func reranRuns(sub *d5list.Submission, bench *d5list.Benchmark) string {
	given, fresh := bench.Runs, 0
	if sub.Measured != nil && len(sub.Measured.Runs) > 0 {
		given = 0
		for _, r := range sub.Measured.Runs {
			if r.Fresh {
				fresh++
			} else {
				given++
			}
		}
	}
	s := fmt.Sprintf("%d run%s with the submitted seeds", given, plural(given))
	if fresh > 0 {
		s += fmt.Sprintf(" and %d with seeds it drew", fresh)
	}
	return s
}

// slowerThanClaimed: the portal measured a worse value than the claim by
// more than the benchmark's timing precision.
func slowerThanClaimed(sub *d5list.Submission, bench *d5list.Benchmark) bool {
	if sub.Claimed == nil || sub.Measured == nil || !sub.Claimed.Score.Valid || !sub.Measured.Score.Valid {
		return false
	}
	c, m, p := sub.Claimed.Score.Value, sub.Measured.Score.Value, bench.Verify.Precision()
	if bench.Ranking.Direction == d5list.LowerIsBetter {
		return m > c*(1+p)
	}
	return m < c*(1-p)
}
