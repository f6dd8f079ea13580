package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
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
	"github.com/deep500/d5list/internal/chaos"
	"github.com/deep500/d5list/internal/slowtest"
	"github.com/deep500/d5list/runner"
	"github.com/deep500/d5list/store"
	"github.com/deep500/d5list/workloads"
)

// These tests run the real portal (serve, in process, on a loopback port)
// and `d5list runner` as real OS processes built from this package.

var (
	binOnce sync.Once
	binDir  string
	binPath string
	binErr  error
)

func TestMain(m *testing.M) {
	// The data-parallel workload re-executes this test binary as its
	// workers (os.Executable), in `run` and in the in-process runners.
	workloads.ServeWorkerIfAsked()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// d5listBinary builds the command once per test run.
func d5listBinary(t *testing.T) string {
	t.Helper()
	binOnce.Do(func() {
		binDir, binErr = os.MkdirTemp("", "d5list-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "d5list")
		out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput()
		if err != nil {
			binErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

const poolBenchmark = "t-runner-pool"

// pool is a portal with a runner token, an organiser token and a store
// handle of its own for queueing jobs directly.
type pool struct {
	data, addr, url string
	runnerToken     string
	orgToken        string
	ttl             time.Duration
	db              *store.DB
	ownerID         int64
	stopServer      func()
}

func startPool(t *testing.T, ttl time.Duration) *pool {
	t.Helper()
	p := &pool{data: t.TempDir(), addr: "127.0.0.1:0", ttl: ttl}
	p.runnerToken = p.admin(t, "runner-token", "--name", "pool")
	if !strings.HasPrefix(p.runnerToken, "d5r_") {
		t.Fatalf("admin runner-token printed %q, want one d5r_ token", p.runnerToken)
	}
	p.orgToken = p.admin(t, "token", "--user", "olga", "--role", "organiser")
	p.startServer(t)
	db, err := store.Open(context.Background(), p.data)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	p.db = db
	bench, err := chaos.DigitsBenchmark(poolBenchmark)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.UpsertBenchmarks(context.Background(), []d5list.Benchmark{bench}); err != nil {
		t.Fatal(err)
	}
	u, err := db.EnsureUser(context.Background(), "carl", d5list.RoleCompetitor)
	if err != nil {
		t.Fatal(err)
	}
	p.ownerID = u.ID
	return p
}

func (p *pool) admin(t *testing.T, args ...string) string {
	t.Helper()
	var out bytes.Buffer
	args = append([]string{"admin", args[0], "--data", p.data}, args[1:]...)
	if err := run(context.Background(), args, &out, io.Discard); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return strings.TrimSpace(out.String())
}

// startServer serves p.data on p.addr (the same port again after a stop).
func (p *pool) startServer(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan string, 1)
	done := make(chan error, 1)
	cfg := serveConfig{Addr: p.addr, DataDir: p.data, MaxUpload: 1 << 20, LeaseTTL: p.ttl, Ready: func(a string) { ready <- a },
		RemeasureAfter: 2 * time.Second, RemeasureElsewhere: 5 * time.Second}
	go func() {
		done <- serve(ctx, cfg, slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}()
	var once sync.Once
	p.stopServer = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("serve returned %v", err)
				}
			case <-time.After(20 * time.Second):
				t.Error("server did not shut down within 20 s")
			}
		})
	}
	t.Cleanup(p.stopServer)
	select {
	case addr := <-ready:
		p.addr, p.url = addr, "http://"+addr
	case err := <-done:
		t.Fatalf("serve: %v", err)
	case <-time.After(20 * time.Second):
		t.Fatal("server did not start")
	}
}

// queueJob queues a submission of the pool benchmark whose re-run trains
// for epochs epochs, and returns its job.
func (p *pool) queueJob(t *testing.T, epochs int, bundleSHA string) d5list.Job {
	t.Helper()
	sub := chaos.DigitsSubmission(poolBenchmark, p.ownerID, epochs)
	sub.BundleSHA256 = bundleSHA
	if err := p.db.CreateSubmission(context.Background(), sub); err != nil {
		t.Fatal(err)
	}
	jobs, err := p.db.Jobs(context.Background(), sub.ID)
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs of submission %d: %v %v", sub.ID, jobs, err)
	}
	return jobs[0]
}

