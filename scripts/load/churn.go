package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"log"
	"net/http"
	"path/filepath"
	"sort"
	"strconv"
	"sync"
	"time"

	_ "modernc.org/sqlite"
)

// churnBench measures a board page while verdicts arrive (issue 15): the
// server writes made-up verdicts at rate a second through the store method
// of real ones (serve --synthetic-verdicts), each dropping the board's
// cached pages, while clients ask for the page for d. It reports the
// latency of every answer and of the answers that rendered a new page
// (the first after a change: X-D5-Board-Cache: miss), and the server's
// peak RSS.
func churnBench(bin, data, benchmark, query string, rate float64, clients int, d time.Duration) {
	if data == "" {
		log.Fatal("-data is required: a folder from d5list admin seed-synthetic")
	}
	s := startServer(bin, data, "--synthetic-verdicts", strconv.FormatFloat(rate, 'g', -1, 64), "--synthetic-benchmark", benchmark)
	defer s.stop()
	client := &http.Client{Timeout: time.Minute, Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: clients}}
	url := s.url + "/benchmarks/" + benchmark
	if query != "" {
		url += "?" + query
	}
	t0 := time.Now()
	if _, code := get(client, url, "gzip"); code != 200 {
		log.Fatalf("GET %s: %d", url, code)
	}
	fmt.Printf("first GET after start: %s\n", time.Since(t0).Round(time.Millisecond))
	// The server makes the charts' summaries at start; the measurement
	// begins once this board's is in.
	for deadline := time.Now().Add(5 * time.Minute); ; {
		body, _ := get(client, url, "")
		if !bytes.Contains(body, []byte(`data-testid="charts-pending"`)) {
			break
		}
		if time.Now().After(deadline) {
			log.Fatal("the board's charts were not made within 5 minutes")
		}
		time.Sleep(time.Second)
	}
	fmt.Printf("charts made %s after the first GET\n", time.Since(t0).Round(time.Second))
	type answer struct {
		latency time.Duration
		miss    bool
	}
	var mu sync.Mutex
	var answers []answer
	before, began := countSubmissions(data), time.Now()
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	for range clients {
		wg.Go(func() {
			for time.Now().Before(end) {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("Accept-Encoding", "gzip")
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					log.Fatalf("GET %s: %v", url, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				took := time.Since(start)
				if resp.StatusCode != 200 {
					log.Fatalf("GET %s: %d", url, resp.StatusCode)
				}
				mu.Lock()
				answers = append(answers, answer{took, resp.Header.Get("X-D5-Board-Cache") == "miss"})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	var all, fresh []time.Duration
	for _, a := range answers {
		all = append(all, a.latency)
		if a.miss {
			fresh = append(fresh, a.latency)
		}
	}
	after := countSubmissions(data)
	fmt.Printf("%d clients for %s; %d verdicts written (%.1f/s); %d answers, %d of them new pages\n",
		clients, d, after-before, float64(after-before)/time.Since(began).Seconds(), len(all), len(fresh))
	fmt.Printf("%-28s %9s %9s %9s %9s\n", "answers", "p50", "p90", "p99", "max")
	for _, row := range []struct {
		name string
		ds   []time.Duration
	}{{"all", all}, {"first after a change", fresh}} {
		if len(row.ds) == 0 {
			fmt.Printf("%-28s none: no verdict reached this board while it was asked for\n", row.name)
			continue
		}
		sort.Slice(row.ds, func(i, j int) bool { return row.ds[i] < row.ds[j] })
		fmt.Printf("%-28s %9s %9s %9s %9s\n", row.name, round(at(row.ds, 0.5)), round(at(row.ds, 0.9)), round(at(row.ds, 0.99)), round(row.ds[len(row.ds)-1]))
	}
	fmt.Printf("server peak RSS: %d MiB\n", vmHWM(s.cmd.Process.Pid)/1024)
}

// countSubmissions counts the data folder's submissions, read-only beside
// the running server: each made-up verdict adds one.
func countSubmissions(data string) int {
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "d5list.db")+"?mode=ro")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM submissions`).Scan(&n); err != nil {
		log.Fatal(err)
	}
	return n
}
