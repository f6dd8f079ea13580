package main

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Memory under many hostile requests at once, measured on the real
// `d5list serve` process: its resident set read from /proc, its peak
// (VmHWM) reset before each burst through /proc/PID/clear_refs.

// processMemory reads a process's resident memory in MB from
// /proc/PID/status: field is VmRSS (now) or VmHWM (its peak).
func processMemory(t *testing.T, pid int, field string) float64 {
	t.Helper()
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return kb / 1024
		}
	}
	t.Fatalf("no %s in /proc/%d/status", field, pid)
	return 0
}

// burstPeak runs burst against the process pid and returns its resident
// memory before, its peak during the burst, and the lowest it fell to
// within settle after.
func burstPeak(t *testing.T, pid int, settle time.Duration, burst func()) (idle, peak, after float64) {
	t.Helper()
	idle = processMemory(t, pid, "VmRSS")
	// Writing 5 to clear_refs resets VmHWM, the peak resident set, to now.
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0); err != nil {
		t.Fatalf("resetting the server's peak memory: %v", err)
	}
	burst()
	peak = processMemory(t, pid, "VmHWM")
	after = processMemory(t, pid, "VmRSS")
	for end := time.Now().Add(settle); time.Now().Before(end) && after > idle+32; {
		time.Sleep(100 * time.Millisecond)
		after = min(after, processMemory(t, pid, "VmRSS"))
	}
	return idle, peak, after
}

// clientFrom is an HTTP client whose connections leave from the loopback
// address ip (127.0.0.0/8 is all this machine's), so that the server sees
// one client address per client.
func clientFrom(ip string) *http.Client {
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 10 * time.Second}
	return &http.Client{
		Transport:     &http.Transport{DialContext: dialer.DialContext, MaxIdleConnsPerHost: 16},
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		Timeout:       5 * time.Minute,
	}
}

// TestLoginBurstMemory: 40 failed log-ins at once, ten from each of four
// addresses (the per-address limit's burst) and each for a name that does
// not exist, so that every one reaches the password hash (argon2id, 64
// MiB) and none is stopped by the per-name limit; with them, an eleventh
// from each address. The server's peak rises by at most 512 MB (it rose
// by 2.5 GB when every attempt hashed at once), the 40 are answered 401
// and the four past their address's burst 429 with Retry-After, and the
// memory is given back after the burst.
func TestLoginBurstMemory(t *testing.T) {
	data, port := t.TempDir(), freePort(t)
	srv := startServerProc(t, data, port, "--runners", "0")
	addresses := []string{"127.0.0.1", "127.0.0.2", "127.0.0.3", "127.0.0.4"}
	const perAddress = 10

	answers := map[int]int{}
	var mu sync.Mutex
	start := time.Now()
	idle, peak, after := burstPeak(t, srv.cmd.Process.Pid, 10*time.Second, func() {
		var wg sync.WaitGroup
		for _, ip := range addresses {
			client := clientFrom(ip)
			for i := range perAddress + 1 {
				wg.Go(func() {
					resp, err := client.PostForm(srv.url+"/login", url.Values{"name": {fmt.Sprintf("nobody-%s-%d", ip, i)}, "password": {"not the password"}})
					if err != nil {
						t.Errorf("log-in from %s: %v", ip, err)
						return
					}
					resp.Body.Close()
					if resp.StatusCode == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
						t.Errorf("a 429 without Retry-After")
					}
					mu.Lock()
					answers[resp.StatusCode]++
					mu.Unlock()
				})
			}
		}
		wg.Wait()
	})
	t.Logf("MEMORY 40 failed log-ins from 4 addresses: idle %.0f MB, peak %.0f MB (+%.0f MB), %.0f MB 10 s after; answers %v in %.1f s",
		idle, peak, peak-idle, after, answers, time.Since(start).Seconds())
	if want := map[int]int{http.StatusUnauthorized: len(addresses) * perAddress, http.StatusTooManyRequests: len(addresses)}; !maps.Equal(answers, want) {
		t.Errorf("answers %v, want %v", answers, want)
	}
	if peak-idle > 512 {
		t.Errorf("the server's peak memory rose by %.0f MB, over 512 MB", peak-idle)
	}
	if after > idle+64 {
		t.Errorf("%.0f MB resident after the burst, %.0f MB above idle: the hashes' memory was not given back", after, after-idle)
	}
}

