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
// A name that renders as another is the other, so that nobody posts as
// "АliceCorp" (a Cyrillic А), "Alice\u200bCorp" (a zero-width space) or
// "ＡliceCorp" (a fullwidth Ａ) beside a confirmed "AliceCorp":
//
//   - NFKC folds compatibility forms (fullwidth, ligatures, the Kelvin
//     sign) into the letters they stand for;
//   - default-ignorable code points, which render as nothing (zero-width
//     spaces and joiners, soft hyphens, variation selectors, fillers), are
//     dropped, and spaces collapse as CleanOrganisation does;
//   - each letter becomes the lower case of its simple case folding orbit,
//     so that "Équipe" and "éQUIPE" are one name (strings.EqualFold);
//   - Unicode's confusable skeleton (UTS #39, Unicode's own
//     confusables.txt, through go.mau.fi/util/confusable) maps each
//     character to the one it is drawn like: Cyrillic and Greek lookalikes
//     to Latin, "rn" to "m", "0" to "o";
//   - what the skeleton gives is case-folded again, as it may map to a
//     capital ("0" to "O").
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
	name = strings.Map(lowerRune, d5list.CleanOrganisation(name))
	return strings.Map(foldRune, confusable.Skeleton(name))
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
// added the columns, and 0025, since the key catches lookalikes) call this
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
