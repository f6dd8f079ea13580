package workloads

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"sync"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
)

// WorkerEnv is the environment variable that turns a process started by
// TrainDataParallel into a gradient worker. ServeWorkerIfAsked reads it.
const WorkerEnv = "D5LIST_DP_WORKER"

// MLLOG keys of the data-parallel workload. communication_bytes and
// scaling_efficiency are among the keys mllog.Derive keeps in
// RunMetrics.Extra.
const (
	KeyNumberOfWorkers     = "number_of_workers"
	KeyLocalBatchSize      = "local_batch_size"
	KeySingleWorkerEpochS  = "single_worker_epoch_s"
	KeyCommunicationBytes  = "communication_bytes"
	KeyScalingEfficiency   = "scaling_efficiency"
	DefaultWorkers         = 2
	MaxWorkers             = 16
	benchmarkDigitsMLPDP   = "l3-digits-mlp-dp-cpu"
	workerReadyMagic       = "d5dpwrk1"
	workerStartTimeout     = 60 * time.Second
	workerCommandTrain     = 'e'
	workerCommandQuit      = 'q'
	workerStderrLimitBytes = 8 << 10
	calibrationEpochs      = 3
)

// DPConfig is one data-parallel training run: Workers processes each
// compute the gradient of their slice of every global minibatch of
// Workers x MLP.BatchSize samples.
type DPConfig struct {
	MLP     MLPConfig // BatchSize is per worker
	Workers int
}

// GlobalBatchSize is the number of samples of one optimizer step.
func (c DPConfig) GlobalBatchSize() int { return c.Workers * c.MLP.BatchSize }

// DPSummary is what a finished data-parallel run reports besides its MLLOG.
type DPSummary struct {
	Summary
	Workers int
	Steps   int // optimizer steps, each one allreduce
	// BytesCommunicated counts the gradient payload through the allreduce:
	// every worker sends its gradient sum and receives the global sum once
	// a step, 2 x Workers x Params x 8 bytes.
	BytesCommunicated int64
	Params            int
	// SingleWorkerEpochSeconds is the median of calibrationEpochs training
	// epochs of the same global batch in the coordinating process alone,
	// without communication, measured off the clock during initialisation.
	SingleWorkerEpochSeconds float64
	// EpochSeconds is the median training time of the timed epochs
	// (between epoch_start and epoch_stop, evaluation excluded).
	EpochSeconds float64
	// ScalingEfficiency is SingleWorkerEpochSeconds / (Workers x
	// EpochSeconds): 1 is perfect strong scaling.
	ScalingEfficiency float64
}

// workerSetup is the first line a worker reads: everything it needs to
// build the same replica, data set and minibatch order as the coordinator.
type workerSetup struct {
	Rank         int          `json:"rank"`
	Workers      int          `json:"workers"`
	Seed         int64        `json:"seed"`
	Hidden       int          `json:"hidden"`
	BatchSize    int          `json:"batch_size"` // per worker
	Optimizer    string       `json:"optimizer"`
	LearningRate float64      `json:"lr"`
	Momentum     float64      `json:"momentum"`
	Data         DigitsConfig `json:"data"`
}

func (s workerSetup) mlpConfig() MLPConfig {
	return MLPConfig{Hidden: s.Hidden, MaxEpochs: 1, BatchSize: s.BatchSize, Optimizer: s.Optimizer,
		LearningRate: s.LearningRate, Momentum: s.Momentum, Target: 1}
}

// shard is the part [lo, hi) of an n-sample global minibatch that rank
// trains on. The slices are contiguous and differ in size by at most one,
// so a short last minibatch is still split across every worker.
func shard(n, rank, workers int) (lo, hi int) {
	return rank * n / workers, (rank + 1) * n / workers
}

// gradients lists the gradient buffers in the order they travel.
func (m *mlp) gradients() [][]float64 { return [][]float64{m.gw1, m.gb1, m.gw2, m.gb2} }

func (m *mlp) params() int { return len(m.w1) + len(m.b1) + len(m.w2) + len(m.b2) }

func encodeFloats(dst []byte, parts [][]float64) {
	off := 0
	for _, p := range parts {
		for _, v := range p {
			binary.LittleEndian.PutUint64(dst[off:], math.Float64bits(v))
			off += 8
		}
	}
}

// decodeFloats stores src into parts, or adds it when add is set.
func decodeFloats(src []byte, parts [][]float64, add bool) {
	off := 0
	for _, p := range parts {
		for i := range p {
			v := math.Float64frombits(binary.LittleEndian.Uint64(src[off:]))
			if add {
				p[i] += v
			} else {
				p[i] = v
			}
			off += 8
		}
	}
}

