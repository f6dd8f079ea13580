package workloads

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/mllog"
)

// smallDigits keeps the worker processes' data generation and epochs short.
var smallDigits = DigitsConfig{Size: 12, Train: 600, Test: 300, Seed: 500, NoiseSigma: 0.1, Jitter: 1.5}

func dpConfig(workers, localBatch, maxEpochs int, target float64) DPConfig {
	return DPConfig{Workers: workers, MLP: MLPConfig{Benchmark: "test-dp", Hidden: 16, MaxEpochs: maxEpochs, BatchSize: localBatch,
		Optimizer: optimizerMomentum, LearningRate: 0.01, Momentum: 0.9, Target: target}}
}

func runDP(t *testing.T, cfg DPConfig, seed int64) (DPSummary, []logEvent) {
	t.Helper()
	var buf bytes.Buffer
	sum, err := trainDataParallel(context.Background(), cfg, smallDigits, seed, mllog.NewWriter(&buf, nil))
	if err != nil {
		t.Fatal(err)
	}
	return sum, parseLog(t, buf.Bytes())
}

func TestDataParallelIsDeterministicPerSeedAndWorkers(t *testing.T) {
	cfg := dpConfig(2, 16, 3, 1.1) // unreachable target: every run trains 3 epochs
	first, log1 := runDP(t, cfg, 7)
	again, log2 := runDP(t, cfg, 7)
	other, _ := runDP(t, cfg, 8)
	if !slices.Equal(first.Accuracies, again.Accuracies) {
		t.Errorf("seed 7 twice with 2 workers: %v then %v", first.Accuracies, again.Accuracies)
	}
	if a, b := evalAccuracies(log1), evalAccuracies(log2); !slices.Equal(a, b) || !slices.Equal(a, first.Accuracies) {
		t.Errorf("logged accuracies %v and %v, summary %v", a, b, first.Accuracies)
	}
	if slices.Equal(first.Accuracies, other.Accuracies) {
		t.Errorf("seeds 7 and 8 gave the same accuracies %v", first.Accuracies)
	}
	if len(first.Accuracies) != 3 || first.Accuracies[2] < 0.2 {
		t.Errorf("3 epochs should learn above chance (0.1), got %v", first.Accuracies)
	}
}

// One worker is TrainMLP split across a process boundary: the same
// arithmetic in the same order. Two workers with half the local batch have
// the same global batches and differ only in how the per-sample terms of
// each gradient sum are grouped, so their curve stays close to it.
func TestDataParallelAgainstSingleProcess(t *testing.T) {
	serial, _, err := func() (Summary, []byte, error) {
		var buf bytes.Buffer
		s, err := trainMLP(context.Background(), dpConfig(1, 32, 3, 1.1).MLP, smallDigits, 7, mllog.NewWriter(&buf, nil))
		return s, buf.Bytes(), err
	}()
	if err != nil {
		t.Fatal(err)
	}
	one, _ := runDP(t, dpConfig(1, 32, 3, 1.1), 7)
	if !slices.Equal(one.Accuracies, serial.Accuracies) {
		t.Errorf("1 worker %v, TrainMLP %v: want identical", one.Accuracies, serial.Accuracies)
	}
	two, _ := runDP(t, dpConfig(2, 16, 3, 1.1), 7)
	for i := range two.Accuracies {
		if math.Abs(two.Accuracies[i]-serial.Accuracies[i]) > 0.02 {
			t.Errorf("epoch %d: 2 workers %v, 1 process %v: the same global batch should learn alike", i+1, two.Accuracies, serial.Accuracies)
			break
		}
	}
}

