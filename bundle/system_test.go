package bundle

import (
	"os"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

func TestParseSystemAcceptsMLPerfFiles(t *testing.T) {
	tests := []struct {
		dir, name, accel string
		total            int
		extraKey         string
	}{
		{"v4.0-asustek-resnet", "ESC8000A-E12-8xH100-PCIE-80GB", "NVIDIA H100-PCIe-80GB", 8, "host_storage_type"},
		{"v4.0-gigacomputing-ssd", "GIGABYTE G593-SD1", "NVIDIA H100-SXM5-80GB", 8, "hardware"},
	}
	for _, tc := range tests {
		t.Run(tc.dir, func(t *testing.T) {
			data, err := os.ReadFile(mlperfDir + tc.dir + "/system.json")
			if err != nil {
				t.Skipf("MLPerf peer data not available: %v", err)
			}
			s, err := ParseSystem("system.json", data)
			if err != nil {
				t.Fatalf("%v %+v", err, d5list.ErrorReasons(err))
			}
			if s.SystemName != tc.name {
				t.Errorf("system_name %q", s.SystemName)
			}
			if model, total := s.Accelerators(); model != tc.accel || total != tc.total {
				t.Errorf("Accelerators() = %q, %d", model, total)
			}
			if _, ok := s.Extra[tc.extraKey]; !ok {
				t.Errorf("Extra lacks %s: %v", tc.extraKey, s.Extra)
			}
			if s.OtherSoftwareStack == nil {
				t.Error("other_software_stack lost")
			}
		})
	}
}

func TestParseSystemErrors(t *testing.T) {
	tests := []struct {
		name, src string
		line      int
		msg       string
	}{
		{"missing required", `{"submitter": "x"}`, 0, `missing field "system_name"`},
		{"object for a string", "{\n\"framework\": {\"a\": 1}}", 2, `"framework" must be a string`},
		{"zero nodes", "{\n\"number_of_nodes\": 0}", 2, "at least 1"},
		{"bad cost", "{\n\"cost_per_hour\": \"cheap\"}", 2, "cost_per_hour"},
		{"not json", "{\n\"a\": }", 2, "invalid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSystem("system.json", []byte(tc.src))
			if d5list.ErrorCode(err) != d5list.EINVALID {
				t.Fatalf("got %v", err)
			}
			for _, r := range d5list.ErrorReasons(err) {
				if r.Code == CodeSystem && r.File == "system.json" && r.Line == tc.line && strings.Contains(r.Message, tc.msg) {
					return
				}
			}
			t.Errorf("no reason at line %d with %q: %+v", tc.line, tc.msg, d5list.ErrorReasons(err))
		})
	}
	// Numbers as JSON numbers are fine.
	s, err := ParseSystem("system.json", []byte(strings.Replace(validSystem(), `"number_of_nodes": "1"`, `"number_of_nodes": 2`, 1)))
	if err != nil || s.NumberOfNodes != "2" {
		t.Fatalf("numeric number_of_nodes: %v %+v", err, d5list.ErrorReasons(err))
	}
}

// What MLPerf's checker lets through and publishes is read, with a
// warning naming the line: an empty field, a count that is not a whole
// number, a repeated key (the later value wins, as in Python).
func TestParseSystemWarnings(t *testing.T) {
	tests := []struct {
		name, from, to string
		line           int
		msg            string
		check          func(System) bool
	}{
		{"empty required", `"system_name": "cpu-box"`, `"system_name": ""`, 1, `field "system_name" is empty`, nil},
		{"nodes not a number", `"number_of_nodes": "1"`, `"number_of_nodes": "two"`, 2, `"number_of_nodes" is "two", not a whole number`, nil},
		{"cores per node", `"host_processor_core_count": "2"`, `"host_processor_core_count": "Node1: 128, Node2: 64"`, 3, "host_processor_core_count", nil},
		{"1.0 nodes", `"number_of_nodes": "1"`, `"number_of_nodes": "1.0"`, 0, "", func(s System) bool { return s.NumberOfNodes == "1" }},
		{"repeated key", `"host_processors_per_node": "1"`, `"host_processors_per_node": "", "number_of_nodes": 2`, 2, "given twice", func(s System) bool { return s.NumberOfNodes == "2" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(validSystem(), tc.from, tc.to, 1)
			if src == validSystem() {
				t.Fatalf("validSystem has no %s", tc.from)
			}
			s, err := ParseSystem("system.json", []byte(src))
			if err != nil {
				t.Fatalf("refused: %v %+v", err, d5list.ErrorReasons(err))
			}
			if tc.check != nil && !tc.check(s) {
				t.Errorf("read %+v", s)
			}
			if tc.msg == "" {
				if len(s.Warnings) != 0 {
					t.Errorf("warnings %+v", s.Warnings)
				}
				return
			}
			for _, w := range s.Warnings {
				if w.File == "system.json" && w.Line == tc.line && strings.Contains(w.Message, tc.msg) {
					return
				}
			}
			t.Errorf("no warning at line %d with %q: %+v", tc.line, tc.msg, s.Warnings)
		})
	}
}

