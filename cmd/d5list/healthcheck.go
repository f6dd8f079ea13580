package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// healthcheckCmd asks a running portal's /healthz and fails unless it
// answers 200. It exists for the container's HEALTHCHECK: the distroless
// image has no shell, curl or wget, and the binary is already there.
func healthcheckCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("healthcheck", stderr)
	url := fs.String("url", envOr("D5LIST_HEALTHCHECK_URL", "http://127.0.0.1:8080/healthz"), "the health endpoint to ask")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, *url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: --url %q: %w", *url, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: %s answered %s: %s", *url, resp.Status, body)
	}
	fmt.Fprintf(stdout, "ok %s\n", *url)
	return nil
}