// worstLog is an MLLOG file of about size bytes whose every line carries
// about 4 kB of metadata of random short keys and numbers: the most a
// check decodes per byte.
func worstLog(rng *rand.Rand, size int) []byte {
	var b bytes.Buffer
	for ms := 0; b.Len() < size-5000; ms++ {
		fmt.Fprintf(&b, `:::MLLOG {"namespace": "", "time_ms": %d, "event_type": "POINT_IN_TIME", "key": "eval_accuracy", "value": 0.5, "metadata": {"epoch_num": 1`, ms)
		for end := b.Len() + 4000; b.Len() < end; {
			fmt.Fprintf(&b, `, "%c%c%c%d": %d`, 'a'+rng.IntN(26), 'a'+rng.IntN(26), 'a'+rng.IntN(26), rng.IntN(100), 256+rng.IntN(1<<20))
		}
		b.WriteString("}}\n")
	}
	return b.Bytes()
}

// TestUploadBurstMemory: eight uploads at once from four accounts (two
// each, the per-account limit), each an honest bundle whose five result
// logs are replaced by 12 MB of lines with random metadata, the upload
// that costs a check the most. The server's peak rises by less than the
// bound SECURITY.md documents for them (checks admitted by
// --check-memory, 768 MiB, with their buffers and the collector's slack:
// 1 GB), where it rose by 2.3 GB and stayed there, and the memory is
// given back after. Slow (a minute of CPU): D5LIST_MEMORY_STUDY=1.
func TestUploadBurstMemory(t *testing.T) {
	if os.Getenv("D5LIST_MEMORY_STUDY") == "" {
		t.Skip("upload burst memory: set D5LIST_MEMORY_STUDY=1 (eight uploads of 60 MB checked at once)")
	}
	rng := rand.New(rand.NewPCG(26, 8))
	worst := rewriteBundle(t, faultBundle(t), func(file string, body []byte) []byte {
		if strings.Contains(file, "results/result_") {
			return worstLog(rng, 12<<20)
		}
		return body
	})
	data, port := t.TempDir(), freePort(t)
	tokens := competitorTokens(t, data, "heavy", 4)
	srv := startServerProc(t, data, port, "--runners", "0")

	answers := map[int]int{}
	var mu sync.Mutex
	start := time.Now()
	idle, peak, after := burstPeak(t, srv.cmd.Process.Pid, 20*time.Second, func() {
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Go(func() {
				code, answer, err := postBundle(srv.url, tokens[i%len(tokens)], bytes.NewReader(worst))
				if err != nil || code >= 500 || code == http.StatusTooManyRequests {
					t.Errorf("upload %d: %d %v %v", i, code, answer, err)
				}
				mu.Lock()
				answers[code]++
				mu.Unlock()
			})
		}
		wg.Wait()
	})
	t.Logf("MEMORY 8 uploads of %.1f MB (5 logs of 12 MB, random metadata) at once from 4 accounts: idle %.0f MB, peak %.0f MB (+%.0f MB), %.0f MB 20 s after; answers %v in %.1f s",
		float64(len(worst))/(1<<20), idle, peak, peak-idle, after, answers, time.Since(start).Seconds())
	if peak-idle > 1024 {
		t.Errorf("the server's peak memory rose by %.0f MB, over the 1 GB documented", peak-idle)
	}
	if after > idle+64 {
		t.Errorf("%.0f MB resident after the burst, %.0f MB above idle: the checks' memory was not given back", after, after-idle)
	}
}
