package portal

import (
	"encoding/json"

	"github.com/deep500/d5list/bundle"
)

// systemDescription is system.json as the bundle reader read it, for the
// entry's page: the fields MLPerf names (by their JSON names), its
// other_software_stack and any other field the file has. A field the file
// left out or empty is not shown as if it had been declared.
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
	return out
}
