package bundle

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
	"strings"
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

// ParseSystem parses an MLPerf-style system description. Fields MLPerf
// writes as strings may also be given as JSON numbers; fields this portal
// does not know are kept in Extra.
func ParseSystem(name string, data []byte) (System, error) {
	var s System
	vals, lines, order, err := jsonTopKeys(name, data)
	if err != nil {
		return s, retag(err, CodeSystem)
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
		if *fields[k] == "" {
			if _, ok := vals[k]; ok {
				rs.add(CodeSystem, name, lines[k], "field %q is empty", k)
			} else {
				rs.add(CodeSystem, name, 0, "missing field %q", k)
			}
		}
	}
	for _, k := range countSystemFields {
		v := *fields[k]
		if v == "" {
			continue
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			rs.add(CodeSystem, name, lines[k], "field %q is %q, not a whole number", k, v)
		} else if n == 0 && k == "number_of_nodes" {
			rs.add(CodeSystem, name, lines[k], "number_of_nodes must be at least 1")
		}
	}
	if s.CostPerHour != "" {
		if f, err := strconv.ParseFloat(s.CostPerHour, 64); err != nil || f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
			rs.add(CodeSystem, name, lines["cost_per_hour"], "cost_per_hour %q is not a price in USD", s.CostPerHour)
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
