// Package d5list holds the domain of the Deep500 list portal: benchmarks,
// recipes, submissions, verification results and jobs. It depends on nothing
// but the standard library; storage, HTTP and executors are adapters in
// their own packages.
package d5list

import (
	"errors"
	"fmt"
)

// Error codes. The HTTP adapter maps each to one status code in one place.
const (
	EINVALID      = "invalid"      // bad input: 400
	EUNAUTHORIZED = "unauthorized" // missing or wrong credentials: 401
	EFORBIDDEN    = "forbidden"    // authenticated but not allowed: 403
	ENOTFOUND     = "not_found"    // 404
	ECONFLICT     = "conflict"     // state does not allow it: 409
	ETOOLARGE     = "too_large"    // size limits: 413
	ELIMIT        = "rate_limited" // quotas and rate limits: 429
	EINTERNAL     = "internal"     // everything else: 500
	EUNAVAILABLE  = "unavailable"  // shutting down, disk full: 503
)

// Error is the one error type the domain returns for conditions a user can
// act on. Anything else is reported as an internal error without details.
type Error struct {
	Code    string
	Message string
	// Reasons carries the individual check failures when a bundle is refused.
	Reasons []Reason
}

// Error is the code and the message; the command line names the program
// once in front of whatever error it prints.
func (e *Error) Error() string { return fmt.Sprintf("%s: %s", e.Code, e.Message) }

// Errorf returns an *Error with the given code and a formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the first *Error in err's chain, or EINTERNAL.
func ErrorCode(err error) string {
	var e *Error
	if err == nil {
		return ""
	}
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the user-facing message of err. Internal errors are
// not described, so that nothing about the server leaks.
func ErrorMessage(err error) string {
	var e *Error
	if err == nil {
		return ""
	}
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// ErrorReasons returns the check failures attached to err, if any.
func ErrorReasons(err error) []Reason {
	var e *Error
	if errors.As(err, &e) {
		return e.Reasons
	}
	return nil
}