func (p *pool) job(t *testing.T, id int64) *d5list.Job {
	t.Helper()
	j, err := p.db.Job(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// waitJob polls the store until cond holds for job id.
func (p *pool) waitJob(t *testing.T, id int64, within time.Duration, what string, cond func(*d5list.Job) bool) *d5list.Job {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		j := p.job(t, id)
		if cond(j) {
			return j
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d: %s did not happen within %s; it is %+v", id, what, within, j)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// api sends a request with a bearer token and decodes a JSON answer.
func (p *pool) api(t *testing.T, method, path, token string, body io.Reader, out any) int {
	t.Helper()
	req, err := http.NewRequest(method, p.url+path, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode < 300 {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			t.Fatalf("%s %s: decoding: %v", method, path, err)
		}
	}
	return resp.StatusCode
}

// runnerProc is one `d5list runner` process.
type runnerProc struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	logs bytes.Buffer
	done chan struct{}
}

func (r *runnerProc) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.Write(b)
}

func (p *pool) startRunner(t *testing.T, id string, extra ...string) *runnerProc {
	t.Helper()
	args := append([]string{"runner", "--server", p.url, "--token", p.runnerToken, "--id", id, "--heartbeat", "200ms"}, extra...)
	r := &runnerProc{cmd: exec.Command(d5listBinary(t), args...), done: make(chan struct{})}
	r.cmd.Stderr = r
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		r.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			t.Errorf("runner %s did not stop within 10 s of SIGTERM", id)
			r.cmd.Process.Kill()
		}
		if t.Failed() {
			t.Logf("runner %s log:\n%s", id, r.logText())
		}
	})
	return r
}

func (r *runnerProc) logText() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

// events returns the runner's JSON log records with message msg.
func (r *runnerProc) events(msg string) []map[string]any {
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(r.logText()))
	for sc.Scan() {
		var rec map[string]any
		if json.Unmarshal(sc.Bytes(), &rec) == nil && rec["msg"] == msg {
			out = append(out, rec)
		}
	}
	return out
}

