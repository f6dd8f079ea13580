package store

import (
	"database/sql/driver"
	"strings"
	"unicode"

	"modernc.org/sqlite"

	d5list "github.com/deep500/d5list"
)

// organisationKey is the form in which the store compares organisation
// names: two names have one key exactly when d5list.SameOrganisation says
// they are one organisation. The spaces are collapsed as CleanOrganisation
// does, and each rune is replaced by the smallest rune of its simple case
// folding orbit, which is what strings.EqualFold compares rune by rune
// ("Équipe" and "éQUIPE" both become "ÉQUIPE"). It is computed in Go and
// stored beside the name (users.organisation_key, submissions.
// submitter_key) because SQLite's NOCASE and lower() fold ASCII letters
// only, so that "ÉCOLE" and "école" would be two organisations to SQL and
// one to every check in Go.
func organisationKey(name string) string {
	return strings.Map(foldRune, d5list.CleanOrganisation(name))
}

// foldRune is the smallest rune that case-folds to the same as r.
func foldRune(r rune) rune {
	least := r
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		least = min(least, f)
	}
	return least
}

// The migration that adds the key columns computes them for the rows it
// finds with this function, so that they are the very keys the write
// paths store. It is not used in the schema (no index, trigger or default
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
