// Command load measures the real d5list server on loopback (issue 8):
//
//	go run ./scripts/load -mode upload -bin ./d5list -bundle honest.tar.gz
//	go run ./scripts/load -mode load   -bin ./d5list -bundle honest.tar.gz -duration 60s
//
// upload: a bundle whose code/ holds ~1 GiB of incompressible bytes is
// uploaded to a fresh server; the baseline is an io.Copy of the same bytes
// to a loopback HTTP sink in this process. Reports both throughputs, their
// ratio and the server's peak RSS (VmHWM from /proc/PID/status).
//
// load: 200 readers and 20 uploaders (each its own competitor) for
// -duration; reports requests, status classes and p50/p99 per kind. A 429
// is the per-user upload rate limit doing its job, counted apart from 5xx.
//
// board: a board of -submissions synthetic submissions (admin
// seed-synthetic) served by the real server against the same bytes from a
// static-file server, plain and gzip; see board.go.
//
//	go run ./scripts/load -mode board -bin ./d5list [-data DIR] [-query 'rows=all&status=all']
//
// churn: every kind of board answer asked for while the server writes
// -changes made-up changes a second of the -kinds in turn (upload,
// verdict, rescore, review, edition) to a data folder of synthetic
// submissions; the latency of the first answer after each change, per
// kind of change and of answer; see churn.go.
//
//	go run ./scripts/load -mode churn -bin ./d5list -data DIR -duration 60s -concurrency 4
//
// dispatch: -runners simulated runners long-polling for jobs, against
// one runner in the same run; queued-to-leased latency and the server's
// CPU; see dispatch.go.
//
//	go run ./scripts/load -mode dispatch -bin ./d5list -bundle honest.tar.gz
//
// overhead: the honest bundle re-run by a real runner process against the
// same workload run directly; see overhead.go.
//
//	go run ./scripts/load -mode overhead -bin ./d5list -bundle honest.tar.gz
//
// With -executor process and a bundle of a PyTorch example, the runner is a
// process-executor runner and the baseline the entrypoint run directly.
//
// scaling: the torch.distributed example's time to train at 1 and 2
// workers, the same global batch; see scaling.go.
//
//	go run ./scripts/load -mode scaling -example examples/pytorch-digits-mlp-ddp
//
// runner-chaos: real runner processes work through a queue while they are
// killed with SIGKILL at random points, 1,000 times; then the portal's
// records of every job are checked; see runnerchaos.go.
//
//	go run ./scripts/load -mode runner-chaos -bin ./d5list [-kills 1000] [-chaos-jobs 2000]
//
// Everything is bounded in count and time and stays on 127.0.0.1.
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/rand"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
)

