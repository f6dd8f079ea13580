package handlers

import (
	"context"
	"math"
	"net/http"
	"strconv"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/templates"
)

// submissionJSON is the public view of a submission: the owner's account
// stays private, claimed and measured are null until known, and reasons is
// always a list.
type submissionJSON struct {
	ID           int64           `json:"id"`
	Benchmark    string          `json:"benchmark"`
	Status       d5list.Status   `json:"status"`
	Final        bool            `json:"final"`
	Division     string          `json:"division"`
	Availability string          `json:"availability"`
	Submitter    string          `json:"submitter"`
	SystemName   string          `json:"system_name"`
	Framework    string          `json:"framework"`
	Accelerator  string          `json:"accelerator,omitempty"`
	Accelerators int             `json:"accelerators,omitempty"`
	HostCPU      string          `json:"host_cpu,omitempty"`
	BundleSHA256 string          `json:"bundle_sha256"`
	BundleSize   int64           `json:"bundle_size"`
	Recipe       *d5list.Recipe  `json:"recipe"`
	Claimed      *d5list.Result  `json:"claimed"`
	Measured     *d5list.Result  `json:"measured"`
	Reasons      []d5list.Reason `json:"reasons"`
	Flag         string          `json:"flag,omitempty"`
	URL          string          `json:"url"`
	CreatedAt    time.Time       `json:"created_at"`
	UpdatedAt    time.Time       `json:"updated_at"`
	// The verification job, from the runner pool: its state, the attempt
	// (1 on the first lease) and the place in the line (1 is next; 0 when
	// not waiting).
	JobID         int64           `json:"job_id,omitempty"`
	JobState      d5list.JobState `json:"job_state,omitempty"`
	Attempt       int             `json:"attempt"`
	MaxAttempts   int             `json:"max_attempts,omitempty"`
	QueuePosition int             `json:"queue_position"`
	// NoRunner, for a queued job, says that no online runner can take it
	// and what one needs.
	NoRunner string `json:"no_runner,omitempty"`
	// ContentSHA256 is the sum of the bundle's files however packed (an
	// upload of the same files repeats the entry); CodeURL and PaperURL
	// are submission.json's links.
	ContentSHA256 string `json:"content_sha256,omitempty"`
	CodeURL       string `json:"code_url,omitempty"`
	PaperURL      string `json:"paper_url,omitempty"`
	// Rank is the entry's rank on its benchmark's live default board (each
	// system's best entry), null where that board does not list it;
	// BoardURL is the page of the board that lists it. SupersededBy is,
	// for an entry the board does not list because its system has a
	// better one, that entry.
	Rank         *int   `json:"rank"`
	RankedOf     int    `json:"ranked_of,omitempty"`
	BoardURL     string `json:"board_url,omitempty"`
	SupersededBy int64  `json:"superseded_by,omitempty"`
	// Value is the number the boards rank the entry by, rounded as they
	// round it, and ValueText that number as the pages print it, with its
	// unit; Basis says whose runs it is the mean of. All three are absent
	// where no board could list the entry (not yet verified, refused).
	Value     *float64 `json:"value,omitempty"`
	ValueText string   `json:"value_text,omitempty"`
	Basis     string   `json:"basis,omitempty"`
	// Findings are the reasons as the entry page lists them, in its order,
	// words and figures (templates.Findings), for clients such as `d5list
	// submit --wait` to print what the page says.
	Findings []templates.Finding `json:"findings"`
}

func newSubmissionJSON(s *d5list.Submission) submissionJSON {
	reasons := s.Reasons
	if reasons == nil {
		reasons = []d5list.Reason{}
	}
	return submissionJSON{
		ID: s.ID, Benchmark: s.BenchmarkID, Status: s.Status, Final: s.Status.Final(),
		Division: s.Division, Availability: s.Availability, Submitter: s.Submitter,
		SystemName: s.SystemName, Framework: s.Framework, Accelerator: s.Accelerator,
		Accelerators: s.Accelerators, HostCPU: s.HostCPU, BundleSHA256: s.BundleSHA256,
		BundleSize: s.BundleSize, Recipe: s.Recipe, Claimed: s.Claimed, Measured: s.Measured,
		Reasons: reasons, Findings: templates.Findings(reasons, nil), Flag: s.Flag, URL: "/submissions/" + strconv.FormatInt(s.ID, 10),
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt,
		ContentSHA256: s.ContentSHA256, CodeURL: s.CodeURL, PaperURL: s.PaperURL,
	}
}

