package portal

import (
	"strings"
	"testing"

	"github.com/deep500/d5list/bundle"
)

// The description kept with an entry is system.json's fields, empty ones
// left out; one larger than maxSystemDescription (its unknown fields
// count) is not kept at all.
func TestSystemDescriptionBounded(t *testing.T) {
	sys := bundle.System{SystemName: "box", HostProcessorModelName: "cpu", Extra: map[string]any{"rack": "B7"}}
	got := systemDescription(sys)
	if got["system_name"] != "box" || got["rack"] != "B7" {
		t.Fatalf("description %v, want the named and the unknown fields", got)
	}
	if _, ok := got["accelerator_model_name"]; ok {
		t.Errorf("an empty field is kept: %v", got)
	}
	sys.Extra["notes"] = strings.Repeat("x", maxSystemDescription)
	if got := systemDescription(sys); got != nil {
		t.Errorf("a description of more than %d bytes was kept (%d fields)", maxSystemDescription, len(got))
	}
}
