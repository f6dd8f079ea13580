// Package harness is the runner's side of the benchmarks whose timed loop
// it runs itself rather than trusting the competitor's code to time its
// work (Level 0 operators, Level 1 inference), as Deep500's own L0 and L1
// test harnesses do. It has two halves, which must agree to the bit:
//
//   - d5harness.py, the Python module every run of the competitor's code
//     gets on its PYTHONPATH: it takes the seed at the gate, makes each
//     call's inputs from the seed and the previous call's output, times the
//     competitor's operator or network, and commits to every output during
//     the timed window; after it, it answers the runner's audit.
//   - this package, in Go: the task a benchmark gives the harness, the same
//     random streams, the audit's challenge (drawn only after the window
//     closed) and the check of the outputs the run revealed against the
//     runner's own references (workloads.GEMMReference, ...).
//
// Nothing the run does is trusted: its harness runs in its own process and
// could be changed by its code. What a forger cannot do is commit, before
// run_stop, to outputs it did not compute, and then reveal outputs that
// both match those commitments and pass the runner's reference, for calls
// it learns only after run_stop. Each call's input depends on the output
// before it, so the calls cannot be batched or computed out of order, and
// the operands come from the run's seed, so they cannot be computed ahead.
package harness

import (
	"embed"
	"os"
	"path/filepath"
)

//go:embed d5harness.py
var files embed.FS

// Stage writes the Python module into dir (made here), read-only, for a
// job's runs to import; the sandbox sees dir read-only as well.
func Stage(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	b, err := files.ReadFile("d5harness.py")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "d5harness.py"), b, 0o444)
}
