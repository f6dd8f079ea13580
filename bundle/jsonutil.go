package bundle

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"sort"
)

// lineIndex turns byte offsets into 1-based line numbers.
type lineIndex []int

func newLineIndex(data []byte) lineIndex {
	starts := lineIndex{0}
	for i, c := range data {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

func (li lineIndex) line(off int64) int {
	return sort.Search(len(li), func(i int) bool { return int64(li[i]) > off })
}

// jsonTopKeys decodes a JSON object into its top-level members, keeping
// each key's line and refusing duplicate keys and trailing data.
func jsonTopKeys(file string, data []byte) (map[string]json.RawMessage, map[string]int, []string, error) {
	vals, lines, order, _, err := jsonTopKeysRepeated(file, data, false)
	return vals, lines, order, err
}

// repeatedKey is a key given twice; the later value is kept, as Python's
// json module keeps it.
type repeatedKey struct {
	key             string
	line, firstLine int
}

// jsonTopKeysRepeated is jsonTopKeys that, with lastWins, keeps the last
// of a repeated key and reports it instead of refusing the file: MLPerf's
// tools read system descriptions with Python, which does that.
func jsonTopKeysRepeated(file string, data []byte, lastWins bool) (map[string]json.RawMessage, map[string]int, []string, []repeatedKey, error) {
	var repeated []repeatedKey
	li := newLineIndex(data)
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	fail := func(off int64, format string, args ...any) error {
		return invalid(CodeCorrupt, file, li.line(off), format, args...)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, nil, nil, nil, jsonErr(file, li, dec, err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, nil, nil, nil, fail(0, "expected a JSON object")
	}
	vals := map[string]json.RawMessage{}
	lines := map[string]int{}
	var order []string
	for dec.More() {
		off := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, nil, nil, nil, jsonErr(file, li, dec, err)
		}
		key := tok.(string) // inside an object, Token gives keys as strings
		line := li.line(skipSpace(data, off))
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, nil, nil, nil, jsonErr(file, li, dec, err)
		}
		if prev, dup := lines[key]; dup {
			if !lastWins {
				return nil, nil, nil, nil, invalid(CodeCorrupt, file, line, "key %q given twice (also on line %d)", key, prev)
			}
			repeated = append(repeated, repeatedKey{key, line, prev})
			vals[key], lines[key] = raw, line
			continue
		}
		vals[key], lines[key] = raw, line
		order = append(order, key)
	}
	if _, err := dec.Token(); err != nil {
		return nil, nil, nil, nil, jsonErr(file, li, dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, nil, nil, nil, fail(dec.InputOffset(), "data after the JSON object")
	}
	return vals, lines, order, repeated, nil
}

func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) {
		switch data[off] {
		case ' ', '\t', '\r', '\n', ',':
			off++
			continue
		}
		break
	}
	return off
}

func jsonErr(file string, li lineIndex, dec *json.Decoder, err error) error {
	var se *json.SyntaxError
	off := dec.InputOffset()
	if errors.As(err, &se) {
		off = se.Offset
	}
	if err == io.EOF || errors.Is(err, io.ErrUnexpectedEOF) {
		return invalid(CodeCorrupt, file, li.line(off), "unexpected end of JSON")
	}
	return invalid(CodeCorrupt, file, li.line(off), "invalid JSON: %v", err)
}