func main() {
	mode := flag.String("mode", "upload", "upload, load, board, churn, dispatch, overhead, scaling or runner-chaos")
	changes := flag.Float64("changes", 10, "churn mode: made-up changes per second written by the server")
	kinds := flag.String("kinds", "upload,verdict,rescore,review,edition", "churn mode: the kinds of change, written in turn")
	pprofAddr := flag.String("pprof", "", "churn mode: the server serves Go's profiles on this loopback address (serve --pprof)")
	bin := flag.String("bin", "./d5list", "the d5list binary")
	bundlePath := flag.String("bundle", "", "an honest small bundle (.tar.gz), e.g. from d5list init/run/pack")
	size := flag.Int64("size", 1020<<20, "upload mode: bytes of incompressible code/ added to the bundle")
	duration := flag.Duration("duration", 60*time.Second, "load mode: how long")
	readers := flag.Int("readers", 200, "load mode: concurrent readers")
	uploaders := flag.Int("uploaders", 20, "load mode: concurrent uploaders")
	data := flag.String("data", "", "board and churn modes: a data folder from `d5list admin seed-synthetic` (board mode's default: seed one in the work folder)")
	benchmark := flag.String("benchmark", "l2-digits-mlp-cpu", "board mode: the board to ask for")
	query := flag.String("query", "", "board mode: the view's query, for example rows=all&status=all (the page, its JSON and its CSV are asked with it)")
	submissions := flag.Int("submissions", 100_000, "board mode: synthetic submissions to seed when -data is not given")
	concurrency := flag.Int("concurrency", 8, "board mode: concurrent clients")
	rounds := flag.Int("rounds", 3, "board mode: rounds of board then static")
	each := flag.Duration("each", 5*time.Second, "board mode: how long each round asks one server")
	runners := flag.Int("runners", 500, "dispatch mode: simulated runners long-polling")
	jobs := flag.Int("jobs", 200, "dispatch mode: jobs queued per phase")
	interval := flag.Duration("interval", 50*time.Millisecond, "dispatch mode: pause after queueing each job")
	idle := flag.Duration("idle", 10*time.Second, "dispatch mode: how long the server's CPU is measured with every runner waiting and nothing queued")
	reps := flag.Int("reps", 5, "overhead mode: pairs of runs through the runner and direct; scaling mode: seeds per worker count")
	executor := flag.String("executor", "builtin", "overhead mode: the runner's executor, builtin or process (a bundle of the competitor's own code)")
	pythonPrefix := flag.String("python-prefix", "", "overhead mode, process executor: a Python outside /usr (a venv or conda prefix) for the runner's sandbox and the direct runs")
	example := flag.String("example", "examples/pytorch-digits-mlp-ddp", "scaling mode: the torch.distributed example folder")
	kills := flag.Int("kills", 1000, "runner-chaos mode: runner processes killed with SIGKILL")
	chaosJobs := flag.Int("chaos-jobs", 2000, "runner-chaos mode: jobs queued")
	chaosRunners := flag.Int("chaos-runners", 4, "runner-chaos mode: runner processes at a time")
	chaosEpochs := flag.Int("chaos-epochs", 1, "runner-chaos mode: epochs of the digits MLP a job trains")
	meanLife := flag.Duration("mean-life", time.Second, "runner-chaos mode: a runner's mean life; each is killed at a random moment, the same chance at every moment")
	leaseTTL := flag.Duration("lease-ttl", time.Second, "runner-chaos mode: the portal's lease (serve --lease-ttl); runners heartbeat five times in it")
	dir := flag.String("dir", "", "static mode (started by board mode): folder to serve")
	addr := flag.String("addr", "", "static mode: listen address")
	flag.Parse()
	switch *mode {
	case "static":
		staticServe(*dir, *addr)
		return
	case "scaling":
		scalingBench(*example, *reps)
		return
	case "churn":
		churnBench(*bin, *data, *benchmark, *kinds, *changes, *concurrency, *duration, *pprofAddr)
		return
	case "runner-chaos":
		work, err := os.MkdirTemp("", "d5list-load-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(work)
		runnerChaosBench(*bin, work, *chaosJobs, *kills, *chaosRunners, *chaosEpochs, *meanLife, *leaseTTL)
		return
	case "board":
		work, err := os.MkdirTemp("", "d5list-load-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(work)
		boardBench(*bin, work, *data, *benchmark, *query, *submissions, *concurrency, *rounds, *each)
		return
	}
	if *bundlePath == "" {
		log.Fatal("-bundle is required")
	}
	small, err := os.ReadFile(*bundlePath)
	if err != nil {
		log.Fatal(err)
	}
	work, err := os.MkdirTemp("", "d5list-load-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	switch *mode {
	case "upload":
		uploadBench(*bin, work, small, *size)
	case "load":
		loadBench(*bin, work, small, *duration, *readers, *uploaders)
	case "dispatch":
		dispatchBench(*bin, work, small, *runners, *jobs, *interval, *idle)
	case "overhead":
		overheadBench(*bin, work, small, *reps, *executor, *pythonPrefix)
	default:
		log.Fatalf("-mode %q: want upload, load, board, dispatch or overhead", *mode)
	}
}

type server struct {
	cmd  *exec.Cmd
	url  string
	data string
}

func startServer(bin, data string, extra ...string) *server {
	return startServerOut(bin, data, nil, extra...)
}

// startServerOut is startServer with the server's stdout going to stdout.
func startServerOut(bin, data string, stdout io.Writer, extra ...string) *server {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := append([]string{"serve", "--addr", addr, "--data", data, "--runners", "0", "--log-level", "warn"}, extra...)
	s := &server{cmd: exec.Command(bin, args...), url: "http://" + addr, data: data}
	s.cmd.Stdout, s.cmd.Stderr = stdout, os.Stderr
	dieWithThisProcess(s.cmd)
	if err := s.cmd.Start(); err != nil {
		log.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		if resp, err := http.Get(s.url + "/healthz"); err == nil {
			resp.Body.Close()
			return s
		}
		time.Sleep(50 * time.Millisecond)
	}
	log.Fatal("server did not start")
	return nil
}

func (s *server) stop() { s.cmd.Process.Kill(); s.cmd.Wait() }

func (s *server) token(bin, user string) string {
	out, err := exec.Command(bin, "admin", "token", "--data", s.data, "--user", user, "--role", "competitor").Output()
	if err != nil {
		log.Fatalf("admin token: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// vmHWM is the peak resident set of pid in KiB.
func vmHWM(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			f := strings.Fields(line)
			n, _ := strconv.ParseInt(f[1], 10, 64)
			return n
		}
	}
	return -1
}

// withSystemName is the bundle with its submission.json's system_name set
// to name: the portal points the same files uploaded again to the entry
// they made instead of storing and re-running them, so a benchmark that
// means new entries uploads each under its own name.
func withSystemName(small []byte, name string) []byte {
	zr, err := gzip.NewReader(bytes.NewReader(small))
	if err != nil {
		log.Fatal(err)
	}
	var out bytes.Buffer
	gz := gzip.NewWriter(&out)
	tw := tar.NewWriter(gz)
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			log.Fatal(err)
		}
		body, err := io.ReadAll(tr)
		if err != nil {
			log.Fatal(err)
		}
		if h.Name == "submission.json" {
			var m map[string]any
			if err := json.Unmarshal(body, &m); err != nil {
				log.Fatalf("the bundle's submission.json: %v", err)
			}
			m["system_name"] = name
			if body, err = json.MarshalIndent(m, "", "  "); err != nil {
				log.Fatal(err)
			}
			h.Size = int64(len(body))
		}
		if err := tw.WriteHeader(h); err != nil {
			log.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			log.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		log.Fatal(err)
	}
	return out.Bytes()
}

// bigBundle copies the honest bundle's entries and adds code/ files of
// random bytes (at most 255 MiB each: the per-file limit is 256 MiB),
// gzip level 0 so that generating it costs no compression time.
func bigBundle(small []byte, size int64, path string) {
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	gz, _ := gzip.NewWriterLevel(f, gzip.NoCompression)
	tw := tar.NewWriter(gz)
	zr, err := gzip.NewReader(bytes.NewReader(small))
	if err != nil {
		log.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		} else if err != nil {
			log.Fatal(err)
		}
		tw.WriteHeader(h)
		io.Copy(tw, tr)
	}
	for i := 0; size > 0; i++ {
		n := min(size, 255<<20)
		size -= n
		tw.WriteHeader(&tar.Header{Name: fmt.Sprintf("code/blob%d.bin", i), Mode: 0o644, Size: n, Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0)})
		if _, err := io.CopyN(tw, rand.Reader, n); err != nil {
			log.Fatal(err)
		}
	}
	tw.Close()
	gz.Close()
}

