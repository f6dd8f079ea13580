package runner

import (
	"embed"
	"os"
	"path/filepath"
)

// harnessFiles are the runner's Python side of a run (d5harness.py), put on
// every run's PYTHONPATH: a library of d5list's, not of the bundle.
//
//go:embed harness/*.py
var harnessFiles embed.FS

// stageHarness writes the harness into dir (made here), read-only, for the
// job's runs to import; the sandbox sees dir read-only as well.
func stageHarness(dir string) error {
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	entries, err := harnessFiles.ReadDir("harness")
	if err != nil {
		return err
	}
	for _, e := range entries {
		b, err := harnessFiles.ReadFile("harness/" + e.Name())
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o444); err != nil {
			return err
		}
	}
	return nil
}
