package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/leaderboard"
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

// The seeding encodes a chunk while the one before is stored: the chunks
// must still go in numbered in turn, and be what storing them one after
// the other stores.
func TestSeedChunksStoreTheSubmissionsOfOneChunk(t *testing.T) {
	ctx := context.Background()
	benches, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(benches, func(b d5list.Benchmark) bool { return b.ID == "l2-digits-mlp-cpu" })
	if i < 0 {
		t.Fatal("the catalogue has no l2-digits-mlp-cpu")
	}
	bench := &benches[i]
	seeded := func(pipelined bool) []*d5list.Submission {
		const chunk = 7
		db, err := store.Open(ctx, t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.UpsertBenchmarks(ctx, benches); err != nil {
			t.Fatal(err)
		}
		if pipelined {
			if err := seedChunks(ctx, db, bench, 30, 9, 7, chunk); err != nil {
				t.Fatal(err)
			}
		} else {
			for from := 0; from < 30; from += chunk {
				subs := leaderboard.SyntheticRange(bench, from, min(from+chunk, 30), 9, store.SyntheticSubmitter, 7)
				if _, err := db.AppendSynthetic(ctx, subs); err != nil {
					t.Fatal(err)
				}
			}
		}
		var subs []*d5list.Submission
		for id := int64(1); id <= 31; id++ {
			s, err := db.Submission(ctx, id)
			if id == 31 {
				if err == nil {
					t.Fatalf("pipelined %v: a 31st submission stored", pipelined)
				}
				break
			}
			if err != nil {
				t.Fatalf("pipelined %v: submission %d: %v", pipelined, id, err)
			}
			subs = append(subs, s)
		}
		return subs
	}
	one, pipelined := seeded(false), seeded(true)
	for i := range one {
		w, c := one[i], pipelined[i]
		if w.SystemName != c.SystemName || w.Measured.Runs[0].TimeToTrain != c.Measured.Runs[0].TimeToTrain ||
			w.CreatedAt != c.CreatedAt {
			t.Fatalf("submission %d: %s %v %v pipelined, %s %v %v one chunk after the other", i+1,
				c.SystemName, c.Measured.Runs[0].TimeToTrain, c.CreatedAt, w.SystemName, w.Measured.Runs[0].TimeToTrain, w.CreatedAt)
		}
	}
}
