package store

import (
	"context"
	"math/rand/v2"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// Two names have one key exactly when d5list.SameOrganisation calls them
// one organisation, for names with letters whose case folding is more
// than ASCII's (accents, the Kelvin sign, long s, final sigma).
func TestOrganisationKeyAgreesWithSameOrganisation(t *testing.T) {
	letters := []rune("aAkKK sSſσΣςéÉüÜßẞ İıiI\u00a0\t")
	rng := rand.New(rand.NewPCG(16, 2))
	word := func() string {
		r := make([]rune, 1+rng.IntN(4))
		for i := range r {
			r[i] = letters[rng.IntN(len(letters))]
		}
		return string(r)
	}
	for range 20000 {
		a, b := word(), word()
		if same, keyed := d5list.SameOrganisation(a, b), organisationKey(a) == organisationKey(b); same != keyed {
			t.Fatalf("%q and %q: SameOrganisation %v, keys %q and %q", a, b, same, organisationKey(a), organisationKey(b))
		}
	}
	if organisationKey("Équipe  Ünïcode ") != organisationKey("équipe ünïcode") {
		t.Error("Équipe Ünïcode and équipe ünïcode have two keys")
	}
}

// The organisation's page and the board's confirmed mark compare names as
// the identity checks do: an entry uploaded as "équipe ünïcode" belongs
// to the organisation an organiser then confirmed as "Équipe Ünïcode",
// which SQLite's ASCII-only NOCASE and lower() did not see.
func TestOrganisationMatchesBeyondASCII(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	u, err := db.SignUp(ctx, "eva", "équipe ünïcode", "long enough password", true)
	if err != nil {
		t.Fatal(err)
	}
	s := testSubmission("l2-digits", 1, 2, 3)
	s.OwnerID, s.Submitter = u.ID, "équipe ünïcode"
	mustCreate(t, db, s)
	if err := db.SetOrganisation(ctx, u.ID, "Équipe Ünïcode"); err != nil {
		t.Fatal(err)
	}

	for _, name := range []string{"Équipe Ünïcode", "ÉQUIPE  ÜNÏCODE", "équipe ünïcode"} {
		subs, err := db.Submissions(ctx, d5list.SubmissionFilter{Submitter: name})
		if err != nil {
			t.Fatal(err)
		}
		if len(subs) != 1 || subs[0].ID != s.ID {
			t.Fatalf("the entries of %q: %d, want the one uploaded as %q", name, len(subs), s.Submitter)
		}
		if !subs[0].SubmitterConfirmed {
			t.Errorf("listed for %q, the entry is not marked confirmed", name)
		}
	}
	if subs, err := db.Submissions(ctx, d5list.SubmissionFilter{Submitter: "Equipe Unicode"}); err != nil || len(subs) != 0 {
		t.Errorf("a name without the accents finds %d entries (%v), want none", len(subs), err)
	}
	entries, _, err := db.BoardPage(ctx, "l2-digits", leaderboard.Options{IncludeUnverified: true, AllPerSystem: true}, 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || !entries[0].SubmitterConfirmed {
		t.Errorf("the board with unverified entries: %+v, want the entry marked confirmed", entries)
	}

	// Another account may not take the name in another case.
	other, err := db.SignUp(ctx, "otto", "", "long enough password", true)
	if err != nil {
		t.Fatal(err)
	}
	s2 := testSubmission("l2-digits", 4, 5, 6)
	s2.OwnerID, s2.Submitter = other.ID, "ÉQUIPE ÜNÏCODE"
	if err := db.CreateSubmission(ctx, s2); d5list.ErrorCode(err) != d5list.EINVALID {
		t.Errorf("another account posting as ÉQUIPE ÜNÏCODE: %v, want refused", err)
	}
}

// A database from before the keys gets them at its next start, computed
// by the same Go function as the write paths use.
func TestOrganisationKeysBackfilled(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir)
	ctx := context.Background()
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{testBenchmark("l2-digits", nil)}); err != nil {
		t.Fatal(err)
	}
	u, err := db.SignUp(ctx, "eva", "Équipe Ünïcode", "long enough password", true)
	if err != nil {
		t.Fatal(err)
	}
	s := testSubmission("l2-digits", 1, 2, 3)
	s.OwnerID, s.Submitter = u.ID, "Équipe Ünïcode"
	mustCreate(t, db, s)
	// Back to the schema of migration 13: no key columns, the NOCASE
	// indexes, migration 14 not applied.
	for _, q := range []string{
		`DROP INDEX users_by_organisation_key`, `ALTER TABLE users DROP COLUMN organisation_key`,
		`CREATE INDEX users_by_organisation ON users (organisation COLLATE NOCASE) WHERE organisation != ''`,
		`DROP INDEX submissions_by_submitter_key`, `ALTER TABLE submissions DROP COLUMN submitter_key`,
		`CREATE INDEX submissions_by_submitter ON submissions (submitter COLLATE NOCASE, system_name COLLATE NOCASE)`,
		`DELETE FROM schema_migrations WHERE version = 14`,
	} {
		if _, err := db.write.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	db.Close()

	db = openTestDB(t, dir)
	var userKey, subKey string
	if err := db.read.QueryRow(`SELECT organisation_key FROM users WHERE id = ?`, u.ID).Scan(&userKey); err != nil {
		t.Fatal(err)
	}
	if err := db.read.QueryRow(`SELECT submitter_key FROM submissions WHERE id = ?`, s.ID).Scan(&subKey); err != nil {
		t.Fatal(err)
	}
	if want := organisationKey("équipe ünïcode"); userKey != want || subKey != want {
		t.Errorf("backfilled keys %q (user) and %q (submission), want %q", userKey, subKey, want)
	}
	subs, err := db.Submissions(ctx, d5list.SubmissionFilter{Submitter: "équipe ünïcode"})
	if err != nil || len(subs) != 1 {
		t.Fatalf("after the backfill the organisation lists %d entries (%v), want 1", len(subs), err)
	}
}
