package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"

	d5list "github.com/deep500/d5list"
)

// ReviewService is what organiser review needs from the portal. It is
// asked of the Service by type assertion, so that services without review
// (tests' fakes) still serve every other route.
type ReviewService interface {
	ReviewQueue(ctx context.Context, user *d5list.User) ([]d5list.Submission, error)
	Review(ctx context.Context, user *d5list.User, id int64, req d5list.ReviewRequest) (*d5list.Submission, *d5list.AuditEntry, error)
	AuditLog(ctx context.Context, id int64) ([]d5list.AuditEntry, []d5list.Attempt, error)
	Rescore(ctx context.Context, user *d5list.User, benchmarkID string) (*d5list.RescoreReport, error)
}

// maxReviewBody bounds the JSON of a review action.
const maxReviewBody = 64 << 10

func (h *Handler) reviewer() (ReviewService, error) {
	rs, ok := h.svc.(ReviewService)
	if !ok {
		return nil, d5list.Errorf(d5list.EUNAVAILABLE, "organiser review is not available on this server")
	}
	return rs, nil
}

// ReviewQueue is GET /api/v1/review (organiser): discrepancies and
// submissions needing review, newest first.
func (h *Handler) ReviewQueue(w http.ResponseWriter, r *http.Request) {
	rs, err := h.reviewer()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	subs, err := rs.ReviewQueue(r.Context(), userFrom(r.Context()))
	if err != nil {
		h.Error(w, r, err)
		return
	}
	out := make([]submissionJSON, len(subs))
	for i := range subs {
		out[i] = newSubmissionJSON(&subs[i])
	}
	h.writeJSON(w, r, http.StatusOK, map[string]any{"submissions": out})
}

// ReviewSubmission is POST /api/v1/submissions/{id}/review (organiser)
// with {"action", "reason", "note"}.
func (h *Handler) ReviewSubmission(w http.ResponseWriter, r *http.Request) {
	rs, err := h.reviewer()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	id, err := submissionID(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !strings.HasPrefix(ct, "application/json") {
		h.Error(w, r, d5list.Errorf(eUnsupportedMedia, "send the review as application/json, not %s", ct))
		return
	}
	var req d5list.ReviewRequest
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxReviewBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		h.Error(w, r, reviewBodyError(err))
		return
	}
	sub, entry, err := rs.Review(r.Context(), userFrom(r.Context()), id, req)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.writeJSON(w, r, http.StatusOK, map[string]any{"submission": newSubmissionJSON(sub), "audit": entry})
}

// reviewBodyError names what is wrong with the body: the field where the
// decoder knows it.
func reviewBodyError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var maxErr *http.MaxBytesError
	switch {
	case errors.As(err, &maxErr):
		return err
	case errors.Is(err, io.EOF):
		return d5list.Errorf(d5list.EINVALID, "the body is empty; send {\"action\": ..., \"reason\": ..., \"note\": ...}")
	case errors.As(err, &typeErr):
		return d5list.Errorf(d5list.EINVALID, "%s: must be a %s", typeErr.Field, typeErr.Type)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		return d5list.Errorf(d5list.EINVALID, "%s: not a field of a review (action, reason, note)",
			strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`))
	}
	return d5list.Errorf(d5list.EINVALID, "the body is not JSON: %v", err)
}

type auditJSON struct {
	SubmissionID int64               `json:"submission_id"`
	Status       d5list.Status       `json:"status"`
	Division     string              `json:"division"`
	Flag         string              `json:"flag,omitempty"`
	Entries      []d5list.AuditEntry `json:"entries"`
	Attempts     []d5list.Attempt    `json:"attempts"`
}

// ShowAudit is GET /api/v1/submissions/{id}/audit (public): every review
// action on the submission and every verification attempt, oldest first.
func (h *Handler) ShowAudit(w http.ResponseWriter, r *http.Request) {
	rs, err := h.reviewer()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	sub, user, err := h.visibleSubmission(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	id := sub.ID
	entries, attempts, err := rs.AuditLog(r.Context(), id)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	entries, attempts = historyFor(user, sub, entries, attempts)
	h.writeJSON(w, r, http.StatusOK, auditJSON{SubmissionID: id, Status: sub.Status, Division: sub.Division, Flag: sub.Flag,
		Entries: entries, Attempts: attempts})
}

// RescoreBenchmark is POST /api/v1/benchmarks/{id}/rescore (organiser):
// re-judge every submission under the benchmark's current rules.
func (h *Handler) RescoreBenchmark(w http.ResponseWriter, r *http.Request) {
	rs, err := h.reviewer()
	if err != nil {
		h.Error(w, r, err)
		return
	}
	rep, err := rs.Rescore(r.Context(), userFrom(r.Context()), r.PathValue("id"))
	if err != nil {
		h.Error(w, r, err)
		return
	}
	h.writeJSON(w, r, http.StatusOK, rep)
}

// historyFor is what user may read of a submission's history. Its
// competitor and the organisers read all of it. Anyone else reads what
// they could see when it was written: not a competitor's message to the
// organisers (only that one was sent), not a verdict that went against the
// entry and that no organiser had published before a re-run replaced it
// (its status, measurement and findings), and not the statuses and
// reasons of audit entries written while the verdict was hidden.
func historyFor(user *d5list.User, sub *d5list.Submission, entries []d5list.AuditEntry, attempts []d5list.Attempt) ([]d5list.AuditEntry, []d5list.Attempt) {
	if mayReadLog(user, sub) {
		return entries, attempts
	}
	// hidden mirrors Submission.Hidden as it stood at each entry:
	// published is set by "publish" and cleared by a re-run.
	hidden := func(st d5list.Status, published bool) bool {
		return (&d5list.Submission{Status: st, Published: published}).Hidden()
	}
	outEntries := make([]d5list.AuditEntry, len(entries))
	published := false
	for i, e := range entries {
		after := published || e.Action == d5list.ActionPublish
		if e.Action == d5list.ActionRerun {
			after = false
		}
		if e.Action == d5list.ActionAppeal {
			e.Note = ""
		}
		if hidden(e.FromStatus, published) {
			e.FromStatus = ""
		}
		if hidden(e.ToStatus, after) {
			e.ToStatus, e.Reason, e.Note = "", "", ""
		}
		outEntries[i], published = e, after
	}
	outAttempts := make([]d5list.Attempt, len(attempts))
	for i, a := range attempts {
		if a.Hidden {
			a.Status, a.Measured, a.Reasons, a.Job.Error = "", nil, nil, ""
		}
		outAttempts[i] = a
	}
	return outEntries, outAttempts
}

// historyOf returns the audit log and the verification attempts for the
// submission page, or nil where the service keeps none; the page shows
// what there is.
func (h *Handler) historyOf(ctx context.Context, id int64) ([]d5list.AuditEntry, []d5list.Attempt) {
	rs, ok := h.svc.(ReviewService)
	if !ok {
		return nil, nil
	}
	entries, attempts, err := rs.AuditLog(ctx, id)
	if err != nil {
		h.log.ErrorContext(ctx, "reading the audit log", "submission", id, "err", err)
		return nil, nil
	}
	return entries, attempts
}
