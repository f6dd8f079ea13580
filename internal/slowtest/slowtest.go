// Package slowtest marks the tests that take minutes of both cores, or
// whose verdicts compare a claim's times with a re-run's: run beside other
// packages' tests, the second kind judges the machine's load rather than
// the code. `go test ./...` skips them; CI runs them in a step of their
// own, one package at a time (.ci/run, scripts/slow-tests.sh).
package slowtest

import (
	"os"
	"testing"
)

// Env is the variable that runs the slow tests.
const Env = "D5LIST_SLOW"

// Require skips t unless Env is set; why says what makes it slow.
func Require(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(Env) == "" {
		t.Skipf("%s: %s=1 runs it (CI does, in its own step, one package at a time)", why, Env)
	}
}