// entryPlacer finds where a submission stands on its default board (the
// portal).
type entryPlacer interface {
	PlaceOf(ctx context.Context, sub *d5list.Submission) (leaderboard.EntryPlace, error)
}

// placeOn adds to out the entry's value as the boards give it and its
// place on the default board.
func (h *Handler) placeOn(ctx context.Context, out *submissionJSON, sub *d5list.Submission) error {
	bench, err := h.svc.Benchmark(ctx, sub.BenchmarkID)
	if d5list.ErrorCode(err) == d5list.ENOTFOUND {
		return nil // no longer in the catalogue: on no board
	} else if err != nil {
		return err
	}
	out.Findings = templates.Findings(out.Reasons, bench)
	if e, ok := leaderboard.EntryOf(bench, sub); ok && !math.IsInf(e.Value, 0) && !math.IsNaN(e.Value) {
		out.Value, out.ValueText, out.Basis = &e.Value, leaderboard.FormatValue(e.Value, bench.Ranking.Unit), e.Basis
	}
	placer, ok := h.svc.(entryPlacer)
	if !ok {
		return nil
	}
	place, err := placer.PlaceOf(ctx, sub)
	if err != nil {
		return err
	}
	if place.Entry != nil {
		out.Rank, out.RankedOf, out.BoardURL = &place.Entry.Rank, place.Of, place.BoardLink(sub.BenchmarkID)
		// The board's own row, so that the API and the board quote one
		// number.
		out.Value, out.ValueText, out.Basis = &place.Entry.Value, leaderboard.FormatValue(place.Entry.Value, bench.Ranking.Unit), place.Entry.Basis
	}
	out.SupersededBy = place.SupersededBy
	return nil
}

// ShowSubmission is GET /api/v1/submissions/{id}.
func (h *Handler) ShowSubmission(w http.ResponseWriter, r *http.Request) {
	sub, _, err := h.visibleSubmission(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	id := sub.ID
	out := newSubmissionJSON(sub)
	if err := h.placeOn(r.Context(), &out, sub); err != nil {
		h.Error(w, r, err)
		return
	}
	if h.runners != nil {
		job, err := h.runners.SubmissionJob(r.Context(), id)
		if err != nil {
			h.Error(w, r, err)
			return
		}
		if job != nil {
			out.JobID, out.JobState, out.Attempt, out.MaxAttempts, out.QueuePosition =
				job.ID, job.State, job.Attempts, job.MaxAttempts, job.Position
			bench, err := h.svc.Benchmark(r.Context(), sub.BenchmarkID)
			if err == nil {
				out.NoRunner, err = h.noRunnerFor(r.Context(), job, bench)
			}
			if err != nil {
				h.Error(w, r, err)
				return
			}
		}
	}
	h.writeJSON(w, r, http.StatusOK, out)
}

// visibleSubmission reads the {id} submission for whoever asks: a verdict
// against an entry that no organiser published is its submitter's and the
// organisers' to see, and to everyone else the entry does not exist, so
// that a hidden failure leaks nothing, not even its number.
func (h *Handler) visibleSubmission(r *http.Request) (*d5list.Submission, *d5list.User, error) {
	id, err := submissionID(r)
	if err != nil {
		return nil, nil, err
	}
	user, err := h.viewer(r)
	if err != nil {
		return nil, nil, err
	}
	sub, err := h.svc.Submission(r.Context(), id)
	if err != nil {
		return nil, nil, err
	}
	if !sub.MayView(user) {
		return nil, nil, hiddenSubmission(id)
	}
	return sub, user, nil
}

func hiddenSubmission(id int64) error {
	return d5list.Errorf(d5list.ENOTFOUND, "submission %d not found", id)
}

// submissionID parses the {id} path parameter. A malformed id names no
// submission, so it is a 404 like an unknown one.
func submissionID(r *http.Request) (int64, error) {
	raw := r.PathValue("id")
	id, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || id <= 0 {
		return 0, d5list.Errorf(d5list.ENOTFOUND, "submission %q does not exist: ids are positive integers", raw)
	}
	return id, nil
}
