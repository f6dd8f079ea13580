package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/internal/chaos"
	"github.com/deep500/d5list/store"
)

// Fault tests (issue 8): the real binary as a child process, killed with
// SIGKILL mid-upload and mid-verification, run out of disk, and made to
// share its database with another writing process.

// serverProc is one `d5list serve` child process.
type serverProc struct {
	cmd  *exec.Cmd
	url  string
	logs *syncBuf
	done chan struct{}
}

type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startServerProc runs `d5list serve` on 127.0.0.1:port over data and
// waits for /healthz.
func startServerProc(t *testing.T, data string, port int, extra ...string) *serverProc {
	t.Helper()
	addr := "127.0.0.1:" + strconv.Itoa(port)
	args := append([]string{"serve", "--addr", addr, "--data", data}, extra...)
	s := &serverProc{cmd: exec.Command(d5listBinary(t), args...), url: "http://" + addr, logs: &syncBuf{}, done: make(chan struct{})}
	s.cmd.Stdout, s.cmd.Stderr = s.logs, s.logs
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { s.cmd.Wait(); close(s.done) }()
	t.Cleanup(func() {
		s.kill9()
		if t.Failed() {
			t.Logf("server %s log:\n%s", addr, s.logs.String())
		}
	})
	deadline := time.Now().Add(15 * time.Second)
	for {
		resp, err := http.Get(s.url + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return s
			}
		}
		select {
		case <-s.done:
			t.Fatalf("serve exited at start:\n%s", s.logs.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not answer /healthz within 15 s:\n%s", s.logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *serverProc) kill9() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGKILL)
	<-s.done
}

var honestBundles struct {
	sync.Mutex
	made map[string][]byte
}

// honestBundle is an honest bundle of benchmark, made once per test run
// with init, run and pack.
func honestBundle(t *testing.T, benchmark string) []byte {
	t.Helper()
	honestBundles.Lock()
	defer honestBundles.Unlock()
	if b, ok := honestBundles.made[benchmark]; ok {
		return b
	}
	dir := t.TempDir()
	sub, out := filepath.Join(dir, "s"), filepath.Join(dir, "b.tar.gz")
	ctx := context.Background()
	for _, args := range [][]string{{"init", benchmark, sub, "--submitter", "Honest Lab"}, {"run", sub}, {"pack", sub, "-o", out}} {
		if err := run(ctx, args, io.Discard, io.Discard); err != nil {
			t.Fatalf("%v: %v", args, err)
		}
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if honestBundles.made == nil {
		honestBundles.made = map[string][]byte{}
	}
	honestBundles.made[benchmark] = b
	return b
}

// faultBundle is an honest l2-digits-mlp-cpu bundle (about 10 s of
// training, once per test run).
func faultBundle(t *testing.T) []byte {
	t.Helper()
	return honestBundle(t, "l2-digits-mlp-cpu")
}

func competitorToken(t *testing.T, data string) string {
	t.Helper()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"admin", "token", "--data", data, "--user", "carla", "--role", "competitor"}, &out, io.Discard); err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(out.String())
}

// competitorTokens makes n competitors, prefix0 to prefixN-1, and returns
// an API token of each.
func competitorTokens(t *testing.T, data, prefix string, n int) []string {
	t.Helper()
	var tokens []string
	for i := range n {
		var out bytes.Buffer
		if err := run(context.Background(), []string{"admin", "token", "--data", data, "--user", prefix + strconv.Itoa(i), "--role", "competitor"}, &out, io.Discard); err != nil {
			t.Fatal(err)
		}
		tokens = append(tokens, strings.TrimSpace(out.String()))
	}
	return tokens
}

// postBundle uploads body and returns the status and the decoded answer.
func postBundle(url, token string, body io.Reader) (int, map[string]any, error) {
	req, err := http.NewRequest(http.MethodPost, url+"/api/v1/submissions", body)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("answer %d is not JSON: %q", resp.StatusCode, raw)
	}
	return resp.StatusCode, out, nil
}

