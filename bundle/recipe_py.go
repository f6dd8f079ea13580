package bundle

import (
	"strconv"
	"strings"
	"unicode/utf8"

	d5list "github.com/deep500/d5list"
)

// A Deep500 recipe.py is read, never run: a tokenizer and a
// recursive-descent parser accept module-level assignments of literals,
// dotted names and calls to FIXED, MUTABLE, METRICS and ENTRYPOINT, read
// as values. Everything else a published recipe holds is skipped: imports
// anywhere, helper functions and classes, other names and the
// `if __name__ == '__main__':` block Deep500's recipes end with (it only
// runs the recipe). A statement that changes a section after its
// assignment is refused with its line, since only running Python could
// tell the section's final value.

// pyKeywords may not be used as names: they start statements or
// expressions the recipe reader does not evaluate.
var pyKeywords = map[string]bool{
	"and": true, "as": true, "assert": true, "async": true, "await": true, "break": true, "class": true,
	"continue": true, "def": true, "del": true, "elif": true, "else": true, "except": true, "finally": true,
	"for": true, "from": true, "global": true, "if": true, "import": true, "in": true, "is": true,
	"lambda": true, "nonlocal": true, "not": true, "or": true, "pass": true, "raise": true, "return": true,
	"try": true, "while": true, "with": true, "yield": true,
}

var pySections = map[string]string{"FIXED": "fixed", "MUTABLE": "mutable", "METRICS": "metrics", "ENTRYPOINT": "entrypoint", "IMAGE": "image"}

type pyParser struct {
	p       *recipeParse
	current string // the section being assigned, so a failed one is not also "missing"
	toks    []pyTok
	pos     int
}

// pyStop aborts the parse of one statement; the reason is already recorded.
type pyStop struct{}

func (pp *pyParser) peek() pyTok { return pp.toks[pp.pos] }
func (pp *pyParser) next() pyTok {
	t := pp.toks[pp.pos]
	if t.kind != pyEOF {
		pp.pos++
	}
	return t
}

func (pp *pyParser) fail(line int, format string, args ...any) {
	pp.p.errorf(line, format, args...)
	panic(pyStop{})
}

func (pp *pyParser) isOp(s string) bool {
	t := pp.peek()
	return t.kind == pyOp && t.text == s
}

func (pp *pyParser) expectOp(s, what string) pyTok {
	t := pp.next()
	if t.kind == pyOp && strings.Contains("+-*/%@<>=!&|^~", t.text) && t.text != s {
		pp.fail(t.line, "unsupported operator %q: a recipe holds literals, names and calls only", t.text)
	}
	if t.kind != pyOp || t.text != s {
		pp.fail(t.line, "expected %q %s, found %s", s, what, t)
	}
	return t
}

func (pp *pyParser) expectName(what string) pyTok {
	t := pp.next()
	if t.kind != pyName || pyKeywords[t.text] {
		pp.fail(t.line, "expected %s, found %s", what, t)
	}
	return t
}

func (pp *pyParser) endOfStatement() {
	t := pp.next()
	if t.kind != pyNewline && t.kind != pyEOF {
		pp.fail(t.line, "unexpected %s: only literals, names and calls may be assigned (no operators or other expressions)", t)
	}
}

// skipLine moves to the first token of the next logical line.
func (pp *pyParser) skipLine() {
	for {
		t := pp.next()
		if t.kind == pyNewline || t.kind == pyEOF {
			return
		}
	}
}