func TestDataParallelLogAndBytesCommunicated(t *testing.T) {
	cfg := dpConfig(3, 10, 2, 1.1)
	sum, events := runDP(t, cfg, 5)

	params := 16*smallDigits.Size*smallDigits.Size + 16 + numClasses*16 + numClasses
	global := 3 * 10
	steps := 2 * ((smallDigits.Train + global - 1) / global)
	want := int64(2 * 3 * params * 8 * steps)
	if sum.Params != params || sum.Steps != steps || sum.BytesCommunicated != want {
		t.Fatalf("params %d steps %d bytes %d, want %d, %d, %d", sum.Params, sum.Steps, sum.BytesCommunicated, params, steps, want)
	}
	values := map[string]any{}
	count := map[string]int{}
	for _, e := range events {
		values[e.Key] = e.Value
		count[e.Key]++
	}
	for key, v := range map[string]float64{
		mllog.KeyGlobalBatchSize: float64(global), KeyNumberOfWorkers: 3, KeyLocalBatchSize: 10,
		KeyCommunicationBytes: float64(want), mllog.KeySeed: 5,
	} {
		if values[key] != v {
			t.Errorf("%s logged as %v, want %v", key, values[key], v)
		}
	}
	for _, key := range []string{mllog.KeyRunStart, mllog.KeyRunStop, KeySingleWorkerEpochS, KeyScalingEfficiency, KeyCommunicationBytes} {
		if count[key] != 1 {
			t.Errorf("%d %s events, want 1", count[key], key)
		}
	}
	if eff, ok := values[KeyScalingEfficiency].(float64); !ok || !(eff > 0) || eff != sum.ScalingEfficiency {
		t.Errorf("scaling_efficiency logged %v, summary %v", values[KeyScalingEfficiency], sum.ScalingEfficiency)
	}
	if got := sum.SingleWorkerEpochSeconds / (3 * sum.EpochSeconds); got != sum.ScalingEfficiency {
		t.Errorf("efficiency %v is not calibration %v / (3 x epoch %v)", sum.ScalingEfficiency, sum.SingleWorkerEpochSeconds, sum.EpochSeconds)
	}

	// The verifier reads the log the way the portal does.
	var buf bytes.Buffer
	w := mllog.NewWriter(&buf, nil)
	if _, err := trainDataParallel(context.Background(), cfg, smallDigits, 5, w); err != nil {
		t.Fatal(err)
	}
	parsed, err := mllog.Parse(&buf, "result_0.txt")
	if err != nil {
		t.Fatal(err)
	}
	m, reasons := mllog.Derive(parsed, d5list.QualityTarget{Metric: mllog.KeyEvalAccuracy, Target: 1.1, Direction: d5list.HigherIsBetter}, "result_0.txt", 0)
	if len(reasons) != 0 || m.GlobalBatchSize != global || m.Extra[KeyCommunicationBytes] != float64(want) || !(m.Extra[KeyScalingEfficiency] > 0) || len(m.Evals) != 2 {
		t.Fatalf("derived %+v, reasons %+v", m, reasons)
	}
}

func TestDataParallelCancelKillsWorkers(t *testing.T) {
	var mu sync.Mutex
	var pids []int
	workersStarted = func(ws []*worker) {
		mu.Lock()
		defer mu.Unlock()
		for _, w := range ws {
			pids = append(pids, w.cmd.Process.Pid)
		}
	}
	t.Cleanup(func() { workersStarted = nil })

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lw := &signalWriter{key: `"key":"epoch_stop"`, seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := trainDataParallel(ctx, dpConfig(2, 8, 10000, 1.1), smallDigits, 3, mllog.NewWriter(lw, nil))
		done <- err
	}()
	select {
	case <-lw.seen:
	case err := <-done:
		t.Fatalf("returned %v before the first epoch ended", err)
	case <-time.After(60 * time.Second):
		t.Fatal("no epoch ended within 60 s")
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled run returned %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a cancelled run did not return within 5 s")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(pids) != 2 {
		t.Fatalf("saw %d worker pids, want 2", len(pids))
	}
	for _, pid := range pids {
		// The workers were reaped, so a live process with this pid would
		// have to be a new one; signal 0 only asks whether it exists.
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("worker %d still exists after the cancel (kill -0: %v)", pid, err)
		}
	}
	if strings.Contains(lw.String(), `"key":"run_stop"`) {
		t.Error("a cancelled run logged run_stop")
	}
}

// signalWriter closes seen when a line containing key is first written.
type signalWriter struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	key  string
	seen chan struct{}
	once sync.Once
}

func (w *signalWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	if strings.Contains(string(p), w.key) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(p), nil
}

