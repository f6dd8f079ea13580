package bundle

import (
	"fmt"

	d5list "github.com/deep500/d5list"
)

// Reason codes of the checks this package applies (docs/bundle-format.md).
const (
	CodeNotArchive  = "not_an_archive"  // neither tar.gz nor zip
	CodeCorrupt     = "corrupt_archive" // the archive cannot be read to its end
	CodeUnsafePath  = "unsafe_path"     // absolute, "..", backslash, NUL, too long
	CodeUnsafeEntry = "unsafe_entry"    // symlink, hard link, device, FIFO, other
	CodeDuplicate   = "duplicate_entry" // same name twice, also after cleaning, or a file where a folder is
	CodeUnknownFile = "unknown_file"    // not part of the d5list/v1 layout
	CodeMissingFile = "missing_file"    // a required file is absent
	CodeResultName  = "bad_result_name" // results/ holds something other than result_<i>.txt
	CodeTooLarge    = "too_large"       // a limit was exceeded
	CodeManifest    = "manifest"        // submission.json
	CodeRecipe      = "recipe"          // recipe.yaml|yml|json|py
	CodeSystem      = "system"          // system.json
)

// maxReasons caps how many reasons one error carries, so that an archive of
// thousands of bad entries gives a readable answer.
const maxReasons = 50

// reasons collects check failures.
type reasons struct {
	list     []d5list.Reason
	tooLarge bool
	dropped  int
}

func (rs *reasons) add(code, file string, line int, format string, args ...any) {
	if code == CodeTooLarge {
		rs.tooLarge = true
	}
	if len(rs.list) >= maxReasons {
		rs.dropped++
		return
	}
	rs.list = append(rs.list, d5list.Reason{Code: code, File: file, Line: line, Message: fmt.Sprintf(format, args...)})
}

func (rs *reasons) merge(err error, fallbackCode, file string) {
	if err == nil {
		return
	}
	if rr := d5list.ErrorReasons(err); len(rr) > 0 {
		for _, r := range rr {
			if r.Code == CodeTooLarge {
				rs.tooLarge = true
			}
			if len(rs.list) >= maxReasons {
				rs.dropped++
				continue
			}
			rs.list = append(rs.list, r)
		}
		return
	}
	rs.add(fallbackCode, file, 0, "%s", d5list.ErrorMessage(err))
}

// err returns nil when nothing was collected, else one *d5list.Error:
// ETOOLARGE when a limit was hit, EINVALID otherwise.
func (rs *reasons) err(what string) error {
	if len(rs.list) == 0 {
		return nil
	}
	code := d5list.EINVALID
	if rs.tooLarge {
		code = d5list.ETOOLARGE
	}
	first := rs.list[0]
	msg := first.Message
	if first.File != "" {
		if first.Line > 0 {
			msg = fmt.Sprintf("%s:%d: %s", first.File, first.Line, msg)
		} else {
			msg = first.File + ": " + msg
		}
	}
	if n := len(rs.list) - 1 + rs.dropped; n > 0 {
		noun := "problems"
		if n == 1 {
			noun = "problem"
		}
		msg += fmt.Sprintf(" (and %d more %s)", n, noun)
	}
	if what != "" {
		msg = what + ": " + msg
	}
	return &d5list.Error{Code: code, Message: msg, Reasons: rs.list}
}

// invalid returns a one-reason EINVALID error.
func invalid(code, file string, line int, format string, args ...any) error {
	var rs reasons
	rs.add(code, file, line, format, args...)
	return rs.err("")
}
