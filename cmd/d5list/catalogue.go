package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/catalog"
)

// serverFlagHelp is the help of init, check and run's --server.
const serverFlagHelp = "portal URL whose catalogue to use (its own benchmarks included), so you check against what you will be judged by; default: the catalogue built into d5list"

// benchmarksOf is the catalogue a competitor's command works with: the
// built-in one, or, given a portal's URL, the one that portal judges by,
// with the benchmarks its organisers added.
func benchmarksOf(ctx context.Context, server string) ([]d5list.Benchmark, error) {
	if server == "" {
		return catalog.Benchmarks()
	}
	url := strings.TrimRight(server, "/") + "/api/v1/benchmarks"
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, fmt.Errorf("--server %q: %w", server, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("reading the catalogue of %s: %w", server, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("reading the catalogue of %s: %s %s", server, resp.Status, strings.TrimSpace(string(body)))
	}
	var list struct {
		Benchmarks []d5list.Benchmark `json:"benchmarks"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&list); err != nil {
		return nil, fmt.Errorf("reading the catalogue of %s: %w", server, err)
	}
	return list.Benchmarks, nil
}
