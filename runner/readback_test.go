package runner

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestOpenRunFile(t *testing.T) {
	run := t.TempDir()
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("runner token d5r_secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(run, "result.txt"), []byte("ok"), 0o644))
	must(os.Symlink(secret, filepath.Join(run, "out-link")))
	must(os.Symlink("result.txt", filepath.Join(run, "in-link")))
	must(os.Symlink("/dev/zero", filepath.Join(run, "zero-link")))
	must(syscall.Mkfifo(filepath.Join(run, "fifo"), 0o644))
	must(os.Mkdir(filepath.Join(run, "dir"), 0o755))

	f, err := openRunFile(filepath.Join(run, "result.txt"))
	if err != nil {
		t.Fatalf("a regular file: %v", err)
	}
	f.Close()
	for _, name := range []string{"out-link", "in-link", "zero-link", "fifo", "dir"} {
		t.Run(name, func(t *testing.T) {
			done := make(chan error, 1)
			go func() {
				f, err := openRunFile(filepath.Join(run, name))
				if f != nil {
					f.Close()
				}
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, errNotRegular) {
					t.Errorf("got %v, want errNotRegular", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("opening it blocked")
			}
		})
	}
	if _, err := openRunFile(filepath.Join(run, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}
