package mllog

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	d5list "github.com/deep500/d5list"
)

// MaxLineBytes bounds one log line. MLPerf lines are a few hundred bytes;
// a megabyte leaves room for large metadata while keeping a hostile file
// from making the scanner buffer grow without limit.
const MaxLineBytes = 1 << 20

// MaxEvents bounds the events of one uploaded file: MLPerf's published
// run logs hold up to some 9,000 (round 2.0's maskrcnn on two A30s, its
// training statistics every 50 steps), and each event costs the reader
// about a kilobyte, so a file of short lines could otherwise cost twenty
// times its size.
const MaxEvents = 20_000

// MaxDecodedBytes bounds the JSON text of the values and metadata decoded
// from one uploaded file (Event.Decoded, summed): decoded, an object of
// short keys and numbers costs ten times its text, so that a file of long
// metadata would cost far more than its size. MLPerf's published run logs
// decode up to about 3 MB (that same maskrcnn log); the others, unet3d the
// richest, 138 kB.
const MaxDecodedBytes = 2 << 20

// Limits bound what Within reads of one file.
type Limits struct{ Events, DecodedBytes int }

// UploadLimits are Parse's: MaxEvents and MaxDecodedBytes.
var UploadLimits = Limits{MaxEvents, MaxDecodedBytes}

// maxSyntaxReasons caps how many bad lines one file reports, so a binary
// file uploaded by mistake yields a readable answer.
const maxSyntaxReasons = 20

// CodeSyntax is the Reason code of an MLLOG line that cannot be read.
const CodeSyntax = "mllog_syntax"

// marker is what MLPerf's checker looks for; the space after it is optional
// here so that a line cut by a tool that trims spaces still parses.
const marker = ":::MLLOG"

// Parse reads MLLOG events from r. Lines without ":::MLLOG" are ignored, as
// is anything before it on a line. A payload that is not one JSON object with
// a non-empty "key" and a numeric "time_ms" is a bad line: the error is a
// *d5list.Error (EINVALID) whose Reasons name file and line of each bad
// line (the first 20), and the events of the good lines are returned with
// it, so a caller can judge the rest of the file.
//
// Numbers in value and metadata decode to int64 when they are integers that
// fit, float64 otherwise, so seeds and sample counts stay exact. NaN,
// Infinity and -Infinity, which Python's json module writes, decode to the
// floats they name; Float refuses them as numbers.
func Parse(r io.Reader, file string) ([]Event, error) {
	return Within(r, file, UploadLimits)
}

// Within is Parse reading at most lim of the file: a file on the reader's
// own disk may hold more than an upload may.
func Within(r io.Reader, file string, lim Limits) ([]Event, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLineBytes)
	var (
		events  []Event
		reasons []d5list.Reason
		line    int
		decoded int
	)
	bad := func(msg string) {
		if len(reasons) < maxSyntaxReasons {
			reasons = append(reasons, d5list.Reason{Code: CodeSyntax, File: file, Line: line, Message: msg})
		}
	}
	for sc.Scan() {
		line++
		text := sc.Bytes()
		i := bytes.Index(text, []byte(marker))
		if i < 0 {
			continue
		}
		ev, err := decodePayload(bytes.TrimSpace(text[i+len(marker):]))
		if err != nil {
			bad(err.Error())
			continue
		}
		ev.Line = line
		if len(events) == lim.Events {
			bad(fmt.Sprintf("more than %d MLLOG events in one file; the rest is not read", lim.Events))
			break
		}
		if decoded += ev.Decoded; decoded > lim.DecodedBytes {
			bad(fmt.Sprintf("the values and metadata of the events up to here take more than %d bytes; the rest is not read", lim.DecodedBytes))
			break
		}
		events = append(events, ev)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			line++
			bad(fmt.Sprintf("line longer than %d bytes", MaxLineBytes))
		} else {
			return nil, fmt.Errorf("mllog: reading %s: %w", file, err)
		}
	}
	if len(reasons) > 0 {
		e := d5list.Errorf(d5list.EINVALID, "%s: line %d: unreadable MLLOG line: %s", file, reasons[0].Line, reasons[0].Message)
		e.Reasons = reasons
		return events, e
	}
	return events, nil
}

