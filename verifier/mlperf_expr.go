package verifier

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// The checks of MLPerf's compliance checker are Python expressions over
// the logged line (v) and a state the checker keeps per rules file (s).
// The round files write them in a small language of d5list's own that
// reads like the Python it stands for and evaluates the way Python does:
//
//	value, meta.epoch_num   the line's value and one field of its metadata
//	value.FID, value[1]     a field or an element of a value
//	has(meta.epoch_num)     whether the line's metadata has the field
//	time                    the line's timestamp
//	global_batch_size       any other name is a state variable
//	abs min max ceil floor log2 len sorted int is_integer is_int is_bool
//	and or not, == != < <= > >= (chained), in, not in, + - * / % **,
//	a if cond else b, [lists], 'strings', numbers, True False None inf
//
// An expression that Python would stop with an exception (a missing key,
// a comparison of a number with a string) returns an error, which the
// checker reports as MLPerf's does.
type ruleExpr struct {
	src  string
	root exprNode
}

// String is the expression as written, cut short for a message where it
// is long (round 1.1's lists of every tensor a model initialises).
func (e *ruleExpr) String() string {
	if len(e.src) > maxExprShown {
		return e.src[:maxExprShown] + " …"
	}
	return e.src
}

const maxExprShown = 160

// UnmarshalText reads an expression from a round file.
func (e *ruleExpr) UnmarshalText(text []byte) error {
	x, err := parseRuleExpr(string(text))
	if err != nil {
		return err
	}
	*e = *x
	return nil
}

// ruleLine is one logged line as the checks see it.
type ruleLine struct {
	Key   string
	Value any
	Meta  map[string]any
	Time  float64
	Line  int
}

// ruleEnv is what an expression is evaluated against.
type ruleEnv struct {
	line  *ruleLine
	state map[string]any
}

func (e *ruleExpr) eval(env *ruleEnv) (any, error) { return e.root.eval(env) }

// holds evaluates e and takes Python's truth of the result.
func (e *ruleExpr) holds(env *ruleEnv) (bool, error) {
	v, err := e.root.eval(env)
	if err != nil {
		return false, err
	}
	return truth(v), nil
}

// ruleAssign is "name = expression", a change of the checker's state.
type ruleAssign struct {
	name string
	expr *ruleExpr
}

func (a *ruleAssign) UnmarshalText(text []byte) error {
	name, rhs, ok := strings.Cut(string(text), "=")
	name = strings.TrimSpace(name)
	if !ok || !isIdent(name) || strings.HasPrefix(rhs, "=") {
		return fmt.Errorf("%q: an assignment is name = expression", text)
	}
	x, err := parseRuleExpr(strings.TrimSpace(rhs))
	if err != nil {
		return err
	}
	*a = ruleAssign{name: name, expr: x}
	return nil
}

func (a ruleAssign) apply(env *ruleEnv) error {
	if grown, ok, err := a.appendInPlace(env); ok || err != nil {
		if err == nil {
			env.state[a.name] = grown
		}
		return err
	}
	v, err := a.expr.eval(env)
	if err != nil {
		return err
	}
	// A list kept in the state has no room beyond its end, so that
	// appendInPlace on another name that shares its array never writes
	// into it (Python's lists are never shared by a +).
	if list, ok := v.([]any); ok {
		v = slices.Clip(list)
	}
	env.state[a.name] = v
	return nil
}

