package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	d5list "github.com/deep500/d5list"
)

// Placeholder starts a value that a starter file leaves to its author:
// `d5list init` and the examples write it where nothing about the
// submission can be known yet, `d5list run` replaces it where the machine
// it runs on knows the value (FillPlaceholders), and a bundle that still
// holds one is refused (Bundle.Placeholders), so that "FILL IN: ..." is
// never listed as an organisation or a processor.
const Placeholder = "FILL IN"

// CodePlaceholder is the code of a field that still holds a Placeholder.
const CodePlaceholder = "placeholder"

// IsPlaceholder reports whether a value is one to fill in.
func IsPlaceholder(v string) bool { return strings.HasPrefix(strings.TrimSpace(v), Placeholder) }

// Placeholders names each field of submission.json and system.json that
// still holds a Placeholder.
func (b *Bundle) Placeholders() []d5list.Reason {
	var out []d5list.Reason
	add := func(file string, fields map[string]string) {
		keys := make([]string, 0, len(fields))
		for k := range fields {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if v := fields[k]; IsPlaceholder(v) {
				out = append(out, d5list.Reason{Code: CodePlaceholder, File: file,
					Message: fmt.Sprintf("%s still says %q: write the value in its place", k, v)})
			}
		}
	}
	m := b.Manifest
	add(b.ManifestFile, map[string]string{"submitter": m.Submitter, "system_name": m.SystemName, "framework": m.Framework,
		"code_url": m.CodeURL, "paper_url": m.PaperURL})
	system := map[string]string{}
	for k, v := range b.System.fields() {
		system[k] = *v
	}
	for k, v := range b.System.Extra {
		if s, ok := v.(string); ok {
			system[k] = s
		}
	}
	add(b.SystemFile, system)
	return out
}

// FillPlaceholders replaces, in the top level of the JSON object data
// (submission.json, system.json), the value of each field that holds a
// Placeholder and that values knows, and leaves every other byte as it
// was, the file's order and layout with it. It returns the new file and
// the fields it filled.
func FillPlaceholders(name string, data []byte, values map[string]string) ([]byte, []string, error) {
	vals, _, order, err := jsonTopKeys(name, data)
	if err != nil {
		return nil, nil, err
	}
	var filled []string
	at := 0
	for _, key := range order {
		var v string
		value, known := values[key]
		if !known || json.Unmarshal(vals[key], &v) != nil || !IsPlaceholder(v) {
			continue
		}
		// The field's raw value, after its key, is what is replaced.
		keyAt := bytes.Index(data[at:], []byte(`"`+key+`"`))
		valueAt := bytes.Index(data[at+keyAt:], vals[key])
		if keyAt < 0 || valueAt < 0 {
			return nil, nil, fmt.Errorf("%s: field %q not found as written", name, key)
		}
		start := at + keyAt + valueAt
		encoded, _ := json.Marshal(value)
		data = append(data[:start:start], append(encoded, data[start+len(vals[key]):]...)...)
		at = start + len(encoded)
		filled = append(filled, key)
	}
	return data, filled, nil
}
