// Package chaos kills `d5list runner` processes with SIGKILL at random
// points of their lives while they work through a portal's queue, then
// reads the portal's own records of the jobs: none lost, none completed
// twice, and no verdict from a lease whose runner was killed holding it.
// scripts/load's runner-chaos mode runs it at scale (1,000 kills), and
// cmd/d5list's TestRunnerKillsLoseNoJob briefly.
package chaos

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/store"
)

// Benchmark is the chaos runs' benchmark (DigitsBenchmark).
const Benchmark = "chaos-digits-mlp"

// DigitsBenchmark is the catalogue's builtin digits MLP as benchmark id,
// one run a job (the claimed seed, no fresh ones), with a target no run
// reaches, so that a job's length is the epochs its recipe sets: the
// queue of the runner fault tests.
func DigitsBenchmark(id string) (d5list.Benchmark, error) {
	benches, err := catalog.Benchmarks()
	if err != nil {
		return d5list.Benchmark{}, err
	}
	for _, b := range benches {
		if b.Workload == "digits-mlp" {
			b.ID, b.Runs, b.Verify.FreshRuns, b.Quality.Target = id, 1, -1, 1
			return b, nil
		}
	}
	return d5list.Benchmark{}, fmt.Errorf("the catalogue has no digits-mlp benchmark")
}

// DigitsSubmission is a queued submission of a DigitsBenchmark by owner,
// claiming one run of seed 7, whose re-run trains a tiny network with a
// rate too small to reach any target, so that each run lasts its epochs.
func DigitsSubmission(benchmark string, owner int64, epochs int) *d5list.Submission {
	return &d5list.Submission{
		BenchmarkID: benchmark, OwnerID: owner, Status: d5list.StatusQueued,
		Division: d5list.DivisionClosed, Availability: d5list.AvailabilityAvailable,
		Submitter: "Carl", SystemName: "test", Framework: "go",
		Recipe: &d5list.Recipe{
			Fixed:   map[string]any{"epochs": epochs, "model_kwargs": map[string]any{"hidden": 8}},
			Mutable: map[string]any{"optimizer": "sgd", "optimizer_args": map[string]any{"lr": 1e-6}},
		},
		Claimed: &d5list.Result{Runs: []d5list.RunMetrics{{Index: 0, Seed: 7}}},
		Reasons: []d5list.Reason{},
	}
}

// Queue makes n submissions of Benchmark, each with a job of epochs
// epochs of training, owned by a competitor "chaos", and returns their
// ids in order.
func Queue(ctx context.Context, db *store.DB, n, epochs int) ([]int64, error) {
	bench, err := DigitsBenchmark(Benchmark)
	if err != nil {
		return nil, err
	}
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{bench}); err != nil {
		return nil, err
	}
	owner, err := db.EnsureUser(ctx, "chaos", d5list.RoleCompetitor)
	if err != nil {
		return nil, err
	}
	ids := make([]int64, 0, n)
	for range n {
		sub := DigitsSubmission(Benchmark, owner.ID, epochs)
		if err := db.CreateSubmission(ctx, sub); err != nil {
			return nil, err
		}
		ids = append(ids, sub.ID)
	}
	return ids, nil
}

// Config is a chaos run.
type Config struct {
	Bin    string // the d5list binary
	Server string // the portal's URL
	Token  string // a runner token
	// TokenName is the token's name: the portal records an agent as
	// NAME/ID-0.
	TokenName string
	Runners   int // runner processes at a time
	Kills     int // SIGKILLs in all
	// MeanLife is a runner's mean life: each is killed after a time drawn
	// from the exponential distribution, the same chance of a kill at
	// every moment whatever it is doing (starting, waiting for a lease,
	// training, heartbeating, reporting) and however long it has lived.
	MeanLife time.Duration
	// Holding is how many of the kills wait instead until their runner
	// holds a lease, and strike at once: a queue that a fast machine
	// drains between random kills still loses leases with their runner.
	Holding   int
	Heartbeat time.Duration
	Logs      string // a folder for each runner process's log
}

// Kill is one runner process killed: its agent, as the portal records
// it, and when.
type Kill struct {
	Agent string
	At    time.Time
}

