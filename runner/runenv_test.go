package runner

import (
	"context"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// lookingAround is an entrypoint that takes its seed, logs a minimal run,
// and prints what it can see of where it runs: its gate, its environment,
// the command lines of the sandbox's pid 1 and its own, its mounts (less
// the numbers the kernel hands out afresh for every mount), its cgroup,
// host name and folder, and where its descriptors and pid 1's lead.
const lookingAround = `#!/bin/sh
set -e
read -r gate < "$D5_GATE"
seed=${gate#*\"seed\":}
seed=${seed%%[,\}]*}
{
  echo ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": \"POINT_IN_TIME\", \"key\": \"seed\", \"value\": $seed, \"metadata\": {}}"
  echo ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": \"INTERVAL_START\", \"key\": \"run_start\", \"value\": null, \"metadata\": {}}"
  echo ":::MLLOG {\"namespace\": \"\", \"time_ms\": 2, \"event_type\": \"INTERVAL_END\", \"key\": \"run_stop\", \"value\": null, \"metadata\": {\"status\": \"success\"}}"
} >> "$D5_RESULT_LOG"
echo "gate $gate"
env | sort | sed 's/^/env /'
echo "pid1 $(tr '\0' ' ' < /proc/1/cmdline)"
echo "self $(tr '\0' ' ' < /proc/$$/cmdline)"
sed -E 's/^[0-9]+ [0-9]+ [0-9]+:[0-9]+ //; s/ (shared|master|propagate_from):[0-9]+//g; s/^/mount /' /proc/self/mountinfo
sed 's/^/cgroup /' /proc/self/cgroup
echo "host $(cat /proc/sys/kernel/hostname)"
echo "cwd $(pwd)"
for f in /proc/1/fd/* /proc/$$/fd/*; do echo "fd $f $(readlink "$f")"; done
`

// Every run of a job sees the same environment, command lines, mounts and
// folders: nothing tells it which run it is, whether the runner drew its
// seed, how many runs there are, which job it is, or where the runner
// works. Its seed, through the gate, is all that differs.
func TestProcessRunsCannotTellWhichRunsCount(t *testing.T) {
	needBwrap(t)
	bwrap, err := exec.LookPath("bwrap")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[int][]string{}
	work := workDir(t)
	p, err := NewProcess(ProcessOptions{
		Versions: testVersions[true],
		Fetch:    fixtureBundle(t, lookingAround),
		WorkDir:  work,
		OnLine: func(run int, stream, line string) {
			mu.Lock()
			defer mu.Unlock()
			seen[run] = append(seen[run], stream+" "+line)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	const jobID = 904417
	spec := testSpec(1111, 2222)
	spec.JobID = jobID
	spec.FreshSeeds = []int64{3333, 4444}
	logs, err := p.Execute(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 4 {
		t.Fatalf("%d runs, want 4", len(logs))
	}
	// What a run's output must hold: bwrap and the entrypoint alone on
	// pid 1's command line, the gate's seed alone, and nowhere the job's
	// id, a run's index or count, bwrap's options or prlimit's.
	wantPID1 := "stdout pid1 " + bwrap + " --args 3 -- /d5/bundle/code/run.sh "
	same := func(run int) []string {
		var rest []string
		for _, line := range seen[run] {
			if strings.HasPrefix(line, "stdout gate ") || strings.HasPrefix(line, "stdout fd ") {
				continue
			}
			rest = append(rest, line)
		}
		return rest
	}
	for _, l := range logs {
		out := seen[l.Index]
		if !slices.Contains(out, wantPID1) {
			t.Errorf("run %d: pid 1's command line is not %q:\n%s", l.Index, wantPID1, strings.Join(out, "\n"))
		}
		if want := `stdout gate {"seed":` + strconv.FormatInt(l.Seed, 10) + `}`; !slices.Contains(out, want) {
			t.Errorf("run %d: the gate did not hand over %q alone:\n%s", l.Index, want, strings.Join(out, "\n"))
		}
		for _, line := range out {
			for _, bad := range []string{"D5_RUN_INDEX", "D5_RUNS", strconv.Itoa(jobID), "--setenv", "--size", "--cpu=", "--data=", "prlimit", "bwrap-args", "run-" + strconv.Itoa(l.Index), "ctl-"} {
				if strings.Contains(line, bad) {
					t.Errorf("run %d shows %q: %q", l.Index, bad, line)
				}
			}
			if strings.HasPrefix(line, "stdout env ") || strings.HasPrefix(line, "stdout pid1 ") || strings.HasPrefix(line, "stdout self ") ||
				strings.HasPrefix(line, "stdout cwd ") || strings.HasPrefix(line, "stdout cgroup ") {
				if strings.Contains(line, work) {
					t.Errorf("run %d shows the runner's work folder %s: %q", l.Index, work, line)
				}
			}
		}
		if !slices.ContainsFunc(out, func(s string) bool { return strings.HasPrefix(s, "stdout mount ") }) ||
			!slices.ContainsFunc(out, func(s string) bool { return strings.HasPrefix(s, "stdout env D5_GATE=") }) {
			t.Fatalf("run %d printed neither its mounts nor its environment:\n%s", l.Index, strings.Join(out, "\n"))
		}
	}
	// A claimed seed's run and a fresh one, and every other pair, alike.
	first := same(logs[0].Index)
	for _, l := range logs[1:] {
		if got := same(l.Index); !slices.Equal(got, first) {
			t.Errorf("run %d (seed %d, fresh %v) sees other than run 0 (seed %d):\n%s", l.Index, l.Seed, l.Fresh, logs[0].Seed, lineDiff(first, got))
		}
	}
}

// lineDiff lists the lines only one of a and b has.
func lineDiff(a, b []string) string {
	var d []string
	for _, s := range a {
		if !slices.Contains(b, s) {
			d = append(d, "- "+s)
		}
	}
	for _, s := range b {
		if !slices.Contains(a, s) {
			d = append(d, "+ "+s)
		}
	}
	if len(d) == 0 {
		return "(the same lines, in another order)"
	}
	return strings.Join(d, "\n")
}
