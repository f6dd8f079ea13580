package store

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
)

// Names that differ in case only (strings.EqualFold, rune by rune, beyond
// ASCII: accents, the Kelvin sign, long s, final sigma) or in spacing
// have one key; so do names that differ in their accents, which a reader
// passes over.
func TestOrganisationKeyIgnoresCaseAndSpacing(t *testing.T) {
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
		if strings.EqualFold(d5list.CleanOrganisation(a), d5list.CleanOrganisation(b)) && organisationKey(a) != organisationKey(b) {
			t.Fatalf("%q and %q differ in case only, but have keys %q and %q", a, b, organisationKey(a), organisationKey(b))
		}
	}
	if organisationKey("Équipe  Ünïcode ") != organisationKey("équipe ünïcode") {
		t.Error("Équipe Ünïcode and équipe ünïcode have two keys")
	}
	if organisationKey("Équipe Ünïcode") != organisationKey("Equipe Unicode") {
		t.Error("Équipe Ünïcode and Equipe Unicode have two keys")
	}
}

// A name drawn or read like another is the other: lookalike letters of
// other scripts, compatibility forms, characters drawn as nothing, spaces,
// punctuation and symbols, accents and small capitals.
func TestOrganisationKeyCatchesLookalikes(t *testing.T) {
	for _, c := range []struct {
		name string
		same bool
	}{
		{"ALICECORP ", true},
		{"\u0410liceCorp", true},      // Cyrillic capital A
		{"Ali\u0441eC\u043erp", true}, // Cyrillic small es and o
		{"\u0391liceCorp", true},      // Greek capital alpha
		{"\uff21liceCorp", true},      // fullwidth A
		{"Alice\u200bCorp", true},     // zero-width space
		{"Alice\u200dCorp", true},     // zero-width joiner
		{"Alice\u2060Corp", true},     // word joiner
		{"Alice\u00adCorp", true},     // soft hyphen
		{"Alice\ufe0fCorp", true},     // variation selector 16
		{"Alice\u3164Corp", true},     // Hangul filler
		{"\U0001d400liceCorp", true},  // mathematical bold A
		{"AliceCorp\u200e", true},     // left-to-right mark
		{"A1iceCorp", true},
		{"AliceC0rp", true},
		{"Alice Corp", true},
		{"Alice\u00a0Corp", true}, // no-break space
		{"Alice\u3000Corp", true}, // ideographic space
		{"Alice\u2003Corp", true}, // em space
		{"Alice-Corp", true},
		{"Alice\u2010Corp", true}, // hyphen
		{"Alice.Corp", true},
		{"AliceCorp.", true},
		{"Alice_Corp", true},
		{"(AliceCorp)", true},
		{"AliceCorp\u00ae", true}, // registered sign
		{"Alice+Corp", true},
		{"Ali\u0301ceCorp", true}, // i and a combining acute
		{"Al\u00edceCorp", true},  // í
		{"\u00c0liceCorp", true},  // À
		{"Alic\u0119Corp", true},  // ę: an ogonek
		{"\u1d00liceCorp", true},  // small capital A
		{"\u1d00\u029f\u026a\u1d04\u1d07\u1d04\u1d0f\u0280\u1d18", true}, // all small capitals
		{"\u1d2cliceCorp", true}, // modifier capital A
		{"\u1d43liceCorp", true}, // modifier small a
		{"\u24d0liceCorp", true}, // circled a
		{"AliceCorps", false},
		{"AliceCorp2", false},
		{"AlexCorp", false},
		{"BobCorp", false},
		{"+++", false},
	} {
		if got := organisationKey(c.name) == organisationKey("AliceCorp"); got != c.same {
			t.Errorf("%+q: one organisation with AliceCorp %v, want %v (keys %+q and %+q)", c.name, got, c.same, organisationKey(c.name), organisationKey("AliceCorp"))
		}
	}
	if organisationKey("Modern Labs") != organisationKey("rnodern Labs") {
		t.Error("rnodern Labs is drawn as Modern Labs but has another key")
	}
}