type rawEvent struct {
	Namespace any             `json:"namespace"`
	TimeMS    *json.Number    `json:"time_ms"`
	EventType any             `json:"event_type"`
	Key       any             `json:"key"`
	Value     json.RawMessage `json:"value"`
	Metadata  json.RawMessage `json:"metadata"`
}

// A decoded JSON number costs some 30 bytes where its text took two: a log
// of long arrays would cost an upload checker twenty times its size. No
// rule reads an array or an object longer than a line of MLPerf's (they
// log scalars, and small objects such as tracked_stats), so a longer one
// is kept as a note of its size, not decoded.
const (
	maxCompositeValueBytes = 1 << 10
	maxMetadataBytes       = 4 << 10
)

func decodePayload(p []byte) (Event, error) {
	if len(p) == 0 {
		return Event{}, errors.New("nothing after :::MLLOG")
	}
	if len(p) <= maxCompositeValueBytes {
		// Most lines, whatever their values. A line the fast path does
		// not take goes the long way, which gives its reason.
		if ev, ok := decodeFast(p); ok {
			return ev, nil
		}
	}
	return decodeSlow(p)
}

// decodeSlow reads a payload with encoding/json, its value and metadata
// apart so that a long one is not decoded.
func decodeSlow(p []byte) (Event, error) {
	p = pythonConstants(p)
	dec := json.NewDecoder(bytes.NewReader(p))
	dec.UseNumber()
	var raw rawEvent
	if err := dec.Decode(&raw); err != nil {
		return Event{}, fmt.Errorf("bad JSON: %v", err)
	}
	if dec.More() {
		return Event{}, errors.New("bad JSON: text after the JSON object")
	}
	if _, err := dec.Token(); err != io.EOF {
		return Event{}, errors.New("bad JSON: text after the JSON object")
	}
	key, ok := raw.Key.(string)
	if !ok || key == "" {
		return Event{}, errors.New(`"key" missing or not a string`)
	}
	if raw.TimeMS == nil {
		return Event{}, fmt.Errorf(`event %q has no "time_ms"`, key)
	}
	ms, err := timeMS(*raw.TimeMS)
	if err != nil {
		return Event{}, fmt.Errorf(`event %q: bad "time_ms": %v`, key, err)
	}
	ns, _ := raw.Namespace.(string)
	et, _ := raw.EventType.(string)
	ev := Event{Namespace: ns, TimeMS: ms, EventType: et, Key: key}
	if v := bytes.TrimSpace(raw.Value); len(v) > maxCompositeValueBytes && (v[0] == '[' || v[0] == '{') {
		ev.Value = fmt.Sprintf("(an array or object of %d bytes, not read)", len(v))
	} else if len(v) > 0 {
		if err := decodeNumbers(v, &ev.Value); err != nil {
			return Event{}, fmt.Errorf("event %q: bad value: %v", key, err)
		}
		ev.Value = normalize(ev.Value)
		ev.Decoded += len(v)
	}
	if m := bytes.TrimSpace(raw.Metadata); len(m) > 0 && len(m) <= maxMetadataBytes {
		var meta map[string]any
		if err := decodeNumbers(m, &meta); err != nil {
			return Event{}, fmt.Errorf("event %q: bad metadata: %v", key, err)
		}
		ev.Decoded += len(m)
		if meta != nil {
			ev.Metadata = normalize(meta).(map[string]any)
		}
	}
	return ev, nil
}

func decodeNumbers(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	return dec.Decode(v)
}

func timeMS(n json.Number) (int64, error) {
	if i, err := n.Int64(); err == nil {
		return i, nil
	}
	f, err := n.Float64()
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) || math.Abs(f) > 1<<62 {
		return 0, fmt.Errorf("%q is not a time in milliseconds", n.String())
	}
	return int64(math.Round(f)), nil
}

