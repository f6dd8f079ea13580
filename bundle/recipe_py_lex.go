package bundle

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// recipe.py's tokenizer: names, numbers, strings and operators, each with
// its line and column, so that the parser (recipe_py.go) names the line of
// whatever it refuses.

type pyTokKind int

const (
	pyName pyTokKind = iota
	pyNumber
	pyString
	pyOp
	pyNewline
	pyEOF
)

type pyTok struct {
	kind pyTokKind
	text string // name, operator, number as written
	str  string // decoded string value
	line int
	col  int  // 0 for the first token of an unindented line
	bol  bool // first token of a logical line
}

func (t pyTok) String() string {
	switch t.kind {
	case pyNewline:
		return "end of line"
	case pyEOF:
		return "end of file"
	case pyString:
		return "string"
	}
	return strconv.Quote(t.text)
}

type pyLexError struct {
	line int
	msg  string
}

// pyTokenize splits src into tokens with Python's rules for strings,
// numbers, comments, line joining inside brackets and backslash
// continuations.
func pyTokenize(src string) ([]pyTok, *pyLexError) {
	var toks []pyTok
	line, col := 1, 0
	depth := 0
	var opens []pyTok
	bol := true // at the start of a logical line
	i := 0
	errf := func(l int, format string, args ...any) ([]pyTok, *pyLexError) {
		return nil, &pyLexError{l, fmt.Sprintf(format, args...)}
	}
	if strings.HasPrefix(src, "\ufeff") {
		i = 3
	}
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			if depth == 0 && !bol {
				toks = append(toks, pyTok{kind: pyNewline, line: line})
				bol = true
			}
			i++
			line++
			col = 0
			continue
		case c == ' ' || c == '\t' || c == '\f' || c == '\r':
			i++
			col++
			continue
		case c == '#':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '\\':
			if i+1 < len(src) && src[i+1] == '\n' {
				i += 2
				line++
				col = 1 // a continued line is never the start of a statement
				continue
			}
			if i+2 < len(src) && src[i+1] == '\r' && src[i+2] == '\n' {
				i += 3
				line++
				col = 1
				continue
			}
			return errf(line, "unexpected backslash")
		}
		t := pyTok{line: line, col: col, bol: bol && depth == 0}
		start := i
		switch {
		case isIdentStart(c):
			j := i
			for j < len(src) && isIdentChar(src[j]) {
				j++
			}
			word := src[i:j]
			if j < len(src) && (src[j] == '\'' || src[j] == '"') && isStringPrefix(word) {
				s, n, nl, err := pyStringLit(src[j:], strings.ToLower(word))
				if err != "" {
					return errf(line, "%s", err)
				}
				t.kind, t.str = pyString, s
				i = j + n
				line += nl
			} else {
				t.kind, t.text = pyName, word
				i = j
			}
		case c == '\'' || c == '"':
			s, n, nl, err := pyStringLit(src[i:], "")
			if err != "" {
				return errf(line, "%s", err)
			}
			t.kind, t.str = pyString, s
			i += n
			line += nl
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(src) && src[i+1] >= '0' && src[i+1] <= '9':
			j := i
			for j < len(src) && (isIdentChar(src[j]) || src[j] == '.' ||
				(src[j] == '+' || src[j] == '-') && (src[j-1] == 'e' || src[j-1] == 'E') && !strings.HasPrefix(strings.ToLower(src[i:j]), "0x")) {
				j++
			}
			t.kind, t.text = pyNumber, src[i:j]
			i = j
		case c >= 0x80:
			r, _ := utf8.DecodeRuneInString(src[i:])
			return errf(line, "unexpected character %q (names in a recipe are ASCII)", r)
		default:
			t.kind, t.text = pyOp, string(c)
			switch c {
			case '(', '[', '{':
				depth++
				opens = append(opens, t)
			case ')', ']', '}':
				if depth == 0 {
					return errf(line, "unmatched %q", c)
				}
				want := map[string]byte{"(": ')', "[": ']', "{": '}'}[opens[len(opens)-1].text]
				if c != want {
					return errf(line, "%q does not close %q opened on line %d", c, opens[len(opens)-1].text, opens[len(opens)-1].line)
				}
				depth--
				opens = opens[:len(opens)-1]
			}
			i++
		}
		col += i - start
		bol = false
		toks = append(toks, t)
	}
	if depth > 0 {
		o := opens[len(opens)-1]
		return errf(o.line, "%q is never closed", o.text)
	}
	if !bol {
		toks = append(toks, pyTok{kind: pyNewline, line: line})
	}
	toks = append(toks, pyTok{kind: pyEOF, line: line})
	return toks, nil
}