// Run keeps cfg.Runners runner processes working, kills each at a random
// point of its life and starts a fresh one (a new --id) in its place,
// until cfg.Kills have been killed; it then lets the last ones work until
// every job of the submissions is done or failed (or ctx ends), and stops
// them with SIGTERM. It returns the kills.
func Run(ctx context.Context, cfg Config, db *store.DB, submissions []int64) ([]Kill, error) {
	var (
		mu    sync.Mutex
		kills []Kill
		next  int // the next runner process's number
		errs  []error
		// holding is how many kills of a leaseholder are left to make.
		holding = cfg.Holding
	)
	// take claims a kill, or says there are none left to make.
	take := func() bool {
		mu.Lock()
		defer mu.Unlock()
		if next >= cfg.Kills {
			return false
		}
		next++
		return true
	}
	var left sync.WaitGroup
	survivors := make(chan *exec.Cmd, cfg.Runners)
	for slot := range cfg.Runners {
		left.Go(func() {
			for n := 0; ; n++ {
				id := fmt.Sprintf("s%d-k%d", slot, n)
				cmd, err := startRunner(cfg, id)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
				if !take() {
					survivors <- cmd
					return
				}
				mu.Lock()
				aim := holding > 0
				if aim {
					holding--
				}
				mu.Unlock()
				agent := cfg.TokenName + "/" + id + "-0"
				if !aim || !awaitLease(ctx, db, agent) {
					time.Sleep(time.Duration(rand.ExpFloat64() * float64(cfg.MeanLife)))
				}
				_ = cmd.Process.Signal(syscall.SIGKILL)
				at := time.Now()
				_ = cmd.Wait()
				mu.Lock()
				kills = append(kills, Kill{Agent: agent, At: at})
				mu.Unlock()
			}
		})
	}
	left.Wait()
	close(survivors)
	var err error
	for n := 1; err == nil && n > 0 && ctx.Err() == nil; time.Sleep(200 * time.Millisecond) {
		n, err = unfinished(ctx, db, submissions)
	}
	for cmd := range survivors {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		_ = cmd.Wait()
	}
	if len(errs) > 0 {
		return kills, errs[0]
	}
	if err == nil {
		err = ctx.Err()
	}
	return kills, err
}

// awaitLease waits until agent holds a live lease, and says whether it
// came to: it gives up when no job is left to lease, or ctx ends.
func awaitLease(ctx context.Context, db *store.DB, agent string) bool {
	for ctx.Err() == nil {
		jobs, err := db.ActiveJobs(ctx)
		if err != nil || len(jobs) == 0 {
			return false
		}
		for _, j := range jobs {
			if j.State == d5list.JobLeased && j.Position == 0 && j.RunnerID == agent {
				return true
			}
		}
		time.Sleep(2 * time.Millisecond)
	}
	return false
}

// unfinished counts the jobs of the submissions not yet done or failed.
func unfinished(ctx context.Context, db *store.DB, submissions []int64) (int, error) {
	n := 0
	for _, id := range submissions {
		jobs, err := db.Jobs(ctx, id)
		if err != nil {
			return 0, err
		}
		for _, j := range jobs {
			if j.State != d5list.JobDone && j.State != d5list.JobFailed {
				n++
			}
		}
	}
	return n, nil
}

// startRunner starts one builtin runner process with agent id, its log in
// cfg.Logs/id.log.
func startRunner(cfg Config, id string) (*exec.Cmd, error) {
	log, err := os.Create(filepath.Join(cfg.Logs, id+".log"))
	if err != nil {
		return nil, err
	}
	defer log.Close()
	cmd := exec.Command(cfg.Bin, "runner", "--server", cfg.Server, "--token", cfg.Token, "--executor", "builtin",
		"--id", id, "--heartbeat", cfg.Heartbeat.String())
	cmd.Stdout, cmd.Stderr = log, log
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting runner %s: %w", id, err)
	}
	return cmd, nil
}

// Report is what the portal's records say of the jobs after a chaos run,
// and the runners' logs of what they reported.
type Report struct {
	Jobs   int // jobs queued
	Done   int // done, with one verdict
	GaveUp int // failed after their every lease was lost with its killed runner
	Failed int // failed for another reason
	Lost   int // not done nor failed
	// Leases is how many were taken; LeasesLost expired, their runner
	// killed holding them.
	Leases, LeasesLost int
	// CompletedTwice: jobs the portal recorded two completions of;
	// ReportedTwice: jobs that two runner processes logged as done.
	CompletedTwice, ReportedTwice int
	// FromKilledLeases: completions of a lease that had expired, or that
	// a later lease of the job had replaced.
	FromKilledLeases int
	// InFlight: completions the portal committed after their runner was
	// killed: reports it had sent before (not a fault; shown as found).
	InFlight int
}

