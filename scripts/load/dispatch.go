package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
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

// dispatchBench measures job dispatch (issue 8): simulated runners
// long-poll POST /api/v1/runner/lease on the real server with real runner
// tokens (10 tokens, the agents spread over them), jobs are queued one at
// a time by uploading the honest bundle, and each job's latency is the
// time from its queueing (the job's created_at, same clock) to the moment
// its lease reached a runner. The baseline, in the same run and on the
// same server, is one runner long-polling. The server's CPU comes from
// /proc/PID/stat: while the runners wait with nothing queued, and while
// the jobs are dispatched.
func dispatchBench(bin, work string, small []byte, runners, jobs int, interval, idle time.Duration) {
	s := startServer(bin, filepath.Join(work, "data"))
	defer s.stop()
	var tokens []string
	for i := range 10 {
		out, err := exec.Command(bin, "admin", "runner-token", "--data", s.data, "--name", "load"+strconv.Itoa(i)).Output()
		if err != nil {
			log.Fatalf("admin runner-token: %v", err)
		}
		tokens = append(tokens, strings.TrimSpace(string(out)))
	}
	// The upload rate limit is per user: enough competitors that queueing
	// every interval never waits on it.
	var uploaders []string
	for i := 0; i < jobs/20+1; i++ {
		uploaders = append(uploaders, s.token(bin, "queue"+strconv.Itoa(i)))
	}
	fmt.Printf("dispatch: %d jobs per phase, one queued every %s; lease long-poll on loopback\n", jobs, interval)
	fmt.Printf("%-34s %9s %9s %9s %9s %12s\n", "phase", "p50", "p90", "p99", "max", "server CPU")
	base := dispatchPhase(s, tokens, uploaders, small, 1, jobs, interval, 0)
	many := dispatchPhase(s, tokens, uploaders, small, runners, jobs, interval, idle)
	fmt.Printf("ratio %d runners / 1 runner: p50 %.2f, p99 %.2f\n", runners, many.p50.Seconds()/base.p50.Seconds(), many.p99.Seconds()/base.p99.Seconds())
}

type dispatchResult struct{ p50, p99 time.Duration }

func dispatchPhase(s *server, tokens, uploaders []string, small []byte, runners, jobs int, interval, idle time.Duration) dispatchResult {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: runners + 16}, Timeout: time.Minute}
	type got struct {
		job     int64
		latency time.Duration
	}
	var mu sync.Mutex
	var leased []got
	// Cancelling ends the long polls at once, so that no runner of this
	// phase takes a job of the next.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	for i := range runners {
		tok := tokens[i%len(tokens)]
		go func() {
			body := fmt.Sprintf(`{"runner_id":"agent-%d","labels":{}}`, i)
			for ctx.Err() == nil {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.url+"/api/v1/runner/lease", strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+tok)
				req.Header.Set("Content-Type", "application/json")
				resp, err := client.Do(req)
				if err != nil {
					if ctx.Err() != nil {
						return
					}
					log.Fatalf("lease: %v", err)
				}
				at := time.Now()
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusNoContent:
				case http.StatusOK:
					var l struct {
						Job struct {
							ID        int64     `json:"id"`
							CreatedAt time.Time `json:"created_at"`
						} `json:"job"`
					}
					if err := json.Unmarshal(b, &l); err != nil {
						log.Fatalf("lease answer: %v: %s", err, b)
					}
					mu.Lock()
					leased = append(leased, got{l.Job.ID, at.Sub(l.Job.CreatedAt)})
					mu.Unlock()
				default:
					log.Fatalf("lease: %d %s", resp.StatusCode, b)
				}
			}
		}()
	}
	// Let every runner's first request arrive and wait.
	time.Sleep(2 * time.Second)
	label := fmt.Sprintf("%d runner(s)", runners)
	if idle > 0 {
		c0, t0 := cpuSeconds(s.cmd.Process.Pid), time.Now()
		time.Sleep(idle)
		fmt.Printf("%-34s %9s %9s %9s %9s %11.2f%%\n", label+", idle (nothing queued)", "-", "-", "-", "-",
			100*(cpuSeconds(s.cmd.Process.Pid)-c0)/time.Since(t0).Seconds())
	}
	c0, t0 := cpuSeconds(s.cmd.Process.Pid), time.Now()
	for i := range jobs {
		code, err := post(s.url, uploaders[i%len(uploaders)], withSystemName(small, fmt.Sprintf("dispatch, %d runners, job %d", runners, i+1)))
		if err != nil || code != http.StatusCreated {
			log.Fatalf("queueing job %d: %d %v", i+1, code, err)
		}
		time.Sleep(interval)
	}
	for deadline := time.Now().Add(30 * time.Second); ; {
		mu.Lock()
		n := len(leased)
		mu.Unlock()
		if n >= jobs {
			break
		}
		if time.Now().After(deadline) {
			log.Fatalf("%s: only %d of %d jobs leased", label, n, jobs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	cpu := 100 * (cpuSeconds(s.cmd.Process.Pid) - c0) / time.Since(t0).Seconds()
	stop()
	time.Sleep(time.Second) // the cancelled polls end on the server too
	mu.Lock()
	defer mu.Unlock()
	ls := make([]time.Duration, len(leased))
	for i, g := range leased {
		ls[i] = g.latency
	}
	sort.Slice(ls, func(i, j int) bool { return ls[i] < ls[j] })
	r := dispatchResult{p50: at(ls, 0.5), p99: at(ls, 0.99)}
	fmt.Printf("%-34s %9s %9s %9s %9s %11.2f%%\n", label+", dispatching", round(r.p50), round(at(ls, 0.9)), round(r.p99), round(ls[len(ls)-1]), cpu)
	return r
}

func at(ds []time.Duration, p float64) time.Duration { return ds[int(float64(len(ds)-1)*p)] }

func round(d time.Duration) string { return d.Round(10 * time.Microsecond).String() }

// cpuSeconds is the user and system CPU time of pid so far.
func cpuSeconds(pid int) float64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command name, which is in parentheses and may hold spaces.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100 // USER_HZ is 100 on Linux
}
