package verifier

import (
	"fmt"
	"slices"
	"strings"

	d5list "github.com/deep500/d5list"
)

// complianceResult is the compliance checker's verdict on one file:
// Problems make it fail, Warnings do not. Stop is set where MLCommons'
// checker itself would stop with an exception (a rules file it cannot
// find, a quality check it cannot evaluate): the file fails, and the
// package checker stops there.
type complianceResult struct {
	Problems []d5list.Reason
	Warnings []d5list.Reason
	Stop     string
}

func (c complianceResult) valid() bool { return len(c.Problems) == 0 && c.Stop == "" }

// complianceMessages keeps the checker's messages as MLCommons' does: a
// message about a key is replaced by a later one about the same key, and
// a rules file that defines a key again drops the earlier files' messages
// about it; other messages stay.
type complianceMessages struct {
	keyed    map[string]d5list.Reason
	order    []string
	plain    []d5list.Reason
	warnings map[string]d5list.Reason
	worder   []string
}

func (m *complianceMessages) keyedMessage(key string, r d5list.Reason) {
	if _, ok := m.keyed[key]; !ok {
		m.order = append(m.order, key)
	}
	m.keyed[key] = r
}

func (m *complianceMessages) warn(key string, r d5list.Reason) {
	if _, ok := m.warnings[key]; !ok {
		m.worder = append(m.worder, key)
	}
	m.warnings[key] = r
}

// What round 1.1's checker said where the weights initialisation check
// failed, a warning only.
const (
	weightsInitKey     = "weights_initialization"
	weightsInitWarning = "Warning: Failed weights initialization check (can be ignored for 1.1.0)"
)

// complianceRun is the compliance checker on one file.
type complianceRun struct {
	r        *MLPerfRound
	file     string
	run      int
	lines    []ruleLine // an aggregate adds lines
	lastLine int
	queue    []string // the rules files still to check
	m        complianceMessages
}

func (c *complianceRun) reason(line int, format string, args ...any) d5list.Reason {
	i := c.run
	return d5list.Reason{Code: CodeMLPerfCompliance, File: c.file, Line: line, Run: &i, Message: fmt.Sprintf(format, args...)}
}

// checkCompliance runs the round's compliance rules over one file's lines,
// starting with the common rules file as MLCommons' checker does.
// parseProblems are the lines that did not parse.
func (r *MLPerfRound) checkCompliance(file string, run int, lines []ruleLine, parseProblems []d5list.Reason) complianceResult {
	c := &complianceRun{r: r, file: file, run: run, lines: lines, queue: []string{firstConfigName},
		m: complianceMessages{keyed: map[string]d5list.Reason{}, warnings: map[string]d5list.Reason{}}}
	if n := len(lines); n > 0 {
		c.lastLine = lines[n-1].Line
	}
	m := &c.m
	m.plain = append(m.plain, parseProblems...)
	if len(lines) == 0 {
		m.plain = append(m.plain, c.reason(0, "No log lines detected"))
	}
	res := complianceResult{}
	for len(c.queue) > 0 && res.Stop == "" {
		name := c.queue[0]
		c.queue = c.queue[1:]
		if cfg := r.Configs[name]; cfg != nil {
			res.Stop = c.runConfig(name, cfg)
		} else {
			res.Stop = fmt.Sprintf("MLCommons' compliance checker has no rules file training_%s/%s.yaml and stops", r.Ruleset, name)
		}
	}
	for _, k := range m.order {
		res.Problems = append(res.Problems, m.keyed[k])
	}
	res.Problems = append(res.Problems, m.plain...)
	for _, k := range m.worder {
		res.Warnings = append(res.Warnings, m.warnings[k])
	}
	return res
}

