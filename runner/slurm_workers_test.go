package runner

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/internal/slowtest"
	"github.com/deep500/d5list/mllog"
)

// workersScript is one data-parallel worker: each leaves what its launcher
// told it in the run's scratch folder, and rank 0, once all have, writes
// the run's MLLOG with their reports. A report appears by rename, whole:
// the shell creates a redirect's file before writing to it, and rank 0
// counting an empty report as done would log a worker with nothing to say.
const workersScript = `#!/bin/sh
set -eu
echo "rank=$RANK local=$LOCAL_RANK world=$WORLD_SIZE master=$MASTER_ADDR:$MASTER_PORT" > "$D5_SCRATCH/.report-$RANK"
mv "$D5_SCRATCH/.report-$RANK" "$D5_SCRATCH/worker-$RANK"
[ "$RANK" = 0 ] || exit 0
tries=0
while [ "$(ls "$D5_SCRATCH" | grep -c '^worker-')" -lt "$WORLD_SIZE" ]; do
  tries=$((tries + 1)); [ "$tries" -lt 300 ] || { echo "the other workers never reported" >&2; exit 3; }
  sleep 0.1
done
read -r gate < "$D5_GATE"
seed=${gate#*\"seed\":}
seed=${seed%%[,\}]*}
{
  echo ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": \"POINT\", \"key\": \"seed\", \"value\": $seed, \"metadata\": {}}"
  cat "$D5_SCRATCH"/worker-*
} > "$D5_RESULT_LOG"
`

// A data-parallel benchmark under Slurm (issue 14): its fixed workers are
// Slurm tasks started by srun, one entrypoint each, with the rendezvous
// variables torch.distributed reads; the test cluster has one node, so
// both tasks land on it, as a site's two nodes would each take one with
// --slurm-tasks-per-node 1.
func TestSlurmStartsDataParallelWorkers(t *testing.T) {
	needSlurm(t)
	s, err := NewSlurm(SlurmOptions{Fetch: fixtureBundle(t, workersScript), SharedDir: workDir(t), Poll: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(11)
	spec.JobID = time.Now().UnixNano() % 1e9
	spec.Benchmark.Division.Fixed = map[string]any{"workers": 2}
	logs, err := s.Execute(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	host, _ := exec.Command("hostname", "-s").Output()
	log := string(logs[0].Log)
	var master string
	for rank := range 2 {
		line := ""
		for _, l := range strings.Split(log, "\n") {
			if strings.HasPrefix(l, fmt.Sprintf("rank=%d ", rank)) {
				line = l
			}
		}
		if !strings.Contains(line, fmt.Sprintf("local=%d world=2 master=%s:", rank, strings.TrimSpace(string(host)))) {
			t.Fatalf("worker %d reported %q, want its rank, world 2 and the job's first node as master; the log:\n%s", rank, line, log)
		}
		at := line[strings.Index(line, "master="):]
		if master != "" && at != master {
			t.Fatalf("the workers were told different masters: %s and %s", master, at)
		}
		master = at
	}
}

// The torch.distributed example trains under Slurm with srun's two tasks
// as its workers, meeting through env://, as it would across two nodes.
// Skipped where /usr/bin/python3 has no PyTorch (CI installs it).
func TestSlurmTrainsTheTorchDistributedExample(t *testing.T) {
	slowtest.Require(t, "a minute of PyTorch training on two Slurm workers")
	needSlurm(t)
	if err := exec.Command(SandboxPython, "-c", "import torch, sklearn").Run(); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI must install python3-torch and python3-sklearn for %s", SandboxPython)
		}
		t.Skipf("%s has no torch and sklearn (apt-get install python3-torch python3-sklearn)", SandboxPython)
	}
	// The example as a competitor packs it, with the claims the packer
	// requires (the fixture's; the re-run does not read them).
	dir := filepath.Join(t.TempDir(), "ddp")
	if err := os.CopyFS(dir, os.DirFS("../examples/pytorch-digits-mlp-ddp")); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(filepath.Join(dir, "results"), os.DirFS("testdata/process-bundle/results")); err != nil {
		t.Fatal(err)
	}
	var packed bytes.Buffer
	if err := bundle.Pack(dir, &packed); err != nil {
		t.Fatal(err)
	}
	s, err := NewSlurm(SlurmOptions{
		Fetch:     fetchOf(packed.Bytes()),
		SharedDir: workDir(t),
		Poll:      200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	spec := testSpec(3)
	spec.JobID = time.Now().UnixNano() % 1e9
	spec.Benchmark = catalogBenchmark(t, "l3-digits-mlp-torch-ddp-cpu")
	spec.Benchmark.Verify.TimeLimitSeconds = 300
	logs, err := s.Execute(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	events, err := mllog.Parse(bytes.NewReader(logs[0].Log), "result_0.txt")
	if err != nil {
		t.Fatal(err)
	}
	var workers int64
	var evals int
	var status string
	for _, e := range events {
		switch e.Key {
		case "number_of_workers":
			workers, _ = mllog.Int(e.Value)
		case mllog.KeyEvalAccuracy:
			evals++
		case mllog.KeyRunStop:
			status, _ = e.Metadata["status"].(string)
		}
	}
	if workers != 2 || evals != 30 || status != "success" {
		t.Fatalf("the run logged %d workers, %d evaluations and run_stop %q; want 2, 30 and success:\n%s", workers, evals, status, logs[0].Log)
	}
}

// catalogBenchmark is the built-in catalogue's benchmark id, as a portal
// leases it.
func catalogBenchmark(t *testing.T, id string) d5list.Benchmark {
	t.Helper()
	bs, err := catalog.Benchmarks()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bs {
		if b.ID == id {
			return b
		}
	}
	t.Fatalf("the catalogue has no benchmark %s", id)
	return d5list.Benchmark{}
}