// Names that read differently stay apart, whatever is folded away: one
// letter more, another letter, and names that are made of nothing but
// what the key drops elsewhere (which keep it rather than have no key).
func TestOrganisationKeyKeepsDistinctNamesApart(t *testing.T) {
	for _, c := range [][2]string{
		{"AliceCorp", "AliceCorps"},
		{"Bob", "Rob"},
		{"Deep Mind", "Deep Minds"},
		{"Lab 1", "Lab 2"},
		{"\u00c9cole", "\u00c9tole"},
		{"+++", "---"},
		{"\U0001f680", "\U0001f6f8"},
		{"A&B", "A&C"},
	} {
		a, b := organisationKey(c[0]), organisationKey(c[1])
		if a == b {
			t.Errorf("%+q and %+q have one key %+q", c[0], c[1], a)
		}
		if a == "" || b == "" {
			t.Errorf("%+q and %+q have keys %+q and %+q: a name needs a key", c[0], c[1], a, b)
		}
	}
}

// A lookalike of a confirmed organisation is refused at upload as another
// case of it is: from a stranger (submitter_taken) and from an account
// that named the lookalike at sign-up (submitter_unconfirmed); nothing is
// stored.
func TestLookalikesOfAConfirmedOrganisationAreRefused(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	alice, err := db.SignUp(ctx, "alice", "AliceCorp", "long enough password", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetOrganisation(ctx, alice.ID, "AliceCorp"); err != nil {
		t.Fatal(err)
	}
	stranger, err := db.EnsureUser(ctx, "stranger", d5list.RoleCompetitor)
	if err != nil {
		t.Fatal(err)
	}
	lookalikes := []string{"ALICECORP ", "\u0410liceCorp", "Alice\u200bCorp", "\uff21liceCorp",
		"Alice Corp", "Alice\u00a0Corp", "Alice\u3000Corp", "Alice-Corp", "Alice.Corp", "AliceCorp.",
		"Ali\u0301ceCorp", "Al\u00edceCorp", "\u1d00liceCorp"}
	for i, name := range lookalikes {
		if _, err := submitAs(db, stranger.ID, name); reasonCode(err) != "submitter_taken" || !strings.Contains(err.Error(), `"AliceCorp"`) {
			t.Errorf("a stranger posting as %+q: %v, want submitter_taken naming AliceCorp", name, err)
		}
		joiner, err := db.SignUp(ctx, fmt.Sprintf("joiner%d", i), name, "long enough password", true)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := submitAs(db, joiner.ID, name); reasonCode(err) != "submitter_unconfirmed" || !strings.Contains(err.Error(), `member of "AliceCorp"`) {
			t.Errorf("an account that signed up as %+q: %v, want submitter_unconfirmed naming AliceCorp", name, err)
		}
	}
	if subs, err := db.Submissions(ctx, d5list.SubmissionFilter{}); err != nil || len(subs) != 0 {
		t.Errorf("refused uploads left %d submissions (%v)", len(subs), err)
	}
	if _, err := submitAs(db, alice.ID, "\u0410liceCorp"); err != nil {
		t.Errorf("the confirmed member, spelling it with a Cyrillic A: %v", err)
	}
	for _, name := range []string{"AliceCorps", "AlexCorp"} {
		other, err := db.EnsureUser(ctx, "other "+name, d5list.RoleCompetitor)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := submitAs(db, other.ID, name); err != nil {
			t.Errorf("a new account posting as %+q, another organisation: %v", name, err)
		}
	}
}

// The keys of stored names must not change unless a migration computes
// them again (as 0025 and 0044 do): a new organisationKey, or a new confusables
// table in go.mau.fi/util, would leave the stored keys of older rows
// behind, and lookalikes of them would pass. These are the keys today.
func TestOrganisationKeysAreStable(t *testing.T) {
	for name, key := range map[string]string{
		"AliceCorp":       "ALICECORP",
		"\u0410liceCorp":  "ALICECORP",
		"NVIDIA":          "NVIDIA",
		"Modern Labs":     "RNODERNLABS",
		"Équipe Ünïcode":  "EQUIPEUNICODE",
		"\u03c3\u03c2":    "OO",
		"\u1d00lice-Corp": "ALICECORP",
		"+++":             "+++",
	} {
		if got := organisationKey(name); got != key {
			t.Errorf("organisationKey(%+q) = %+q, was %+q: stored keys need a migration that computes them again", name, got, key)
		}
	}
}

// A database whose keys were computed before they caught lookalikes gets
// them again at its next start (migration 0025), so that an account that
// signed up as "rnodern Labs" before is refused once "Modern Labs" is
// confirmed.
func TestOrganisationLookalikeKeysMigrated(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir)
	ctx := context.Background()
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{testBenchmark("l2-digits", nil)}); err != nil {
		t.Fatal(err)
	}
	modern, err := db.SignUp(ctx, "modern", "Modern Labs", "long enough password", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetOrganisation(ctx, modern.ID, "Modern Labs"); err != nil {
		t.Fatal(err)
	}
	s := withOwner(testSubmission("l2-digits", 1, 2, 3), modern.ID)
	s.Submitter = "Modern Labs"
	mustCreate(t, db, s)
	early, err := db.SignUp(ctx, "early", "rnodern Labs", "long enough password", true)
	if err != nil {
		t.Fatal(err)
	}
	// The keys as migration 0014 computed them: for these ASCII names,
	// SQLite's upper() is that key (case folded, spaces collapsed).
	execAll(t, db,
		`UPDATE users SET organisation_key = upper(organisation) WHERE organisation != ''`,
		`UPDATE submissions SET submitter_key = upper(submitter)`,
		`DELETE FROM schema_migrations WHERE version = 25`)
	if _, err := submitAs(db, early.ID, "rnodern Labs"); err != nil {
		t.Fatalf("with the old keys, the lookalike passes (as it did): %v", err)
	}
	db.Close()

	db = openTestDB(t, dir)
	if userKey, subKey := storedKeys(t, db, early.ID, s.ID); userKey != organisationKey("Modern Labs") || subKey != userKey {
		t.Errorf("migrated keys %+q (user) and %+q (submission), want %+q", userKey, subKey, organisationKey("Modern Labs"))
	}
	if _, err := submitAs(db, early.ID, "rnodern Labs"); reasonCode(err) != "submitter_unconfirmed" {
		t.Errorf("the lookalike's account after the migration: %v, want submitter_unconfirmed", err)
	}
}