// runConfig is MLCommons' configured_checks for one rules file: its own
// state, the key rules line by line in the log's order, then how often
// each key was logged, the at-least-one checks and the end checks. It
// says why the checker stops, if it does.
func (c *complianceRun) runConfig(name string, cfg *ruleConfig) string {
	m, reason := &c.m, c.reason
	env := &ruleEnv{state: map[string]any{}}
	where := fmt.Sprintf("training_%s/%s.yaml", c.r.Ruleset, name)
	for _, a := range cfg.Begin {
		if err := a.apply(env); err != nil {
			return fmt.Sprintf("%s: %s cannot set %s: %v", where, name, a.name, err)
		}
	}
	if ag := cfg.Aggregate; ag != nil {
		var err error
		if c.lines, err = aggregateLines(c.lines, ag); err != nil {
			return fmt.Sprintf("%s: folding %s lines: %v", where, ag.Key, err)
		}
	}
	for _, k := range cfg.Keys {
		if _, ok := m.keyed[k.Key]; ok {
			delete(m.keyed, k.Key)
			m.order = slices.DeleteFunc(m.order, func(s string) bool { return s == k.Key })
		}
	}
	type atLeast struct {
		rule *keyRule
		n    int
	}
	var atLeastOrder []string
	atLeasts := map[string]*atLeast{}
	reported := map[string][]any{}
	executed := map[string]bool{}
	firstSeen := map[string]bool{}
	for i := range c.lines {
		ln := &c.lines[i]
		k := cfg.byKey[ln.Key]
		if k == nil {
			continue
		}
		reported[k.Key] = append(reported[k.Key], ln.Value)
		env.line = ln
		if !executed[k.Key] {
			for _, chk := range k.Check {
				ok, err := chk.holds(env)
				switch {
				case err != nil:
					m.keyedMessage(k.Key, reason(ln.Line, "%s = %s: the check `%s` of %s cannot be evaluated (%v)", k.Key, pyRepr(ln.Value), chk, where, err))
				case !ok:
					m.keyedMessage(k.Key, reason(ln.Line, "CHECK for '%s' failed: %s = %s fails `%s` (%s)", k.Key, k.Key, pyRepr(ln.Value), chk, where))
				}
			}
			if k.Enqueue != "" {
				c.queue = append(c.queue, strings.ReplaceAll(k.Enqueue, enqueueValueHole, pyStr(ln.Value)))
			}
			for _, a := range k.Set {
				if err := a.apply(env); err != nil {
					m.keyedMessage(k.Key, reason(ln.Line, "%s = %s: setting %s in %s fails (%v)", k.Key, pyRepr(ln.Value), a.name, where, err))
					break
				}
			}
		}
		if k.FirstCheck != nil && !firstSeen[k.Key] {
			firstSeen[k.Key] = true
			if ok, err := k.FirstCheck.holds(env); err != nil || !ok {
				m.keyedMessage(k.Key, reason(ln.Line, "CHECK for '%s' failed on its first line: %s = %s fails `%s` (%s)", k.Key, k.Key, pyRepr(ln.Value), k.FirstCheck, where))
			}
		}
		if k.AtLeastOne != nil {
			al := atLeasts[k.Key]
			if al == nil {
				al = &atLeast{rule: k}
				atLeasts[k.Key] = al
				atLeastOrder = append(atLeastOrder, k.Key)
			}
			ok, err := k.AtLeastOne.holds(env)
			if err != nil {
				// MLCommons evaluates this check outside its guard: the
				// checker stops.
				return fmt.Sprintf("line %d: %s = %s: MLCommons' compliance checker cannot evaluate `%s` (%s) and stops: %v", ln.Line, k.Key, pyRepr(ln.Value), k.AtLeastOne, where, err)
			}
			if ok {
				al.n++
			}
		}
		if strings.Contains(k.Key, "submission_") {
			executed[k.Key] = true
		}
	}
	for _, key := range atLeastOrder {
		if al := atLeasts[key]; al.n == 0 {
			m.plain = append(m.plain, reason(c.lastLine, "Failed checks for %s : %s (no line meets it; %s)", key, al.rule.AtLeastOne, where))
		}
	}
	var alternatives [][]string
	for i := range cfg.Keys {
		k := &cfg.Keys[i]
		got := reported[k.Key]
		switch k.Req {
		case reqExactlyOne:
			if len(got) == 1 {
				break
			}
			if len(got) > 0 && allEqual(got) {
				m.warn(k.Key, reason(c.lastLine, "Required EXACTLY_ONE occurrence of '%s' but found %d (all %s: MLCommons warns and accepts)", k.Key, len(got), pyRepr(got[0])))
				break
			}
			msg := fmt.Sprintf("Required EXACTLY_ONE occurrence of '%s' but found %d", k.Key, len(got))
			if len(got) > 0 {
				msg += " with different values: " + distinctValues(got)
			}
			m.keyedMessage(k.Key, reason(c.lastLine, "%s (%s)", msg, where))
		case reqAtLeastOne:
			if len(got) == 0 && k.Key == weightsInitKey && c.r.weightsInitWarns {
				m.warn(k.Key, reason(c.lastLine, weightsInitWarning))
			} else if len(got) == 0 {
				m.keyedMessage(k.Key, reason(c.lastLine, "Required AT_LEAST_ONE occurrence of '%s' but found 0 (%s)", k.Key, where))
			}
		case reqAtLeast:
			if len(got) < k.N {
				m.keyedMessage(k.Key, reason(c.lastLine, "Required AT_LEAST(%d) occurrence of '%s' but found %d (%s)", k.N, k.Key, len(got), where))
			}
		case reqAtLeastOneOr:
			alts := append([]string{k.Key}, k.Or...)
			slices.Sort(alts)
			if !slices.ContainsFunc(alternatives, func(a []string) bool { return slices.Equal(a, alts) }) {
				alternatives = append(alternatives, alts)
			}
		}
	}
	for _, alts := range alternatives {
		if !slices.ContainsFunc(alts, func(k string) bool { return len(reported[k]) > 0 }) {
			quoted := make([]string, len(alts))
			for i, a := range alts {
				quoted[i] = "'" + a + "'"
			}
			m.plain = append(m.plain, reason(c.lastLine, "Required AT_LEAST_ONE occurrence of %s (%s)", strings.Join(quoted, " or "), where))
		}
	}
	env.line = &ruleLine{}
	for _, end := range cfg.End {
		ok, err := end.holds(env)
		if err == nil && !ok && c.r.weightsInitWarns && strings.HasPrefix(end.String(), "sorted(initialized_tensors)") {
			m.warn(weightsInitKey, reason(c.lastLine, weightsInitWarning))
			continue
		}
		if err != nil || !ok {
			m.plain = append(m.plain, reason(c.lastLine, "failed test: %s (%s, at the end of the file)", end, where))
		}
	}
	return ""
}