// appendInPlace evaluates "name = name + [items]" by appending to the
// list in place, as Python's result reads, in amortised constant time: the
// rules that collect every initialised tensor a line at a time would
// otherwise copy the whole list for each line (quadratic in a log's
// tensors, half of a check's time on a BERT folder). ok is false where
// the assignment is not of that form or the name holds no list.
func (a ruleAssign) appendInPlace(env *ruleEnv) (grown []any, ok bool, err error) {
	bin, isBin := a.expr.root.(*binNode)
	if !isBin || bin.op != "+" {
		return nil, false, nil
	}
	name, isName := bin.l.(*nameNode)
	items, isList := bin.r.(*listNode)
	if !isName || name.name != a.name || !isList {
		return nil, false, nil
	}
	cur, isCur := env.state[a.name].([]any)
	if !isCur {
		return nil, false, nil
	}
	add, err := items.eval(env)
	if err != nil {
		return nil, true, err
	}
	// cur's spare room is this name's alone: every other list the state
	// keeps is clipped to its length.
	return append(cur, add.([]any)...), true, nil
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if !(c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || i > 0 && c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

type exprNode interface {
	eval(env *ruleEnv) (any, error)
}

type (
	litNode  struct{ v any }
	nameNode struct{ name string }
	// fieldNode is base.name: a field of the value or of the metadata.
	fieldNode struct {
		base exprNode
		name string
	}
	indexNode struct{ base, index exprNode }
	hasNode   struct{ field *fieldNode }
	callNode  struct {
		fn   string
		args []exprNode
	}
	listNode struct{ items []exprNode }
	notNode  struct{ x exprNode }
	negNode  struct{ x exprNode }
	boolNode struct {
		and   bool
		items []exprNode
	}
	binNode struct {
		op   string
		l, r exprNode
	}
	cmpNode struct {
		first exprNode
		ops   []string
		rest  []exprNode
	}
	ifNode struct{ then, cond, els exprNode }
)

type exprParser struct {
	src  string
	toks []exprTok
	pos  int
}

type exprTok struct {
	kind byte // 'n' name, '0' number, 's' string, 'o' operator, 0 end
	text string
	val  any
}

func parseRuleExpr(src string) (*ruleExpr, error) {
	toks, err := lexRuleExpr(src)
	if err != nil {
		return nil, fmt.Errorf("%q: %v", src, err)
	}
	p := &exprParser{src: src, toks: toks}
	root, err := p.ifExpr()
	if err == nil && p.peek().kind != 0 {
		err = fmt.Errorf("unexpected %q", p.peek().text)
	}
	if err != nil {
		return nil, fmt.Errorf("%q: %v", src, err)
	}
	return &ruleExpr{src: src, root: root}, nil
}

func lexRuleExpr(s string) ([]exprTok, error) {
	var toks []exprTok
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			i++
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z':
			j := i + 1
			for j < len(s) && (s[j] == '_' || s[j] >= 'a' && s[j] <= 'z' || s[j] >= 'A' && s[j] <= 'Z' || s[j] >= '0' && s[j] <= '9') {
				j++
			}
			toks = append(toks, exprTok{kind: 'n', text: s[i:j]})
			i = j
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			j := i
			isFloat := false
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '_' || s[j] == '.' || s[j] == 'e' || s[j] == 'E' ||
				(s[j] == '-' || s[j] == '+') && (s[j-1] == 'e' || s[j-1] == 'E')) {
				isFloat = isFloat || s[j] == '.' || s[j] == 'e' || s[j] == 'E'
				j++
			}
			text := strings.ReplaceAll(s[i:j], "_", "")
			var v any
			var err error
			if isFloat {
				v, err = strconv.ParseFloat(text, 64)
			} else {
				v, err = strconv.ParseInt(text, 10, 64)
			}
			if err != nil {
				return nil, fmt.Errorf("bad number %q", s[i:j])
			}
			toks = append(toks, exprTok{kind: '0', text: s[i:j], val: v})
			i = j
		case c == '\'' || c == '"':
			j := strings.IndexByte(s[i+1:], c)
			if j < 0 {
				return nil, errors.New("unterminated string")
			}
			toks = append(toks, exprTok{kind: 's', text: s[i : i+j+2], val: s[i+1 : i+1+j]})
			i += j + 2
		default:
			op := ""
			for _, o := range []string{"**", "==", "!=", "<=", ">=", "<", ">", "+", "-", "*", "/", "%", "(", ")", "[", "]", ",", "."} {
				if strings.HasPrefix(s[i:], o) {
					op = o
					break
				}
			}
			if op == "" {
				return nil, fmt.Errorf("unexpected %q", c)
			}
			toks = append(toks, exprTok{kind: 'o', text: op})
			i += len(op)
		}
	}
	return append(toks, exprTok{}), nil
}

func (p *exprParser) peek() exprTok { return p.toks[p.pos] }
func (p *exprParser) next() exprTok {
	t := p.toks[p.pos]
	if t.kind != 0 {
		p.pos++
	}
	return t
}
func (p *exprParser) isName(s string) bool { t := p.peek(); return t.kind == 'n' && t.text == s }
func (p *exprParser) isOp(s string) bool   { t := p.peek(); return t.kind == 'o' && t.text == s }
func (p *exprParser) expect(s string) error {
	if !p.isOp(s) {
		return fmt.Errorf("expected %q, found %q", s, p.peek().text)
	}
	p.next()
	return nil
}

func (p *exprParser) ifExpr() (exprNode, error) {
	then, err := p.boolExpr(false)
	if err != nil || !p.isName("if") {
		return then, err
	}
	p.next()
	cond, err := p.boolExpr(false)
	if err != nil {
		return nil, err
	}
	if !p.isName("else") {
		return nil, errors.New("'if' without 'else'")
	}
	p.next()
	els, err := p.ifExpr()
	if err != nil {
		return nil, err
	}
	return &ifNode{then: then, cond: cond, els: els}, nil
}

// boolExpr reads an or (and=false) or an and (and=true) of its operands.
func (p *exprParser) boolExpr(and bool) (exprNode, error) {
	word, operand := "or", func() (exprNode, error) { return p.boolExpr(true) }
	if and {
		word, operand = "and", p.notExpr
	}
	first, err := operand()
	if err != nil || !p.isName(word) {
		return first, err
	}
	n := &boolNode{and: and, items: []exprNode{first}}
	for p.isName(word) {
		p.next()
		x, err := operand()
		if err != nil {
			return nil, err
		}
		n.items = append(n.items, x)
	}
	return n, nil
}

func (p *exprParser) notExpr() (exprNode, error) {
	if p.isName("not") {
		p.next()
		x, err := p.notExpr()
		if err != nil {
			return nil, err
		}
		return &notNode{x}, nil
	}
	return p.compare()
}

