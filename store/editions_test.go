package store

import (
	"context"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

func TestEditionIsImmutable(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	board := d5list.Leaderboard{Benchmark: d5list.Benchmark{ID: "b1"}, Entries: []d5list.Entry{{Rank: 1, SubmissionID: 3, Value: 1.5}}}
	if _, err := db.FreezeEdition(ctx, "2026-11", "olga", []d5list.Leaderboard{board}); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "a/b", "../x", strings.Repeat("x", 65)} {
		if _, err := db.FreezeEdition(ctx, bad, "olga", nil); d5list.ErrorCode(err) != d5list.EINVALID {
			t.Errorf("name %q: %v", bad, err)
		}
	}
	if _, err := db.FreezeEdition(ctx, "2026-11", "olga", nil); d5list.ErrorCode(err) != d5list.ECONFLICT {
		t.Errorf("second freeze of one name: %v", err)
	}
	for _, stmt := range []string{
		`UPDATE edition_boards SET board = '{}'`,
		`DELETE FROM edition_boards`,
		`UPDATE editions SET frozen_by = 'mallory'`,
		`DELETE FROM editions`,
	} {
		if _, err := db.write.ExecContext(ctx, stmt); err == nil || !strings.Contains(err.Error(), "frozen") {
			t.Errorf("%s: %v, want the trigger's refusal", stmt, err)
		}
	}
	e, err := db.Edition(ctx, "2026-11")
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Boards) != 1 || e.Boards[0].Entries[0].Value != 1.5 || e.FrozenBy != "olga" {
		t.Errorf("edition read back: %+v", e)
	}
	list, err := db.Editions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Entries != 1 {
		t.Errorf("editions: %+v", list)
	}
	if _, err := db.Edition(ctx, "nope"); d5list.ErrorCode(err) != d5list.ENOTFOUND {
		t.Errorf("missing edition: %v", err)
	}
}
