package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
)

// stepsSectionName names the step audit's section of a run's audit.
const stepsSectionName = "training stretches"

// stepsChecks is the file the benchmark's step script reads
// (d5list.StepAudit): the recipe's parts as the competitor fixed them
// before the run (its hyperparameters: a stretch recomputed with a step
// size of the run's choosing would prove nothing) and the stretches to
// recompute.
type stepsChecks struct {
	Stretches int            `json:"stretches"`
	Fixed     map[string]any `json:"fixed"`
	Mutable   map[string]any `json:"mutable"`
	Checks    []stepCheck    `json:"checks"`
}

// stepCheck is one stretch to recompute: from Before (nil: the initial
// state the seed makes) to After, and for a run's last stretch the Model
// it handed to the evaluation, which must hold After's weights.
type stepCheck struct {
	Seed    int64   `json:"seed"`
	Stretch int     `json:"stretch"`
	Before  *string `json:"before"`
	After   string  `json:"after"`
	Model   *string `json:"model"`
}

// checkSteps runs the benchmark's step script once for all the stretches
// the job's runs' windows drew, in the job's sandbox on the runner's own
// /usr once its runs are over, off every run's clock, and adds to each
// run's audit a section of the stretches it checked and a failure for
// each run whose checks do not all hold. An error is the runner's own.
func (p *Process) checkSteps(ctx context.Context, spec d5list.JobSpec, job string, pj *processJob, logs []d5list.RunLog) error {
	st := spec.Benchmark.Verify.Steps
	if !pj.ownLaunch.started {
		return errors.New("no run of the job was started, so there is no sandbox to check its steps in")
	}
	ctl := filepath.Join(job, "ctl")
	in := filepath.ToSlash(ctl)
	if p.bwrap != "" {
		in = sandboxLayout.ctl
	}
	// give hands the script a file of the runner's under a name of the
	// control folder, which the sandbox sees, once however often asked.
	given := map[string]string{}
	give := func(file, name string) (*string, error) {
		if s, ok := given[name]; ok {
			return &s, nil
		}
		if err := os.Link(file, filepath.Join(ctl, name)); err != nil {
			return nil, err
		}
		given[name] = path.Join(in, name)
		s := given[name]
		return &s, nil
	}
	type owner struct {
		audit   *d5list.Audit
		stretch int
	}
	var checks []stepCheck
	var owners []owner
	for _, l := range logs {
		h, ok := pj.steps[l.Index]
		if !ok || l.Clock == nil {
			continue
		}
		if l.Clock.Audit == nil {
			l.Clock.Audit = &d5list.Audit{}
		}
		a := l.Clock.Audit
		a.Sections = append(a.Sections, d5list.AuditSection{Name: stepsSectionName, Calls: st.Stretches, Checked: []int{}})
		if h.fault != nil {
			a.Failures = append(a.Failures, *h.fault)
			continue
		}
		prefix := "state-" + strconv.Itoa(l.Index) + "-"
		for _, s := range h.drawn {
			c := stepCheck{Seed: h.seed, Stretch: s}
			after, err := give(h.states[s], prefix+strconv.Itoa(s))
			if err != nil {
				return err
			}
			c.After = *after
			if s > 1 {
				if c.Before, err = give(h.states[s-1], prefix+strconv.Itoa(s-1)); err != nil {
					return err
				}
			}
			if m, ok := pj.models[l.Index]; s == st.Stretches && ok && m.fault == nil {
				if c.Model, err = give(m.path, "state-model-"+strconv.Itoa(l.Index)); err != nil {
					return err
				}
			}
			checks, owners = append(checks, c), append(owners, owner{a, s})
		}
	}
	if len(checks) == 0 {
		return nil
	}
	answers, cpu, err := p.runSteps(ctx, spec, pj, ctl, in, stepsChecks{Stretches: st.Stretches, Fixed: spec.Recipe.Fixed, Mutable: spec.Recipe.Mutable, Checks: checks})
	if err != nil {
		return fmt.Errorf("checking the runs' training steps: %w", err)
	}
	// Each run's audit is charged its share of the checks: a fresh run's
	// many stretches cost more than a claimed run's first and last.
	for _, o := range owners {
		o.audit.CPUS += cpu / float64(len(owners))
	}
	failed := map[*d5list.Audit]bool{}
	for k, o := range owners {
		sec := &o.audit.Sections[len(o.audit.Sections)-1]
		ans := answers[k]
		if ans.fault == nil {
			sec.Checked = append(sec.Checked, o.stretch)
			sec.MaxRelError = max(sec.MaxRelError, ans.value)
			if ans.value <= st.ErrorTolerance() {
				continue
			}
			ans.fault = &d5list.Reason{Code: d5list.AuditMismatch, Message: auditMessage(
				"stretch %d of its %d: its state at the stretch's end is %.3g of the stretch's change away from the benchmark's recomputation of it (tolerance %g): steps skipped, cut short or not the recipe's",
				o.stretch, st.Stretches, ans.value, st.ErrorTolerance())}
		}
		// One failure a run: its first stretch that does not hold.
		if !failed[o.audit] {
			failed[o.audit] = true
			f := *ans.fault
			if !strings.HasPrefix(f.Message, "stretch ") {
				f.Message = auditMessage("stretch %d of its %d: %s", o.stretch, st.Stretches, f.Message)
			}
			o.audit.Failures = append(o.audit.Failures, f)
		}
	}
	return nil
}

