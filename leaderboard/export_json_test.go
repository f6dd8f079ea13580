package leaderboard

import (
	"bytes"
	"encoding/json"
	"testing"

	d5list "github.com/deep500/d5list"
)

// The streamed JSON export is byte for byte what encoding the whole board
// at once gives, so ETags and clients see no difference, and each entry's
// value_text is its value as the board prints it.
func TestWriteJSONMatchesEncoder(t *testing.T) {
	bench := d5list.Benchmark{ID: "l2-x", Name: "X <&> \"quoted\"", Level: 2, Runs: 5,
		Ranking: d5list.RankingRule{Metric: d5list.MetricTimeToTrain, Direction: d5list.LowerIsBetter, Unit: "s"}}
	subs := Synthetic(&bench, 300, 40, "synthetic <lab>", 3)
	for i := range subs {
		subs[i].ID = int64(i + 1)
		subs[i].Status = d5list.StatusVerified
	}
	ranked := Rank(&bench, subs, Options{AllPerSystem: true})
	if len(ranked) != len(subs) {
		t.Fatalf("%d entries of %d submissions", len(ranked), len(subs))
	}
	for _, entries := range [][]d5list.Entry{ranked, {}} {
		board := &d5list.Leaderboard{Benchmark: bench, Entries: entries}
		whole := struct {
			Benchmark d5list.Benchmark `json:"benchmark"`
			Entries   []exportedEntry  `json:"entries"`
		}{Benchmark: bench, Entries: []exportedEntry{}}
		for i := range entries {
			whole.Entries = append(whole.Entries, exported(&bench, &entries[i]))
		}
		var want, got bytes.Buffer
		if err := json.NewEncoder(&want).Encode(whole); err != nil {
			t.Fatal(err)
		}
		if err := WriteJSON(&got, board); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want.Bytes()) {
			t.Fatalf("%d entries: WriteJSON differs from the encoder:\n%.400s\nwant\n%.400s", len(entries), got.Bytes(), want.Bytes())
		}
	}
}
