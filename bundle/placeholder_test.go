package bundle

import (
	"encoding/json"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// A bundle whose submission.json or system.json still holds a value to
// fill in names each such field; a complete one names none.
func TestPlaceholdersAreNamed(t *testing.T) {
	b, err := Open(writeTemp(t, "ok.tar.gz", tarGz(t, validEntries())), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if got := b.Placeholders(); len(got) != 0 {
		t.Errorf("a complete bundle: %+v", got)
	}
	ents := with(without(without(validEntries(), ManifestName), SystemName),
		ent{name: ManifestName, body: strings.Replace(validManifest(), `"ETH"`, `"FILL IN: your organisation"`, 1)},
		ent{name: SystemName, body: strings.Replace(validSystem(), `"AMD EPYC"`, `"FILL IN: the model name lscpu prints"`, 1)})
	b, err = Open(writeTemp(t, "fill.tar.gz", tarGz(t, ents)), DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range b.Placeholders() {
		got = append(got, r.File+": "+r.Message)
	}
	want := []string{`submission.json: submitter still says "FILL IN: your organisation": write the value in its place`,
		`system.json: host_processor_model_name still says "FILL IN: the model name lscpu prints": write the value in its place`}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("placeholders:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// FillPlaceholders writes the values it is given in the fields that hold
// a placeholder, and changes nothing else of the file: not a known field
// that holds a value, not one it is given no value for, not the layout.
func TestFillPlaceholdersKeepsTheFile(t *testing.T) {
	src := "{\n  \"submitter\": \"Lab\",\n  \"host_processor_model_name\": \"FILL IN: the model name lscpu prints\",\n" +
		"  \"note\": \"\\\"host_processor_core_count\\\"\",\n  \"host_processor_core_count\":   \"FILL IN\",\n" +
		"  \"other_software_stack\": {\"framework\": \"FILL IN\"},\n  \"operating_system\": \"FILL IN: the OS\"\n}\n"
	out, filled, err := FillPlaceholders("system.json", []byte(src), map[string]string{
		"submitter": "Other", "host_processor_model_name": "AMD EPYC 9654", "host_processor_core_count": "96", "framework": "torch"})
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(`"FILL IN: the model name lscpu prints"`, `"AMD EPYC 9654"`, `"host_processor_core_count":   "FILL IN"`, `"host_processor_core_count":   "96"`).Replace(src)
	if string(out) != want || strings.Join(filled, " ") != "host_processor_model_name host_processor_core_count" {
		t.Errorf("filled %v into\n%s\nwant\n%s", filled, out, want)
	}
	if !json.Valid(out) {
		t.Errorf("the filled file is not JSON")
	}
	if _, _, err := FillPlaceholders("system.json", []byte("[1]"), nil); d5list.ErrorCode(err) != d5list.EINVALID {
		t.Errorf("not an object: %v", err)
	}
}
