package bundle

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	d5list "github.com/deep500/d5list"
)

// System is an MLPerf-style system description (systems/<name>.json).
// MLPerf writes every field as a string, numbers included, so the fields
// here are strings too and MLPerf files are accepted as they are.
type System struct {
	Submitter                 string         `json:"submitter"`
	Division                  string         `json:"division"`
	Status                    string         `json:"status"`
	SystemName                string         `json:"system_name"`
	NumberOfNodes             string         `json:"number_of_nodes"`
	HostProcessorsPerNode     string         `json:"host_processors_per_node"`
	HostProcessorModelName    string         `json:"host_processor_model_name"`
	HostProcessorCoreCount    string         `json:"host_processor_core_count"`
	HostMemoryCapacity        string         `json:"host_memory_capacity"`
	AcceleratorsPerNode       string         `json:"accelerators_per_node"`
	AcceleratorModelName      string         `json:"accelerator_model_name"`
	AcceleratorMemoryCapacity string         `json:"accelerator_memory_capacity"`
	AcceleratorInterconnect   string         `json:"accelerator_interconnect"`
	Framework                 string         `json:"framework"`
	OtherSoftwareStack        any            `json:"other_software_stack"`
	OperatingSystem           string         `json:"operating_system"`
	CostPerHour               string         `json:"cost_per_hour,omitempty"` // d5list extension, USD
	Extra                     map[string]any `json:"-"`
	// Warnings are what MLPerf's own checker lets through but a reader
	// should see: an empty field, a count that is not a whole number (a
	// per-node list such as "Node1: 128, Node2: 64"), a repeated key.
	Warnings []d5list.Reason `json:"-"`
}

// systemFields maps the JSON keys of System to their fields.
func (s *System) fields() map[string]*string {
	return map[string]*string{
		"submitter": &s.Submitter, "division": &s.Division, "status": &s.Status,
		"system_name": &s.SystemName, "number_of_nodes": &s.NumberOfNodes,
		"host_processors_per_node": &s.HostProcessorsPerNode, "host_processor_model_name": &s.HostProcessorModelName,
		"host_processor_core_count": &s.HostProcessorCoreCount, "host_memory_capacity": &s.HostMemoryCapacity,
		"accelerators_per_node": &s.AcceleratorsPerNode, "accelerator_model_name": &s.AcceleratorModelName,
		"accelerator_memory_capacity": &s.AcceleratorMemoryCapacity, "accelerator_interconnect": &s.AcceleratorInterconnect,
		"framework": &s.Framework, "operating_system": &s.OperatingSystem, "cost_per_hour": &s.CostPerHour,
	}
}

// requiredSystemFields must be present and non-empty.
var requiredSystemFields = []string{"submitter", "system_name", "number_of_nodes", "host_processor_model_name",
	"host_processor_core_count", "accelerators_per_node", "framework", "operating_system"}

// countSystemFields must be whole numbers; MLPerf leaves
// host_processors_per_node empty at times, the required ones never.
var countSystemFields = []string{"number_of_nodes", "host_processors_per_node", "host_processor_core_count", "accelerators_per_node"}

// ParseSystem parses an MLPerf-style system description as MLPerf's tools
// read one: fields MLPerf writes as strings may also be JSON numbers, a
// repeated key keeps its last value, and fields this portal does not know
// are kept in Extra. A required field that is missing, or a value that is
// neither a string nor a number, is refused; an empty field or a count
// that is not a whole number is a warning (System.Warnings), since MLPerf
// accepts both and publishes such files.
func ParseSystem(name string, data []byte) (System, error) {
	var s System
	vals, lines, order, repeated, err := jsonTopKeysRepeated(name, data, true)
	if err != nil {
		return s, retag(err, CodeSystem)
	}
	warn := func(line int, format string, args ...any) {
		s.Warnings = append(s.Warnings, d5list.Reason{Code: CodeSystem, File: name, Line: line, Message: fmt.Sprintf(format, args...)})
	}
	for _, r := range repeated {
		warn(r.line, "field %q given twice (also on line %d); the later value is read, as MLPerf's checker reads it", r.key, r.firstLine)
	}
	var rs reasons
	fields := s.fields()
	for _, k := range order {
		raw := vals[k]
		if k == "other_software_stack" {
			var v any
			if err := json.Unmarshal(raw, &v); err == nil {
				s.OtherSoftwareStack = v
			}
			continue
		}
		dst, known := fields[k]
		if !known {
			var v any
			if err := json.Unmarshal(raw, &v); err == nil {
				if s.Extra == nil {
					s.Extra = map[string]any{}
				}
				s.Extra[k] = v
			}
			continue
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		_ = dec.Decode(&v) // raw came out of a successful decode
		switch v := v.(type) {
		case string:
			*dst = strings.TrimSpace(v)
		case json.Number:
			*dst = v.String()
		case nil:
		default:
			rs.add(CodeSystem, name, lines[k], "field %q must be a string", k)
		}
	}
	for _, k := range requiredSystemFields {
		if *fields[k] != "" {
			continue
		}
		if _, ok := vals[k]; ok {
			warn(lines[k], "field %q is empty", k)
		} else {
			rs.add(CodeSystem, name, 0, "missing field %q", k)
		}
	}
	for _, k := range countSystemFields {
		v := *fields[k]
		if v == "" {
			continue
		}
		n, ok := wholeNumber(v)
		switch {
		case !ok:
			warn(lines[k], "field %q is %q, not a whole number: read as unknown", k, v)
		case n == 0 && k == "number_of_nodes":
			rs.add(CodeSystem, name, lines[k], "number_of_nodes must be at least 1")
		default:
			*fields[k] = strconv.Itoa(n) // "1.0" nodes is 1 node
		}
	}
	if s.CostPerHour != "" {
		if f, err := strconv.ParseFloat(s.CostPerHour, 64); err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			rs.add(CodeSystem, name, lines["cost_per_hour"], "cost_per_hour %q is not a price in USD", s.CostPerHour)
		}
	}
	return s, rs.err("")
}

