package sysinfo

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestSchedstat(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	cpu, wait, ok := Schedstat(write("good", "1500000 250000 12\n"))
	if !ok || cpu != 1500*time.Microsecond || wait != 250*time.Microsecond {
		t.Errorf("good: %v %v %v", cpu, wait, ok)
	}
	for _, body := range []string{"", "12", "x 3 1", "3 y 1"} {
		if _, _, ok := Schedstat(write("bad", body)); ok {
			t.Errorf("%q read as a schedstat", body)
		}
	}
	if _, _, ok := Schedstat(filepath.Join(dir, "missing")); ok {
		t.Error("a missing file read as a schedstat")
	}
	// The kernel's own file, where it keeps one: this thread has run.
	if cpu, _, ok := Schedstat("/proc/thread-self/schedstat"); ok && cpu <= 0 {
		t.Errorf("this thread ran for %v", cpu)
	}
}
