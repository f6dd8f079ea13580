package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"strconv"
	"time"

	d5list "github.com/deep500/d5list"
)

// RunnerService is what the runner API and the queue views need from the
// portal. Handlers get it when the Service given to New implements it too.
type RunnerService interface {
	AuthenticateRunner(ctx context.Context, token string) (*d5list.RunnerToken, error)
	WaitLease(ctx context.Context, runner string, labels map[string]string, wait time.Duration) (*d5list.Lease, error)
	// The Runner* calls take the name of the runner token: the job must be
	// held by one of that token's agents.
	RunnerHeartbeat(ctx context.Context, tokenName string, jobID int64, secret string) error
	RunnerComplete(ctx context.Context, tokenName string, jobID int64, secret string, logs []d5list.RunLog, labels map[string]string) error
	RunnerFail(ctx context.Context, tokenName string, jobID int64, secret, message string) error
	BundlePath(ctx context.Context, tokenName string, jobID int64, secret string) (string, error)
	CancelJob(ctx context.Context, user *d5list.User, jobID int64) error
	Queue(ctx context.Context) (*d5list.QueueView, error)
	Runners(ctx context.Context) ([]d5list.Runner, error)
	SubmissionJob(ctx context.Context, submissionID int64) (*d5list.QueuedJob, error)
}

// DefaultLeaseWait is how long a lease request waits for a job before it
// answers 204; runners ask again at once.
const DefaultLeaseWait = 20 * time.Second

// LeaseSecretHeader carries the lease secret on every call about a job.
const LeaseSecretHeader = "X-D5-Lease-Secret"

// maxReportBytes bounds a runner's report: the MLLOG of every run.
const maxReportBytes = 64 << 20

type runnerKey struct{}

// RequireRunner authenticates a runner token (Bearer d5r_...).
func (h *Handler) RequireRunner(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h.runners == nil {
			h.Error(w, r, d5list.Errorf(d5list.EUNAVAILABLE, "this portal has no runner pool"))
			return
		}
		token, ok := bearerToken(r)
		if !ok {
			h.Error(w, r, d5list.Errorf(d5list.EUNAUTHORIZED, "a runner token is required (Authorization: Bearer d5r_...)"))
			return
		}
		rt, err := h.runners.AuthenticateRunner(r.Context(), token)
		if err != nil {
			h.runnerError(w, r, err)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), runnerKey{}, rt)))
	})
}

func runnerFrom(ctx context.Context) *d5list.RunnerToken {
	rt, _ := ctx.Value(runnerKey{}).(*d5list.RunnerToken)
	return rt
}

type leaseRequest struct {
	RunnerID string            `json:"runner_id"`
	Labels   map[string]string `json:"labels"`
}

// LeaseJob is POST /api/v1/runner/lease: 200 with a lease, or 204 when no
// job came within the wait.
func (h *Handler) LeaseJob(w http.ResponseWriter, r *http.Request) {
	var req leaseRequest
	if err := decodeJSONBody(r, 1<<20, &req); err != nil {
		h.Error(w, r, err)
		return
	}
	name, err := runnerName(runnerFrom(r.Context()), req.RunnerID)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	lease, err := h.runners.WaitLease(r.Context(), name, req.Labels, h.opts.LeaseWait)
	if err != nil {
		h.runnerError(w, r, err)
		return
	}
	if lease == nil && r.Context().Err() != nil {
		w.WriteHeader(statusClientClosed) // the agent stopped polling; nobody reads this
		return
	}
	if lease == nil {
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusNoContent)
		return
	}
	h.writeJSON(w, r, http.StatusOK, lease)
}

// statusClientClosed is nginx's 499: the client closed the request before
// the answer. Nobody receives it; it is for the access log and metrics.
const statusClientClosed = 499

// runnerError is Error for calls that a runner may abandon mid-way, as
// when an agent stops during its long poll: what broke then is the
// cancelled request, not the server, so it is no 500 and no ERROR log.
func (h *Handler) runnerError(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		h.log.DebugContext(r.Context(), "runner request ended by the client", "method", r.Method, "path", r.URL.Path,
			"request_id", w.Header().Get("X-Request-Id"), "err", err)
		w.WriteHeader(statusClientClosed)
		return
	}
	h.Error(w, r, err)
}

