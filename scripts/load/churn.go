package main

import (
	"bufio"
	"bytes"
	"database/sql"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	_ "modernc.org/sqlite"
)

// churnPages are the kinds of answer churnBench asks for, by name: the
// board as linked, each filter, two filters at once, every entry, the
// board with the unverified, a search, another order, and the exports.
var churnPages = []struct{ name, path string }{
	{"board", "/benchmarks/{b}"},
	{"division filter", "/benchmarks/{b}?division=closed"},
	{"framework filter", "/benchmarks/{b}?framework=torch"},
	{"accelerator filter", "/benchmarks/{b}?accelerator=" + url.QueryEscape("NVIDIA H100")},
	{"two filters", "/benchmarks/{b}?division=closed&framework=torch"},
	{"every entry", "/benchmarks/{b}?rows=all"},
	{"with unverified", "/benchmarks/{b}?status=all"},
	{"search", "/benchmarks/{b}?q=system-001"},
	{"sort by date", "/benchmarks/{b}?sort=date"},
	{"JSON export", "/api/v1/leaderboards/{b}"},
	{"CSV export", "/api/v1/leaderboards/{b}.csv"},
}

// churnBench measures the board's answers while changes arrive (issues 15
// and 28): the server writes made-up changes at rate a second, the kinds
// in turn (serve --synthetic-changes: upload, verdict, rescore, review,
// edition), each through the store method of the real one, and tells this
// program of each once written; meanwhile clients ask for every kind of
// answer (churnPages) without pause, gzip. It reports the latency of every
// answer, and of the first answer of each kind after each change (the
// first request that started after the change was written and before the
// next one), per kind of change and per kind of answer; how long after
// each change an answer of each kind first showed it (one whose rendering
// began after the change: X-D5-Board-Rendered), the pages being rendered
// again in the background meanwhile; and the server's peak RSS.
func churnBench(bin, data, benchmark, kinds string, rate float64, clients int, d time.Duration, pprofAddr string) {
	if data == "" {
		log.Fatal("-data is required: a folder from d5list admin seed-synthetic")
	}
	changes := &lockedBuffer{}
	extra := []string{"--synthetic-changes", strconv.FormatFloat(rate, 'g', -1, 64), "--synthetic-kinds", kinds, "--synthetic-benchmark", benchmark}
	if pprofAddr != "" {
		extra = append(extra, "--pprof", pprofAddr)
	}
	s := startServerOut(bin, data, changes, extra...)
	defer s.stop()
	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: clients}}
	urls := make([]string, len(churnPages))
	for i, p := range churnPages {
		urls[i] = s.url + strings.ReplaceAll(p.path, "{b}", benchmark)
		t0 := time.Now()
		if _, code := get(client, urls[i], "gzip"); code != 200 {
			log.Fatalf("GET %s: %d", urls[i], code)
		}
		fmt.Printf("first GET of %-20s %s\n", p.name+":", time.Since(t0).Round(time.Millisecond))
	}
	type answer struct {
		page     int
		start    int64 // wall clock, ns
		latency  time.Duration
		cache    string // X-D5-Board-Cache: hit or miss
		rendered int64  // X-D5-Board-Rendered, ns
	}
	var mu sync.Mutex
	var answers []answer
	before, began := countSubmissions(data), time.Now()
	startedAt := began.UnixNano()
	end := began.Add(d)
	var wg sync.WaitGroup
	for c := range clients {
		wg.Go(func() {
			for n := c; time.Now().Before(end); n++ {
				page := n % len(urls)
				req, _ := http.NewRequest(http.MethodGet, urls[page], nil)
				req.Header.Set("Accept-Encoding", "gzip")
				start := time.Now()
				resp, err := client.Do(req)
				if err != nil {
					log.Fatalf("GET %s: %v", urls[page], err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				took := time.Since(start)
				if resp.StatusCode != 200 {
					log.Fatalf("GET %s: %d", urls[page], resp.StatusCode)
				}
				cache := resp.Header.Get("X-D5-Board-Cache")
				rendered, err := renderedAt(resp.Header.Get("X-D5-Board-Rendered"), cache, start)
				if err != nil {
					log.Fatalf("GET %s: %v", urls[page], err)
				}
				mu.Lock()
				answers = append(answers, answer{page, start.UnixNano(), took, cache, rendered.UnixNano()})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	took := time.Since(began)
	// The changes written during the run, in order.
	type change struct {
		kind string
		at   int64
	}
	var written []change
	sc := bufio.NewScanner(strings.NewReader(changes.String()))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) != 4 || f[0] != "synthetic" || f[1] != "change" {
			continue
		}
		at, _ := strconv.ParseInt(f[3], 10, 64)
		if at >= startedAt && at < end.UnixNano() {
			written = append(written, change{f[2], at})
		}
	}
	sort.Slice(answers, func(i, j int) bool { return answers[i].start < answers[j].start })
	// The first answer of each page after each change, where it started
	// before the next change was written.
	all := map[string][]time.Duration{}
	byChange, byPage := map[string][]time.Duration{}, map[string][]time.Duration{}
	shown := map[string][]time.Duration{} // by change: until an answer showed it
	caches := map[string]int{}
	firsts, unanswered, unshown := 0, 0, 0
	for _, a := range answers {
		all[churnPages[a.page].name] = append(all[churnPages[a.page].name], a.latency)
		all["every answer"] = append(all["every answer"], a.latency)
		caches[a.cache]++
	}
	for i, c := range written {
		next := end.UnixNano()
		if i+1 < len(written) {
			next = written[i+1].at
		}
		from := sort.Search(len(answers), func(j int) bool { return answers[j].start > c.at })
		seen := make([]bool, len(churnPages))
		for j := from; j < len(answers) && answers[j].start < next; j++ {
			a := answers[j]
			if seen[a.page] {
				continue
			}
			seen[a.page] = true
			byChange[c.kind] = append(byChange[c.kind], a.latency)
			byPage[churnPages[a.page].name] = append(byPage[churnPages[a.page].name], a.latency)
			byChange["every change"] = append(byChange["every change"], a.latency)
			firsts++
		}
		for _, ok := range seen {
			if !ok {
				unanswered++
			}
		}
		// How long until each kind of answer showed the change: the first
		// one rendered after it, received.
		showed, left := make([]bool, len(churnPages)), len(churnPages)
		for j := from; j < len(answers) && left > 0; j++ {
			if a := answers[j]; !showed[a.page] && a.rendered > c.at {
				showed[a.page], left = true, left-1
				lag := time.Duration(a.start - c.at + int64(a.latency))
				shown[c.kind] = append(shown[c.kind], lag)
				shown["every change"] = append(shown["every change"], lag)
			}
		}
		for _, ok := range showed {
			if !ok {
				unshown++
			}
		}
	}
	after := countSubmissions(data)
	fmt.Printf("%d clients for %s; %d changes written (%.1f/s; submissions %d -> %d); %d answers (%.0f/s)\n",
		clients, d, len(written), float64(len(written))/took.Seconds(), before, after, len(answers), float64(len(answers))/took.Seconds())
	fmt.Printf("answers by X-D5-Board-Cache: %v; first answer of each kind after each change: %d; %d kinds of answer not asked for before the next change, %d never shown a change before the run ended\n",
		caches, firsts, unanswered, unshown)
	table := func(title string, rows map[string][]time.Duration, order []string) {
		fmt.Printf("\n%-30s %8s %9s %9s %9s\n", title, "answers", "p50", "p99", "max")
		for _, name := range order {
			ds := rows[name]
			if len(ds) == 0 {
				fmt.Printf("%-30s %8d\n", name, 0)
				continue
			}
			sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
			fmt.Printf("%-30s %8d %9s %9s %9s\n", name, len(ds), round(at(ds, 0.5)), round(at(ds, 0.99)), round(ds[len(ds)-1]))
		}
	}
	kindsOrder := append(strings.Split(kinds, ","), "every change")
	var pages []string
	for _, p := range churnPages {
		pages = append(pages, p.name)
	}
	table("first answer after a change, by change", byChange, kindsOrder)
	table("until an answer showed the change", shown, kindsOrder)
	table("first answer after a change, by answer", byPage, pages)
	table("every answer, by answer", all, append(pages, "every answer"))
	fmt.Printf("\nserver peak RSS: %d MiB\n", vmHWM(s.cmd.Process.Pid)/1024)
}

// renderedAt is when an answer's rendering began, from its
// X-D5-Board-Rendered; a server from before that header (the baseline of
// BENCHMARKS.md) rendered a miss for the request and a hit at some time
// before it.
func renderedAt(header, cache string, asked time.Time) (time.Time, error) {
	switch {
	case header != "":
		t, err := time.Parse(time.RFC3339Nano, header)
		if err != nil {
			return t, fmt.Errorf("X-D5-Board-Rendered %q: %v", header, err)
		}
		return t, nil
	case cache == "miss":
		return asked, nil
	case cache == "hit":
		return time.Unix(0, 0), nil
	}
	return time.Time{}, fmt.Errorf("X-D5-Board-Cache %q without X-D5-Board-Rendered", cache)
}

// lockedBuffer takes the server's output while the measurement reads it
// at the end.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// countSubmissions counts the data folder's submissions, read-only beside
// the running server: each made-up upload adds one.
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
