package sysinfo

import (
	"os"
	"path/filepath"
	"runtime"
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
	// The kernel's own file, where it keeps one: this thread has run. It
	// is made to, locked to its goroutine, for a few milliseconds first: a
	// thread the runtime had just started read 0 s on CI's host.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for start := time.Now(); time.Since(start) < 5*time.Millisecond; {
	}
	if cpu, _, ok := Schedstat("/proc/thread-self/schedstat"); ok && cpu <= 0 {
		t.Errorf("this thread ran for %v", cpu)
	}
}

func TestProcStat(t *testing.T) {
	for _, c := range []struct {
		line    string
		want    time.Duration
		started uint64
		ok      bool
	}{
		{"4242 (python3) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 30 0 0 20 0 3 0 100 0 0", 2800 * time.Millisecond, 100, true},
		// A name with spaces and a ')' of its own.
		{"17 (a) b (c)) R 1 17 17 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 5 0 0", 100 * time.Millisecond, 5, true},
		{"17 (x) R 1 17 17 0 -1 0 0 0 0 0 7", 0, 0, false},
		{"17 (x) R 1 17 17 0 -1 0 0 0 0 0 7 y 0 0 20 0 1 0 5 0 0", 0, 0, false},
		{"17 (x) R 1 17 17 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 -5 0 0", 0, 0, false},
		{"no name here", 0, 0, false},
	} {
		got, started, ok := procStat([]byte(c.line))
		if ok != c.ok || got != c.want || started != c.started {
			t.Errorf("%q: %v %v %v, want %v %v %v", c.line, got, started, ok, c.want, c.started, c.ok)
		}
	}
	// The kernel's own file: this process has run, and started after boot.
	if cpu, started, ok := ProcessStat(os.Getpid()); !ok || cpu < 0 || started == 0 {
		t.Errorf("this process: %v %v %v", cpu, started, ok)
	}
}