func TestParseManifest(t *testing.T) {
	m, err := ParseManifest("submission.json", []byte(validManifest()))
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != d5list.ManifestFormat || m.Division != "closed" || m.Claims["time_to_train_s"] != 12.5 {
		t.Errorf("%+v", m)
	}
	withLinks := strings.Replace(validManifest(), `"claims"`, `"code_url": "https://github.com/x/y", "paper_url": "https://arxiv.org/abs/1234.5678", "claims"`, 1)
	if m, err := ParseManifest("submission.json", []byte(withLinks)); err != nil || m.PaperURL != "https://arxiv.org/abs/1234.5678" || m.CodeURL != "https://github.com/x/y" {
		t.Errorf("links: %q %q %v", m.CodeURL, m.PaperURL, err)
	}
	withEnv := strings.Replace(validManifest(), `"claims"`, `"environment": {"framework.torch": "1.13.1", "runs": "entrypoint"}, "claims"`, 1)
	if m, err := ParseManifest("submission.json", []byte(withEnv)); err != nil || m.Environment["framework.torch"] != "1.13.1" {
		t.Errorf("environment: %+v %v", m.Environment, err)
	}
	tests := []struct {
		name, src string
		line      int
		msg       string
	}{
		{"unknown field", strings.Replace(validManifest(), `"division"`, "\"divison\": \"closed\",\n\"division\"", 1), 1, `unknown field "divison"`},
		{"wrong format", strings.Replace(validManifest(), "d5list/v1", "d5list/v2", 1), 1, "d5list/v1"},
		{"bad division", strings.Replace(validManifest(), `"closed"`, `"closd"`, 1), 1, "division"},
		{"bad availability", strings.Replace(validManifest(), `"available"`, `"soon"`, 1), 1, "availability"},
		{"missing benchmark", strings.Replace(validManifest(), `"benchmark"`, `"code_url": "https://x.org/r", "x_benchmark"`, 1), 0, `missing field "benchmark"`},
		{"bad url", strings.Replace(validManifest(), `"claims"`, `"code_url": "file:///etc", "claims"`, 1), 2, "code_url"},
		{"paper not http", strings.Replace(validManifest(), `"claims"`, `"paper_url": "javascript:alert(1)", "claims"`, 1), 2, "paper_url"},
		{"paper too long", strings.Replace(validManifest(), `"claims"`, `"paper_url": "https://arxiv.org/`+strings.Repeat("a", MaxLinkBytes)+`", "claims"`, 1), 2, "paper_url is 2066 bytes long"},
		{"claims not numbers", strings.Replace(validManifest(), `12.5`, `"fast"`, 1), 2, "claims"},
		{"number for a string", "{\"format\": \"d5list/v1\",\n\"benchmark\": 3}", 2, `"benchmark" must be a string`},
		{"environment value too long", strings.Replace(validManifest(), `"claims"`, `"environment": {"framework.torch": "`+strings.Repeat("9", 300)+`"}, "claims"`, 1), 2, "longer than 200 bytes"},
		{"environment not labels", strings.Replace(validManifest(), `"claims"`, `"environment": {"framework.torch": 2}, "claims"`, 1), 2, "environment must be an object"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseManifest("submission.json", []byte(tc.src))
			for _, r := range d5list.ErrorReasons(err) {
				if r.Code == CodeManifest && r.File == "submission.json" && r.Line == tc.line && strings.Contains(r.Message, tc.msg) {
					return
				}
			}
			t.Errorf("no reason at line %d with %q: %v %+v", tc.line, tc.msg, err, d5list.ErrorReasons(err))
		})
	}
}
