package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/store"
)

func TestAdminSeedSynthetic(t *testing.T) {
	ctx := context.Background()
	data := t.TempDir()
	var out bytes.Buffer
	if err := run(ctx, []string{"admin", "seed-synthetic", "--data", data, "--submissions", "300", "--systems", "40"}, &out, &out); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "stored 300 synthetic") {
		t.Errorf("output: %s", out.String())
	}
	db, err := store.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	svc := portal.New(db, nil, portal.Config{}, nil)
	board, err := svc.Leaderboard(ctx, "l2-digits-mlp-cpu")
	if err != nil {
		t.Fatal(err)
	}
	// One row per system, every one of them labelled.
	if len(board.Entries) != 40 {
		t.Errorf("default board has %d rows, want 40 systems", len(board.Entries))
	}
	for _, e := range board.Entries {
		if e.Submitter != store.SyntheticSubmitter || e.Status != d5list.StatusVerified {
			t.Fatalf("entry %+v is not a labelled verified synthetic one", e)
		}
	}
	// Adding more to a synthetic folder is allowed; a folder with a real
	// submission is refused, and nothing is added to it.
	u, err := db.EnsureUser(ctx, "real", d5list.RoleCompetitor)
	if err != nil {
		t.Fatal(err)
	}
	real := &d5list.Submission{BenchmarkID: "l2-digits-mlp-cpu", OwnerID: u.ID, Submitter: "Real Lab", SystemName: "box"}
	if err := db.CreateSubmission(ctx, real); err != nil {
		t.Fatal(err)
	}
	db.Close()
	err = run(ctx, []string{"admin", "seed-synthetic", "--data", data, "--submissions", "10"}, &out, &out)
	if err == nil || !strings.Contains(err.Error(), "1 real submissions") {
		t.Fatalf("seeding a folder with a real submission: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "--data is required"},
		{[]string{"--data", t.TempDir(), "--submissions", "0"}, "--submissions 0"},
		{[]string{"--data", t.TempDir(), "--benchmark", "nope"}, "--benchmark"},
	} {
		err := run(ctx, append([]string{"admin", "seed-synthetic"}, c.args...), &out, &out)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("seed-synthetic %v: %v, want an error naming %q", c.args, err, c.want)
		}
	}
}