// wholeNumber reads a count written as 8, "8" or "8.0".
func wholeNumber(v string) (int, bool) {
	if n, err := strconv.Atoi(v); err == nil {
		return n, n >= 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || f < 0 || f != math.Trunc(f) || f > math.MaxInt32 {
		return 0, false
	}
	return int(f), true
}

// mlperfSystemFields are the fields MLPerf's system description checker
// (mlcommons/logging system_desc_checker.py) requires to be present, empty
// or not.
var mlperfSystemFields = []string{
	"submitter", "division", "status", "system_name", "number_of_nodes", "host_processors_per_node",
	"host_processor_model_name", "host_processor_core_count", "host_processor_vcpu_count",
	"host_processor_frequency", "host_processor_caches", "host_processor_interconnect", "host_memory_capacity",
	"host_storage_type", "host_storage_capacity", "host_networking", "host_networking_topology",
	"host_memory_configuration", "accelerators_per_node", "accelerator_model_name",
	"accelerator_host_interconnect", "accelerator_frequency", "accelerator_on-chip_memories",
	"accelerator_memory_configuration", "accelerator_memory_capacity", "accelerator_interconnect",
	"accelerator_interconnect_topology", "cooling", "hw_notes", "framework", "other_software_stack",
	"operating_system", "sw_notes",
}

// MLPerfSystemFields are the fields MLPerf's system description checker
// requires, in the order its rules list them.
func MLPerfSystemFields() []string { return slices.Clone(mlperfSystemFields) }

// CheckMLPerfSystem is MLPerf's system description checker
// (mlcommons/logging system_desc_checker.py) on top of ParseSystem: every
// field it lists present, empty or not, and where the round names the
// statuses a description may have (statuses), one of them. What MLPerf
// refuses is an error naming the field; ParseSystem's warnings come back
// with s, and what only the portal's own reading would refuse (a field
// that is not a string) is a warning here, since MLPerf accepts it.
func CheckMLPerfSystem(name string, data []byte, statuses []string) (System, error) {
	vals, lines, _, _, err := jsonTopKeysRepeated(name, data, true)
	if err != nil {
		return System{}, retag(err, CodeSystem)
	}
	s, perr := ParseSystem(name, data)
	for _, r := range d5list.ErrorReasons(perr) {
		if !strings.HasPrefix(r.Message, "missing field") { // said below, with MLPerf's list
			s.Warnings = append(s.Warnings, r)
		}
	}
	var rs reasons
	for _, k := range mlperfSystemFields {
		if _, ok := vals[k]; !ok {
			rs.add(CodeSystem, name, 0, "Missing field %s (MLPerf's system description checker requires it, empty or not)", k)
		}
	}
	if raw, ok := vals["status"]; ok && len(statuses) > 0 {
		var status any
		_ = json.Unmarshal(raw, &status) // raw came out of a successful decode
		if st, isString := status.(string); !isString || !slices.Contains(statuses, st) {
			rs.add(CodeSystem, name, lines["status"], "Field status contains a non valid value: %s, must be one of %s", raw, strings.Join(statuses, "; "))
		}
	}
	return s, rs.err("")
}

// Accelerators returns the accelerator model and the total count over all
// nodes (accelerators_per_node * number_of_nodes); 0 when either is not a
// number, as for a CPU-only system.
func (s System) Accelerators() (model string, total int) {
	per, err1 := strconv.Atoi(s.AcceleratorsPerNode)
	nodes, err2 := strconv.Atoi(s.NumberOfNodes)
	if err1 != nil || err2 != nil || per <= 0 || nodes <= 0 {
		return s.AcceleratorModelName, 0
	}
	return s.AcceleratorModelName, per * nodes
}