// uploadTemps lists the upload files in progress or left behind.
func uploadTemps(t *testing.T, data string) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(data, "blobs", "tmp", "*"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func countBlobs(t *testing.T, data string) int {
	t.Helper()
	names, _ := filepath.Glob(filepath.Join(data, "blobs", "[0-9a-f][0-9a-f]", "*"))
	return len(names)
}

func submissionIDs(t *testing.T, data string) []int64 {
	t.Helper()
	db, err := store.Open(context.Background(), data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	subs, err := db.Submissions(context.Background(), d5list.SubmissionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, s := range subs {
		ids = append(ids, s.ID)
	}
	return ids
}

func TestFaultKillDuringUpload(t *testing.T) {
	bundle := faultBundle(t)
	data, port := t.TempDir(), freePort(t)
	token := competitorToken(t, data)
	srv := startServerProc(t, data, port, "--runners", "0")

	code, accepted, err := postBundle(srv.url, token, bytes.NewReader(bundle))
	if err != nil || code != http.StatusCreated {
		t.Fatalf("honest upload: %d %v %v", code, accepted, err)
	}
	acceptedID := int64(accepted["id"].(float64))

	// A large body sent slowly: the server is killed while it is spooling.
	pr, pw := io.Pipe()
	uploadDone := make(chan error, 1)
	go func() {
		_, _, err := postBundle(srv.url, token, pr)
		uploadDone <- err
	}()
	chunk := make([]byte, 256<<10)
	rand.Read(chunk)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := pw.Write(chunk); err != nil {
			t.Fatalf("streaming the upload: %v", err)
		}
		if temps := uploadTemps(t, data); len(temps) == 1 {
			if st, err := os.Stat(temps[0]); err == nil && st.Size() >= 1<<20 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("the server never spooled the slow upload to blobs/tmp")
		}
		time.Sleep(20 * time.Millisecond)
	}
	srv.kill9()
	pw.CloseWithError(io.ErrUnexpectedEOF)
	if err := <-uploadDone; err == nil {
		t.Error("the killed upload was answered")
	}
	if len(uploadTemps(t, data)) != 1 {
		t.Fatal("the kill happened after the upload's temp file was gone: the test did not test a crash mid-upload")
	}

	srv = startServerProc(t, data, port, "--runners", "0")
	if left := uploadTemps(t, data); len(left) != 0 {
		t.Errorf("after the restart the half upload is still on disk: %v", left)
	}
	if ids := submissionIDs(t, data); len(ids) != 1 || ids[0] != acceptedID {
		t.Errorf("submissions after the restart: %v, want only the accepted %d", ids, acceptedID)
	}
	if n := countBlobs(t, data); n != 1 {
		t.Errorf("%d blobs after the restart, want the accepted bundle's only", n)
	}
	resp, err := http.Get(srv.url + "/api/v1/submissions/" + strconv.FormatInt(acceptedID, 10))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("the accepted submission answers %d after the restart", resp.StatusCode)
	}
	if resp, err := http.Get(srv.url + "/api/v1/submissions/" + strconv.FormatInt(acceptedID+1, 10)); err == nil {
		resp.Body.Close()
		if resp.StatusCode != 404 {
			t.Errorf("a submission after the accepted one answers %d, want 404", resp.StatusCode)
		}
	}
}

const faultBenchmark = "t-faults"

// TestFaultKillDuringVerification kills the server, and the in-process
// runner with it, while a job is leased: the restart requeues the job
// without counting the lost attempt, it is handed out again and completes,
// and the job queued behind it and the submission accepted before are
// still there.
func TestFaultKillDuringVerification(t *testing.T) {
	data, port := t.TempDir(), freePort(t)
	ctx := context.Background()
	db, err := store.Open(ctx, data)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	bench, err := chaos.DigitsBenchmark(faultBenchmark)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{bench}); err != nil {
		t.Fatal(err)
	}
	owner, err := db.EnsureUser(ctx, "carl", d5list.RoleCompetitor)
	if err != nil {
		t.Fatal(err)
	}
	queue := func(epochs int) d5list.Job {
		sub := chaos.DigitsSubmission(faultBenchmark, owner.ID, epochs)
		if err := db.CreateSubmission(ctx, sub); err != nil {
			t.Fatal(err)
		}
		jobs, err := db.Jobs(ctx, sub.ID)
		if err != nil || len(jobs) != 1 {
			t.Fatalf("jobs of %d: %v %v", sub.ID, jobs, err)
		}
		return jobs[0]
	}
	waitJob := func(id int64, within time.Duration, what string, cond func(*d5list.Job) bool) *d5list.Job {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			j, err := db.Job(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if cond(j) {
				return j
			}
			if time.Now().After(deadline) {
				t.Fatalf("job %d: %s did not happen within %s; it is %+v", id, what, within, j)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	long := queue(150)
	behind := queue(1)

	flags := []string{"--runners", "1", "--lease-ttl", "2s"}
	srv := startServerProc(t, data, port, flags...)
	waitJob(long.ID, 10*time.Second, "lease", func(j *d5list.Job) bool { return j.State == d5list.JobLeased })
	time.Sleep(300 * time.Millisecond) // well into the re-run
	srv.kill9()
	if j, _ := db.Job(ctx, long.ID); j.State != d5list.JobLeased || j.Attempts != 1 {
		t.Fatalf("the long job was not mid-run at the kill: %+v", j)
	}

	startServerProc(t, data, port, flags...)
	done := func(j *d5list.Job) bool { return j.State == d5list.JobDone }
	got := waitJob(long.ID, 30*time.Second, "completion after the restart", done)
	if got.Attempts != 1 {
		t.Errorf("the killed job took %d attempts, want 1: the one lost with the kill is requeued uncounted at the restart", got.Attempts)
	}
	waitJob(behind.ID, 15*time.Second, "completion of the job queued behind", done)
	for _, j := range []d5list.Job{long, behind} {
		s, err := db.Submission(ctx, j.SubmissionID)
		if err != nil || !s.Status.Final() || s.Measured == nil {
			t.Errorf("submission %d after the restart: %+v %v, want a verdict with measurements", j.SubmissionID, s, err)
		}
	}
}

// TestFaultDiskFullDuringUpload serves from a 3 MiB tmpfs and uploads
// more than fits: a 503 naming the full disk, no partial file left, and
// the server takes the next upload once there is room.
func TestFaultDiskFullDuringUpload(t *testing.T) {
	bundle := faultBundle(t)
	data := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", data).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs here (needs root and mount rights), so the full disk is not tested: %v %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", data).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v %s", data, err, out)
		}
	})
	port := freePort(t)
	token := competitorToken(t, data)
	srv := startServerProc(t, data, port, "--runners", "0", "--max-upload", strconv.Itoa(64<<20))

	big := make([]byte, 6<<20)
	rand.Read(big)
	code, answer, err := postRaw(t, srv.url, token, big)
	if err != nil {
		t.Fatalf("the oversized upload got no answer: %v", err)
	}
	if code != http.StatusServiceUnavailable {
		t.Fatalf("upload onto a full disk: %d %v, want 503", code, answer)
	}
	e, _ := answer["error"].(map[string]any)
	if e["code"] != d5list.EUNAVAILABLE || !strings.Contains(fmt.Sprint(e["message"]), "disk is full") {
		t.Errorf("error %v: want code %q and a message saying the disk is full", e, d5list.EUNAVAILABLE)
	}
	if left := uploadTemps(t, data); len(left) != 0 {
		t.Errorf("partial upload files left: %v", left)
	}
	if n := countBlobs(t, data); n != 0 {
		t.Errorf("%d blobs stored from a failed upload", n)
	}
	code, answer, err = postBundle(srv.url, token, bytes.NewReader(bundle))
	if err != nil || code != http.StatusCreated {
		t.Errorf("an upload that fits, after the full disk: %d %v %v", code, answer, err)
	}
}