// ServeWorkerIfAsked makes this process a gradient worker, and exits it
// when the coordinator is done, if WorkerEnv is set; otherwise it returns
// at once. Call it first thing in main, and in TestMain of every test
// package that runs the data-parallel workload (the test binary is what
// os.Executable re-executes there).
func ServeWorkerIfAsked() {
	if os.Getenv(WorkerEnv) == "" {
		return
	}
	if err := serveWorker(os.Stdin, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "d5list data-parallel worker:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

// serveWorker runs the worker side of the protocol. The coordinator sends
// a JSON workerSetup line; the worker answers workerReadyMagic once its
// data and replica exist. Then, for each command byte 'e', it trains one
// epoch: per global minibatch it writes the gradient sum of its shard and
// reads back the sum over all workers, which it applies. 'q' or the end of
// its input (the coordinator died) ends it.
func serveWorker(in io.Reader, out io.Writer) error {
	br := bufio.NewReaderSize(in, 1<<16)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading the setup line: %w", err)
	}
	var s workerSetup
	if err := json.Unmarshal(line, &s); err != nil {
		return fmt.Errorf("setup line: %w", err)
	}
	cfg := s.mlpConfig()
	if err := cfg.Validate(); err != nil {
		return err
	}
	if s.Workers < 1 || s.Rank < 0 || s.Rank >= s.Workers {
		return fmt.Errorf("setup line: rank %d of %d workers", s.Rank, s.Workers)
	}
	ds := Digits(s.Data)
	model := newMLP(ds.Dim, s.Hidden, newRNG(uint64(s.Seed), 1))
	shuffler := newRNG(uint64(s.Seed), 2)
	perm := identity(len(ds.TrainX))
	grads := model.gradients()
	buf := make([]byte, 8*model.params())
	if _, err := io.WriteString(out, workerReadyMagic); err != nil {
		return err
	}
	global := s.Workers * s.BatchSize
	for {
		cmd, err := br.ReadByte()
		if err == io.EOF || cmd == workerCommandQuit {
			return nil
		} else if err != nil {
			return err
		} else if cmd != workerCommandTrain {
			return fmt.Errorf("unknown command byte %q", cmd)
		}
		shuffler.shuffle(perm)
		for start := 0; start < len(perm); start += global {
			n := min(global, len(perm)-start)
			lo, hi := shard(n, s.Rank, s.Workers)
			for _, idx := range perm[start+lo : start+hi] {
				model.forward(ds.TrainX[idx])
				model.accumulate(ds.TrainX[idx], ds.TrainLabels[idx])
			}
			encodeFloats(buf, grads)
			if _, err := out.Write(buf); err != nil {
				return err
			}
			if _, err := io.ReadFull(br, buf); err != nil {
				return fmt.Errorf("reading the reduced gradient: %w", err)
			}
			decodeFloats(buf, grads, false)
			model.step(cfg, n)
		}
	}
}

func identity(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = i
	}
	return p
}

// workersStarted, when set (by tests), sees every worker once started.
var workersStarted func([]*worker)

// worker is the coordinator's handle on one worker process.
type worker struct {
	rank   int
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	stdout io.ReadCloser
	stderr *limitedBuffer
}

// fail wraps err with the worker's rank and what it wrote to stderr.
func (w *worker) fail(what string, err error) error {
	msg := fmt.Sprintf("data-parallel worker %d: %s: %v", w.rank, what, err)
	if s := bytes.TrimSpace(w.stderr.Bytes()); len(s) > 0 {
		msg += "; its stderr: " + string(s)
	}
	return errors.New(msg)
}

// limitedBuffer keeps the first workerStderrLimitBytes written to it.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := workerStderrLimitBytes - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