// aggregateLines adds, after the log's lines, one line of key ag.Into per
// value of the metadata field ag.Group among the lines of ag.Key that
// name a metric: its value maps each metric to its value, and it is timed
// at the latest of them.
func aggregateLines(lines []ruleLine, ag *ruleAggregate) ([]ruleLine, error) {
	var folded []ruleLine
	at := map[string]int{}
	for _, ln := range lines {
		if ln.Key != ag.Key {
			continue
		}
		metric, ok := ln.Meta[ag.Metric]
		if !ok {
			continue
		}
		group, ok := ln.Meta[ag.Group]
		if !ok {
			return nil, fmt.Errorf("line %d has %s but no %s", ln.Line, ag.Metric, ag.Group)
		}
		g := pyRepr(group)
		i, seen := at[g]
		if !seen {
			i = len(folded)
			at[g] = i
			folded = append(folded, ruleLine{Key: ag.Into, Value: map[string]any{ag.Group: group}, Meta: map[string]any{}, Time: ln.Time, Line: ln.Line})
		}
		folded[i].Time = max(folded[i].Time, ln.Time)
		folded[i].Value.(map[string]any)[pyStr(metric)] = ln.Value
	}
	return append(lines, folded...), nil
}

func allEqual(vs []any) bool {
	for _, v := range vs[1:] {
		if !pyEqual(v, vs[0]) {
			return false
		}
	}
	return true
}

// distinctValues lists the values logged, each once.
func distinctValues(vs []any) string {
	var seen []string
	for _, v := range vs {
		if s := pyStr(v); !slices.Contains(seen, s) {
			seen = append(seen, s)
		}
	}
	return "[" + strings.Join(seen, ", ") + "]"
}

// pyStr is str(v) in Python: a string as it is, anything else as repr.
func pyStr(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	return pyRepr(v)
}
