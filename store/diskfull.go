package store

import (
	"errors"
	"strings"
	"syscall"

	d5list "github.com/deep500/d5list"
)

// noSpace is the one place that recognises a full disk: ENOSPC (or EDQUOT)
// from a file write, or SQLite's "database or disk is full". It becomes
// EUNAVAILABLE (503) with a message the uploader can act on, instead of an
// internal error or a misleading "bad upload". Other errors pass unchanged.
func noSpace(err error) error {
	if err == nil {
		return nil
	}
	var de *d5list.Error
	if errors.As(err, &de) {
		return err
	}
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) ||
		strings.Contains(err.Error(), "database or disk is full") || strings.Contains(err.Error(), "SQLITE_FULL") {
		return &d5list.Error{Code: d5list.EUNAVAILABLE,
			Message: "the server's disk is full; nothing was stored, try again later (" + err.Error() + ")"}
	}
	return err
}