func (p *recipeParse) parsePython(data []byte) d5list.Recipe {
	if !utf8.Valid(data) {
		p.errorf(0, "recipe.py is not UTF-8 text")
		return d5list.Recipe{}
	}
	toks, lerr := pyTokenize(string(data))
	if lerr != nil {
		p.errorf(lerr.line, "%s", lerr.msg)
		return d5list.Recipe{}
	}
	pp := &pyParser{p: p, toks: toks}
	secs := map[string]section{}
	first := true
	for pp.peek().kind != pyEOF {
		start := pp.pos
		pp.current = ""
		func() {
			defer func() {
				if r := recover(); r != nil {
					if _, ok := r.(pyStop); !ok {
						panic(r)
					}
					if _, done := secs[pp.current]; pp.current != "" && !done {
						secs[pp.current] = section{line: pp.peek().line}
					}
					if pp.pos == start {
						pp.next()
					}
					if pp.toks[pp.pos-1].kind != pyNewline {
						pp.skipLine()
					}
					pp.skipIndented()
				}
			}()
			pp.statement(secs, first)
		}()
		first = false
	}
	return p.build(secs, func(s string) string { return strings.ToUpper(s) }, 0)
}

// skipIndented skips logical lines that are indented (the body of a
// skipped block, or continuation of a statement already refused).
func (pp *pyParser) skipIndented() {
	for {
		t := pp.peek()
		if t.kind == pyEOF || t.col == 0 {
			return
		}
		pp.skipLine()
	}
}

func (pp *pyParser) statement(secs map[string]section, first bool) {
	t := pp.peek()
	if t.col != 0 {
		pp.fail(t.line, "unexpected indentation")
	}
	switch {
	case t.kind == pyName && t.text == "import":
		pp.next()
		for {
			pp.dotted()
			if pp.peek().kind == pyName && pp.peek().text == "as" {
				pp.next()
				pp.expectName("a name after 'as'")
			}
			if !pp.isOp(",") {
				break
			}
			pp.next()
		}
		pp.endOfStatement()
	case t.kind == pyName && t.text == "from":
		pp.next()
		dots := 0
		for pp.isOp(".") {
			pp.next()
			dots++
		}
		if dots == 0 || !(pp.peek().kind == pyName && pp.peek().text == "import") {
			pp.dotted()
		}
		if it := pp.next(); it.kind != pyName || it.text != "import" {
			pp.fail(it.line, "expected 'import', found %s", it)
		}
		if pp.isOp("*") {
			pp.next()
			pp.endOfStatement()
			return
		}
		paren := pp.isOp("(")
		if paren {
			pp.next()
		}
		for {
			pp.expectName("an imported name")
			if pp.peek().kind == pyName && pp.peek().text == "as" {
				pp.next()
				pp.expectName("a name after 'as'")
			}
			if !pp.isOp(",") {
				break
			}
			pp.next()
			if paren && pp.isOp(")") {
				break
			}
		}
		if paren {
			pp.expectOp(")", "to close the import list")
		}
		pp.endOfStatement()
	case t.kind == pyString && first:
		for pp.peek().kind == pyString {
			pp.next()
		}
		pp.endOfStatement() // the module docstring
	case t.kind == pyName && t.text == "if" && pp.isMainGuard():
		// What runs the recipe, and its else branch: not part of it, but
		// read for changes to the sections, since `python recipe.py` runs
		// it before Deep500 reads them.
		pp.skipStatement()
		for nt := pp.peek(); nt.kind == pyName && (nt.text == "else" || nt.text == "elif"); nt = pp.peek() {
			pp.skipStatement()
		}
	case t.kind == pyOp && t.text == "@",
		t.kind == pyName && (t.text == "def" || t.text == "class" || t.text == "async"):
		// Helpers the recipe's values may name (a gradient modifier): their
		// bodies run only when Deep500 calls them, never while it reads
		// FIXED, MUTABLE and METRICS.
		pp.skipStatement()
	case t.kind == pyName && pySections[t.text] != "":
		pp.next()
		if pp.isOp(":") { // an annotation: FIXED: dict = {...}, FIXED: Dict[str, Any] = {...}
			pp.next()
			pp.skipAnnotation()
			if end := pp.peek(); end.kind == pyNewline || end.kind == pyEOF {
				pp.next()
				return // an annotation alone (FIXED: dict) assigns nothing
			}
		}
		if !pp.isOp("=") {
			pp.fail(t.line, "%s is changed here after or instead of its assignment; recipe.py must assign it once, whole, for its value to be read without running Python", t.text)
		}
		pp.next()
		key := pySections[t.text]
		if prev, dup := secs[key]; dup {
			pp.fail(t.line, "%s assigned twice (also on line %d)", t.text, prev.line)
		}
		pp.current = key
		v := pp.expr(0)
		if pp.isOp("=") {
			pp.fail(t.line, "chained assignment is not supported")
		}
		pp.endOfStatement()
		secs[key] = section{n: v, line: t.line}
	default:
		// Anything else (a helper constant, a print, a loop) is skipped, as
		// long as it leaves the sections alone: a statement that assigns
		// or changes one would need Python to evaluate the recipe.
		pp.skipStatement()
	}
}

