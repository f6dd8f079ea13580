package leaderboard

import (
	"bytes"
	"encoding/csv"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// Text a competitor chose that a spreadsheet would run as a formula is
// written as text, and ReadCSV gives back exactly what was written.
func TestCSVNeutralisesFormulas(t *testing.T) {
	names := []string{"=HYPERLINK(\"http://evil\",\"x\")", "+1+1", "-2+3", "@SUM(A1)", "\tTab", "'quoted", "'=both", "Plain Lab", ""}
	board := &d5list.Leaderboard{Benchmark: d5list.Benchmark{ID: "l2-digits-mlp-cpu"}}
	for i, n := range names {
		board.Entries = append(board.Entries, d5list.Entry{Rank: i + 1, SubmissionID: int64(i + 1), Submitter: n, SystemName: n,
			CodeURL: n, Metric: "time_to_train_s", Value: 1, CreatedAt: time.Unix(0, 0).UTC(), Basis: d5list.BasisMeasured})
	}
	var buf bytes.Buffer
	if err := WriteCSV(&buf, board, ""); err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(bytes.NewReader(buf.Bytes())).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range rows[1:] {
		for _, col := range []int{3, 4, 22} {
			if c := row[col]; c != "" && bytes.ContainsRune([]byte("=+-@\t\r"), rune(c[0])) {
				t.Errorf("cell %q would run as a formula", c)
			}
		}
	}
	back, err := ReadCSV(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range back {
		if e.Submitter != names[i] || e.SystemName != names[i] || e.CodeURL != names[i] {
			t.Errorf("entry %d read back %q %q %q, want %q", i, e.Submitter, e.SystemName, e.CodeURL, names[i])
		}
	}
}