// A database whose keys were computed before they folded names as people
// read them gets them again at its next start (migration 0044): once
// "Alice Corp" is confirmed, an account that named "AliceCorp" is refused
// and told which organisation its name reads as.
func TestOrganisationReadAsKeysMigrated(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir)
	ctx := context.Background()
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{testBenchmark("l2-digits", nil)}); err != nil {
		t.Fatal(err)
	}
	alice, err := db.SignUp(ctx, "alice", "Alice Corp", "long enough password", true)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.SetOrganisation(ctx, alice.ID, "Alice Corp"); err != nil {
		t.Fatal(err)
	}
	s := withOwner(testSubmission("l2-digits", 1, 2, 3), alice.ID)
	s.Submitter = "Alice Corp"
	mustCreate(t, db, s)
	early, err := db.SignUp(ctx, "early", "AliceCorp", "long enough password", true)
	if err != nil {
		t.Fatal(err)
	}
	// The keys as migration 0025 computed them: for these ASCII names,
	// SQLite's upper() is that key (case folded, spaces kept).
	execAll(t, db,
		`UPDATE users SET organisation_key = upper(organisation) WHERE organisation != ''`,
		`UPDATE submissions SET submitter_key = upper(submitter)`,
		`DELETE FROM schema_migrations WHERE version = 44`)
	if _, err := submitAs(db, early.ID, "AliceCorp"); err != nil {
		t.Fatalf("with the old keys, the lookalike passes (as it did): %v", err)
	}
	db.Close()

	db = openTestDB(t, dir)
	if userKey, subKey := storedKeys(t, db, alice.ID, s.ID); userKey != organisationKey("AliceCorp") || subKey != userKey {
		t.Errorf("migrated keys %+q (user) and %+q (submission), want %+q", userKey, subKey, organisationKey("AliceCorp"))
	}
	_, err = submitAs(db, early.ID, "AliceCorp")
	if reasonCode(err) != "submitter_unconfirmed" || !strings.Contains(err.Error(), `"Alice Corp"`) {
		t.Errorf("the lookalike's account after the migration: %v, want submitter_unconfirmed naming Alice Corp", err)
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
	if subs, err := db.Submissions(ctx, d5list.SubmissionFilter{Submitter: "Equipe Unicode"}); err != nil || len(subs) != 1 {
		t.Errorf("a name without the accents, read as the same, finds %d entries (%v), want 1", len(subs), err)
	}
	if subs, err := db.Submissions(ctx, d5list.SubmissionFilter{Submitter: "Équipe Unicorn"}); err != nil || len(subs) != 0 {
		t.Errorf("another name finds %d entries (%v), want none", len(subs), err)
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
	// indexes, migration 14 not applied (nor 47, whose board_ranked
	// copies the key).
	execAll(t, db,
		`DROP TRIGGER board_ranked_insert`, `DROP TRIGGER board_ranked_update`, `DROP TRIGGER board_ranked_delete`,
		`DROP TRIGGER board_ranked_owner`, `DROP TABLE board_ranked`, `DELETE FROM schema_migrations WHERE version = 47`,
		`DROP INDEX users_by_organisation_key`, `ALTER TABLE users DROP COLUMN organisation_key`,
		`CREATE INDEX users_by_organisation ON users (organisation COLLATE NOCASE) WHERE organisation != ''`,
		`DROP INDEX submissions_by_submitter_key`, `ALTER TABLE submissions DROP COLUMN submitter_key`,
		`CREATE INDEX submissions_by_submitter ON submissions (submitter COLLATE NOCASE, system_name COLLATE NOCASE)`,
		`DELETE FROM schema_migrations WHERE version = 14`)
	db.Close()

	db = openTestDB(t, dir)
	userKey, subKey := storedKeys(t, db, u.ID, s.ID)
	if want := organisationKey("équipe ünïcode"); userKey != want || subKey != want {
		t.Errorf("backfilled keys %q (user) and %q (submission), want %q", userKey, subKey, want)
	}
	subs, err := db.Submissions(ctx, d5list.SubmissionFilter{Submitter: "équipe ünïcode"})
	if err != nil || len(subs) != 1 {
		t.Fatalf("after the backfill the organisation lists %d entries (%v), want 1", len(subs), err)
	}
}

func execAll(t *testing.T, db *DB, queries ...string) {
	t.Helper()
	for _, q := range queries {
		if _, err := db.write.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// storedKeys reads the organisation key of a user and the submitter key of
// a submission.
func storedKeys(t *testing.T, db *DB, userID, submissionID int64) (user, submission string) {
	t.Helper()
	if err := db.read.QueryRow(`SELECT organisation_key FROM users WHERE id = ?`, userID).Scan(&user); err != nil {
		t.Fatal(err)
	}
	if err := db.read.QueryRow(`SELECT submitter_key FROM submissions WHERE id = ?`, submissionID).Scan(&submission); err != nil {
		t.Fatal(err)
	}
	return user, submission
}
