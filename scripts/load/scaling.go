package main

import (
	"bytes"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/harness"
	"github.com/deep500/d5list/mllog"
)

// scalingBench measures the torch.distributed example's strong scaling
// (issue 14): the same global batch of 64 trained by one worker (batch 64)
// and by two (32 each, an allreduce a step), reps seeds each, the two
// worker counts alternating in order. The time is each run's own
// run_start..run_stop (training and evaluation, after the data and the
// process group are set up); efficiency is T1 / (2 x T2) of the medians.
// The runs are direct, without the runner, whose overhead is measured
// apart (overhead mode).
func scalingBench(example string, reps int) {
	script := filepath.Join(example, "code", "train_ddp.py")
	if _, err := os.Stat(script); err != nil {
		log.Fatalf("-example: %v", err)
	}
	work, err := os.MkdirTemp("", "d5list-scaling-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	lib := filepath.Join(work, "lib")
	if err := harness.Stage(lib); err != nil {
		log.Fatal(err)
	}
	configs := []struct{ workers, batch int }{{1, 64}, {2, 32}}
	tasks := map[int]string{}
	for _, c := range configs {
		tasks[c.workers] = scalingTask(c.workers, c.batch)
	}
	times := map[int][]float64{}
	fmt.Printf("%4s %8s %12s %12s\n", "seed", "workers", "train s", "wall s")
	for seed := 1; seed <= reps; seed++ {
		for k := range configs {
			c := configs[(k+seed)%2] // alternate which goes first
			result := filepath.Join(work, fmt.Sprintf("result-%d-%d.txt", seed, c.workers))
			cmd := exec.Command("/usr/bin/python3", script, "--workers", strconv.Itoa(c.workers))
			// Run directly there is no gate: the harness takes $D5_SEED.
			cmd.Env = []string{"PATH=/usr/bin:/bin", "HOME=" + work, "LANG=C.UTF-8", "D5_SEED=" + strconv.Itoa(seed), "PYTHONPATH=" + lib,
				"D5_RESULT_LOG=" + result, "D5_BENCHMARK=" + scalingBenchmark, "D5_TASK=" + tasks[c.workers]}
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				log.Fatalf("seed %d, %d workers: %v\n%s", seed, c.workers, err, out)
			}
			wall := time.Since(start)
			train := runSeconds(result)
			times[c.workers] = append(times[c.workers], train)
			fmt.Printf("%4d %8d %12.3f %12.3f\n", seed, c.workers, train, wall.Seconds())
		}
	}
	t1, t2 := median(times[1]), median(times[2])
	fmt.Printf("median time to train: 1 worker %.3f s, 2 workers %.3f s; speed-up %.2f; scaling efficiency T1/(2 T2) = %.2f\n", t1, t2, t1/t2, t1/(2*t2))
}

// runSeconds is run_start to run_stop of an MLLOG file, by its own clock.
func runSeconds(path string) float64 {
	data, err := os.ReadFile(path)
	if err != nil {
		log.Fatal(err)
	}
	events, err := mllog.Parse(bytes.NewReader(data), path)
	if err != nil {
		log.Fatal(err)
	}
	var start, stop int64
	for _, e := range events {
		switch e.Key {
		case mllog.KeyRunStart:
			start = e.TimeMS
		case mllog.KeyRunStop:
			stop = e.TimeMS
		}
	}
	if start == 0 || stop < start {
		log.Fatalf("%s: no run_start..run_stop", path)
	}
	return float64(stop-start) / 1000
}

const scalingBenchmark = "l3-digits-mlp-torch-ddp-cpu"

// scalingTask is the harness task the runner would hand the catalogue's
// Level 3 benchmark with workers processes of batch examples each.
func scalingTask(workers, batch int) string {
	bs, err := catalog.Benchmarks()
	if err != nil {
		log.Fatal(err)
	}
	i := slices.IndexFunc(bs, func(b d5list.Benchmark) bool { return b.ID == scalingBenchmark })
	if i < 0 {
		log.Fatalf("the catalogue has no %s", scalingBenchmark)
	}
	b := bs[i]
	b.Division.Fixed["workers"] = workers
	task, err := harness.For(&b, &d5list.Recipe{Mutable: map[string]any{"batch_size": batch}})
	if err != nil {
		log.Fatal(err)
	}
	return task.JSON()
}