// runnerName is the token's name and the agent id: one machine (token)
// runs several agents, each holding its own job.
func runnerName(rt *d5list.RunnerToken, agent string) (string, error) {
	if agent == "" {
		return "", d5list.Errorf(d5list.EINVALID, "runner_id: empty")
	}
	if len(agent) > 64 {
		return "", d5list.Errorf(d5list.EINVALID, "runner_id: longer than 64 bytes")
	}
	for _, c := range agent {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return "", d5list.Errorf(d5list.EINVALID, "runner_id %q: only letters, digits, '-', '_' and '.' are allowed", agent)
		}
	}
	return rt.Name + "/" + agent, nil
}

// jobCall reads what every call about a job carries: the id and the lease
// secret. A missing secret can hold no lease, so it is forbidden.
func jobCall(r *http.Request) (int64, string, error) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, "", d5list.Errorf(d5list.ENOTFOUND, "job %q does not exist: ids are positive integers", raw)
	}
	secret := r.Header.Get(LeaseSecretHeader)
	if secret == "" {
		return 0, "", d5list.Errorf(d5list.EFORBIDDEN, "job %d: the lease secret is required (%s)", id, LeaseSecretHeader)
	}
	return id, secret, nil
}

// HeartbeatJob is POST /api/v1/runner/jobs/{id}/heartbeat. A cancelled
// job answers 409, telling the runner to stop.
func (h *Handler) HeartbeatJob(w http.ResponseWriter, r *http.Request) {
	id, secret, err := jobCall(r)
	if err == nil {
		err = h.runners.RunnerHeartbeat(r.Context(), runnerFrom(r.Context()).Name, id, secret)
	}
	if err != nil {
		h.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type completeRequest struct {
	Logs   []d5list.RunLog   `json:"logs"`
	Runner map[string]string `json:"runner"`
}

// CompleteJob is POST /api/v1/runner/jobs/{id}/complete. A malformed
// report is refused before the job is touched.
func (h *Handler) CompleteJob(w http.ResponseWriter, r *http.Request) {
	id, secret, err := jobCall(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	var req completeRequest
	if err := decodeJSONBody(r, maxReportBytes, &req); err != nil {
		h.Error(w, r, err)
		return
	}
	if err := h.runners.RunnerComplete(r.Context(), runnerFrom(r.Context()).Name, id, secret, req.Logs, req.Runner); err != nil {
		h.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

type failRequest struct {
	Message string `json:"message"`
}

// FailJob is POST /api/v1/runner/jobs/{id}/fail.
func (h *Handler) FailJob(w http.ResponseWriter, r *http.Request) {
	id, secret, err := jobCall(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	var req failRequest
	if err := decodeJSONBody(r, 1<<20, &req); err != nil {
		h.Error(w, r, err)
		return
	}
	if req.Message == "" {
		h.Error(w, r, d5list.Errorf(d5list.EINVALID, "message: empty; say why the re-run failed"))
		return
	}
	if err := h.runners.RunnerFail(r.Context(), runnerFrom(r.Context()).Name, id, secret, req.Message); err != nil {
		h.Error(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// JobBundle is GET /api/v1/runner/jobs/{id}/bundle: the bundle of the job,
// for the holder of its lease only.
func (h *Handler) JobBundle(w http.ResponseWriter, r *http.Request) {
	id, secret, err := jobCall(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	path, err := h.runners.BundlePath(r.Context(), runnerFrom(r.Context()).Name, id, secret)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	f, err := os.Open(path)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Cache-Control", "no-store")
	http.ServeContent(w, r, "", st.ModTime(), f)
}

// decodeJSONBody reads one JSON object of at most limit bytes; anything
// else is the client's mistake.
func decodeJSONBody(r *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, limit))
	if err := dec.Decode(v); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return err
		}
		if errors.Is(err, io.EOF) {
			return d5list.Errorf(d5list.EINVALID, "the request body is empty; send a JSON object")
		}
		return d5list.Errorf(d5list.EINVALID, "the request body is not the expected JSON: %v", err)
	}
	if dec.More() {
		return d5list.Errorf(d5list.EINVALID, "the request body holds more than one JSON value")
	}
	return nil
}