// skipAnnotation moves past a type annotation to its "=" or the end of
// its line: Python evaluates an annotation at the top level, but it is no
// part of the section's value, and it may be any expression (a subscript
// such as Dict[str, Any], a string) that a recipe's values never are.
func (pp *pyParser) skipAnnotation() {
	depth := 0
	for {
		t := pp.peek()
		switch {
		case t.kind == pyNewline || t.kind == pyEOF:
			return
		case t.kind == pyOp && strings.Contains("([{", t.text):
			depth++
		case t.kind == pyOp && strings.Contains(")]}", t.text):
			depth--
		case t.kind == pyOp && t.text == "=" && depth == 0:
			return
		}
		pp.next()
	}
}

// skipStatement skips a top-level statement that is not an import or an
// assignment to a section, with the block it opens, and refuses it if any
// of its lines assigns, deletes or changes FIXED, MUTABLE, METRICS or
// ENTRYPOINT (FIXED['epochs'] = 1, FIXED.update(...), a section assigned
// inside an if or a loop), which reading the file cannot follow.
func (pp *pyParser) skipStatement() {
	for {
		line := pp.logicalLine()
		if name, ok := changesSection(line); ok {
			pp.fail(line[0].line, "%s is changed here, outside its own assignment; recipe.py must assign it once, whole, at the top level for its value to be read without running Python", name)
		}
		if nt := pp.peek(); nt.kind == pyEOF || nt.col == 0 {
			return
		}
	}
}

// logicalLine returns the tokens up to the end of the current logical line
// and moves past it.
func (pp *pyParser) logicalLine() []pyTok {
	start := pp.pos
	pp.skipLine()
	return pp.toks[start:pp.pos]
}

// changesSection reports whether a logical line changes a section: it
// starts with the section's name (after del or global) followed by an
// assignment, an augmented assignment, a subscript or an attribute.
func changesSection(line []pyTok) (string, bool) {
	if len(line) > 1 && line[0].kind == pyName && (line[0].text == "del" || line[0].text == "global" || line[0].text == "nonlocal") {
		return sectionNamed(line[1:])
	}
	if len(line) > 1 && line[0].kind == pyName && pySections[line[0].text] != "" {
		if op := line[1]; op.kind == pyOp && op.text != "(" && op.text != ")" && op.text != "," {
			if op.text == "=" && len(line) > 2 && line[2].kind == pyOp && line[2].text == "=" {
				return "", false // FIXED == ...: a comparison
			}
			return line[0].text, true
		}
	}
	// A section among the targets of an assignment: a, FIXED = ...
	for j, tk := range line {
		if tk.kind == pyOp && tk.text == "=" && (j+1 >= len(line) || line[j+1].text != "=") && (j == 0 || !strings.Contains("=!<>", line[j-1].text)) {
			if name, ok := sectionNamed(line[:j]); ok {
				return name, true
			}
			break
		}
	}
	return "", false
}

