package store

import (
	"database/sql/driver"
	"strings"
	"unicode"

	"go.mau.fi/util/confusable"
	"golang.org/x/text/unicode/norm"
	"modernc.org/sqlite"

	d5list "github.com/deep500/d5list"
)

// organisationKey is the form in which the store compares organisation
// names: two names are one organisation exactly when their keys are equal.
// A name that a person reads as another is the other, so that nobody
// posts as "АliceCorp" (a Cyrillic А), "Alice\u200bCorp" (a zero-width
// space), "ＡliceCorp" (a fullwidth Ａ), "Alice Corp", "Alice-Corp",
// "AlíceCorp" or "ᴀliceCorp" (a small capital) beside a confirmed
// "AliceCorp":
//
//   - NFKC folds compatibility forms (fullwidth, ligatures, the Kelvin
//     sign, superscript and modifier letters, circled letters) into the
//     letters they stand for;
//   - default-ignorable code points, which render as nothing (zero-width
//     spaces and joiners, soft hyphens, variation selectors, fillers), are
//     dropped;
//   - the Latin small capitals, which NFKC leaves alone and the skeleton
//     does not all map, become their letters (smallCapital);
//   - accents and other non-spacing marks are dropped (NFD, then no Mn):
//     a reader takes "AlíceCorp" for "AliceCorp" at a glance, and an
//     organisation is not told apart by an accent alone;
//   - spaces, punctuation and symbols are dropped (categories Z, P and
//     S): "Alice Corp", "Alice-Corp" and "AliceCorp." read as one name.
//     A name made of nothing else keeps them, so that it has a key and
//     "+++" is not "---";
//   - each letter becomes the lower case of its simple case folding orbit,
//     so that "Équipe" and "éQUIPE" are one name (strings.EqualFold);
//   - Unicode's confusable skeleton (UTS #39, Unicode's own
//     confusables.txt, through go.mau.fi/util/confusable) maps each
//     character to the one it is drawn like: Cyrillic and Greek lookalikes
//     to Latin, "rn" to "m", "0" to "o";
//   - what the skeleton gives is folded again (it may map to a capital,
//     "0" to "O", to a small capital or to a letter with a mark).
//
// The skeleton is taken of the lower case forms, so that case does not
// matter; a capital I for an l is therefore not caught ("AIiceCorp" reads
// "aiicecorp"), as folding case makes it an i.
//
// It is computed in Go and stored beside the name (users.organisation_key,
// submissions.submitter_key) because SQLite's NOCASE and lower() fold
// ASCII letters only and know nothing of the rest.
func organisationKey(name string) string {
	name = strings.Map(dropIgnorable, norm.NFKC.String(name))
	name = readAs(d5list.CleanOrganisation(name))
	return strings.Map(foldRune, readAs(confusable.Skeleton(name)))
}

// readAs is name as a reader takes it in: small capitals as their
// letters, without marks, spaces, punctuation and symbols, in lower case.
func readAs(name string) string {
	name = strings.Map(dropMark, norm.NFD.String(strings.Map(smallCapital, name)))
	if bare := strings.Map(dropSeparator, name); bare != "" {
		name = bare
	}
	return strings.Map(lowerRune, name)
}

func dropMark(r rune) rune {
	if unicode.Is(unicode.Mn, r) {
		return -1
	}
	return r
}

func dropSeparator(r rune) rune {
	if unicode.In(r, unicode.Z, unicode.P, unicode.S) {
		return -1
	}
	return r
}

// smallCapitals are the Latin small capital letters, drawn as the capital
// at the height of a lower case letter: no decomposition takes them to
// their letters, and confusables.txt maps only some of them.
var smallCapitals = map[rune]rune{
	'\u1d00': 'a', '\u0299': 'b', '\u1d04': 'c', '\u1d05': 'd', '\u1d07': 'e', '\ua730': 'f',
	'\u0262': 'g', '\u029c': 'h', '\u026a': 'i', '\u1d0a': 'j', '\u1d0b': 'k', '\u029f': 'l',
	'\u1d0d': 'm', '\u0274': 'n', '\u1d0f': 'o', '\u1d18': 'p', '\ua7af': 'q', '\u0280': 'r',
	'\ua731': 's', '\u1d1b': 't', '\u1d1c': 'u', '\u1d20': 'v', '\u1d21': 'w', '\u028f': 'y',
	'\u1d22': 'z',
	// Capital forms of small capitals (their lower case is the small
	// capital above): Ɪ.
	'\ua7ae': 'i',
}

// smallCapital is the letter a small capital is drawn as. The small
// capital ligatures ᴁ and ɶ are two letters and stay as they are, but
// for the skeleton, which takes ɶ to "oᴇ" (whose ᴇ readAs then maps).
func smallCapital(r rune) rune {
	if l, ok := smallCapitals[r]; ok {
		return l
	}
	return r
}

// foldRune is the smallest rune that case-folds to the same as r.
func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// lowerRune is one lower-case rune for each case folding orbit: the
// skeleton's table is case-sensitive and draws "m" as "rn" but "M" as
// itself.
func lowerRune(r rune) rune { return unicode.ToLower(foldRune(r)) }

// dropIgnorable drops Unicode's default-ignorable code points: what a
// renderer draws as nothing where it does not support it. The property is
// derived as DerivedCoreProperties.txt says: Other_Default_Ignorable_
// Code_Point, format characters (Cf) and variation selectors, less white
// space, the interlinear annotation characters, the Egyptian hieroglyph
// format controls and the prepended concatenation marks, which are drawn.
func dropIgnorable(r rune) rune {
	ignorable := unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Cf, r) ||
		unicode.Is(unicode.Variation_Selector, r)
	drawn := unicode.Is(unicode.White_Space, r) || (r >= 0xFFF9 && r <= 0xFFFB) || (r >= 0x13430 && r <= 0x1343F) ||
		unicode.Is(unicode.Prepended_Concatenation_Mark, r)
	if ignorable && !drawn {
		return -1
	}
	return r
}

// The migrations that compute the keys of the rows they find (0014, which
// added the columns, 0025, since the key catches lookalikes, and 0044,
// since it folds names as they are read) call this
// function, so that they are the very keys the write paths store. A change
// to organisationKey, or to the confusables table of the library, needs
// such a migration too (TestOrganisationKeysAreStable notices). It is not used in the schema (no index, trigger or default
// calls it), so the database stays readable and writable by any SQLite.
func init() {
	sqlite.MustRegisterDeterministicScalarFunction("d5list_organisation_key", 1,
		func(_ *sqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
			switch v := args[0].(type) {
			case string:
				return organisationKey(v), nil
			case []byte:
				return organisationKey(string(v)), nil
			}
			return "", nil
		})
}
