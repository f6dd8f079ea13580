package runner

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
)

// A run of a benchmark with an evaluation (VerifyPolicy.Evaluation) hands
// the runner its final model through one more FIFO of its control folder,
// $D5_MODEL, before it logs run_stop. The runner keeps the bytes in a file
// of its own, out of the sandbox's sight, and after the job's runs scores
// each model with the benchmark's evaluation: the accuracy the run logged
// is then the run's claim, and the runner's is the measurement.
//
// What reaches the FIFO after run_stop was written after the window closed
// and is no model of the window's work. The runner tells it exactly: when
// the run_stop line arrives it writes a mark of its own, random and never
// shown to the run, into the FIFO through its own write side. A pipe keeps
// the order of what is written into it, and a write this short is never
// split, so every byte the run wrote before run_stop comes before the mark
// and every byte after it was written once the runner had seen run_stop.

// modelSink is where a window writes the model its run hands over, and the
// most it keeps. The kept models are on the runner's disk, not in a work
// area of the job's: they count against the job's disk cap (DiskBytes)
// together, as one more place its runs write, so that a job's models fill
// no more of the runner's disk than any one of its work areas may take.
type modelSink struct {
	path string
	max  int64 // what the benchmark's evaluation takes
	disk int64 // the job's disk cap; negative: none
	room int64 // what the cap leaves after the job's earlier models
}

// limit is the most the sink keeps: what the evaluation takes, and no
// more than the job's disk cap leaves.
func (s *modelSink) limit() int64 {
	if s.disk >= 0 {
		return min(s.max, s.room)
	}
	return s.max
}

// modelReadBuffer is the most one read of the model FIFO takes.
const modelReadBuffer = 64 << 10

// modelIntake is what a window took of its run's model; guarded by
// window.mu.
type modelIntake struct {
	path   string
	mark   []byte // written into the FIFO when run_stop arrives
	marked bool   // the mark was written
	kept   int64  // the model's bytes: those before the mark
	late   int64  // bytes after the mark
	found  bool   // the reader met the mark
	over   bool   // the run wrote more than the sink keeps
	err    error  // the runner could not keep it or mark its end
}