func isIdentStart(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
func isIdentChar(c byte) bool  { return isIdentStart(c) || c >= '0' && c <= '9' }

func isStringPrefix(w string) bool {
	switch strings.ToLower(w) {
	case "r", "u", "b", "br", "rb", "f", "fr", "rf":
		return true
	}
	return false
}

// pyString decodes the string literal at the start of s. It returns the
// value, the bytes consumed, the newlines inside, and an error message.
func pyStringLit(s, prefix string) (string, int, int, string) {
	if strings.Contains(prefix, "f") {
		return "", 0, 0, "f-strings are code; write a plain string"
	}
	if strings.Contains(prefix, "b") {
		return "", 0, 0, "bytes literals are not supported; write a plain string"
	}
	raw := strings.Contains(prefix, "r")
	q := s[:1]
	if strings.HasPrefix(s, q+q+q) {
		q = q + q + q
	}
	var b strings.Builder
	nl := 0
	i := len(q)
	for {
		if i >= len(s) {
			return "", 0, 0, "unterminated string"
		}
		if strings.HasPrefix(s[i:], q) {
			return b.String(), i + len(q), nl, ""
		}
		c := s[i]
		if c == '\n' {
			if len(q) == 1 {
				return "", 0, 0, "unterminated string (a newline inside a one-line string)"
			}
			nl++
		}
		if c != '\\' {
			b.WriteByte(c)
			i++
			continue
		}
		if i+1 >= len(s) {
			return "", 0, 0, "unterminated string"
		}
		e := s[i+1]
		if e == '\n' {
			nl++
		}
		if raw {
			b.WriteByte('\\')
			b.WriteByte(e)
			i += 2
			continue
		}
		i += 2
		switch e {
		case '\n':
		case '\\', '\'', '"':
			b.WriteByte(e)
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'a':
			b.WriteByte('\a')
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'v':
			b.WriteByte('\v')
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i - 1
			for j < len(s) && j < i+2 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i-1:j], 8, 32)
			b.WriteRune(rune(v))
			i = j
		case 'x', 'u', 'U':
			n := map[byte]int{'x': 2, 'u': 4, 'U': 8}[e]
			if i+n > len(s) {
				return "", 0, 0, fmt.Sprintf(`truncated \%c escape`, e)
			}
			v, err := strconv.ParseUint(s[i:i+n], 16, 32)
			if err != nil || v > utf8.MaxRune {
				return "", 0, 0, fmt.Sprintf(`invalid \%c escape`, e)
			}
			b.WriteRune(rune(v))
			i += n
		case 'N':
			return "", 0, 0, `\N{...} escapes are not supported`
		default:
			b.WriteByte('\\') // Python keeps unknown escapes as written
			b.WriteByte(e)
		}
	}
}

// pyNumber converts a Python int or float literal.
func pyNumberValue(s string) (any, string) {
	if strings.HasSuffix(s, "j") || strings.HasSuffix(s, "J") {
		return nil, "complex numbers are not supported"
	}
	if strings.Contains(s, "__") || strings.HasSuffix(s, "_") {
		return nil, "invalid number " + s
	}
	clean := strings.ReplaceAll(s, "_", "")
	lower := strings.ToLower(clean)
	if len(lower) > 1 && lower[0] == '0' && (lower[1] == 'x' || lower[1] == 'o' || lower[1] == 'b') {
		base := map[byte]int{'x': 16, 'o': 8, 'b': 2}[lower[1]]
		v, err := strconv.ParseInt(lower[2:], base, 64)
		if err != nil || strings.HasPrefix(lower[2:], "-") || strings.HasPrefix(lower[2:], "+") {
			return nil, "invalid or out-of-range number " + s
		}
		return v, ""
	}
	if strings.ContainsAny(lower, ".e") {
		for _, r := range lower {
			if !(r >= '0' && r <= '9' || r == '.' || r == 'e' || r == '+' || r == '-') {
				return nil, "invalid number " + s
			}
		}
		v, err := strconv.ParseFloat(lower, 64)
		if err != nil {
			return nil, "invalid or out-of-range number " + s
		}
		return v, ""
	}
	for _, r := range lower {
		if r < '0' || r > '9' {
			return nil, "invalid number " + s
		}
	}
	if len(lower) > 1 && lower[0] == '0' && strings.Trim(lower, "0") != "" {
		return nil, "leading zeros in a decimal number (" + s + ") are not allowed in Python 3"
	}
	v, err := strconv.ParseInt(lower, 10, 64)
	if err != nil {
		return nil, "integer " + s + " out of range"
	}
	return v, ""
}
