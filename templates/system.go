package templates

import (
	"encoding/json"
	"slices"
	"sort"
	"strconv"

	"github.com/deep500/d5list/bundle"
)

// systemFieldOrder is the order an entry's page lists a system
// description in: MLPerf's fields as its rules list them, so that the page
// reads like the system files MLPerf publishes, then d5list's own.
var systemFieldOrder = append(bundle.MLPerfSystemFields(), "cost_per_hour")

// SystemField is one field of a system description, as the page shows it.
type SystemField struct {
	Name, Value string
}

// SystemFields lists a system description's fields, MLPerf's in their
// order and any other after them by name.
func SystemFields(sys map[string]any) []SystemField {
	var out []SystemField
	for _, k := range systemFieldOrder {
		if v, ok := sys[k]; ok {
			out = append(out, SystemField{k, systemValue(v)})
		}
	}
	var rest []string
	for k := range sys {
		if !slices.Contains(systemFieldOrder, k) {
			rest = append(rest, k)
		}
	}
	sort.Strings(rest)
	for _, k := range rest {
		out = append(out, SystemField{k, systemValue(sys[k])})
	}
	return out
}

// SoftwareStack is what ran the entry: the framework submission.json
// names, and system.json's framework, operating system and
// other_software_stack, one line per component (an object's keys are the
// components' names).
func SoftwareStack(framework string, sys map[string]any) []SystemField {
	var out []SystemField
	if framework != "" {
		out = append(out, SystemField{"framework (submission.json)", framework})
	}
	for _, k := range []string{"framework", "operating_system"} {
		if v, ok := sys[k]; ok {
			out = append(out, SystemField{k, systemValue(v)})
		}
	}
	switch other := sys["other_software_stack"].(type) {
	case nil:
	case map[string]any:
		keys := make([]string, 0, len(other))
		for k := range other {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, SystemField{k, systemValue(other[k])})
		}
	case []any:
		for _, v := range other {
			out = append(out, SystemField{"other_software_stack", systemValue(v)})
		}
	default:
		out = append(out, SystemField{"other_software_stack", systemValue(other)})
	}
	return out
}

// systemValue prints a value as the file wrote it: MLPerf writes strings,
// numbers stay numbers, and lists or objects are shown as JSON.
func systemValue(v any) string {
	switch v := v.(type) {
	case string:
		return v
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return ""
	}
	return string(b)
}
