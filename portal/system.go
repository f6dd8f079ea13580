package portal

import (
	"encoding/json"

	"github.com/deep500/d5list/bundle"
)

// maxSystemDescription bounds the system description kept with an entry
// (MLPerf's own files are a few kB): system.json is bounded only by the
// bundle's limits, and the description is read with the submission.
const maxSystemDescription = 64 << 10

// systemDescription is system.json as the bundle reader read it, for the
// entry's page: the fields MLPerf names (by their JSON names), its
// other_software_stack and any other field the file has. A field the file
// left out or empty is not shown as if it had been declared. A file larger
// than maxSystemDescription is not kept: the page then points to the
// bundle, as for entries uploaded before descriptions were kept.
func systemDescription(sys bundle.System) map[string]any {
	b, err := json.Marshal(sys) // the fields' JSON names are MLPerf's
	if err != nil {
		return nil
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		return nil
	}
	for k, v := range sys.Extra {
		out[k] = v
	}
	for k, v := range out {
		if v == nil || v == "" {
			delete(out, k)
		}
	}
	if b, err := json.Marshal(out); err != nil || len(b) > maxSystemDescription {
		return nil
	}
	return out
}
