package verifier

import (
	"cmp"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Evaluation of the rule language, with Python's semantics: == and
// ordering across ints, floats and bools, and/or returning the deciding
// operand, integer arithmetic where both sides are integers, and the
// exceptions Python would raise returned as errors.

func (n *litNode) eval(*ruleEnv) (any, error) { return n.v, nil }

func (n *nameNode) eval(env *ruleEnv) (any, error) {
	switch n.name {
	case "value":
		return env.line.Value, nil
	case "meta":
		return env.line.Meta, nil
	case "time":
		return env.line.Time, nil
	}
	v, ok := env.state[n.name]
	if !ok {
		return nil, fmt.Errorf("KeyError: %q is not in the checker's state", n.name)
	}
	return v, nil
}

func (n *fieldNode) eval(env *ruleEnv) (any, error) {
	base, err := n.base.eval(env)
	if err != nil {
		return nil, err
	}
	m, ok := base.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("TypeError: %s is not a mapping with field %q", pyRepr(base), n.name)
	}
	v, ok := m[n.name]
	if !ok {
		return nil, fmt.Errorf("KeyError: no field %q", n.name)
	}
	return v, nil
}

func (n *hasNode) eval(env *ruleEnv) (any, error) {
	base, err := n.field.base.eval(env)
	if err != nil {
		return nil, err
	}
	switch b := base.(type) {
	case map[string]any:
		_, ok := b[n.field.name]
		return ok, nil
	case string:
		return strings.Contains(b, n.field.name), nil
	case []any:
		return slices.ContainsFunc(b, func(x any) bool { return pyEqual(x, n.field.name) }), nil
	}
	return nil, fmt.Errorf("TypeError: argument of type %s is not iterable", pyType(base))
}

func (n *indexNode) eval(env *ruleEnv) (any, error) {
	base, err := n.base.eval(env)
	if err != nil {
		return nil, err
	}
	idx, err := n.index.eval(env)
	if err != nil {
		return nil, err
	}
	switch b := base.(type) {
	case []any:
		i, ok := idx.(int64)
		if !ok {
			return nil, fmt.Errorf("TypeError: list indices must be integers, not %s", pyType(idx))
		}
		if i < 0 {
			i += int64(len(b))
		}
		if i < 0 || i >= int64(len(b)) {
			return nil, errors.New("IndexError: list index out of range")
		}
		return b[i], nil
	case map[string]any:
		k, ok := idx.(string)
		v, found := b[k]
		if !ok || !found {
			return nil, fmt.Errorf("KeyError: %s", pyRepr(idx))
		}
		return v, nil
	}
	return nil, fmt.Errorf("TypeError: %s is not subscriptable", pyType(base))
}