func (w *signalWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// A worker whose coordinator is gone sees its input end and returns.
func TestWorkerEndsWhenItsInputEnds(t *testing.T) {
	setup := `{"rank":0,"workers":1,"seed":1,"hidden":4,"batch_size":8,"optimizer":"sgd","lr":0.1,"momentum":0,` +
		`"data":{"Size":12,"Train":40,"Test":10,"Seed":1,"NoiseSigma":0.1,"Jitter":1}}` + "\n"
	var out bytes.Buffer
	done := make(chan error, 1)
	go func() { done <- serveWorker(strings.NewReader(setup), &out) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("worker returned %v at the end of its input", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("worker did not return at the end of its input")
	}
	if out.String() != workerReadyMagic {
		t.Fatalf("worker wrote %q, want only the handshake", out.String())
	}
	if err := serveWorker(strings.NewReader("{not json\n"), io.Discard); err == nil || !strings.Contains(err.Error(), "setup line") {
		t.Fatalf("bad setup line: %v", err)
	}
}

// A binary that does not dispatch the worker mode would run the workload
// again in every worker; the nested start is refused with the fix named.
func TestDataParallelRefusesNestedWorkers(t *testing.T) {
	t.Setenv(WorkerEnv, "1")
	_, err := trainDataParallel(context.Background(), dpConfig(2, 8, 1, 1.1), smallDigits, 1, mllog.NewWriter(io.Discard, nil))
	if err == nil || !strings.Contains(err.Error(), "ServeWorkerIfAsked") {
		t.Fatalf("nested start: %v", err)
	}
}

func TestDPConfigFromRecipe(t *testing.T) {
	b := &d5list.Benchmark{ID: "l3-test", Quality: d5list.QualityTarget{Target: 0.9},
		Division: d5list.DivisionRules{Fixed: map[string]any{"workers": int64(2), "model_kwargs": map[string]any{"hidden": int64(32)}},
			Mutable: map[string]any{"batch_size": int64(16)}}}
	cfg, err := DPConfigFromRecipe(b, &d5list.Recipe{})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Workers != 2 || cfg.MLP.BatchSize != 16 || cfg.GlobalBatchSize() != 32 || cfg.MLP.Hidden != 32 || cfg.MLP.Benchmark != "l3-test" {
		t.Fatalf("config %+v", cfg)
	}
	for _, tt := range []struct {
		workers any
		want    string
	}{
		{int64(0), "recipe: fixed.workers: must be a positive integer"},
		{int64(MaxWorkers + 1), "recipe: fixed.workers: must be at most 16"},
		{"two", "recipe: fixed.workers: must be a positive integer"},
	} {
		_, err := DPConfigFromRecipe(b, &d5list.Recipe{Fixed: map[string]any{"workers": tt.workers}})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("workers %v: error %v, want %q", tt.workers, err, tt.want)
		}
	}
}

// A worker that dies mid-run fails the run with an error that names it.
func TestDataParallelWorkerDeathFailsTheRun(t *testing.T) {
	var mu sync.Mutex
	var victim *worker
	workersStarted = func(ws []*worker) {
		mu.Lock()
		defer mu.Unlock()
		victim = ws[1]
	}
	t.Cleanup(func() { workersStarted = nil })
	lw := &signalWriter{key: `"key":"epoch_stop"`, seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		_, err := trainDataParallel(context.Background(), dpConfig(2, 8, 10000, 1.1), smallDigits, 3, mllog.NewWriter(lw, nil))
		done <- err
	}()
	select {
	case <-lw.seen:
	case err := <-done:
		t.Fatalf("returned %v before the first epoch ended", err)
	case <-time.After(60 * time.Second):
		t.Fatal("no epoch ended within 60 s")
	}
	mu.Lock()
	_ = victim.cmd.Process.Kill()
	mu.Unlock()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "data-parallel worker 1") {
			t.Fatalf("run with a killed worker returned %v, want an error naming worker 1", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the run did not notice its dead worker within 10 s")
	}
}

// coordinatorEnv makes the test binary a coordinator that prints its
// workers' pids and trains until it is killed.
const coordinatorEnv = "D5LIST_TEST_DP_COORDINATOR"

func runTestCoordinator() {
	workersStarted = func(ws []*worker) {
		line := "pids"
		for _, w := range ws {
			line += " " + strconv.Itoa(w.cmd.Process.Pid)
		}
		fmt.Println(line)
	}
	_, err := trainDataParallel(context.Background(), dpConfig(2, 8, 1000000, 1.1), smallDigits, 1, mllog.NewWriter(io.Discard, nil))
	fmt.Fprintln(os.Stderr, "coordinator ended:", err)
	os.Exit(1)
}

// gone reports whether pid has exited: no such process, or a zombie that
// its new parent has not reaped yet.
func gone(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the parenthesised command name.
	s := string(stat)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// Workers die with a coordinator killed by SIGKILL, which runs no cleanup:
// their pipes end, and that alone stops them.
func TestDataParallelWorkersDieWithKilledCoordinator(t *testing.T) {
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc to watch the workers")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), coordinatorEnv+"=1")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		t.Fatalf("coordinator printed %q (%v); stderr: %s", line, err, stderr.String())
	}
	var pids []int
	for _, f := range strings.Fields(strings.TrimPrefix(line, "pids")) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatalf("bad pid line %q", line)
		}
		pids = append(pids, pid)
	}
	if len(pids) != 2 {
		t.Fatalf("pid line %q, want 2 workers", line)
	}
	time.Sleep(200 * time.Millisecond) // into training, workers mid-exchange
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for !gone(pid) {
			if time.Now().After(deadline) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				t.Fatalf("worker %d still runs 5 s after its coordinator was killed", pid)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