// postRaw sends body on its own connection and reads the answer while
// still writing: the server answers a full disk before the body ends and
// the write side may then fail, which must not hide the answer.
func postRaw(t *testing.T, url, token string, body []byte) (int, map[string]any, error) {
	t.Helper()
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		return 0, nil, err
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(20 * time.Second))
	go func() {
		fmt.Fprintf(conn, "POST /api/v1/submissions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nContent-Type: application/gzip\r\nContent-Length: %d\r\n\r\n", token, len(body))
		conn.Write(body) // fails once the server gives up; the answer is read below
	}()
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &out); err != nil {
		return resp.StatusCode, nil, fmt.Errorf("answer %d is not JSON: %q", resp.StatusCode, raw)
	}
	return resp.StatusCode, out, nil
}

// TestFaultBusyWriters uploads concurrently while another process keeps
// taking SQLite's write lock on the same file: the server's writers wait
// for it and every upload succeeds; none is answered 5xx.
func TestFaultBusyWriters(t *testing.T) {
	bundle := faultBundle(t)
	data, port := t.TempDir(), freePort(t)
	// Twelve competitors, two uploads each, so that the per-user limits
	// (two uploads in flight, the upload rate) stay out of the way of what
	// is tested.
	tokens := competitorTokens(t, data, "busy", 12)
	srv := startServerProc(t, data, port, "--runners", "0")
	// Each upload another system's: a competitor's second upload of the
	// same files would be answered 200 with its first entry.
	const uploads = 24
	bodies := make([][]byte, uploads)
	for i := range bodies {
		bodies[i] = withManifestField(t, bundle, "system_name", "busy-"+strconv.Itoa(i))
	}

	writer := exec.Command(os.Args[0], "-test.run", "^TestFaultHelperLockHolder$")
	writer.Env = append(os.Environ(), "D5LIST_FAULT_LOCK_DB="+filepath.Join(data, "d5list.db"), "D5LIST_FAULT_LOCK_FOR=4s")
	var wout syncBuf
	writer.Stdout, writer.Stderr = &wout, &wout
	if err := writer.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(200 * time.Millisecond) // the other process holds the lock first

	var fivexx, ok atomic.Int32
	var wg sync.WaitGroup
	var mu sync.Mutex
	var problems []string
	for i := range uploads {
		wg.Go(func() {
			code, answer, err := postBundle(srv.url, tokens[i%len(tokens)], bytes.NewReader(bodies[i]))
			switch {
			case err != nil:
				mu.Lock()
				problems = append(problems, fmt.Sprintf("upload %d: %v", i, err))
				mu.Unlock()
			case code >= 500:
				fivexx.Add(1)
				mu.Lock()
				problems = append(problems, fmt.Sprintf("upload %d: %d %v", i, code, answer))
				mu.Unlock()
			case code == http.StatusCreated:
				ok.Add(1)
			default:
				mu.Lock()
				problems = append(problems, fmt.Sprintf("upload %d: %d %v", i, code, answer))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := writer.Wait(); err != nil {
		t.Fatalf("the lock-holding process failed: %v\n%s", err, wout.String())
	}
	if !strings.Contains(wout.String(), "lock-holder committed") {
		t.Fatalf("the lock-holding process did not write:\n%s", wout.String())
	}
	if fivexx.Load() != 0 || ok.Load() != uploads {
		t.Errorf("%d of %d uploads created, %d answered 5xx:\n%s", ok.Load(), uploads, fivexx.Load(), strings.Join(problems, "\n"))
	}
	if n := len(submissionIDs(t, data)); n != uploads {
		t.Errorf("%d submissions stored, want %d", n, uploads)
	}
	t.Logf("other process: %s", strings.TrimSpace(wout.String()))
}

// TestFaultHelperLockHolder is the second process of TestFaultBusyWriters:
// it takes the write lock of the database again and again, holding it
// 150 ms each time, for D5LIST_FAULT_LOCK_FOR.
func TestFaultHelperLockHolder(t *testing.T) {
	path := os.Getenv("D5LIST_FAULT_LOCK_DB")
	if path == "" {
		t.Skip("helper process of TestFaultBusyWriters")
	}
	total, err := time.ParseDuration(os.Getenv("D5LIST_FAULT_LOCK_FOR"))
	if err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_txlock=immediate")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	commits := 0
	for end := time.Now().Add(total); time.Now().Before(end); {
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(`UPDATE submission_quota SET daily = daily WHERE id = 1`); err != nil {
			t.Fatal(err)
		}
		time.Sleep(150 * time.Millisecond)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		commits++
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Printf("lock-holder committed %d transactions\n", commits)
}
