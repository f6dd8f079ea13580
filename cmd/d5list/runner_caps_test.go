package main

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// TestRunnerCapsItsJobsAndGoesOn starts a real `d5list runner --executor
// process` as a wrapper that left descriptors 3 to 7 open on a log of the
// host would, with a memory cap of 512 MiB a job (room for the version
// probe's Python and torch after a job's runs, which thrashes under a
// tighter cap until the job's time limit). A job whose processes take
// more memory fails, its reason naming the cap; the job after it,
// which writes to descriptor 7, writes nothing to the host's log and is
// verified by the same runner process, which never stopped.
func TestRunnerCapsItsJobsAndGoesOn(t *testing.T) {
	needCappedSandbox(t)
	p, runnerToken := shellPortal(t)
	hostLog := filepath.Join(t.TempDir(), "wrapper.log")
	logFile, err := os.Create(hostLog)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()

	r := exec.Command(d5listBinary(t), "runner", "--server", p.url, "--token", runnerToken, "--executor", "process",
		"--work", sandboxTraversable(t), "--job-memory", strconv.Itoa(512<<20), "--heartbeat", "500ms", "--id", "capped")
	r.ExtraFiles = []*os.File{logFile, logFile, logFile, logFile, logFile} // descriptors 3 to 7
	logs := &syncBuf{}
	r.Stderr = logs
	if err := r.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { r.Wait(); close(exited) }()
	t.Cleanup(func() {
		r.Process.Signal(syscall.SIGTERM)
		<-exited
		if t.Failed() {
			t.Logf("runner log:\n%s", logs.String())
		}
	})
	if got, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/7", r.Process.Pid)); err != nil || got != hostLog {
		t.Fatalf("control: the runner's descriptor 7 is %q (%v), want %s", got, err, hostLog)
	}

	writesFd7 := hostileBundle(t, strings.Replace(honestEntrypoint, "set -e\n", "set -e\n{ echo pwned >&7; } 2>/dev/null || true\n", 1))
	cases := []struct {
		name   string
		dir    string
		status d5list.Status
		words  string
	}{
		{"memory past the cap", filepath.Join(t.TempDir(), "bundle"), d5list.StatusFailed, "memory cap of 512 MiB"},
		{"a write to an inherited descriptor", writesFd7, d5list.StatusVerified, ""},
	}
	// Four processes of 160 MiB, each well under RLIMIT_DATA, with the
	// other's claim.
	copyDir(t, writesFd7, cases[0].dir)
	hog := "#!/bin/sh\nfor i in 1 2 3 4; do dd if=/dev/zero of=/dev/null bs=160M count=20 & done\nwait\n"
	if err := os.WriteFile(filepath.Join(cases[0].dir, "code", "run.sh"), []byte(hog), 0o755); err != nil {
		t.Fatal(err)
	}

	results := make([]submissionJSON, len(cases))
	var wg sync.WaitGroup
	for i, c := range cases {
		code, id, apiErr := p.postBundle(t, c.dir)
		if code != http.StatusCreated {
			t.Fatalf("%s: upload answered %d %+v", c.name, code, apiErr)
		}
		wg.Go(func() { results[i] = p.waitFinal(t, id) })
	}
	wg.Wait()
	for i, c := range cases {
		got := results[i]
		if got.Status != c.status || c.words != "" && !hasWords(got.Reasons, "rerun_failed", c.words) {
			t.Errorf("%s: %s %s, want %s naming %q", c.name, got.Status, reasonsText(got.Reasons), c.status, c.words)
		}
	}
	if b, err := os.ReadFile(hostLog); err != nil || len(b) != 0 {
		t.Errorf("the host's log holds %q (%v), want nothing", b, err)
	}
	select {
	case <-exited:
		t.Fatal("the runner process ended")
	case <-time.After(100 * time.Millisecond):
	}
}
