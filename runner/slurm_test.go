package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deep500/d5list/mllog"
)

var slurmOnce struct {
	sync.Once
	err error
}

// needSlurm starts the single-node Slurm of testdata/slurm/start.sh and
// waits until its node is idle. It skips only where slurmctld is not
// installed (CI installs slurm-wlm and munge, see .ci/run).
func needSlurm(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("slurmctld"); err != nil {
		if _, err := os.Stat("/usr/sbin/slurmctld"); err != nil {
			t.Skip("slurmctld is not installed: Slurm executor tests skipped (apt-get install slurm-wlm munge)")
		}
	}
	slurmOnce.Do(func() {
		if out, err := exec.Command("sh", "testdata/slurm/start.sh").CombinedOutput(); err != nil {
			slurmOnce.err = fmt.Errorf("testdata/slurm/start.sh: %v\n%s", err, out)
			return
		}
		deadline := time.Now().Add(30 * time.Second)
		for {
			out, err := exec.Command("sinfo", "-h", "-o", "%t").Output()
			if err == nil && strings.Contains(string(out), "idle") || strings.Contains(string(out), "mix") {
				return
			}
			if time.Now().After(deadline) {
				slurmOnce.err = fmt.Errorf("the Slurm node is not idle after 30 s: sinfo says %q (%v)", out, err)
				return
			}
			time.Sleep(300 * time.Millisecond)
		}
	})
	if slurmOnce.err != nil {
		t.Fatal(slurmOnce.err)
	}
}

func TestSlurmRunsEachSeed(t *testing.T) {
	needSlurm(t)
	var mu sync.Mutex
	var lines []string
	s, err := NewSlurm(SlurmOptions{
		Fetch:     fixtureBundle(t, ""),
		SharedDir: workDir(t),
		Poll:      200 * time.Millisecond,
		OnLine: func(run int, stream, line string) {
			mu.Lock()
			lines = append(lines, fmt.Sprintf("%d %s", run, line))
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(5, 6)
	spec.JobID = time.Now().UnixNano() % 1e9
	logs, err := s.Execute(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 2 {
		t.Fatalf("got %d logs, want 2", len(logs))
	}
	for i, l := range logs {
		if l.Index != i || l.Seed != spec.Seeds[i] {
			t.Errorf("log %d: index %d seed %d", i, l.Index, l.Seed)
		}
		events, err := mllog.Parse(bytes.NewReader(l.Log), "result")
		if err != nil {
			t.Fatal(err)
		}
		found := false
		for _, e := range events {
			if v, ok := mllog.Int(e.Value); ok && e.Key == mllog.KeySeed {
				found = v == spec.Seeds[i]
			}
		}
		if !found {
			t.Errorf("log %d does not carry seed %d:\n%s", i, spec.Seeds[i], l.Log)
		}
		want := fmt.Sprintf("%d seed %d done", i, spec.Seeds[i])
		mu.Lock()
		if !strings.Contains(strings.Join(lines, "\n"), want) {
			t.Errorf("OnLine never saw %q in %q", want, lines)
		}
		mu.Unlock()
	}
}

// squeueByName lists the ids and states of the jobs named name.
func squeueByName(t *testing.T, name string) string {
	out, err := exec.Command("squeue", "-h", "-n", name, "-o", "%i %T").Output()
	if err != nil {
		t.Fatalf("squeue: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestSlurmCancelAndTimeLimit(t *testing.T) {
	needSlurm(t)
	for _, tc := range []struct {
		name      string
		limit     int
		cancelled bool
	}{
		{"cancelled", 600, true},
		{"time limit", 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := NewSlurm(SlurmOptions{
				Fetch:     fixtureBundle(t, "#!/bin/sh\necho sleeping\nsleep 300\n"),
				SharedDir: workDir(t),
				Poll:      200 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			spec := testSpec(1)
			spec.JobID = time.Now().UnixNano() % 1e9
			spec.Benchmark.Verify.TimeLimitSeconds = tc.limit
			name := fmt.Sprintf("d5-%d", spec.JobID)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			errc := make(chan error, 1)
			go func() { _, err := s.Execute(ctx, spec); errc <- err }()
			deadline := time.Now().Add(20 * time.Second)
			for tc.cancelled && !strings.Contains(squeueByName(t, name), "RUNNING") {
				if time.Now().After(deadline) {
					t.Fatalf("slurm job %s never ran: %q", name, squeueByName(t, name))
				}
				time.Sleep(100 * time.Millisecond)
			}
			if tc.cancelled {
				cancel()
			}
			select {
			case err = <-errc:
			case <-time.After(20 * time.Second):
				t.Fatal("Execute did not return")
			}
			if err == nil {
				t.Fatal("Execute returned no error")
			}
			if !tc.cancelled && !strings.Contains(err.Error(), "time limit") {
				t.Errorf("want a time-limit error, got %v", err)
			}
			gone := time.Now().Add(5 * time.Second)
			for q := squeueByName(t, name); q != ""; q = squeueByName(t, name) {
				if time.Now().After(gone) {
					t.Fatalf("slurm job still queued 5 s after Execute returned: %q", q)
				}
				time.Sleep(100 * time.Millisecond)
			}
		})
	}
}

// A GPU benchmark's sbatch asks for GPUs: the count it fixes, or for the
// catalogue's accelerator_count "*" the site's GPUs per node (1 when not
// set); a CPU benchmark's asks for none. Needs no Slurm.
func TestSlurmAsksForGPUs(t *testing.T) {
	gres := func(s *Slurm, requires map[string]string) []string {
		spec := testSpec(1)
		spec.Benchmark.Requires = requires
		var out []string
		for _, a := range s.sbatchArgs(spec, time.Minute, "out", "dir", "batch.sh") {
			if strings.HasPrefix(a, "--gres") {
				out = append(out, a)
			}
		}
		return out
	}
	site := &Slurm{opts: SlurmOptions{GPUsPerNode: 4}}
	bare := &Slurm{}
	for _, tt := range []struct {
		name     string
		s        *Slurm
		requires map[string]string
		want     string
	}{
		{"any count, site with 4 per node", site, map[string]string{"accelerator_count": "*", "framework.torch": "*"}, "--gres=gpu:4"},
		{"any count, site says nothing", bare, map[string]string{"accelerator_count": "*"}, "--gres=gpu:1"},
		{"a fixed count", site, map[string]string{"accelerator_count": "2"}, "--gres=gpu:2"},
		{"a model only", bare, map[string]string{"accelerator_model": "NVIDIA H100 80GB HBM3"}, "--gres=gpu:1"},
		{"CPU only", site, map[string]string{"framework.torch": "*"}, ""},
	} {
		got := strings.Join(gres(tt.s, tt.requires), " ")
		if got != tt.want {
			t.Errorf("%s: sbatch %q, want %q", tt.name, got, tt.want)
		}
	}
}