func (b *limitedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// startWorkers re-executes this binary Workers times in worker mode. The
// workers live only as long as their pipes: a worker whose input ends
// returns, and one that writes to a coordinator that is gone dies of
// SIGPIPE, so they do not outlive a killed coordinator by more than one
// minibatch. ctx's cancellation kills them.
func startWorkers(ctx context.Context, cfg DPConfig, seed int64, data DigitsConfig) ([]*worker, error) {
	if os.Getenv(WorkerEnv) != "" {
		// A worker that runs the coordinator again means this binary never
		// dispatched the worker mode; refuse instead of recursing.
		return nil, errors.New("data-parallel workers cannot start workers: this binary ignores " + WorkerEnv + " (call workloads.ServeWorkerIfAsked first thing in main or TestMain)")
	}
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("data-parallel workers: finding this binary: %w", err)
	}
	var workers []*worker
	for rank := range cfg.Workers {
		// -test.run=^$ makes a test binary that does not dispatch the worker
		// mode run nothing and exit, so the handshake fails at once; d5list
		// itself never sees the argument (the worker mode starts first).
		cmd := exec.CommandContext(ctx, exe, "-test.run=^$")
		cmd.Env = append(os.Environ(), WorkerEnv+"=1")
		cmd.WaitDelay = 5 * time.Second
		w := &worker{rank: rank, cmd: cmd, stderr: &limitedBuffer{}}
		cmd.Stderr = w.stderr
		if w.stdin, err = cmd.StdinPipe(); err == nil {
			w.stdout, err = cmd.StdoutPipe()
		}
		if err == nil {
			err = cmd.Start()
		}
		if err != nil {
			stopWorkers(workers)
			return nil, fmt.Errorf("data-parallel worker %d: starting %s: %w", rank, exe, err)
		}
		workers = append(workers, w)
		setup := workerSetup{Rank: rank, Workers: cfg.Workers, Seed: seed, Hidden: cfg.MLP.Hidden, BatchSize: cfg.MLP.BatchSize,
			Optimizer: cfg.MLP.Optimizer, LearningRate: cfg.MLP.LearningRate, Momentum: cfg.MLP.Momentum, Data: data}
		line, _ := json.Marshal(setup)
		if _, err := w.stdin.Write(append(line, '\n')); err != nil {
			stopWorkers(workers)
			return nil, w.fail("sending the setup", err)
		}
	}
	if workersStarted != nil {
		workersStarted(workers)
	}
	// A worker that never answers (a binary that ignores the worker mode
	// and waits on its input) must not hang the run.
	timer := time.AfterFunc(workerStartTimeout, func() { killWorkers(workers) })
	defer timer.Stop()
	for _, w := range workers {
		hello := make([]byte, len(workerReadyMagic))
		if _, err := io.ReadFull(w.stdout, hello); err != nil || string(hello) != workerReadyMagic {
			stopWorkers(workers)
			if err == nil {
				err = fmt.Errorf("answered %q instead of the worker handshake", hello)
			}
			if ctxErr := ctx.Err(); ctxErr != nil {
				return nil, ctxErr
			}
			return nil, w.fail("starting (does the binary call workloads.ServeWorkerIfAsked?)", err)
		}
	}
	return workers, nil
}

func killWorkers(workers []*worker) {
	for _, w := range workers {
		if w.cmd.Process != nil {
			_ = w.cmd.Process.Kill()
		}
	}
}

// stopWorkers kills every worker and reaps it.
func stopWorkers(workers []*worker) {
	killWorkers(workers)
	for _, w := range workers {
		_ = w.cmd.Wait()
	}
}

// finishWorkers asks every worker to quit and waits for it.
func finishWorkers(workers []*worker) error {
	var first error
	for _, w := range workers {
		if _, err := w.stdin.Write([]byte{workerCommandQuit}); err != nil && first == nil {
			first = w.fail("quitting", err)
		}
		_ = w.stdin.Close()
	}
	for _, w := range workers {
		if err := w.cmd.Wait(); err != nil && first == nil {
			first = w.fail("exiting", err)
		}
	}
	return first
}

// TrainDataParallel trains the digits MLP with cfg.Workers worker processes
// until the test accuracy reaches cfg.MLP.Target or cfg.MLP.MaxEpochs have
// passed, logging MLLOG to w.
//
// Each global minibatch of cfg.GlobalBatchSize() samples (in the seed's
// shuffled order) is split into contiguous shards, one per worker. Every
// step, each worker sends the gradient sum of its shard to this process,
// which adds them up in rank order (so a seed and a worker count always
// give the same sums, bit for bit) and sends the total back: a one-level
// tree allreduce through the coordinator. Workers and the coordinator hold
// identical replicas and apply the same update; the coordinator's replica
// is the one evaluated after each epoch. With one worker the run is the
// same, bit for bit, as TrainMLP with the same batch size.
//
// Worker start-up, data generation and the single-worker calibration epoch
// are in the initialisation, off the clock. If ctx is cancelled the workers
// are killed and ctx.Err() is returned without run_stop.
func TrainDataParallel(ctx context.Context, cfg DPConfig, seed int64, w *mllog.Writer) (DPSummary, error) {
	return trainDataParallel(ctx, cfg, DefaultDigits, seed, w)
}

