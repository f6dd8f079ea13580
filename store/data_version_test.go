package store

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"sync"
	"testing"

	d5list "github.com/deep500/d5list"
)

// CommittedElsewhere tells this process's commits from another's: after
// its first answer (true: nothing is known), hundreds of this store's own
// commits, large enough for SQLite to checkpoint its log between them,
// never read as a commit elsewhere; one commit through a second store on
// the folder, as d5list admin makes, does, once; and so does one by a
// tool that is not d5list's store (it does not count itself).
func TestCommittedElsewhereTellsOwnCommitsFromOthers(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openTestDB(t, dir)
	elsewhere := func() bool {
		t.Helper()
		got, err := db.CommittedElsewhere(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if !elsewhere() {
		t.Fatal("the first answer: false; want true, since nothing was known before it")
	}
	if elsewhere() {
		t.Fatal("nothing committed since the first answer, yet a commit elsewhere")
	}
	// Each commit writes a few pages of the log, so SQLite checkpoints it
	// (at 1,000 pages) several times over.
	long := strings.Repeat("a long description of the benchmark ", 600)
	for i := range 600 {
		b := testBenchmark("b"+strconv.Itoa(i%50), nil)
		b.Description = long + strconv.Itoa(i)
		if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{b}); err != nil {
			t.Fatal(err)
		}
		if i%7 == 0 && elsewhere() {
			t.Fatalf("after this store's own commit %d: a commit elsewhere", i)
		}
	}
	if elsewhere() {
		t.Fatal("after this store's own commits: a commit elsewhere")
	}
	other := openTestDB(t, dir)
	if _, err := other.EnsureUser(ctx, "olga", d5list.RoleOrganiser); err != nil {
		t.Fatal(err)
	}
	if !elsewhere() {
		t.Fatal("after a second store's commit: no commit elsewhere")
	}
	if elsewhere() {
		t.Fatal("asked again with nothing committed since: a commit elsewhere")
	}
	// An own commit and another store's, in either order, between two looks.
	if _, err := db.EnsureUser(ctx, "alice", d5list.RoleCompetitor); err != nil {
		t.Fatal(err)
	}
	if _, err := other.EnsureUser(ctx, "bob", d5list.RoleCompetitor); err != nil {
		t.Fatal(err)
	}
	if _, err := db.EnsureUser(ctx, "carol", d5list.RoleCompetitor); err != nil {
		t.Fatal(err)
	}
	if !elsewhere() {
		t.Fatal("after own, other, own commits: no commit elsewhere")
	}
	raw, err := sql.Open("sqlite", "file:"+dir+"/d5list.db")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, `UPDATE users SET organisation = 'edited by hand' WHERE name = 'olga'`); err != nil {
		t.Fatal(err)
	}
	if !elsewhere() {
		t.Fatal("after a commit of a tool that does not count its commits: no commit elsewhere")
	}
}

// Many writers of this store and many lookers at once: a look never
// misses another store's commit that came before it began, whatever this
// store's own commits do meanwhile.
func TestCommittedElsewhereMissesNoOtherCommitUnderOwnWrites(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := openTestDB(t, dir)
	other := openTestDB(t, dir)
	if _, err := db.CommittedElsewhere(ctx); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := db.EnsureUser(ctx, "own-"+strconv.Itoa(w)+"-"+strconv.Itoa(i), d5list.RoleCompetitor); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	for i := range 200 {
		if _, err := other.EnsureUser(ctx, "other-"+strconv.Itoa(i), d5list.RoleCompetitor); err != nil {
			t.Fatal(err)
		}
		got, err := db.CommittedElsewhere(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !got {
			t.Fatalf("look %d after another store's commit: none elsewhere", i)
		}
	}
	close(stop)
	wg.Wait()
}

// What every request pays to ask, when nothing was committed since the
// last asking (BENCHMARKS.md, "Another process's commits").
func BenchmarkCommittedElsewhereUnchanged(b *testing.B) {
	ctx := context.Background()
	db, err := Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	if _, err := db.CommittedElsewhere(ctx); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := db.CommittedElsewhere(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// The same after each of the store's own commits: the count read too.
func BenchmarkCommittedElsewhereAfterOwnCommit(b *testing.B) {
	ctx := context.Background()
	db, err := Open(ctx, b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		if _, err := db.EnsureUser(ctx, "u"+strconv.Itoa(i), d5list.RoleCompetitor); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := db.CommittedElsewhere(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
