package portal

import (
	"context"
	"reflect"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/store"
)

// A benchmark's development through the editions is read from them once
// and extended by each freeze, and is what a fresh reading of the stored
// editions gives.
func TestDevelopmentFollowsFreezes(t *testing.T) {
	ctx := context.Background()
	db, _ := testStore(t)
	bench := digits(t)
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{*bench}); err != nil {
		t.Fatal(err)
	}
	svc := New(db, nil, Config{}, nil)
	org := &d5list.User{Name: "olga", Role: d5list.RoleOrganiser}
	points := func(s *Service) []leaderboard.DevelopmentPoint {
		t.Helper()
		p, err := s.Development(ctx, bench.ID)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := points(svc); len(p) != 0 {
		t.Fatalf("development before any edition: %+v", p)
	}
	for i, name := range []string{"2026-06", "2026-11"} {
		if err := db.InsertSynthetic(ctx, leaderboard.SyntheticRange(bench, 3*i, 3*i+3, 3*i+3, store.SyntheticSubmitter, 1)); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.FreezeEdition(ctx, org, name); err != nil {
			t.Fatal(err)
		}
	}
	got := points(svc)
	if len(got) != 2 || got[0].Edition != "2026-06" || got[1].Edition != "2026-11" || got[0].Entries != 3 || got[1].Entries != 6 {
		t.Fatalf("development after two freezes: %+v, want 3 then 6 entries", got)
	}
	if read := points(New(db, nil, Config{}, nil)); !reflect.DeepEqual(read, got) {
		t.Fatalf("the editions read afresh give %+v, the kept development %+v", read, got)
	}
}
