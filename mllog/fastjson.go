package mllog

import (
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeFast reads an MLLOG payload without encoding/json's reflection,
// some four times faster: the payloads of a result file are most of what
// checking an MLPerf folder costs. It takes what encoding/json with
// UseNumber and normalize would make of a plain payload, NaN and the
// infinities included, and gives up (ok false) on anything else, from a
// syntax error to a key that differs from a field's name only in case
// (which encoding/json would match), so that the slower path decides.
func decodeFast(p []byte) (ev Event, ok bool) {
	d := fastDecoder{p: p}
	d.space()
	if !d.byte('{') {
		return Event{}, false
	}
	var timeText string
	var haveKey, haveTime bool
	// The text of the value and of the metadata, as decodeSlow counts it
	// in Decoded: a field given twice counts its last text.
	var valueBytes, metadataBytes int
	for first := true; ; first = false {
		d.space()
		if d.byte('}') {
			break
		}
		if !first && !(d.byte(',') && d.spaceThen()) {
			return Event{}, false
		}
		name, isString := d.str()
		if !isString || !d.spaceThen() || !d.byte(':') {
			return Event{}, false
		}
		d.space()
		switch name {
		case "namespace", "event_type":
			v, valid := d.value(0)
			if !valid {
				return Event{}, false
			}
			s, _ := v.(string)
			if name == "namespace" {
				ev.Namespace = s
			} else {
				ev.EventType = s
			}
		case "key":
			v, valid := d.value(0)
			s, isStr := v.(string)
			if !valid || !isStr || s == "" {
				return Event{}, false
			}
			ev.Key, haveKey = s, true
		case "time_ms":
			start := d.i
			if !d.number() {
				return Event{}, false
			}
			timeText, haveTime = string(d.p[start:d.i]), true
		case "value":
			start := d.i
			v, valid := d.value(0)
			if !valid {
				return Event{}, false
			}
			ev.Value, valueBytes = v, d.i-start
		case "metadata":
			start := d.i
			v, valid := d.value(0)
			m, isMap := v.(map[string]any)
			if !valid || v != nil && !isMap {
				return Event{}, false
			}
			ev.Metadata, metadataBytes = m, d.i-start
		default:
			for _, f := range []string{"namespace", "event_type", "key", "time_ms", "value", "metadata"} {
				if strings.EqualFold(name, f) {
					return Event{}, false
				}
			}
			if _, valid := d.value(0); !valid {
				return Event{}, false
			}
		}
	}
	d.space()
	if d.i != len(d.p) || !haveKey || !haveTime {
		return Event{}, false
	}
	ms, err := timeMS(json.Number(timeText))
	if err != nil {
		return Event{}, false
	}
	ev.TimeMS, ev.Decoded = ms, valueBytes+metadataBytes
	return ev, true
}

type fastDecoder struct {
	p []byte
	i int
}

func (d *fastDecoder) space() {
	for d.i < len(d.p) && (d.p[d.i] == ' ' || d.p[d.i] == '\t' || d.p[d.i] == '\n' || d.p[d.i] == '\r') {
		d.i++
	}
}

// spaceThen skips spaces and reports true, for use in a condition.
func (d *fastDecoder) spaceThen() bool { d.space(); return true }

func (d *fastDecoder) byte(c byte) bool {
	if d.i < len(d.p) && d.p[d.i] == c {
		d.i++
		return true
	}
	return false
}

func (d *fastDecoder) lit(s string) bool {
	if strings.HasPrefix(string(d.p[d.i:min(len(d.p), d.i+len(s))]), s) {
		d.i += len(s)
		return true
	}
	return false
}

// value reads one JSON value (and the constants Python writes) as
// normalize would leave it.
func (d *fastDecoder) value(depth int) (any, bool) {
	if d.i >= len(d.p) || depth > 100 {
		return nil, false
	}
	switch c := d.p[d.i]; {
	case c == '"':
		return d.str()
	case c == '{':
		d.i++
		m := map[string]any{}
		for first := true; ; first = false {
			d.space()
			if d.byte('}') {
				return m, true
			}
			if !first && !(d.byte(',') && d.spaceThen()) {
				return nil, false
			}
			k, ok := d.str()
			if !ok || !d.spaceThen() || !d.byte(':') {
				return nil, false
			}
			d.space()
			v, ok := d.value(depth + 1)
			if !ok {
				return nil, false
			}
			m[k] = v
		}
	case c == '[':
		d.i++
		l := []any{}
		for first := true; ; first = false {
			d.space()
			if d.byte(']') {
				return l, true
			}
			if !first && !(d.byte(',') && d.spaceThen()) {
				return nil, false
			}
			v, ok := d.value(depth + 1)
			if !ok {
				return nil, false
			}
			l = append(l, v)
		}
	case d.lit("true"):
		return true, true
	case d.lit("false"):
		return false, true
	case d.lit("null"):
		return nil, true
	case d.lit("NaN"):
		return math.NaN(), true
	case d.lit("Infinity"):
		return math.Inf(1), true
	case d.lit("-Infinity"):
		return math.Inf(-1), true
	}
	start := d.i
	if !d.number() {
		return nil, false
	}
	return normalize(json.Number(d.p[start:d.i])), true
}

// number moves past a JSON number.
func (d *fastDecoder) number() bool {
	start := d.i
	d.byte('-')
	switch {
	case d.byte('0'):
	case d.digits() == 0:
		return false
	}
	if d.byte('.') && d.digits() == 0 {
		return false
	}
	if d.byte('e') || d.byte('E') {
		if !d.byte('+') {
			d.byte('-')
		}
		if d.digits() == 0 {
			return false
		}
	}
	return d.i > start
}

func (d *fastDecoder) digits() int {
	n := 0
	for d.i < len(d.p) && d.p[d.i] >= '0' && d.p[d.i] <= '9' {
		d.i++
		n++
	}
	return n
}

// str reads a JSON string; a string the fast path need not read as
// encoding/json would (invalid UTF-8, a lone surrogate) gives up.
func (d *fastDecoder) str() (string, bool) {
	if !d.byte('"') {
		return "", false
	}
	start := d.i
	for d.i < len(d.p) {
		switch c := d.p[d.i]; {
		case c == '"':
			s := d.p[start:d.i]
			d.i++
			if !utf8.Valid(s) {
				return "", false
			}
			return string(s), true
		case c == '\\':
			return d.escaped(start)
		case c < 0x20:
			return "", false
		}
		d.i++
	}
	return "", false
}

// escaped reads the rest of a string that holds an escape.
func (d *fastDecoder) escaped(start int) (string, bool) {
	var b strings.Builder
	b.Write(d.p[start:d.i])
	for d.i < len(d.p) {
		c := d.p[d.i]
		switch {
		case c == '"':
			d.i++
			if !utf8.ValidString(b.String()) {
				return "", false
			}
			return b.String(), true
		case c < 0x20:
			return "", false
		case c != '\\':
			b.WriteByte(c)
			d.i++
			continue
		}
		if d.i+1 >= len(d.p) {
			return "", false
		}
		e := d.p[d.i+1]
		d.i += 2
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return "", false
			}
			if utf16.IsSurrogate(r) {
				if !d.lit(`\u`) {
					return "", false
				}
				r2, ok := d.hex4()
				if r = utf16.DecodeRune(r, r2); !ok || r == utf8.RuneError {
					return "", false
				}
			}
			b.WriteRune(r)
		default:
			return "", false
		}
	}
	return "", false
}

func (d *fastDecoder) hex4() (rune, bool) {
	if d.i+4 > len(d.p) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(d.p[d.i:d.i+4]), 16, 32)
	d.i += 4
	return rune(n), err == nil
}