func trainDataParallel(ctx context.Context, cfg DPConfig, data DigitsConfig, seed int64, w *mllog.Writer) (DPSummary, error) {
	if err := cfg.MLP.Validate(); err != nil {
		return DPSummary{}, err
	}
	if cfg.Workers < 1 || cfg.Workers > MaxWorkers {
		return DPSummary{}, fmt.Errorf("data-parallel: workers must be in 1..%d, got %d", MaxWorkers, cfg.Workers)
	}
	mcfg := cfg.MLP
	global := cfg.GlobalBatchSize()
	w.Start(mllog.KeyInitStart, nil, nil)
	w.Point(mllog.KeySubmissionBenchmark, mcfg.Benchmark, nil)
	w.Point(mllog.KeySeed, seed, nil)
	w.Point(mllog.KeyGlobalBatchSize, global, nil)
	w.Point(KeyNumberOfWorkers, cfg.Workers, nil)
	w.Point(KeyLocalBatchSize, mcfg.BatchSize, nil)
	logHyperparameters(w, mcfg)

	workers, err := startWorkers(ctx, cfg, seed, data)
	if err != nil {
		return DPSummary{}, err
	}
	finished := false
	defer func() {
		if !finished {
			stopWorkers(workers)
		}
	}()

	ds := Digits(data)
	w.Point(mllog.KeyTrainSamples, len(ds.TrainX), nil)
	w.Point(mllog.KeyEvalSamples, len(ds.TestX), nil)
	model := newMLP(ds.Dim, mcfg.Hidden, newRNG(uint64(seed), 1))
	shuffler := newRNG(uint64(seed), 2)
	perm := identity(len(ds.TrainX))
	sum := DPSummary{Summary: Summary{Status: statusAborted}, Workers: cfg.Workers, Params: model.params()}

	// The K = 1 reference for the scaling efficiency: epochs of the same
	// global batch and minibatch order on a throwaway replica in this
	// process, with no communication at all, timed while the workers wait
	// idle. The median of a few resists one preempted epoch on a busy host.
	{
		calib := newMLP(ds.Dim, mcfg.Hidden, newRNG(uint64(seed), 1))
		calibShuffler := newRNG(uint64(seed), 2)
		calibPerm := identity(len(ds.TrainX))
		calibCfg := mcfg
		calibCfg.BatchSize = global
		var times []float64
		for range calibrationEpochs {
			calibShuffler.shuffle(calibPerm)
			t0 := time.Now()
			if err := calib.trainEpoch(ctx, calibCfg, ds, calibPerm); err != nil {
				return DPSummary{}, err
			}
			times = append(times, time.Since(t0).Seconds())
		}
		sum.SingleWorkerEpochSeconds = quantile(times, 0.5)
	}
	w.Point(KeySingleWorkerEpochS, sum.SingleWorkerEpochSeconds, map[string]any{"global_batch_size": global, "workers": 1,
		"epochs": calibrationEpochs, "statistic": "median"})
	w.End(mllog.KeyInitStop, nil, nil)
	if err := ctx.Err(); err != nil {
		return DPSummary{}, err
	}

	grads := model.gradients()
	buf := make([]byte, 8*sum.Params)
	cmdTrain := []byte{workerCommandTrain}
	var epochSeconds []float64
	report := foreignDelayFrom(ctx)
	var clock0 helperClock
	clocked := false
	if report != nil {
		clock0, clocked = readHelperClock(workers)
	}
	w.Start(mllog.KeyRunStart, nil, nil)
	start := time.Now()
	for epoch := 1; epoch <= mcfg.MaxEpochs; epoch++ {
		meta := map[string]any{keyEpochNum: epoch}
		epochStart := w.Start(mllog.KeyEpochStart, nil, meta)
		for _, wk := range workers {
			if _, err := wk.stdin.Write(cmdTrain); err != nil {
				return sum.failed(ctx, wk.fail("starting an epoch", err))
			}
		}
		shuffler.shuffle(perm)
		for first := 0; first < len(perm); first += global {
			if err := ctx.Err(); err != nil {
				return sum, err
			}
			n := min(global, len(perm)-first)
			for _, wk := range workers {
				if _, err := io.ReadFull(wk.stdout, buf); err != nil {
					return sum.failed(ctx, wk.fail("reading its gradient", err))
				}
				decodeFloats(buf, grads, wk.rank > 0)
			}
			encodeFloats(buf, grads)
			if err := broadcast(workers, buf); err != nil {
				return sum.failed(ctx, err)
			}
			sum.BytesCommunicated += int64(2 * len(buf) * len(workers))
			sum.Steps++
			model.step(mcfg, n)
		}
		epochStop := w.End(mllog.KeyEpochStop, nil, meta)
		epochSeconds = append(epochSeconds, epochStop.Sub(epochStart).Seconds())
		sum.Epochs = epoch
		sum.TrainSamples += len(perm)

		if evaluate(w, model, ds, meta, mcfg.Target, &sum.Summary) {
			break
		}
	}
	sum.Seconds = time.Since(start).Seconds()
	if sum.Seconds > 0 {
		sum.Throughput = float64(sum.TrainSamples) / sum.Seconds
	}
	if len(epochSeconds) > 0 {
		sum.EpochSeconds = quantile(epochSeconds, 0.5)
	}
	if sum.EpochSeconds > 0 {
		sum.ScalingEfficiency = sum.SingleWorkerEpochSeconds / (float64(cfg.Workers) * sum.EpochSeconds)
	}
	w.Point(mllog.KeyThroughput, sum.Throughput, map[string]any{"unit": "samples/s"})
	w.Point(KeyCommunicationBytes, sum.BytesCommunicated, map[string]any{"unit": "bytes", "steps": sum.Steps,
		"params": sum.Params, "workers": cfg.Workers, "pattern": "reduce to the coordinator in rank order, then broadcast"})
	w.Point(KeyScalingEfficiency, sum.ScalingEfficiency, map[string]any{"workers": cfg.Workers,
		"single_worker_epoch_s": sum.SingleWorkerEpochSeconds, "epoch_s": sum.EpochSeconds})
	w.End(mllog.KeyRunStop, nil, map[string]any{keyStatus: sum.Status, keyEpochNum: sum.Epochs})
	if clocked {
		if clock1, ok := readHelperClock(workers); ok {
			report(clock0.foreignDelayShare(clock1))
		}
	}
	finished = true
	if err := finishWorkers(workers); err != nil {
		return sum, err
	}
	return sum, w.Err()
}

