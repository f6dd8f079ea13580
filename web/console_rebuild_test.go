package web_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/store"
)

// A benchmark definition saved in the console re-ranks its board at once:
// the rows are derived again and the first request after the save has the
// board rendered again in the new order, then kept.
func TestConsoleBenchmarkChangeReranksCachedBoard(t *testing.T) {
	p := startReal(t)
	c := p.login(t, "organiser")
	save := func(direction string) {
		t.Helper()
		yaml := "id: l2-ours\nname: Ours\nlevel: 2\ncategory: training\nruns: 3\nranking: {metric: time_to_train_s, direction: " + direction + "}\n"
		resp, err := c.PostForm(p.url+"/console/benchmarks", url.Values{"yaml": {yaml}, "csrf": {c.csrf}})
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("saving the benchmark (%s): %d", direction, resp.StatusCode)
		}
	}
	save("lower")
	ctx := context.Background()
	bench, err := p.db.Benchmark(ctx, "l2-ours")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.db.InsertSynthetic(ctx, leaderboard.Synthetic(bench, 40, 8, store.SyntheticSubmitter, 1)); err != nil {
		t.Fatal(err)
	}
	first := func(wantCache string) int64 {
		t.Helper()
		a := fetch(t, p.url+"/api/v1/leaderboards/l2-ours")
		var board d5list.Leaderboard
		if err := json.Unmarshal(a.body, &board); err != nil || a.code != http.StatusOK || len(board.Entries) < 2 {
			t.Fatalf("the board: %d, %d entries (%v): %.200s", a.code, len(board.Entries), err, a.body)
		}
		if got := a.hd.Get("X-D5-Board-Cache"); got != wantCache {
			t.Fatalf("X-D5-Board-Cache: %q, want %q", got, wantCache)
		}
		return board.Entries[0].SubmissionID
	}
	lowest := first("miss")
	if again := first("hit"); again != lowest {
		t.Fatalf("the cached board leads with %d, first %d", again, lowest)
	}
	save("higher")
	highest := first("miss")
	if highest == lowest {
		t.Fatalf("the first answer after the ranking's direction changed still leads with %d", lowest)
	}
	if again := first("hit"); again != highest {
		t.Fatalf("the kept answer leads with %d, the first after the change with %d", again, highest)
	}
}