// startModel starts keeping what the run writes into $D5_MODEL in sink.
func (w *window) startModel(sink *modelSink) error {
	mark := make([]byte, 32)
	if _, err := rand.Read(mark); err != nil {
		return err
	}
	f, err := os.OpenFile(sink.path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	w.modelIn.path, w.modelIn.mark = sink.path, mark
	go w.readModel(f, sink.limit(), mark)
	return nil
}

// markModelEnd writes the mark after which nothing counts; w.mu is held.
// The reader drains the FIFO all along, so the write does not wait long.
func (w *window) markModelEnd() {
	if _, err := w.modelW.Write(w.modelIn.mark); err != nil {
		w.modelIn.err = fmt.Errorf("marking the model's end at run_stop: %w", err)
		return
	}
	w.modelIn.marked = true
}

// readModel copies the FIFO into f up to the mark and up to max bytes,
// counts what comes after the mark, and drains it all so that the run
// never blocks on it.
func (w *window) readModel(f *os.File, max int64, mark []byte) {
	defer close(w.modelDone)
	buf := make([]byte, modelReadBuffer)
	var held []byte // the last bytes read, which may begin the mark
	var kept, late int64
	var found, over bool
	var werr error
	keep := func(b []byte) {
		switch {
		case kept+int64(len(b)) > max:
			over = true
		case werr == nil && len(b) > 0:
			_, werr = f.Write(b)
			kept += int64(len(b))
		}
	}
	for {
		n, err := w.modelR.Read(buf)
		switch {
		case n == 0:
		case found:
			late += int64(n)
		default:
			held = append(held, buf[:n]...)
			if i := bytes.Index(held, mark); i >= 0 {
				keep(held[:i])
				late += int64(len(held) - i - len(mark))
				found, held = true, nil
			} else if cut := len(held) - (len(mark) - 1); cut > 0 {
				// Only the last bytes, fewer than the mark's, can begin it.
				keep(held[:cut])
				held = append(held[:0], held[cut:]...)
			}
		}
		if err != nil {
			break
		}
	}
	if !found {
		keep(held)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	w.mu.Lock()
	w.modelIn.kept, w.modelIn.late, w.modelIn.found, w.modelIn.over = kept, late, found, over
	if w.modelIn.err == nil && werr != nil {
		w.modelIn.err = fmt.Errorf("keeping the run's model: %w", werr)
	}
	w.mu.Unlock()
}

// modelHandover is what a run handed over for the evaluation: the file
// that holds it and its size, or the audit failure that takes its place.
type modelHandover struct {
	path  string
	size  int64
	fault *d5list.Reason
}

// handover is what the window took of the run's model, once closed; an
// error where the runner could not keep it (its own failure, not the
// run's).
func (w *window) handover(sink *modelSink) (modelHandover, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	in := &w.modelIn
	if in.err != nil {
		return modelHandover{}, in.err
	}
	fault := func(code, format string, args ...any) (modelHandover, error) {
		return modelHandover{fault: &d5list.Reason{Code: code, Message: auditMessage(format, args...)}}, nil
	}
	switch {
	case !in.marked:
		return fault(d5list.AuditMissing, "the run logged no run_stop, so no model it handed over is the one its window ended with")
	case !in.found:
		return fault(d5list.AuditMissing, "the model the run wrote into $D5_MODEL did not end within %s of the run's end", windowDrain)
	case in.late > 0:
		return fault(d5list.AuditMissing, "%d bytes of its model reached $D5_MODEL after its run_stop, so they were written after the window closed: a run writes its model before it logs run_stop", in.late)
	case in.over && sink.limit() < sink.max:
		return fault(d5list.AuditMissing, "its model ($D5_MODEL) would pass the job's disk cap of %d bytes (the runner's --job-disk), which the models of the job's runs count against together: %d bytes of it were left", sink.disk, sink.room)
	case in.over:
		return fault(d5list.AuditMissing, "its model ($D5_MODEL) is larger than the %d bytes the benchmark's evaluation takes", sink.max)
	case in.kept == 0:
		return fault(d5list.AuditMissing, "it wrote no model into $D5_MODEL before its run_stop: the runner scores the model a run ends with itself")
	}
	return modelHandover{path: in.path, size: in.kept}, nil
}

// Where the evaluation finds its script and the models in the job's
// last control folder, which the sandbox sees read-only; written there
// only once the job's runs are over.
const (
	evaluationScriptName = "evaluate.py"
	evaluationModelName  = "evaluated-model-"
	// maxEvaluationOutput bounds what the runner keeps of an evaluation's
	// standard output: its answer is a short line a model.
	maxEvaluationOutput = 64 << 10
)

// evaluateModels scores the models the job's runs handed over with the
// benchmark's evaluation, all in one process (its interpreter and imports,
// seconds of CPU, paid once a job) in the job's sandbox once its runs are
// over, off every run's clock, and gives each run's clock the result as
// its audit. An error is the runner's own failure.
func (p *Process) evaluateModels(ctx context.Context, spec d5list.JobSpec, job string, pj *processJob, logs []d5list.RunLog) error {
	audits := map[int]*d5list.Audit{}
	var scored []int // the runs whose models the evaluation is given, in order
	var models []string
	for _, l := range logs {
		h, ok := pj.models[l.Index]
		if !ok || l.Clock == nil {
			continue
		}
		a := &d5list.Audit{Sections: []d5list.AuditSection{{Name: "evaluation", Calls: 1}}}
		audits[l.Index], l.Clock.Audit = a, a
		if h.fault != nil {
			a.Failures = []d5list.Reason{*h.fault}
			continue
		}
		scored, models = append(scored, l.Index), append(models, h.path)
	}
	if len(models) == 0 {
		return nil
	}
	answers, cpu, err := p.evaluate(ctx, spec, job, pj, models)
	if err != nil {
		return fmt.Errorf("evaluating the runs' models: %w", err)
	}
	for k, i := range scored {
		a := audits[i]
		a.CPUS = cpu / float64(len(scored))
		if r := answers[k].fault; r != nil {
			a.Failures = append(a.Failures, *r)
			continue
		}
		acc := answers[k].accuracy
		a.Sections[0].Checked = []int{0}
		a.Sections[0].Accuracy = &acc
	}
	return nil
}

// evaluationAnswer is the evaluation's accuracy of one model, or why it
// gave none.
type evaluationAnswer struct {
	accuracy float64
	fault    *d5list.Reason
}

// evaluate runs the benchmark's evaluation on the models, in the sandbox
// of the job's runs (the runner's own /usr, never a recipe's image), and
// returns its answer for each and the CPU time it took.
func (p *Process) evaluate(ctx context.Context, spec d5list.JobSpec, job string, pj *processJob, models []string) ([]evaluationAnswer, float64, error) {
	e := spec.Benchmark.Verify.Evaluation
	if !pj.ownLaunch.started {
		return nil, 0, errors.New("no run of the job was started, so there is no sandbox to evaluate in")
	}
	ctl := filepath.Join(job, "ctl")
	if err := os.WriteFile(filepath.Join(ctl, evaluationScriptName), []byte(e.Script), 0o644); err != nil {
		return nil, 0, err
	}
	in := filepath.ToSlash(ctl)
	if p.bwrap != "" {
		in = sandboxLayout.ctl
	}
	argv := []string{"python3", "-I", path.Join(in, evaluationScriptName)}
	for k, m := range models {
		name := evaluationModelName + strconv.Itoa(k)
		if err := os.Link(m, filepath.Join(ctl, name)); err != nil {
			return nil, 0, err
		}
		argv = append(argv, path.Join(in, name))
	}
	lines, cpu, fault := p.runScript(ctx, spec, pj, argv, e.TimeLimit(), len(models),
		scriptTask{name: "evaluation", work: "score the models the job's runs handed over", answer: `{"accuracy": A}`, units: "models the job's runs handed over"})
	if fault != nil {
		answers := make([]evaluationAnswer, len(models))
		for k := range answers {
			answers[k].fault = fault
		}
		return answers, cpu, nil
	}
	answers := make([]evaluationAnswer, len(models))
	for k, l := range lines {
		answers[k] = evaluationAccuracy(l)
	}
	return answers, cpu, nil
}

// evaluationAccuracy reads the evaluation's answer for one model, a JSON
// line: {"accuracy": A}, A a fraction between 0 and 1; a NaN or an
// infinity is a non-finite accuracy, never one left undecided.
func evaluationAccuracy(line string) evaluationAnswer {
	fault := func(code, format string, args ...any) evaluationAnswer {
		return evaluationAnswer{fault: &d5list.Reason{Code: code, Message: auditMessage(format, args...)}}
	}
	acc, lit, ok := scriptNumber(line, "accuracy")
	switch {
	case !ok:
		return fault(d5list.AuditMismatch, `the benchmark's evaluation answered %.80q for the model it handed over, not {"accuracy": A}`, line)
	case lit != "":
		return fault(d5list.AuditNonFinite, "the benchmark's evaluation scored the model it handed over as %s: the runner judges no NaN or infinity", lit)
	case acc < 0 || acc > 1:
		return fault(d5list.AuditMismatch, "the benchmark's evaluation scored the model it handed over as %v: an accuracy is a fraction, between 0 and 1", acc)
	}
	return evaluationAnswer{accuracy: acc}
}

// scriptNumber reads the number field of a script's answer, a JSON
// object on one line. Python writes a NaN or an infinity as NaN, Infinity
// or -Infinity, which JSON does not have: a field written so is returned
// as its literal, never left undecided; one elsewhere in the line is no
// business of the answer's. ok is false where the line holds no such
// field or it is no number.
func scriptNumber(line, field string) (v float64, nonFinite string, ok bool) {
	text, marker := markNonFinite(line)
	var fields map[string]json.RawMessage
	if err := json.Unmarshal([]byte(text), &fields); err != nil {
		return 0, "", false
	}
	raw, found := fields[field]
	if !found {
		return 0, "", false
	}
	if lit, isLit := strings.CutPrefix(string(raw), `"`+marker); isLit {
		return 0, strings.TrimSuffix(lit, `"`), true
	}
	var n *float64
	if err := json.Unmarshal(raw, &n); err != nil || n == nil {
		return 0, "", false
	}
	return *n, "", true
}

// scriptTask names what a benchmark's script is asked, for its failures.
type scriptTask struct {
	name   string // "evaluation"
	work   string // what it does: "score the models ..."
	answer string // its answer's form: {"accuracy": A}
	units  string // what it answers for: "models ..."
}

// runScript runs one of the benchmark's scripts (argv) in the sandbox of
// the job's runs on the runner's own /usr, within limit, and returns the
// last n JSON lines it printed, one a thing it was given, and the CPU time
// it took; or, where it failed, timed out or printed fewer, the audit
// failure that stands for every answer.
func (p *Process) runScript(ctx context.Context, spec d5list.JobSpec, pj *processJob, argv []string, limit time.Duration, n int, task scriptTask) ([]string, float64, *d5list.Reason) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	out := stdoutLines{max: maxEvaluationOutput}
	// The last line a script that fails writes is its error (a Python
	// exception's): the one the finding quotes.
	last := newTail(1)
	cpu, err := p.runTrusted(ctx, spec, pj.ownLaunch, argv, last, out.keep)
	fault := func(format string, args ...any) ([]string, float64, *d5list.Reason) {
		return nil, cpu, &d5list.Reason{Code: d5list.AuditMismatch, Message: auditMessage(format, args...)}
	}
	switch {
	case err != nil && ctx.Err() != nil:
		return fault("the benchmark's %s did not %s within %s", task.name, task.work, limit)
	case err != nil:
		return fault("the benchmark's %s could not %s (%v): %s", task.name, task.work, err, strings.Join(last.lines, ""))
	}
	var lines []string
	for _, l := range out.lines {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, "{") {
			lines = append(lines, l)
		}
	}
	if len(lines) < n {
		return fault("the benchmark's %s printed %d %s lines for the %d %s, one each", task.name, len(lines), task.answer, n, task.units)
	}
	return lines[len(lines)-n:], cpu, nil
}