func uploadBench(bin, work string, small []byte, size int64) {
	path := filepath.Join(work, "big.tar.gz")
	bigBundle(small, size, path)
	st, _ := os.Stat(path)
	total := st.Size()

	// Baseline: the same bytes through an io.Copy to a loopback sink.
	sink := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(204)
	})}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	go sink.Serve(ln)
	f, _ := os.Open(path)
	start := time.Now()
	resp, err := http.Post("http://"+ln.Addr().String()+"/", "application/gzip", f)
	if err != nil {
		log.Fatal(err)
	}
	resp.Body.Close()
	baseline := time.Since(start)
	f.Close()

	// The disk's own pace: the same bytes written to a file in the data
	// folder's file system and fsynced, as the upload's are.
	f, _ = os.Open(path)
	start = time.Now()
	disk, err := os.Create(filepath.Join(work, "disk-baseline"))
	if err != nil {
		log.Fatal(err)
	}
	if _, err := io.Copy(disk, f); err != nil {
		log.Fatal(err)
	}
	if err := disk.Sync(); err != nil {
		log.Fatal(err)
	}
	disk.Close()
	f.Close()
	diskTook := time.Since(start)
	os.Remove(disk.Name())

	// At info, the server logs how long the upload took to arrive and to
	// be synced ("submission queued").
	s := startServer(bin, filepath.Join(work, "data"), "--max-upload", strconv.FormatInt(2<<30, 10), "--log-level", "info")
	defer s.stop()
	tok := s.token(bin, "big")
	f, _ = os.Open(path)
	req, _ := http.NewRequest(http.MethodPost, s.url+"/api/v1/submissions", f)
	req.ContentLength = total
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/gzip")
	start = time.Now()
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		log.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	took := time.Since(start)
	f.Close()
	mib := float64(total) / (1 << 20)
	fmt.Printf("bundle: %.0f MiB (code/ %d MiB random, gzip level 0)\n", mib, size>>20)
	fmt.Printf("baseline loopback io.Copy: %.2fs, %.0f MiB/s\n", baseline.Seconds(), mib/baseline.Seconds())
	fmt.Printf("the same bytes copied to a file and fsynced: %.2fs, %.0f MiB/s\n", diskTook.Seconds(), mib/diskTook.Seconds())
	fmt.Printf("upload to d5list: %.2fs, %.0f MiB/s, answer %d %s\n", took.Seconds(), mib/took.Seconds(), resp.StatusCode, bytes.TrimSpace(body[:min(len(body), 200)]))
	fmt.Printf("ratio upload/baseline throughput: %.3f\n", baseline.Seconds()/took.Seconds())
	fmt.Printf("server peak RSS (VmHWM): %.1f MiB\n", float64(vmHWM(s.cmd.Process.Pid))/1024)
}