// reported is the runner's "job done" records once it has logged at
// least n of them, or after 10 s those it has. A runner logs "job done"
// after the portal's answer to its report, which comes after the job is
// done in the database: its log may lag the job's state by a moment.
func (r *runnerProc) reported(n int) []map[string]any {
	deadline := time.Now().Add(10 * time.Second)
	for {
		recs := r.events("job done")
		if len(recs) >= n || time.Now().After(deadline) {
			return recs
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func jobsIn(recs []map[string]any) []int64 {
	var ids []int64
	for _, r := range recs {
		if f, ok := r["job"].(float64); ok {
			ids = append(ids, int64(f))
		}
	}
	return ids
}

func (p *pool) submission(t *testing.T, id int64) *d5list.Submission {
	t.Helper()
	s, err := p.db.Submission(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A runner killed with SIGKILL mid-job loses the job when its lease
// expires; another runner takes it, and the job ends with one result.
func TestRunnerKilledMidJobLosesItsLease(t *testing.T) {
	p := startPool(t, 1500*time.Millisecond)
	job := p.queueJob(t, 200, "")
	a := p.startRunner(t, "a")
	p.waitJob(t, job.ID, 10*time.Second, "lease by runner a", func(j *d5list.Job) bool {
		return j.State == d5list.JobLeased && strings.HasPrefix(j.RunnerID, "pool/a-")
	})
	time.Sleep(300 * time.Millisecond) // well into the run
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	b := p.startRunner(t, "b")
	done := p.waitJob(t, job.ID, 30*time.Second, "completion", func(j *d5list.Job) bool { return j.State == d5list.JobDone })
	if done.Attempts != 2 || !strings.HasPrefix(done.RunnerID, "pool/b-") {
		t.Errorf("job %+v: want 2 attempts, finished by runner b", done)
	}
	if len(a.events("job done")) != 0 {
		t.Errorf("the killed runner reported the job done")
	}
	if got := jobsIn(b.reported(1)); len(got) != 1 || got[0] != job.ID {
		t.Errorf("runner b reported jobs %v done, want exactly [%d]", got, job.ID)
	}
	sub := p.submission(t, job.SubmissionID)
	if !sub.Status.Final() || sub.Measured == nil || len(sub.Measured.ClaimedSeedRuns()) != 1 {
		t.Errorf("submission %+v: want a final status and one measured run of the claimed seed", sub)
	}
	jobs, _ := p.db.Jobs(context.Background(), job.SubmissionID)
	if len(jobs) != 1 {
		t.Errorf("submission has %d jobs, want 1", len(jobs))
	}
}

// Three honest entries on a machine whose other core a busy loop keeps
// busy, their runner killed with SIGKILL in the middle of the first: the
// job it held goes to the next runner when its lease expires, and all
// three are verified (a killed runner once left every entry of its queue
// to an organiser).
func TestHonestEntriesOutliveAKilledRunner(t *testing.T) {
	slowtest.Require(t, "three honest GEMM entries judged on their times, re-run beside a busy loop")
	p := startPool(t, 3*time.Second)
	competitor := p.admin(t, "token", "--user", "erin", "--role", "competitor")
	dir := filepath.Join(t.TempDir(), "gemm")
	for _, args := range [][]string{{"init", "l0-gemm-cpu", dir, "--submitter", "Erin Lab"}, {"run", dir}} {
		if err := run(context.Background(), args, io.Discard, io.Discard); err != nil {
			t.Fatalf("%s: %v", args[0], err)
		}
	}
	defer busyLoop(t)()
	var ids []int64
	for k := range 3 {
		// Three systems: the same files uploaded again would point to the
		// first entry instead of making another.
		setManifestField(t, dir, "system_name", "erin-"+strconv.Itoa(k))
		var out bytes.Buffer
		if err := run(context.Background(), []string{"submit", dir, "--server", p.url, "--token", competitor}, &out, io.Discard); err != nil {
			t.Fatalf("submit: %v", err)
		}
		var id int64
		if _, err := fmt.Sscanf(out.String(), "submission %d queued", &id); err != nil {
			t.Fatalf("submit printed %q: %v", out.String(), err)
		}
		ids = append(ids, id)
	}
	jobs, err := p.db.Jobs(context.Background(), ids[0])
	if err != nil || len(jobs) != 1 {
		t.Fatalf("jobs of submission %d: %v, %v", ids[0], jobs, err)
	}
	a := p.startRunner(t, "a")
	p.waitJob(t, jobs[0].ID, 30*time.Second, "lease by runner a", func(j *d5list.Job) bool { return j.State == d5list.JobLeased })
	time.Sleep(time.Second) // into its runs
	if err := a.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-a.done
	p.startRunner(t, "b")
	for _, id := range ids {
		deadline := time.Now().Add(4 * time.Minute)
		sub := p.submission(t, id)
		for !sub.Status.Final() && time.Now().Before(deadline) {
			time.Sleep(200 * time.Millisecond)
			sub = p.submission(t, id)
		}
		attempts, err := p.db.Attempts(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range attempts[:len(attempts)-1] {
			t.Logf("submission %d, job %d (leased %d times) held back: %s %s", id, a.Job.ID, a.Job.Attempts, a.Status, reasonsText(a.Reasons))
		}
		t.Logf("submission %d: %s after %d measurements %s", id, sub.Status, len(attempts), reasonsText(sub.Reasons))
		if sub.Status != d5list.StatusVerified {
			t.Errorf("submission %d ended %s, want verified: %s", id, sub.Status, reasonsText(sub.Reasons))
		}
	}
}

// 3 runner processes and 30 jobs: every job completes, each exactly once.
func TestThreeRunnersThirtyJobs(t *testing.T) {
	p := startPool(t, 10*time.Second)
	var jobs []d5list.Job
	for range 30 {
		jobs = append(jobs, p.queueJob(t, 1, ""))
	}
	runners := []*runnerProc{p.startRunner(t, "x"), p.startRunner(t, "y"), p.startRunner(t, "z")}
	for _, j := range jobs {
		p.waitJob(t, j.ID, 60*time.Second, "completion", func(j *d5list.Job) bool { return j.State == d5list.JobDone })
	}
	// A runner logs "job done" after the portal's answer to its report,
	// which comes after the job is done in the database: its log may lag
	// the state by a moment.
	var reported map[int64]int
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		reported = map[int64]int{}
		for _, r := range runners {
			for _, id := range jobsIn(r.events("job done")) {
				reported[id]++
			}
		}
		if len(reported) >= len(jobs) || time.Now().After(deadline) {
			break
		}
	}
	for _, j := range jobs {
		got := p.job(t, j.ID)
		if got.Attempts != 1 {
			t.Errorf("job %d was leased %d times, want 1", j.ID, got.Attempts)
		}
		if reported[j.ID] != 1 {
			t.Errorf("job %d was reported done %d times, want 1", j.ID, reported[j.ID])
		}
		if sub := p.submission(t, j.SubmissionID); sub.Measured == nil || len(sub.Measured.ClaimedSeedRuns()) != 1 {
			t.Errorf("submission %d has no measured result", j.SubmissionID)
		}
	}
	if len(reported) != len(jobs) {
		t.Errorf("runners reported %d distinct jobs, want %d", len(reported), len(jobs))
	}
}

// Only the holder of a job's lease may report on it or fetch its bundle; a
// malformed report is refused and leaves the job as it was.
func TestRunnerAPIRefusesStrangers(t *testing.T) {
	p := startPool(t, time.Minute)
	otherToken := p.admin(t, "runner-token", "--name", "other")
	competitor := p.admin(t, "token", "--user", "cleo", "--role", "competitor")
	w, err := p.db.Blobs().Create()
	if err != nil {
		t.Fatal(err)
	}
	bundleBytes := []byte("pretend bundle bytes")
	w.Write(bundleBytes)
	sha, _, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	job1 := p.queueJob(t, 1, sha)
	job2 := p.queueJob(t, 1, sha)

	ctx := context.Background()
	mine := &runner.Client{Server: p.url, Token: p.runnerToken}
	theirs := &runner.Client{Server: p.url, Token: otherToken}
	l1, err := mine.Lease(ctx, "m", nil)
	if err != nil || l1 == nil || l1.Job.ID != job1.ID {
		t.Fatalf("lease: %+v, %v; want job %d", l1, err, job1.ID)
	}
	l2, err := theirs.Lease(ctx, "t", nil)
	if err != nil || l2 == nil || l2.Job.ID != job2.ID {
		t.Fatalf("lease: %+v, %v; want job %d", l2, err, job2.ID)
	}
	var got bytes.Buffer
	if err := mine.Bundle(ctx, job1.ID, l1.Secret, &got); err != nil || !bytes.Equal(got.Bytes(), bundleBytes) {
		t.Fatalf("holder's bundle fetch: %q, %v", got.Bytes(), err)
	}

	type call struct {
		name string
		do   func(c *runner.Client, id int64, secret string) error
	}
	calls := []call{
		{"heartbeat", func(c *runner.Client, id int64, s string) error { return c.Heartbeat(ctx, id, s) }},
		{"complete", func(c *runner.Client, id int64, s string) error {
			return c.Complete(ctx, id, s, []d5list.RunLog{{Index: 0, Seed: 7, Log: []byte(":::MLLOG {}\n")}}, nil)
		}},
		{"fail", func(c *runner.Client, id int64, s string) error { return c.Fail(ctx, id, s, "no") }},
		{"bundle", func(c *runner.Client, id int64, s string) error { return c.Bundle(ctx, id, s, io.Discard) }},
	}
	cases := []struct {
		name   string
		client *runner.Client
		job    int64
		secret string
	}{
		{"wrong secret", mine, job1.ID, "not-the-secret"},
		{"no secret", mine, job1.ID, ""},
		{"my secret on their job", mine, job2.ID, l1.Secret},
		{"their secret from my token", mine, job2.ID, l2.Secret},
		{"my secret from their token", theirs, job1.ID, l1.Secret},
	}
	for _, c := range cases {
		for _, cl := range calls {
			if err := cl.do(c.client, c.job, c.secret); d5list.ErrorCode(err) != d5list.EFORBIDDEN {
				t.Errorf("%s: %s answered %v, want forbidden (403)", c.name, cl.name, err)
			}
		}
	}

	// Malformed reports: 400, and the job is untouched.
	for _, body := range []string{`{not json`, `{"logs": [{"index": 0, "seed": 7, "log": "Ojo6TUxMT0cgeyJrZXkiOiBvb3BzfQo="}]}`, `{"logs": []}`, `{"logs": [{"index": 3, "seed": 7, "log": ""}]}`} {
		req, _ := http.NewRequest(http.MethodPost, fmt.Sprintf("%s/api/v1/runner/jobs/%d/complete", p.url, job1.ID), strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+p.runnerToken)
		req.Header.Set(runner.SecretHeader, l1.Secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("complete with %s: %d, want 400", body, resp.StatusCode)
		}
	}
	if j := p.job(t, job1.ID); j.State != d5list.JobLeased || j.Attempts != 1 {
		t.Errorf("after refused reports job 1 is %+v, want still leased on attempt 1", j)
	}
	if sub := p.submission(t, job1.SubmissionID); sub.Measured != nil || sub.Status != d5list.StatusRunning {
		t.Errorf("after refused reports submission is %s with measured %v", sub.Status, sub.Measured)
	}
	if err := mine.Heartbeat(ctx, job1.ID, l1.Secret); err != nil {
		t.Errorf("the holder's heartbeat after refused reports: %v", err)
	}

	// Credentials: none, a user's API token, a revoked runner token.
	for name, tok := range map[string]string{"none": "", "user token": competitor, "organiser token": p.orgToken} {
		if code := p.api(t, http.MethodPost, "/api/v1/runner/lease", tok, strings.NewReader(`{"runner_id":"q"}`), nil); code != http.StatusUnauthorized {
			t.Errorf("lease with %s: %d, want 401", name, code)
		}
	}
	p.admin(t, "runner-revoke", "--name", "other")
	if err := theirs.Heartbeat(ctx, job2.ID, l2.Secret); d5list.ErrorCode(err) != d5list.EUNAUTHORIZED {
		t.Errorf("revoked token's heartbeat: %v, want unauthorized", err)
	}
	// Only organisers cancel.
	if code := p.api(t, http.MethodPost, fmt.Sprintf("/api/v1/jobs/%d/cancel", job1.ID), competitor, nil, nil); code != http.StatusForbidden {
		t.Errorf("competitor's cancel: %d, want 403", code)
	}
}

// Runner names and job bundles are for whom they concern: the queue names
// the runner holding a job to organisers only, and a runner token fetches
// a job's bundle only while it holds the job's live lease, not once the
// job has ended.
func TestRunnerNamesAndBundlesOnlyForWhomTheyConcern(t *testing.T) {
	p := startPool(t, time.Minute)
	competitor := p.admin(t, "token", "--user", "cleo", "--role", "competitor")
	w, err := p.db.Blobs().Create()
	if err != nil {
		t.Fatal(err)
	}
	w.Write([]byte("pretend bundle bytes"))
	sha, _, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	job := p.queueJob(t, 1, sha)
	ctx := context.Background()
	mine := &runner.Client{Server: p.url, Token: p.runnerToken}
	lease, err := mine.Lease(ctx, "m", nil)
	if err != nil || lease == nil || lease.Job.ID != job.ID {
		t.Fatalf("lease: %+v, %v; want job %d", lease, err, job.ID)
	}

	for who, token := range map[string]string{"a visitor": "", "a competitor": competitor, "an organiser": p.orgToken} {
		var q struct {
			Jobs []map[string]any `json:"jobs"`
		}
		if code := p.api(t, http.MethodGet, "/api/v1/queue", token, nil, &q); code != http.StatusOK || len(q.Jobs) != 1 {
			t.Fatalf("the queue for %s: %d %+v", who, code, q)
		}
		runnerID, named := q.Jobs[0]["runner_id"]
		if want := who == "an organiser"; named != want || (named && runnerID != "pool/m") {
			t.Errorf("the queue for %s names the runner %v (%v), want named %v", who, runnerID, named, want)
		}
	}

	if err := mine.Bundle(ctx, job.ID, lease.Secret, io.Discard); err != nil {
		t.Fatalf("the holder's bundle fetch: %v", err)
	}
	if err := p.db.CompleteJob(ctx, job.ID, lease.Secret, &d5list.Result{Runs: []d5list.RunMetrics{{Index: 0, Seed: 7}}}, d5list.StatusVerified, nil); err != nil {
		t.Fatal(err)
	}
	if err := mine.Bundle(ctx, job.ID, lease.Secret, io.Discard); d5list.ErrorCode(err) != d5list.ECONFLICT {
		t.Errorf("the bundle of an ended job with its last lease's secret: %v, want a conflict (409)", err)
	}
}

// A cancelled job stops on the runner within 5 s, and nothing is reported
// for it.
func TestCancelledJobStopsWithin5s(t *testing.T) {
	p := startPool(t, 10*time.Second)
	job := p.queueJob(t, 100000, "") // would train for minutes
	r := p.startRunner(t, "c")
	p.waitJob(t, job.ID, 10*time.Second, "lease", func(j *d5list.Job) bool { return j.State == d5list.JobLeased })

	var sj struct {
		JobState      d5list.JobState `json:"job_state"`
		Attempt       int             `json:"attempt"`
		QueuePosition int             `json:"queue_position"`
	}
	if code := p.api(t, http.MethodGet, fmt.Sprintf("/api/v1/submissions/%d", job.SubmissionID), "", nil, &sj); code != 200 ||
		sj.JobState != d5list.JobLeased || sj.Attempt != 1 || sj.QueuePosition != 0 {
		t.Errorf("submission JSON while running: %d %+v, want leased, attempt 1, not in line", code, sj)
	}

	start := time.Now()
	if code := p.api(t, http.MethodPost, fmt.Sprintf("/api/v1/jobs/%d/cancel", job.ID), p.orgToken, nil, nil); code != 200 {
		t.Fatalf("cancel: %d", code)
	}
	for len(r.events("job stopped")) == 0 {
		if time.Since(start) > 5*time.Second {
			t.Fatalf("the runner did not stop the cancelled job within 5 s")
		}
		time.Sleep(25 * time.Millisecond)
	}
	t.Logf("stopped %s after the cancel", time.Since(start).Round(time.Millisecond))
	if got := jobsIn(r.events("job stopped")); len(got) != 1 || got[0] != job.ID {
		t.Errorf("stopped jobs %v, want [%d]", got, job.ID)
	}
	time.Sleep(300 * time.Millisecond)
	if n := len(r.events("job done")) + len(r.events("job failed")); n != 0 {
		t.Errorf("the runner reported on the cancelled job %d times", n)
	}
	if j := p.job(t, job.ID); j.State != d5list.JobCancelled {
		t.Errorf("job is %s, want cancelled", j.State)
	}
	sub := p.submission(t, job.SubmissionID)
	if sub.Status != d5list.StatusFailed || sub.Measured != nil || len(sub.Reasons) == 0 || sub.Reasons[0].Code != "cancelled" {
		t.Errorf("submission %s %+v measured %v, want failed for cancellation", sub.Status, sub.Reasons, sub.Measured)
	}
	// The runner is free again and says so.
	var list struct{ Runners []d5list.Runner }
	deadline := time.Now().Add(5 * time.Second)
	for {
		p.api(t, http.MethodGet, "/api/v1/runners", p.orgToken, nil, &list)
		if len(list.Runners) == 1 && list.Runners[0].Online && list.Runners[0].CurrentJob == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("runners %+v: want runner pool/c-0 online and idle", list.Runners)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rr := list.Runners[0]; rr.Name != "pool/c-0" || rr.Labels["cpu_cores"] == "" {
		t.Errorf("runner %+v: want name pool/c-0 and its detected labels", rr)
	}
}

// A server restart keeps the queued and the leased job: the runner holding
// one finishes it on the same lease, and the other is handed out after.
func TestServerRestartKeepsJobs(t *testing.T) {
	p := startPool(t, 10*time.Second)
	long := p.queueJob(t, 300, "")
	queued := p.queueJob(t, 1, "")
	var view d5list.QueueView
	if code := p.api(t, http.MethodGet, "/api/v1/queue", "", nil, &view); code != 200 || len(view.Jobs) != 2 ||
		len(view.Backlog) != 1 || view.Backlog[0].Waiting != 2 || view.Jobs[0].Position != 1 || view.Jobs[1].Position != 2 {
		t.Fatalf("queue before any runner: %d %+v", code, view)
	}
	r := p.startRunner(t, "r")
	p.waitJob(t, long.ID, 10*time.Second, "lease", func(j *d5list.Job) bool { return j.State == d5list.JobLeased })

	p.stopServer()
	if j := p.job(t, long.ID); j.State != d5list.JobLeased {
		t.Fatalf("after the stop the long job is %s", j.State)
	}
	if j := p.job(t, queued.ID); j.State != d5list.JobQueued {
		t.Fatalf("after the stop the queued job is %s", j.State)
	}
	time.Sleep(400 * time.Millisecond) // a few heartbeats meet a closed port
	p.startServer(t)

	for _, j := range []d5list.Job{long, queued} {
		got := p.waitJob(t, j.ID, 30*time.Second, "completion", func(j *d5list.Job) bool { return j.State == d5list.JobDone })
		if got.Attempts != 1 {
			t.Errorf("job %d took %d attempts, want 1: the restart lost a lease", j.ID, got.Attempts)
		}
	}
	if got := jobsIn(r.reported(2)); len(got) != 2 {
		t.Errorf("runner reported %v done, want both jobs once", got)
	}
}

// setManifestField sets key of the submission.json in the folder dir.
func setManifestField(t *testing.T, dir, key string, value any) {
	t.Helper()
	path := filepath.Join(dir, "submission.json")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	m[key] = value
	if raw, err = json.MarshalIndent(m, "", "  "); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
}