// MLPerf's logger writes with Python's json module, which writes a float
// that is not finite as a bare NaN, Infinity or -Infinity: not JSON, but
// what the field's logs hold (a loss that diverged). pythonConstants
// rewrites each such token outside a string as a string that normalize
// turns back into the float. The NUL inside keeps it from any string a log
// would write.
const constantPrefix = "\x00mllog:"

var pythonConstantTokens = []struct {
	token string
	value float64
}{
	{"-Infinity", math.Inf(-1)},
	{"Infinity", math.Inf(1)},
	{"NaN", math.NaN()},
}

func pythonConstants(p []byte) []byte {
	if !bytes.Contains(p, []byte("NaN")) && !bytes.Contains(p, []byte("Infinity")) {
		return p
	}
	var out bytes.Buffer
	inString, escaped := false, false
	for i := 0; i < len(p); i++ {
		c := p[i]
		if inString {
			out.WriteByte(c)
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		if c == '"' {
			inString = true
			out.WriteByte(c)
			continue
		}
		replaced := false
		for _, k := range pythonConstantTokens {
			if bytes.HasPrefix(p[i:], []byte(k.token)) && !identChar(p, i-1) && !identChar(p, i+len(k.token)) {
				out.WriteString(`"\u0000mllog:` + k.token + `"`)
				i += len(k.token) - 1
				replaced = true
				break
			}
		}
		if !replaced {
			out.WriteByte(c)
		}
	}
	return out.Bytes()
}

func identChar(p []byte, i int) bool {
	if i < 0 || i >= len(p) {
		return false
	}
	c := p[i]
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// normalize turns json.Number into int64 or float64, recursively, and the
// strings pythonConstants wrote back into NaN or an infinity.
func normalize(v any) any {
	switch x := v.(type) {
	case string:
		if rest, ok := strings.CutPrefix(x, constantPrefix); ok {
			for _, k := range pythonConstantTokens {
				if rest == k.token {
					return k.value
				}
			}
		}
		return x
	case json.Number:
		if !strings.ContainsAny(x.String(), ".eE") {
			if i, err := x.Int64(); err == nil {
				return i
			}
		}
		f, _ := x.Float64()
		return f
	case map[string]any:
		for k, e := range x {
			x[k] = normalize(e)
		}
		return x
	case []any:
		for i, e := range x {
			x[i] = normalize(e)
		}
		return x
	}
	return v
}

// Float returns v as a float64 if it is a finite number (int64, float64,
// int, json.Number): a NaN or an infinity a log wrote is no measurement.
func Float(v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, !math.IsNaN(x) && !math.IsInf(x, 0)
	case int64:
		return float64(x), true
	case int:
		return float64(x), true
	case float32:
		return float64(x), !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0)
	case json.Number:
		f, err := x.Float64()
		return f, err == nil && !math.IsNaN(f) && !math.IsInf(f, 0)
	}
	return 0, false
}

// Int returns v as an int64 if it is an integral number.
func Int(v any) (int64, bool) {
	switch x := v.(type) {
	case int64:
		return x, true
	case int:
		return int64(x), true
	case json.Number:
		i, err := x.Int64()
		return i, err == nil
	case float64:
		if x == math.Trunc(x) && math.Abs(x) < 1<<53 {
			return int64(x), true
		}
	}
	return 0, false
}

// DecodedBytes sums the events' Decoded.
func DecodedBytes(events []Event) int {
	n := 0
	for _, e := range events {
		n += e.Decoded
	}
	return n
}

// Meta returns metadata[key] of the event, or nil.
func (e *Event) Meta(key string) any {
	if e.Metadata == nil {
		return nil
	}
	return e.Metadata[key]
}

// ParseLine reads the event of one log line, as Parse reads each line: ok
// is false for a line without ":::MLLOG" or with a payload Parse would
// refuse.
func ParseLine(text string) (Event, bool) {
	i := strings.Index(text, marker)
	if i < 0 {
		return Event{}, false
	}
	ev, err := decodePayload(bytes.TrimSpace([]byte(text[i+len(marker):])))
	return ev, err == nil
}
