package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
)

// Client is the portal's runner API over HTTP, for agents on other
// machines. Every call carries the runner token; calls about a job also
// carry the lease secret, so a runner can touch only the job it holds.
//
//	POST /api/v1/runner/lease                 {runner_id, labels} -> 200 Lease | 204 (long poll)
//	POST /api/v1/runner/jobs/{id}/heartbeat   X-D5-Lease-Secret -> 204
//	POST /api/v1/runner/jobs/{id}/complete    X-D5-Lease-Secret, {logs, runner} -> 204
//	POST /api/v1/runner/jobs/{id}/fail        X-D5-Lease-Secret, {message} -> 204
//	POST /api/v1/runner/jobs/{id}/progress    X-D5-Lease-Secret, {lines} -> 204
//	GET  /api/v1/runner/jobs/{id}/bundle      X-D5-Lease-Secret -> the bundle bytes
type Client struct {
	Server string // base URL, e.g. http://portal:8080
	Token  string
	HTTP   *http.Client
}

// SecretHeader carries a lease secret.
const SecretHeader = "X-D5-Lease-Secret"

type leaseRequest struct {
	RunnerID string            `json:"runner_id"`
	Labels   map[string]string `json:"labels"`
}

type completeRequest struct {
	Logs   []d5list.RunLog   `json:"logs"`
	Runner map[string]string `json:"runner"`
}

type failRequest struct {
	Message string `json:"message"`
}

// Lease asks for a job; the server holds the request open until one is
// available or its poll window ends (then nil, nil).
func (c *Client) Lease(ctx context.Context, runnerID string, labels map[string]string) (*d5list.Lease, error) {
	var lease d5list.Lease
	ok, err := c.call(ctx, http.MethodPost, "/api/v1/runner/lease", "", leaseRequest{runnerID, labels}, &lease)
	if err != nil || !ok {
		return nil, err
	}
	return &lease, nil
}

// Heartbeat renews a lease.
func (c *Client) Heartbeat(ctx context.Context, jobID int64, secret string) error {
	_, err := c.call(ctx, http.MethodPost, jobPath(jobID, "heartbeat"), secret, nil, nil)
	return err
}

// Complete reports the run logs of a job.
func (c *Client) Complete(ctx context.Context, jobID int64, secret string, logs []d5list.RunLog, runner map[string]string) error {
	_, err := c.call(ctx, http.MethodPost, jobPath(jobID, "complete"), secret, completeRequest{logs, runner}, nil)
	return err
}

// Fail reports a broken re-run.
func (c *Client) Fail(ctx context.Context, jobID int64, secret, message string) error {
	_, err := c.call(ctx, http.MethodPost, jobPath(jobID, "fail"), secret, failRequest{message}, nil)
	return err
}

type progressRequest struct {
	Lines []d5list.LogLine `json:"lines"`
}

// Progress sends a batch of a job's output lines (live progress).
func (c *Client) Progress(ctx context.Context, jobID int64, secret string, lines []d5list.LogLine) error {
	_, err := c.call(ctx, http.MethodPost, jobPath(jobID, "progress"), secret, progressRequest{lines}, nil)
	return err
}

// Bundle downloads the bundle of the job held under secret into w.
func (c *Client) Bundle(ctx context.Context, jobID int64, secret string, w io.Writer) error {
	req, err := c.request(ctx, http.MethodGet, jobPath(jobID, "bundle"), secret, nil)
	if err != nil {
		return err
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return decodeError(resp)
	}
	_, err = io.Copy(w, resp.Body)
	return err
}

func jobPath(id int64, action string) string {
	return "/api/v1/runner/jobs/" + strconv.FormatInt(id, 10) + "/" + action
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 2 * time.Minute}
}

func (c *Client) request(ctx context.Context, method, path, secret string, body any) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, strings.TrimRight(c.Server, "/")+path, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.Token)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if secret != "" {
		req.Header.Set(SecretHeader, secret)
	}
	return req, nil
}

// call sends one request; ok is false when the server answered 204.
func (c *Client) call(ctx context.Context, method, path, secret string, body, out any) (ok bool, err error) {
	req, err := c.request(ctx, method, path, secret, body)
	if err != nil {
		return false, err
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		return false, err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusNoContent:
		return false, nil
	case resp.StatusCode >= 300:
		return false, decodeError(resp)
	case out != nil:
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return false, fmt.Errorf("%s %s: decoding the answer: %w", method, path, err)
		}
	}
	return true, nil
}

// decodeError turns the portal's JSON error back into a *d5list.Error so
// that the agent can tell a cancelled job (conflict) from a lost lease.
func decodeError(resp *http.Response) error {
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&body); err != nil || body.Error.Code == "" {
		return d5list.Errorf(d5list.EINTERNAL, "portal answered %s", resp.Status)
	}
	return &d5list.Error{Code: body.Error.Code, Message: body.Error.Message}
}