// broadcast writes msg to every worker at once: a pipe holds less than
// one gradient, so one at a time would leave each worker idle until the
// previous one has read its copy.
func broadcast(workers []*worker, msg []byte) error {
	if len(workers) == 1 {
		_, err := workers[0].stdin.Write(msg)
		return err
	}
	errs := make([]error, len(workers))
	var wg sync.WaitGroup
	for i, wk := range workers {
		wg.Go(func() {
			if _, err := wk.stdin.Write(msg); err != nil {
				errs[i] = wk.fail("sending the reduced gradient", err)
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// failed returns the summary so far and err, or ctx's error when the
// failure came from ctx killing the workers.
func (s DPSummary) failed(ctx context.Context, err error) (DPSummary, error) {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return s, ctxErr
	}
	return s, err
}

// DPConfigFromRecipe reads the l3-digits-mlp-dp-cpu recipe: the keys of
// MLPConfigFromRecipe, where batch_size is per worker, and `workers`, the
// number of worker processes (1..MaxWorkers).
func DPConfigFromRecipe(b *d5list.Benchmark, r *d5list.Recipe) (DPConfig, error) {
	mcfg, err := MLPConfigFromRecipe(b, r)
	if err != nil {
		return DPConfig{}, err
	}
	mcfg.Benchmark = benchmarkID(b, benchmarkDigitsMLPDP)
	rr := recipeReader{b: b, r: r}
	workers, err := rr.intKey("workers", DefaultWorkers)
	if err != nil {
		return DPConfig{}, err
	}
	if workers > MaxWorkers {
		_, field, _ := rr.get("workers")
		return DPConfig{}, invalid(field, "must be at most %d, got %d", MaxWorkers, workers)
	}
	if mcfg.Hidden*DefaultDigits.Size*DefaultDigits.Size > maxOpElements {
		_, field, _ := rr.get("model_kwargs")
		return DPConfig{}, invalid(field+".hidden", "the model exceeds %d weights", maxOpElements)
	}
	return DPConfig{MLP: mcfg, Workers: workers}, nil
}

func digitsMLPDataParallel(ctx context.Context, b *d5list.Benchmark, r *d5list.Recipe, seed int64, out io.Writer) error {
	cfg, err := DPConfigFromRecipe(b, r)
	if err != nil {
		return err
	}
	_, err = TrainDataParallel(ctx, cfg, seed, mllog.NewWriter(out, nil))
	return err
}
