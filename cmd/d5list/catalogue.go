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
	var list struct {
		Benchmarks []d5list.Benchmark `json:"benchmarks"`
	}
	if err := getFrom(ctx, server, "/api/v1/benchmarks", "", "the catalogue", &list); err != nil {
		return nil, err
	}
	return list.Benchmarks, nil
}

// accountOf is the account of token on the portal at server.
func accountOf(ctx context.Context, server, token string) (*d5list.User, error) {
	var u d5list.User
	if err := getFrom(ctx, server, "/api/v1/account", token, "your account", &u); err != nil {
		return nil, err
	}
	return &u, nil
}

// getFrom reads what (a JSON answer of at most 16 MB) from path on the
// portal at server, as token's user where token is set.
func getFrom(ctx context.Context, server, path, token, what string, v any) error {
	url := strings.TrimRight(server, "/") + path
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("--server %q: %w", server, err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("reading %s of %s: %w", what, server, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("reading %s of %s: %s %s", what, server, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(v); err != nil {
		return fmt.Errorf("reading %s of %s: %w", what, server, err)
	}
	return nil
}