func sectionNamed(toks []pyTok) (string, bool) {
	for _, tk := range toks {
		if tk.kind == pyName && pySections[tk.text] != "" {
			return tk.text, true
		}
	}
	return "", false
}

// isMainGuard recognises if __name__ == '__main__' (either quote).
func (pp *pyParser) isMainGuard() bool {
	if pp.pos+5 >= len(pp.toks) {
		return false
	}
	t := pp.toks[pp.pos+1 : pp.pos+6]
	return t[0].kind == pyName && t[0].text == "__name__" &&
		t[1].kind == pyOp && t[1].text == "=" && t[2].kind == pyOp && t[2].text == "=" &&
		t[3].kind == pyString && t[3].str == "__main__" && t[4].kind == pyOp && t[4].text == ":"
}

func (pp *pyParser) dotted() string {
	parts := []string{pp.expectName("a module name").text}
	for pp.isOp(".") {
		pp.next()
		parts = append(parts, pp.expectName("a name after '.'").text)
	}
	return strings.Join(parts, ".")
}

func (pp *pyParser) expr(depth int) *node {
	if depth > maxDepth {
		pp.fail(pp.peek().line, "nested deeper than %d levels", maxDepth)
	}
	t := pp.next()
	switch t.kind {
	case pyString:
		s := t.str
		for pp.peek().kind == pyString { // "a" "b" is "ab"
			s += pp.next().str
		}
		return &node{kind: nScalar, line: t.line, scalar: s}
	case pyNumber:
		v, msg := pyNumberValue(t.text)
		if msg != "" {
			pp.fail(t.line, "%s", msg)
		}
		return &node{kind: nScalar, line: t.line, scalar: v}
	case pyName:
		switch t.text {
		case "True", "False":
			return &node{kind: nScalar, line: t.line, scalar: t.text == "True"}
		case "None":
			return &node{kind: nScalar, line: t.line, scalar: nil}
		}
		if pyKeywords[t.text] {
			pp.fail(t.line, "unsupported expression %q: a recipe holds literals, names and calls only", t.text)
		}
		name := t.text
		for pp.isOp(".") {
			pp.next()
			name += "." + pp.expectName("a name after '.'").text
		}
		if !pp.isOp("(") {
			return &node{kind: nSymbol, line: t.line, name: name}
		}
		pp.next()
		n := &node{kind: nSymbol, line: t.line, name: name, call: true}
		pp.callArgs(n, depth)
		if pp.isOp(".") || pp.isOp("(") || pp.isOp("[") {
			pp.fail(pp.peek().line, "unsupported expression after the call to %s", name)
		}
		if name == "dict" {
			if len(n.items) > 0 {
				pp.fail(t.line, "dict(...) with positional arguments is not supported; use dict(key=value, ...) or {...}")
			}
			return &node{kind: nMap, line: t.line, keys: n.keys, vals: n.vals}
		}
		return n
	case pyOp:
		switch t.text {
		case "-", "+":
			nt := pp.peek()
			if nt.kind != pyNumber {
				pp.fail(t.line, "unsupported operator %q: only a sign before a number is allowed", t.text)
			}
			n := pp.expr(depth + 1)
			if t.text == "-" {
				switch v := n.scalar.(type) {
				case int64:
					n.scalar = -v
				case float64:
					n.scalar = -v
				}
			}
			return n
		case "[":
			n := &node{kind: nList, line: t.line, items: []*node{}}
			for !pp.isOp("]") {
				n.items = append(n.items, pp.expr(depth+1))
				if pp.isComprehension() {
					pp.fail(pp.peek().line, "comprehensions are not supported")
				}
				if !pp.isOp(",") {
					break
				}
				pp.next()
			}
			pp.expectOp("]", "to close the list opened on line "+strconv.Itoa(t.line))
			return n
		case "(":
			if pp.isOp(")") {
				pp.next()
				return &node{kind: nList, line: t.line, items: []*node{}}
			}
			first := pp.expr(depth + 1)
			if pp.isOp(")") {
				pp.next()
				return first // parentheses around one value
			}
			if pp.isComprehension() {
				pp.fail(pp.peek().line, "generator expressions are not supported")
			}
			n := &node{kind: nList, line: t.line, items: []*node{first}}
			for pp.isOp(",") {
				pp.next()
				if pp.isOp(")") {
					break
				}
				n.items = append(n.items, pp.expr(depth+1))
			}
			pp.expectOp(")", "to close the tuple opened on line "+strconv.Itoa(t.line))
			return n
		case "{":
			n := &node{kind: nMap, line: t.line}
			seen := map[string]int{}
			for !pp.isOp("}") {
				kt := pp.peek()
				if kt.kind == pyOp && kt.text == "*" {
					pp.fail(kt.line, "** unpacking is not supported")
				}
				k := pp.expr(depth + 1)
				key, ok := k.scalar.(string)
				if k.kind != nScalar || !ok {
					if pp.isOp(",") || pp.isOp("}") {
						pp.fail(kt.line, "sets are not supported; use a list")
					}
					pp.fail(kt.line, "dictionary keys must be strings")
				}
				pp.expectOp(":", "after a dictionary key")
				v := pp.expr(depth + 1)
				if pp.isComprehension() {
					pp.fail(pp.peek().line, "comprehensions are not supported")
				}
				if prev, dup := seen[key]; dup {
					pp.fail(kt.line, "key %q given twice (also on line %d)", key, prev)
				}
				seen[key] = kt.line
				n.keys = append(n.keys, key)
				n.vals = append(n.vals, v)
				if !pp.isOp(",") {
					break
				}
				pp.next()
			}
			pp.expectOp("}", "to close the dictionary opened on line "+strconv.Itoa(t.line))
			return n
		}
	}
	if t.kind == pyOp && strings.Contains("*/%@<>=!&|^~", t.text) {
		pp.fail(t.line, "unsupported operator %q: a recipe holds literals, names and calls only", t.text)
	}
	pp.fail(t.line, "unexpected %s: expected a literal, a name or a call", t)
	return nil
}

