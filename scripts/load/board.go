package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
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
	"sync/atomic"
	"time"
)

// boardBench measures the real server's leaderboard answers against a
// static-file server holding the same bytes (issue 6: at least half its
// requests per second). The board is a data folder of -submissions
// synthetic submissions (`d5list admin seed-synthetic`), made in the work
// folder unless -data names one. The static server is this program in
// another process (staticServe): the bytes in memory, an ETag, gzip made
// once, http.ServeContent, the way /static/ serves files. Both are asked
// in turn by the same -concurrency clients for -each, -rounds times,
// plain and gzip, and the median rate of each is compared. -query picks
// another view of the board (filters, rows=all, status=all, page=).
func boardBench(bin, work, data, benchmark, query string, submissions, concurrency, rounds int, each time.Duration) {
	if data == "" {
		data = filepath.Join(work, "synthetic")
		t0 := time.Now()
		out, err := exec.Command(bin, "admin", "seed-synthetic", "--data", data, "--submissions", strconv.Itoa(submissions), "--benchmark", benchmark).CombinedOutput()
		if err != nil {
			log.Fatalf("seed-synthetic: %v\n%s", err, out)
		}
		fmt.Printf("%s(seeding took %s)\n", out, time.Since(t0).Round(time.Millisecond))
	}
	s := startServer(bin, data)
	defer s.stop()
	client := &http.Client{Timeout: 5 * time.Minute, Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: concurrency}}
	if query != "" {
		query = "?" + query
	}
	paths := []struct{ path, file string }{
		{"/benchmarks/" + benchmark + query, "board.html"},
		{"/api/v1/leaderboards/" + benchmark + query, "board.json"},
		{"/api/v1/leaderboards/" + benchmark + ".csv" + query, "board.csv"},
	}
	dir := filepath.Join(work, "static")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		log.Fatal(err)
	}
	for _, p := range paths {
		t0 := time.Now()
		body, code := get(client, s.url+p.path, "")
		if code != 200 {
			log.Fatalf("GET %s: %d", p.path, code)
		}
		fmt.Printf("GET %s (the first of this answer): %s, %d bytes\n", p.path, time.Since(t0).Round(time.Millisecond), len(body))
		if err := os.WriteFile(filepath.Join(dir, p.file), body, 0o644); err != nil {
			log.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	static := exec.Command(self, "-mode", "static", "-dir", dir, "-addr", addr)
	static.Stderr = os.Stderr
	if err := static.Start(); err != nil {
		log.Fatal(err)
	}
	defer func() { static.Process.Kill(); static.Wait() }()
	staticURL := "http://" + addr
	for i := 0; ; i++ {
		if _, code := get(client, staticURL+"/"+paths[0].file, ""); code == 200 {
			break
		} else if i > 200 {
			log.Fatal("the static server did not start")
		}
		time.Sleep(50 * time.Millisecond)
	}
	fmt.Printf("%d clients, %d rounds of %s each, board and static in turn\n", concurrency, rounds, each)
	fmt.Printf("%-44s %-5s %9s %12s %12s %7s\n", "answer", "enc", "bytes", "board req/s", "static req/s", "ratio")
	for _, p := range paths {
		for _, enc := range []string{"", "gzip"} {
			b1, _ := get(client, s.url+p.path, enc)
			b2, _ := get(client, staticURL+"/"+p.file, enc)
			// Exports too long for the board cache are gzipped as they
			// stream, at the fastest level, where the static server
			// keeps the smallest gzip: the same content in other bytes.
			note := ""
			if !bytes.Equal(b1, b2) {
				if enc != "gzip" || !sameGunzipped(b1, b2) {
					fmt.Printf("%-44s %-5s: not compared, the board and the static file send different content (%d and %d bytes)\n", p.path, enc, len(b1), len(b2))
					continue
				}
				note = fmt.Sprintf(", the same content; static gzip %d bytes", len(b2))
			}
			var board, stat []float64
			for range rounds {
				board = append(board, rate(client, s.url+p.path, enc, concurrency, each))
				stat = append(stat, rate(client, staticURL+"/"+p.file, enc, concurrency, each))
			}
			mb, ms := median(board), median(stat)
			name := enc
			if name == "" {
				name = "plain"
			}
			fmt.Printf("%-44s %-5s %9d %12.0f %12.0f %7.2f   (board %s, static %s%s)\n", p.path, name, len(b1), mb, ms, mb/ms, rates(board), rates(stat), note)
		}
	}
}

// sameGunzipped reports whether two gzip bodies hold the same bytes.
func sameGunzipped(a, b []byte) bool {
	gunzip := func(z []byte) ([]byte, error) {
		zr, err := gzip.NewReader(bytes.NewReader(z))
		if err != nil {
			return nil, err
		}
		return io.ReadAll(zr)
	}
	ua, errA := gunzip(a)
	ub, errB := gunzip(b)
	return errA == nil && errB == nil && bytes.Equal(ua, ub)
}

func get(c *http.Client, url, enc string) ([]byte, int) {
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	if enc != "" {
		req.Header.Set("Accept-Encoding", enc)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, 0
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return b, resp.StatusCode
}

// rate is completed 200 answers per second with n clients asking for d.
func rate(c *http.Client, url, enc string, n int, d time.Duration) float64 {
	var done atomic.Int64
	end := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for range n {
		wg.Go(func() {
			for time.Now().Before(end) {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				if enc != "" {
					req.Header.Set("Accept-Encoding", enc)
				}
				resp, err := c.Do(req)
				if err != nil {
					log.Fatalf("GET %s: %v", url, err)
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != 200 {
					log.Fatalf("GET %s: %d", url, resp.StatusCode)
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	return float64(done.Load()) / time.Since(start).Seconds()
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func rates(v []float64) string {
	var parts []string
	for _, x := range v {
		parts = append(parts, strconv.FormatFloat(x, 'f', 0, 64))
	}
	return strings.Join(parts, " ")
}

// staticServe is the static-file ceiling: every file of dir held in
// memory with a content ETag and a gzip encoding made once (the level
// /static/ uses), sent by http.ServeContent.
func staticServe(dir, addr string) {
	type file struct {
		body, gz   []byte
		etag, kind string
	}
	files := map[string]*file{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		log.Fatal(err)
	}
	kinds := map[string]string{".html": "text/html; charset=utf-8", ".json": "application/json; charset=utf-8", ".csv": "text/csv; charset=utf-8"}
	for _, e := range entries {
		body, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			log.Fatal(err)
		}
		var buf bytes.Buffer
		zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		zw.Write(body)
		zw.Close()
		sum := sha256.Sum256(body)
		files["/"+e.Name()] = &file{body: body, gz: buf.Bytes(), etag: hex.EncodeToString(sum[:12]), kind: kinds[filepath.Ext(e.Name())]}
	}
	log.Fatal(http.ListenAndServe(addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		hd := w.Header()
		hd.Set("Content-Type", f.kind)
		hd.Set("Vary", "Accept-Encoding")
		body, etag := f.body, f.etag
		if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
			body, etag = f.gz, f.etag+"-gz"
			hd.Set("Content-Encoding", "gzip")
		}
		hd.Set("ETag", `"`+etag+`"`)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
	})))
}
