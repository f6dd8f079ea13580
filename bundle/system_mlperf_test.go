package bundle

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

const mlperfRounds = "../../shared/peer-data/mlperf-rounds"

// Every published system description of the five rounds is accepted, as
// MLPerf's own system description checker accepts it, with a warning for
// each loose corner: the 14 in systems/ and each result folder's.
func TestPublishedMLPerfSystemDescriptions(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(mlperfRounds, "systems", "*.json"))
	folders, _ := filepath.Glob(filepath.Join(mlperfRounds, "v*", "system.json"))
	if len(files) == 0 {
		t.Skip("shared/peer-data not beside the repository")
	}
	if len(files) != 14 {
		t.Errorf("%d files in systems/, SOURCES.md lists 14", len(files))
	}
	warned := map[string]bool{}
	for _, path := range append(files, folders...) {
		rel, _ := filepath.Rel(mlperfRounds, path)
		t.Run(rel, func(t *testing.T) {
			round := strings.TrimPrefix(strings.SplitN(filepath.Base(path), "-", 2)[0], "v")
			if filepath.Base(path) == "system.json" {
				round = strings.TrimPrefix(strings.SplitN(filepath.Base(filepath.Dir(path)), "-", 2)[0], "v")
			}
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			s, err := CheckMLPerfSystem(filepath.Base(path), data, statusesOf(round))
			if err != nil {
				t.Fatalf("refused what MLPerf accepted: %v %+v", err, d5list.ErrorReasons(err))
			}
			if s.Submitter == "" || s.SystemName == "" {
				t.Errorf("submitter %q system %q", s.Submitter, s.SystemName)
			}
			for _, w := range s.Warnings {
				if w.File == "" || w.Line <= 0 {
					t.Errorf("warning without a line: %+v", w)
				}
				for _, k := range []string{"is empty", "given twice", "not a whole number"} {
					if strings.Contains(w.Message, k) {
						warned[k] = true
					}
				}
			}
			if _, err := ParseSystem(filepath.Base(path), data); err != nil {
				t.Errorf("the portal's own reading refuses it: %v", err)
			}
		})
	}
	// The loose corners SOURCES.md names are all there, and all warned of.
	for _, k := range []string{"is empty", "given twice", "not a whole number"} {
		if !warned[k] {
			t.Errorf("no warning %q over all the files", k)
		}
	}
}

// What MLPerf's checker refuses, d5list refuses, naming the field.
func TestCheckMLPerfSystemRefuses(t *testing.T) {
	path := filepath.Join(mlperfRounds, "systems", "v5.0-Dell-1xXE9680Lx8H200-SXM-141GB.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Skip("shared/peer-data not beside the repository")
	}
	without := strings.Replace(string(data), `"sw_notes"`, `"sw_notez"`, 1)
	if without == string(data) {
		t.Fatal("the file has no sw_notes")
	}
	_, err = CheckMLPerfSystem("system.json", []byte(without), statusesOf("5.0"))
	if rs := d5list.ErrorReasons(err); len(rs) != 1 || !strings.Contains(rs[0].Message, "Missing field sw_notes") {
		t.Errorf("missing sw_notes: %v", err)
	}
	status := strings.Replace(string(data), `"Available on-premise"`, `"onprem"`, 1)
	if status == string(data) {
		t.Skip("status is not Available on-premise")
	}
	if _, err = CheckMLPerfSystem("system.json", []byte(status), statusesOf("5.0")); err == nil || !strings.Contains(err.Error(), "Field status contains a non valid value") {
		t.Errorf("status onprem in round 5.0: %v", err)
	}
	if _, err = CheckMLPerfSystem("system.json", []byte(status), statusesOf("3.1")); err != nil {
		t.Errorf("status onprem in round 3.1, before MLPerf checked it: %v", err)
	}
}

// statusesOf is the status list MLPerf's system description checker holds
// a round to: from round 4.0 on (verifier/mlperf_rounds has it per round).
func statusesOf(round string) []string {
	if v, err := strconv.ParseFloat(round, 64); err != nil || v < 4 {
		return nil
	}
	return []string{"Available on-premise", "Available cloud", "Research, Development, or Internal (RDI)", "Preview"}
}