type stats struct {
	mu    sync.Mutex
	lat   map[string][]time.Duration
	codes map[string]map[int]int
	errs  map[string]int
}

func (s *stats) add(kind string, code int, d time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.errs[kind]++
		return
	}
	s.lat[kind] = append(s.lat[kind], d)
	if s.codes[kind] == nil {
		s.codes[kind] = map[int]int{}
	}
	s.codes[kind][code]++
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[int(float64(len(ds)-1)*p)]
}

func loadBench(bin, work string, small []byte, duration time.Duration, readers, uploaders int) {
	s := startServer(bin, filepath.Join(work, "data"))
	defer s.stop()
	var tokens []string
	for i := range uploaders {
		tokens = append(tokens, s.token(bin, "up"+strconv.Itoa(i)))
	}
	// Something on the boards and submission pages to read.
	resp, err := post(s.url, tokens[0], small)
	if err != nil || resp != 201 {
		log.Fatalf("seed upload: %d %v", resp, err)
	}
	paths := []string{"/", "/list", "/benchmarks/l2-digits-mlp-cpu", "/api/v1/benchmarks",
		"/api/v1/leaderboards/l2-digits-mlp-cpu", "/submissions/1", "/api/v1/submissions/1", "/api/v1/queue"}
	st := &stats{lat: map[string][]time.Duration{}, codes: map[string]map[int]int{}, errs: map[string]int{}}
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: readers + uploaders}, Timeout: 30 * time.Second}
	end := time.Now().Add(duration)
	var wg sync.WaitGroup
	for i := range readers {
		wg.Go(func() {
			for n := i; time.Now().Before(end); n++ {
				t0 := time.Now()
				r, err := client.Get(s.url + paths[n%len(paths)])
				code := 0
				if err == nil {
					io.Copy(io.Discard, r.Body)
					r.Body.Close()
					code = r.StatusCode
				}
				st.add("read", code, time.Since(t0), err)
			}
		})
	}
	for i := range uploaders {
		wg.Go(func() {
			for n := 0; time.Now().Before(end); n++ {
				// Each upload a new entry: the same files again would only
				// point to the first one.
				body := withSystemName(small, fmt.Sprintf("load %d-%d", i, n))
				t0 := time.Now()
				code, err := postWith(client, s.url, tokens[i], body)
				st.add("upload", code, time.Since(t0), err)
				if code == 429 {
					time.Sleep(500 * time.Millisecond) // a polite client backs off
				}
			}
		})
	}
	wg.Wait()
	fmt.Printf("load: %d readers, %d uploaders, %s, loopback\n", readers, uploaders, duration)
	for _, kind := range []string{"read", "upload"} {
		fmt.Printf("%-6s requests %d  codes %v  transport errors %d  p50 %s  p99 %s\n", kind, len(st.lat[kind]), st.codes[kind],
			st.errs[kind], pct(st.lat[kind], 0.5).Round(time.Microsecond), pct(st.lat[kind], 0.99).Round(time.Microsecond))
	}
	fivexx := 0
	for _, m := range st.codes {
		for c, n := range m {
			if c >= 500 {
				fivexx += n
			}
		}
	}
	fmt.Printf("5xx responses: %d\n", fivexx)
	if fivexx > 0 {
		os.Exit(1)
	}
}

func post(url, token string, body []byte) (int, error) {
	return postWith(http.DefaultClient, url, token, body)
}

func postWith(c *http.Client, url, token string, body []byte) (int, error) {
	req, _ := http.NewRequest(http.MethodPost, url+"/api/v1/submissions", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/gzip")
	resp, err := c.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}