func (pp *pyParser) isComprehension() bool {
	t := pp.peek()
	return t.kind == pyName && (t.text == "for" || t.text == "async")
}

// callArgs reads the arguments of a call up to and including ")".
func (pp *pyParser) callArgs(n *node, depth int) {
	seen := map[string]bool{}
	for !pp.isOp(")") {
		t := pp.peek()
		if t.kind == pyOp && t.text == "*" {
			pp.fail(t.line, "*args and **kwargs are not supported")
		}
		if t.kind == pyName && pp.pos+1 < len(pp.toks) && pp.toks[pp.pos+1].kind == pyOp && pp.toks[pp.pos+1].text == "=" &&
			!(pp.pos+2 < len(pp.toks) && pp.toks[pp.pos+2].kind == pyOp && pp.toks[pp.pos+2].text == "=") {
			if pyKeywords[t.text] || t.text == "True" || t.text == "False" || t.text == "None" {
				pp.fail(t.line, "%q cannot be a keyword argument", t.text)
			}
			pp.next()
			pp.next()
			if seen[t.text] {
				pp.fail(t.line, "keyword argument %s given twice", t.text)
			}
			seen[t.text] = true
			n.keys = append(n.keys, t.text)
			n.vals = append(n.vals, pp.expr(depth+1))
		} else {
			if len(n.keys) > 0 {
				pp.fail(t.line, "positional argument after keyword arguments")
			}
			n.items = append(n.items, pp.expr(depth+1))
		}
		if pp.isComprehension() {
			pp.fail(pp.peek().line, "generator expressions are not supported")
		}
		if !pp.isOp(",") {
			break
		}
		pp.next()
	}
	pp.expectOp(")", "to close the call to "+n.name)
}