// scriptAnswer is a number a benchmark's script answered for one of the
// things it was given, or why it gave none.
type scriptAnswer struct {
	value float64
	fault *d5list.Reason
}

// runSteps writes the checks and the script into the control folder, runs
// the script, and reads its answer for each check.
func (p *Process) runSteps(ctx context.Context, spec d5list.JobSpec, pj *processJob, ctl, in string, file stepsChecks) ([]scriptAnswer, float64, error) {
	st := spec.Benchmark.Verify.Steps
	data, err := json.Marshal(file)
	if err != nil {
		return nil, 0, err
	}
	if err := os.WriteFile(filepath.Join(ctl, stepsChecksName), data, 0o644); err != nil {
		return nil, 0, err
	}
	if err := os.WriteFile(filepath.Join(ctl, stepsScriptName), []byte(st.Script), 0o644); err != nil {
		return nil, 0, err
	}
	argv := []string{"python3", "-I", path.Join(in, stepsScriptName), path.Join(in, stepsChecksName)}
	n := len(file.Checks)
	lines, cpu, fault := p.runScript(ctx, spec, pj, argv, st.TimeLimit(), n,
		scriptTask{name: "step audit", work: "recompute the drawn stretches", answer: `{"error": E}`, units: "stretches drawn"})
	if fault != nil {
		answers := make([]scriptAnswer, n)
		for k := range answers {
			answers[k].fault = fault
		}
		return answers, cpu, nil
	}
	answers := make([]scriptAnswer, n)
	for k, l := range lines {
		answers[k] = stepError(l)
	}
	return answers, cpu, nil
}

// stepError reads the step script's answer for one stretch: {"error": E},
// E zero or more. A NaN or an infinity is a non-finite error: a state no
// recomputation can be compared with, never a stretch in doubt.
func stepError(line string) scriptAnswer {
	v, lit, ok := scriptNumber(line, "error")
	switch {
	case !ok:
		return scriptAnswer{fault: &d5list.Reason{Code: d5list.AuditMismatch, Message: auditMessage(`the benchmark's step audit answered %.80q, not {"error": E}`, line)}}
	case lit != "":
		return scriptAnswer{fault: &d5list.Reason{Code: d5list.AuditNonFinite, Message: auditMessage("the benchmark's step audit found its error %s: the runner judges no NaN or infinity", lit)}}
	case v < 0 || math.IsNaN(v):
		return scriptAnswer{fault: &d5list.Reason{Code: d5list.AuditMismatch, Message: auditMessage("the benchmark's step audit answered an error of %v: an error is zero or more", v)}}
	}
	return scriptAnswer{value: v}
}