func (n *listNode) eval(env *ruleEnv) (any, error) {
	out := make([]any, len(n.items))
	for i, x := range n.items {
		v, err := x.eval(env)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

func (n *notNode) eval(env *ruleEnv) (any, error) {
	v, err := n.x.eval(env)
	return !truth(v), err
}

func (n *negNode) eval(env *ruleEnv) (any, error) {
	v, err := n.x.eval(env)
	if err != nil {
		return nil, err
	}
	switch x := pyNum(v).(type) {
	case int64:
		return -x, nil
	case float64:
		return -x, nil
	}
	return nil, fmt.Errorf("TypeError: bad operand type for unary -: %s", pyType(v))
}

func (n *boolNode) eval(env *ruleEnv) (any, error) {
	var v any
	for _, x := range n.items {
		var err error
		if v, err = x.eval(env); err != nil {
			return nil, err
		}
		if truth(v) != n.and {
			return v, nil // Python's and/or return the deciding operand
		}
	}
	return v, nil
}

func (n *ifNode) eval(env *ruleEnv) (any, error) {
	c, err := n.cond.eval(env)
	if err != nil {
		return nil, err
	}
	if truth(c) {
		return n.then.eval(env)
	}
	return n.els.eval(env)
}

func (n *cmpNode) eval(env *ruleEnv) (any, error) {
	l, err := n.first.eval(env)
	if err != nil {
		return nil, err
	}
	for i, op := range n.ops {
		r, err := n.rest[i].eval(env)
		if err != nil {
			return nil, err
		}
		ok, err := pyCompare(op, l, r)
		if err != nil || !ok {
			return false, err
		}
		l = r
	}
	return true, nil
}

func pyCompare(op string, l, r any) (bool, error) {
	switch op {
	case "==":
		return pyEqual(l, r), nil
	case "!=":
		return !pyEqual(l, r), nil
	case "in", "not in":
		var in bool
		switch c := r.(type) {
		case []any:
			in = slices.ContainsFunc(c, func(x any) bool { return pyEqual(l, x) })
		case map[string]any:
			k, ok := l.(string)
			_, found := c[k]
			in = ok && found
		case string:
			s, ok := l.(string)
			if !ok {
				return false, fmt.Errorf("TypeError: 'in <string>' requires string as left operand, not %s", pyType(l))
			}
			in = strings.Contains(c, s)
		default:
			return false, fmt.Errorf("TypeError: argument of type %s is not iterable", pyType(r))
		}
		return in == (op == "in"), nil
	}
	c, err := pyOrder(l, r)
	if err != nil {
		return false, fmt.Errorf("TypeError: %q not supported between instances of %s and %s", op, pyType(l), pyType(r))
	}
	if c == cmpUnordered {
		return false, nil // NaN
	}
	switch op {
	case "<":
		return c < 0, nil
	case "<=":
		return c <= 0, nil
	case ">":
		return c > 0, nil
	}
	return c >= 0, nil
}

const cmpUnordered = 2

// pyOrder compares two numbers, two strings or two lists as Python
// orders them; NaN is unordered.
func pyOrder(l, r any) (int, error) {
	if a, ok := pyFloat(l); ok {
		b, ok := pyFloat(r)
		switch {
		case !ok:
		case math.IsNaN(a) || math.IsNaN(b):
			return cmpUnordered, nil
		default:
			// Exact for the integers that floats cannot hold.
			if x, y := pyNum(l), pyNum(r); isInt(x) && isInt(y) {
				return cmp.Compare(x.(int64), y.(int64)), nil
			}
			return cmp.Compare(a, b), nil
		}
	}
	switch a := l.(type) {
	case string:
		if b, ok := r.(string); ok {
			return strings.Compare(a, b), nil
		}
	case []any:
		if b, ok := r.([]any); ok {
			for i := 0; i < len(a) && i < len(b); i++ {
				if pyEqual(a[i], b[i]) {
					continue
				}
				return pyOrder(a[i], b[i])
			}
			return cmp.Compare(int64(len(a)), int64(len(b))), nil
		}
	}
	return 0, errors.New("unordered types")
}

func isInt(v any) bool { _, ok := v.(int64); return ok }

// pyEqual is Python's ==: numbers by value (True == 1), strings, lists
// element by element, mappings key by key.
func pyEqual(l, r any) bool {
	if a, ok := pyFloat(l); ok {
		b, ok := pyFloat(r)
		if x, y := pyNum(l), pyNum(r); ok && isInt(x) && isInt(y) {
			return x.(int64) == y.(int64)
		}
		return ok && a == b
	}
	switch a := l.(type) {
	case nil:
		return r == nil
	case string:
		b, ok := r.(string)
		return ok && a == b
	case []any:
		b, ok := r.([]any)
		return ok && len(a) == len(b) && listEqual(a, b)
	case map[string]any:
		b, ok := r.(map[string]any)
		if !ok || len(a) != len(b) {
			return false
		}
		for k, v := range a {
			w, found := b[k]
			if !found || !pyEqual(v, w) {
				return false
			}
		}
		return true
	}
	return false
}

func listEqual(a, b []any) bool {
	for i := range a {
		if !pyEqual(a[i], b[i]) {
			return false
		}
	}
	return true
}

// pyNum is v as a number when Python treats it as one: a bool is 0 or 1.
func pyNum(v any) any {
	switch x := v.(type) {
	case bool:
		if x {
			return int64(1)
		}
		return int64(0)
	case int64, float64:
		return x
	}
	return nil
}

func pyFloat(v any) (float64, bool) {
	switch x := pyNum(v).(type) {
	case int64:
		return float64(x), true
	case float64:
		return x, true
	}
	return 0, false
}

func truth(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case bool:
		return x
	case int64:
		return x != 0
	case float64:
		return x != 0
	case string:
		return x != ""
	case []any:
		return len(x) > 0
	case map[string]any:
		return len(x) > 0
	}
	return true
}

func (n *binNode) eval(env *ruleEnv) (any, error) {
	l, err := n.l.eval(env)
	if err != nil {
		return nil, err
	}
	r, err := n.r.eval(env)
	if err != nil {
		return nil, err
	}
	if n.op == "+" {
		if a, ok := l.([]any); ok {
			if b, ok := r.([]any); ok {
				return slices.Concat(a, b), nil
			}
		}
		if a, ok := l.(string); ok {
			if b, ok := r.(string); ok {
				return a + b, nil
			}
		}
	}
	a, b := pyNum(l), pyNum(r)
	if a == nil || b == nil {
		return nil, fmt.Errorf("TypeError: unsupported operand types for %s: %s and %s", n.op, pyType(l), pyType(r))
	}
	x, xInt := a.(int64)
	y, yInt := b.(int64)
	if xInt && yInt && n.op != "/" && !(n.op == "**" && y < 0) {
		switch n.op {
		case "+":
			return x + y, nil
		case "-":
			return x - y, nil
		case "*":
			return x * y, nil
		case "%":
			if y == 0 {
				return nil, errors.New("ZeroDivisionError: integer modulo by zero")
			}
			m := x % y
			if m != 0 && (m < 0) != (y < 0) {
				m += y
			}
			return m, nil
		case "**":
			p := int64(1)
			for range y {
				p *= x
			}
			return p, nil
		}
	}
	f, _ := pyFloat(a)
	g, _ := pyFloat(b)
	switch n.op {
	case "+":
		return f + g, nil
	case "-":
		return f - g, nil
	case "*":
		return f * g, nil
	case "/":
		if g == 0 {
			return nil, errors.New("ZeroDivisionError: division by zero")
		}
		return f / g, nil
	case "%":
		if g == 0 {
			return nil, errors.New("ZeroDivisionError: float modulo")
		}
		m := math.Mod(f, g)
		if m != 0 && (m < 0) != (g < 0) {
			m += g
		}
		return m, nil
	}
	return math.Pow(f, g), nil
}

func (n *callNode) eval(env *ruleEnv) (any, error) {
	args := make([]any, len(n.args))
	for i, a := range n.args {
		v, err := a.eval(env)
		if err != nil {
			return nil, err
		}
		args[i] = v
	}
	x := args[0]
	switch n.fn {
	case "is_int": // isinstance(x, int): True and False are ints too
		return pyNum(x) != nil && !isFloat(x), nil
	case "is_bool":
		_, ok := x.(bool)
		return ok, nil
	case "len":
		switch c := x.(type) {
		case string:
			return int64(len([]rune(c))), nil
		case []any:
			return int64(len(c)), nil
		case map[string]any:
			return int64(len(c)), nil
		}
		return nil, fmt.Errorf("TypeError: object of type %s has no len()", pyType(x))
	case "sorted":
		l, ok := x.([]any)
		if !ok {
			return nil, fmt.Errorf("TypeError: sorted() of %s", pyType(x))
		}
		out := slices.Clone(l)
		var err error
		slices.SortStableFunc(out, func(a, b any) int {
			c, e := pyOrder(a, b)
			if e != nil {
				err = e
			}
			return c
		})
		return out, err
	case "min", "max":
		if len(args) == 1 {
			l, ok := x.([]any)
			if !ok {
				return nil, fmt.Errorf("TypeError: %s of %s", n.fn, pyType(x))
			}
			args = l
		}
		if len(args) == 0 {
			return nil, fmt.Errorf("ValueError: %s() arg is an empty sequence", n.fn)
		}
		best := args[0]
		for _, v := range args[1:] {
			c, err := pyOrder(v, best)
			if err != nil {
				return nil, fmt.Errorf("TypeError: %s of %s and %s", n.fn, pyType(v), pyType(best))
			}
			if n.fn == "min" && c == -1 || n.fn == "max" && c == 1 {
				best = v
			}
		}
		return best, nil
	}
	f, ok := pyFloat(x)
	if !ok {
		return nil, fmt.Errorf("TypeError: %s() of %s", n.fn, pyType(x))
	}
	switch n.fn {
	case "abs":
		if i, ok := pyNum(x).(int64); ok {
			return max(i, -i), nil
		}
		return math.Abs(f), nil
	case "ceil", "floor", "int":
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return nil, fmt.Errorf("ValueError: cannot convert %v to integer", f)
		}
		r := map[string]func(float64) float64{"ceil": math.Ceil, "floor": math.Floor, "int": math.Trunc}[n.fn](f)
		if i, ok := pyNum(x).(int64); ok {
			return i, nil
		}
		return int64(r), nil
	case "log2":
		if f <= 0 {
			return nil, errors.New("ValueError: math domain error")
		}
		return math.Log2(f), nil
	}
	// is_integer: MLPerf's own, within 1e-5 of a whole number.
	return math.Abs(math.RoundToEven(f)-f) < 0.00001, nil
}

func isFloat(v any) bool { _, ok := v.(float64); return ok }

func pyType(v any) string {
	switch v.(type) {
	case nil:
		return "NoneType"
	case bool:
		return "bool"
	case int64:
		return "int"
	case float64:
		return "float"
	case string:
		return "str"
	case []any:
		return "list"
	case map[string]any:
		return "dict"
	}
	return fmt.Sprintf("%T", v)
}

// pyRepr writes a value the way Python prints it, for messages.
func pyRepr(v any) string {
	switch x := v.(type) {
	case nil:
		return "None"
	case bool:
		if x {
			return "True"
		}
		return "False"
	case string:
		return "'" + x + "'"
	case float64:
		switch {
		case math.IsInf(x, 1):
			return "inf"
		case math.IsInf(x, -1):
			return "-inf"
		case math.IsNaN(x):
			return "nan"
		case x == math.Trunc(x) && math.Abs(x) < 1e16:
			return strconv.FormatFloat(x, 'f', 1, 64)
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = pyRepr(e)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		parts := make([]string, len(keys))
		for i, k := range keys {
			parts[i] = "'" + k + "': " + pyRepr(x[k])
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return fmt.Sprint(v)
}