// Check reads the jobs of the submissions and their events from db, and
// the runners' logs in logs, against the kills.
func Check(ctx context.Context, db *store.DB, submissions []int64, kills []Kill, logs string) (Report, error) {
	killed := map[string]time.Time{}
	for _, k := range kills {
		killed[k.Agent] = k.At
	}
	done, err := doneByRunner(logs)
	if err != nil {
		return Report{}, err
	}
	var r Report
	for _, id := range submissions {
		jobs, err := db.Jobs(ctx, id)
		if err != nil {
			return r, err
		}
		events, err := db.JobEvents(ctx, id)
		if err != nil {
			return r, err
		}
		for _, j := range jobs {
			r.Jobs++
			switch {
			case j.State == d5list.JobDone:
				r.Done++
			case j.State == d5list.JobFailed && strings.HasPrefix(j.Error, "gave up after") && strings.Contains(j.Error, "expired without a report"):
				r.GaveUp++
			case j.State == d5list.JobFailed:
				r.Failed++
			default:
				r.Lost++
			}
			if done[j.ID] > 1 {
				r.ReportedTwice++
			}
			r.checkEvents(j, events, killed)
		}
	}
	return r, nil
}

// checkEvents counts job j's leases and completions from its events.
func (r *Report) checkEvents(j d5list.Job, events []d5list.JobEvent, killed map[string]time.Time) {
	holder := map[int]string{} // attempt: the agent leased it
	expired := map[int]bool{}
	completions := 0
	for _, e := range events {
		if e.JobID != j.ID {
			continue
		}
		switch e.Kind {
		case d5list.EventLeased:
			r.Leases++
			holder[e.Attempt] = e.Runner
		case d5list.EventLeaseExpired:
			r.LeasesLost++
			expired[e.Attempt] = true
		}
	}
	for _, e := range events {
		if e.JobID != j.ID || e.Kind != d5list.EventCompleted {
			continue
		}
		completions++
		if expired[e.Attempt] || e.Attempt != j.Attempts {
			r.FromKilledLeases++
		}
		if at, ok := killed[holder[e.Attempt]]; ok && e.Time.After(at) {
			r.InFlight++
		}
	}
	if completions > 1 {
		r.CompletedTwice++
	}
}

// doneByRunner counts, per job, the runner processes whose log says they
// reported it done.
func doneByRunner(logs string) (map[int64]int, error) {
	files, err := filepath.Glob(filepath.Join(logs, "*.log"))
	if err != nil {
		return nil, err
	}
	done := map[int64]int{}
	for _, name := range files {
		f, err := os.Open(name)
		if err != nil {
			return nil, err
		}
		seen := map[int64]bool{}
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			var rec struct {
				Msg string `json:"msg"`
				Job int64  `json:"job"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.Msg == "job done" && !seen[rec.Job] {
				seen[rec.Job] = true
				done[rec.Job]++
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	return done, nil
}

// Clean is nil when no job was lost, failed but for its killed leases,
// completed or reported twice, or completed from a killed lease.
func (r Report) Clean() error {
	if r.Lost+r.Failed+r.CompletedTwice+r.ReportedTwice+r.FromKilledLeases > 0 || r.Jobs == 0 {
		return fmt.Errorf("chaos: %+v", r)
	}
	return nil
}

// String is the report for a person.
func (r Report) String() string {
	return fmt.Sprintf("%d jobs: %d done, %d gave up after every lease was killed, %d failed otherwise, %d lost; "+
		"%d leases, %d lost with their killed runner; completed twice %d, reported done twice %d, verdicts from a killed lease %d "+
		"(reports in flight when their runner was killed, committed after: %d)",
		r.Jobs, r.Done, r.GaveUp, r.Failed, r.Lost, r.Leases, r.LeasesLost, r.CompletedTwice, r.ReportedTwice, r.FromKilledLeases, r.InFlight)
}