// nonFiniteAt is the literal Python's json module writes for a float
// JSON has no number for that s begins with, or "".
func nonFiniteAt(s string) string {
	for _, lit := range []string{"-Infinity", "Infinity", "NaN"} {
		if strings.HasPrefix(s, lit) {
			return lit
		}
	}
	return ""
}

// markNonFinite returns line with each of Python's non-finite literals
// outside its strings made a JSON string, marker followed by the literal,
// where marker occurs nowhere in line: a value that begins with it was one
// of them, and no string of the line can pass for one.
func markNonFinite(line string) (string, string) {
	marker := "d5-non-finite:"
	for strings.Contains(line, marker) {
		marker = "~" + marker
	}
	var b strings.Builder
	inString, escaped := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case inString && escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		case !inString:
			if lit := nonFiniteAt(line[i:]); lit != "" {
				b.WriteString(`"` + marker + lit + `"`)
				i += len(lit) - 1
				continue
			}
		}
		b.WriteByte(c)
	}
	return b.String(), marker
}

// maxAuditMessage is the longest failure message the portal takes in a
// runner's report of an audit (portal.checkAudit).
const maxAuditMessage = 300

// auditMessage is an audit failure's sentence, cut to what the portal
// takes: an evaluation's error line is the script's to make long.
func auditMessage(format string, args ...any) string {
	m := fmt.Sprintf(format, args...)
	if len(m) <= maxAuditMessage {
		return m
	}
	return cutUTF8(m, maxAuditMessage-len(" [cut]")) + " [cut]"
}
