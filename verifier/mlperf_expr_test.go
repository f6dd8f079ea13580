package verifier

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// The rule language evaluates as Python does the checks it stands for:
// each expected value here is what python3 prints for the same
// expression over the same line and state.
func TestRuleExprPythonSemantics(t *testing.T) {
	line := &ruleLine{Key: "eval_accuracy", Time: 1500,
		Value: map[string]any{"FID": 74.3, "CLIP": 0.18, "samples_count": int64(3072000)},
		Meta:  map[string]any{"epoch_num": int64(4), "status": "success", "list": []any{int64(1), 2.5}}}
	state := map[string]any{"global_batch_size": int64(2304), "warmup": int64(4000), "started": true, "first": 9e99, "tensors": []any{"b", "a"}}
	for _, c := range []struct {
		expr string
		want any
	}{
		{"1 == 1.0", true},
		{"True == 1", true},
		{"[1, 2] == [1.0, 2]", true},
		{"'x' == 1", false},
		{"-7 % 3", int64(2)},
		{"7.5 % -2", -0.5},
		{"2 ** -1", 0.5},
		{"2 ** 10", int64(1024)},
		{"7 / 2", 3.5},
		{"ceil(1200000 * 1152 / global_batch_size) - ceil(8000 * 1152 / global_batch_size)", int64(596000)},
		{"is_integer(0.002 / 0.001)", true},
		{"is_integer(log2(0.0008 / 0.0001))", true},
		{"0.1 + 0.2 == 0.3", false},
		{"1 if 0 else 'x'", "x"},
		{"0 or 'b'", "b"},
		{"3 and 4", int64(4)},
		{"'ab' in 'xaby'", true},
		{"3 not in [1, 2]", true},
		{"0.0 <= value.FID <= 90.0 and 0.15 <= value.CLIP <= 1.0", true},
		{"value.FID <= 90.0 < value.CLIP", false},
		{"has(meta.epoch_num) or has(meta.samples_count)", true},
		{"has(value.CLIP)", true},
		{"has(meta.samples_count)", false},
		{"meta.list[1] * 2", 5.0},
		{"meta.list[-1]", 2.5},
		{"min(first, time)", 1500.0},
		{"max(1, 2.5, 2)", 2.5},
		{"abs(-3)", int64(3)},
		{"len(tensors + ['c'])", int64(3)},
		{"sorted(tensors) == ['a', 'b']", true},
		{"is_int(global_batch_size) and not is_int(value.FID)", true},
		{"is_int(True) and is_bool(started) and not is_bool(1)", true},
		{"not started", false},
		{"-global_batch_size", int64(-2304)},
		{"value == inf", false},
		{"'status' in meta", true},
	} {
		x, err := parseRuleExpr(c.expr)
		if err != nil {
			t.Errorf("%s: %v", c.expr, err)
			continue
		}
		got, err := x.eval(&ruleEnv{line: line, state: state})
		if err != nil || !pyEqual(got, c.want) || pyType(got) != pyType(c.want) {
			t.Errorf("%s = %s (%v), Python: %s", c.expr, pyRepr(got), err, pyRepr(c.want))
		}
	}
}

// What stops Python stops the rule: a missing field or state, an order of
// a number and a string, a domain error.
func TestRuleExprErrors(t *testing.T) {
	line := &ruleLine{Value: "lamb", Meta: map[string]any{}}
	for _, c := range []struct{ expr, err string }{
		{"meta.epoch_num == 1", "KeyError"},
		{"opt_learning_rate_warmup_steps + 1", "KeyError"},
		{"value > 0", "TypeError"},
		{"value.FID", "TypeError"},
		{"log2(0)", "ValueError"},
		{"1 / 0", "ZeroDivisionError"},
		{"len(1)", "TypeError"},
	} {
		x, err := parseRuleExpr(c.expr)
		if err != nil {
			t.Fatalf("%s: %v", c.expr, err)
		}
		if _, err := x.eval(&ruleEnv{line: line, state: map[string]any{}}); err == nil || !strings.Contains(err.Error(), c.err) {
			t.Errorf("%s: %v, want %s", c.expr, err, c.err)
		}
	}
	for _, bad := range []string{"", "1 +", "has(value)", "foo(1)", "a if b", "value..x", "'open", "x = 1", "[1, 2"} {
		if _, err := parseRuleExpr(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if x, _ := parseRuleExpr("value < 1"); x != nil {
		if ok, err := x.holds(&ruleEnv{line: &ruleLine{Value: math.NaN()}}); ok || err != nil {
			t.Errorf("NaN < 1: %v %v, Python: False", ok, err)
		}
	}
}

// A state assignment reads name = expression, and nothing else.
func TestRuleAssign(t *testing.T) {
	var a ruleAssign
	if err := a.UnmarshalText([]byte("next = next + global_batch_size if meta.samples_count == next else next")); err != nil {
		t.Fatal(err)
	}
	env := &ruleEnv{line: &ruleLine{Meta: map[string]any{"samples_count": int64(256)}}, state: map[string]any{"next": int64(256), "global_batch_size": int64(128)}}
	if err := a.apply(env); err != nil || env.state["next"] != int64(384) {
		t.Errorf("next = %v (%v)", env.state["next"], err)
	}
	for _, bad := range []string{"a == 1", "1 = 2", "a = ", "= 1"} {
		if err := a.UnmarshalText([]byte(bad)); err == nil {
			t.Errorf("%q read as an assignment", bad)
		}
	}
}

// "a = a + [x]" appends in place, and lists read as Python's do however
// names share them: a list assigned to another name, then grown under
// either, leaves the other as it was.
func TestRuleAssignAppendsAsPythonReads(t *testing.T) {
	env := &ruleEnv{line: &ruleLine{Meta: map[string]any{"tensor": "w"}}, state: map[string]any{}}
	for _, step := range []string{
		"a = []", "a = a + [1]", "a = a + [2]", "a = a + [3]", "b = a", "b = b + [4]", "a = a + [6]",
		"c = a + [5]", "c = c + [7]", "d = [a]", "a = a + [meta.tensor, 8]",
		"n = 0", "n = n + [1] if False else n",
	} {
		var x ruleAssign
		if err := x.UnmarshalText([]byte(step)); err != nil {
			t.Fatal(err)
		}
		if err := x.apply(env); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
	}
	for name, want := range map[string]string{
		"a": "[1 2 3 6 w 8]", "b": "[1 2 3 4]", "c": "[1 2 3 6 5 7]", "d": "[[1 2 3 6]]", "n": "0",
	} {
		if got := fmt.Sprint(env.state[name]); got != want {
			t.Errorf("%s = %s, Python: %s", name, got, want)
		}
	}
	// An operand that is no list keeps Python's error.
	var x ruleAssign
	_ = x.UnmarshalText([]byte("n = n + [1]"))
	if err := x.apply(env); err == nil || !strings.Contains(err.Error(), "TypeError") {
		t.Errorf("0 + [1]: %v, Python: TypeError", err)
	}
}