func (p *exprParser) compare() (exprNode, error) {
	first, err := p.arith(0)
	if err != nil {
		return nil, err
	}
	n := &cmpNode{first: first}
	for {
		op := ""
		switch t := p.peek(); {
		case t.kind == 'o' && slices.Contains([]string{"==", "!=", "<", "<=", ">", ">="}, t.text):
			op = t.text
			p.next()
		case p.isName("in"):
			op = "in"
			p.next()
		case p.isName("not") && p.toks[p.pos+1].kind == 'n' && p.toks[p.pos+1].text == "in":
			op = "not in"
			p.pos += 2
		}
		if op == "" {
			break
		}
		x, err := p.arith(0)
		if err != nil {
			return nil, err
		}
		n.ops = append(n.ops, op)
		n.rest = append(n.rest, x)
	}
	if len(n.ops) == 0 {
		return first, nil
	}
	return n, nil
}

// arith reads the binary operators of a level and above: + - (0),
// * / % (1); ** binds tighter than a sign and to the right.
func (p *exprParser) arith(level int) (exprNode, error) {
	ops := [][]string{{"+", "-"}, {"*", "/", "%"}}
	operand := func() (exprNode, error) {
		if level+1 < len(ops) {
			return p.arith(level + 1)
		}
		return p.unary()
	}
	l, err := operand()
	for err == nil && slices.Contains(ops[level], p.peek().text) && p.peek().kind == 'o' {
		op := p.next().text
		var r exprNode
		r, err = operand()
		l = &binNode{op: op, l: l, r: r}
	}
	return l, err
}

func (p *exprParser) unary() (exprNode, error) {
	if p.isOp("-") {
		p.next()
		x, err := p.unary()
		if err != nil {
			return nil, err
		}
		return &negNode{x}, nil
	}
	base, err := p.postfix()
	if err != nil || !p.isOp("**") {
		return base, err
	}
	p.next()
	exp, err := p.unary()
	if err != nil {
		return nil, err
	}
	return &binNode{op: "**", l: base, r: exp}, nil
}

func (p *exprParser) postfix() (exprNode, error) {
	x, err := p.atom()
	for err == nil {
		switch {
		case p.isOp("."):
			p.next()
			t := p.next()
			if t.kind != 'n' {
				return nil, fmt.Errorf("expected a field name after '.', found %q", t.text)
			}
			x = &fieldNode{base: x, name: t.text}
		case p.isOp("["):
			p.next()
			var idx exprNode
			if idx, err = p.ifExpr(); err == nil {
				err = p.expect("]")
			}
			x = &indexNode{base: x, index: idx}
		default:
			return x, nil
		}
	}
	return nil, err
}

var ruleFuncs = map[string]int{ // name: arguments (-1 any)
	"abs": 1, "ceil": 1, "floor": 1, "log2": 1, "len": 1, "sorted": 1, "int": 1,
	"is_integer": 1, "is_int": 1, "is_bool": 1, "min": -1, "max": -1,
}

func (p *exprParser) atom() (exprNode, error) {
	t := p.next()
	switch t.kind {
	case '0', 's':
		return &litNode{t.val}, nil
	case 'n':
		switch t.text {
		case "True", "False":
			return &litNode{t.text == "True"}, nil
		case "None":
			return &litNode{nil}, nil
		case "inf":
			return &litNode{math.Inf(1)}, nil
		case "and", "or", "not", "in", "if", "else":
			return nil, fmt.Errorf("unexpected %q", t.text)
		}
		if !p.isOp("(") {
			return &nameNode{t.text}, nil
		}
		p.next()
		var args []exprNode
		for !p.isOp(")") {
			a, err := p.ifExpr()
			if err != nil {
				return nil, err
			}
			args = append(args, a)
			if !p.isOp(",") {
				break
			}
			p.next()
		}
		if err := p.expect(")"); err != nil {
			return nil, err
		}
		if t.text == "has" {
			f, ok := args[0].(*fieldNode)
			if len(args) != 1 || !ok {
				return nil, errors.New("has() takes one field, such as has(meta.epoch_num)")
			}
			return &hasNode{f}, nil
		}
		n, known := ruleFuncs[t.text]
		if !known {
			return nil, fmt.Errorf("unknown function %s", t.text)
		}
		if n >= 0 && len(args) != n || len(args) == 0 {
			return nil, fmt.Errorf("%s takes %d argument(s)", t.text, max(n, 1))
		}
		return &callNode{fn: t.text, args: args}, nil
	case 'o':
		switch t.text {
		case "(":
			x, err := p.ifExpr()
			if err != nil {
				return nil, err
			}
			return x, p.expect(")")
		case "[":
			n := &listNode{}
			for !p.isOp("]") {
				x, err := p.ifExpr()
				if err != nil {
					return nil, err
				}
				n.items = append(n.items, x)
				if !p.isOp(",") {
					break
				}
				p.next()
			}
			return n, p.expect("]")
		}
	}
	if t.kind == 0 {
		return nil, errors.New("unexpected end")
	}
	return nil, fmt.Errorf("unexpected %q", t.text)
}
