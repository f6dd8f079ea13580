package runner

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	d5list "github.com/deep500/d5list"
)

// runGroup runs cmd, started by start, as the leader of its own process
// group, feeds its output to tail and onLine, and on ctx's end sends the
// group SIGTERM and, grace later, SIGKILL. Whatever of the group outlives
// the leader is killed as well, so that nothing a run started survives it.
func runGroup(ctx context.Context, cmd *exec.Cmd, start func(*exec.Cmd) error, grace time.Duration, run int, tail *lineTail, onLine LineFunc, onStart func(int, int)) error {
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	// A grandchild holding the pipes must not keep Wait waiting.
	cmd.WaitDelay = grace + time.Second
	if err := start(cmd); err != nil {
		return fmt.Errorf("starting %s: %w", cmd.Path, err)
	}
	pgid := cmd.Process.Pid
	if onStart != nil {
		onStart(run, pgid)
	}
	var mu sync.Mutex // onLine is called one line at a time per run
	var wg sync.WaitGroup
	for _, s := range []struct {
		name string
		r    io.Reader
	}{{"stdout", stdout}, {"stderr", stderr}} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			readLines(s.r, func(line string) {
				mu.Lock()
				defer mu.Unlock()
				tail.add(s.name, line)
				if onLine != nil {
					onLine(run, s.name, line)
				}
			})
		}()
	}
	done := make(chan struct{})
	killed := make(chan struct{})
	go func() {
		defer close(killed)
		select {
		case <-done:
			return
		case <-ctx.Done():
		}
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-done:
		case <-time.After(grace):
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
	}()
	wg.Wait()
	err = cmd.Wait()
	close(done)
	<-killed
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	if err != nil {
		return fmt.Errorf("the entrypoint failed: %w", err)
	}
	return nil
}

// readLines splits r into lines, cutting lines longer than 4 KiB so that a
// run cannot make the runner hold unbounded text.
func readLines(r io.Reader, fn func(string)) {
	const maxLine = 4096
	buf := make([]byte, 32<<10)
	var line []byte
	cut := false
	for {
		n, err := r.Read(buf)
		for _, c := range buf[:n] {
			if c == '\n' {
				fn(strings.TrimSuffix(string(line), "\r"))
				line, cut = line[:0], false
				continue
			}
			if len(line) < maxLine {
				line = append(line, c)
			} else if !cut {
				line = append(line, " [cut]"...)
				cut = true
			}
		}
		if err != nil {
			if len(line) > 0 {
				fn(string(line))
			}
			return
		}
	}
}

// lineTail keeps the last n output lines for error messages.
type lineTail struct {
	mu    sync.Mutex
	n     int
	lines []string
}

func newTail(n int) *lineTail { return &lineTail{n: n} }

func (t *lineTail) add(stream, line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.lines = append(t.lines, stream+": "+line)
	if len(t.lines) > t.n {
		t.lines = t.lines[len(t.lines)-t.n:]
	}
}

func (t *lineTail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return ""
	}
	return d5list.FailureOutputMarker + "\n" + strings.Join(t.lines, "\n")
}
