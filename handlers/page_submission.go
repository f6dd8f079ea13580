package handlers

import (
	"context"
	"net/http"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// SubmissionPage is GET /submissions/{id}: status, reasons, and the
// claimed results beside the measured ones; while it is verified, where
// its job is, and for the submitter and organisers the re-run's log tail
// and the submission's timeline.
func (h *Handler) SubmissionPage(w http.ResponseWriter, r *http.Request) {
	h.renderSubmissionPage(w, r, http.StatusOK, nil)
}

// renderSubmissionPage renders the page with status; edit, if not nil,
// adds what a form's answer shows (its error and the text to keep).
func (h *Handler) renderSubmissionPage(w http.ResponseWriter, r *http.Request, status int, edit func(*templates.SubmissionLive)) {
	sub, user, err := h.visibleSubmission(r)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	bench, err := h.svc.Benchmark(r.Context(), sub.BenchmarkID)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	live, err := h.submissionLive(r, sub, bench)
	if err != nil {
		h.Error(w, r, err)
		return
	}
	if edit != nil {
		edit(&live)
	}
	entries, attempts := h.historyOf(r.Context(), sub.ID)
	audit, attempts := historyFor(user, sub, entries, attempts)
	h.render(w, r, status, templates.SubmissionPage(sub, bench, audit, attempts, live))
}

func (h *Handler) submissionLive(r *http.Request, sub *d5list.Submission, bench *d5list.Benchmark) (templates.SubmissionLive, error) {
	var live templates.SubmissionLive
	ctx := r.Context()
	if placer, ok := h.svc.(entryPlacer); ok {
		place, err := placer.PlaceOf(ctx, sub)
		if err != nil {
			return live, err
		}
		live.Place = place
	}
	if h.runners != nil {
		job, err := h.runners.SubmissionJob(ctx, sub.ID)
		if err != nil {
			return live, err
		}
		if job != nil {
			live.JobID, live.JobState, live.Attempt, live.MaxAttempts, live.QueuePosition =
				job.ID, job.State, job.Attempts, job.MaxAttempts, job.Position
			if live.NoRunner, err = h.noRunnerFor(ctx, job, bench); err != nil {
				return live, err
			}
		}
	}
	user, _ := h.viewer(r) // a bad token just sees the public page
	live.NextStep = templates.NextStepFor(readerOf(user, sub), sub)
	live.Hidden = sub.Hidden()
	if user != nil && user.ID == sub.OwnerID && d5list.ActionAppeal.Allowed(sub.Status) {
		if as, ok := h.svc.(AppealService); ok {
			live.CanAppeal = true
			if pending, err := as.PendingAppeal(ctx, user, sub.ID); err != nil {
				return live, err
			} else if pending != nil {
				live.CanAppeal, live.AppealSent = false, pending.CreatedAt
			}
		}
	}
	// The upload page sends a repeated upload here with ?repeated=1.
	live.Repeated = user != nil && user.ID == sub.OwnerID && r.URL.Query().Get("repeated") == "1"
	_, downloads := h.svc.(Downloads)
	live.CanDownload = downloads && sub.MayDownload(user)
	ps := h.progress()
	if ps == nil || !mayReadLog(user, sub) {
		return live, nil
	}
	var err error
	live.LogVisible, live.ShowTimeline = true, true
	if live.Log, err = ps.SubmissionLog(ctx, sub.ID, -1, logTailLines); err != nil {
		return live, err
	}
	if live.Progress, err = h.rerunProgress(ctx, sub); err != nil {
		return live, err
	}
	if live.Timeline, err = ps.Timeline(ctx, sub.ID); err != nil {
		return live, err
	}
	return live, nil
}

// readerOf is who user is to sub's page: the competitor who uploaded it
// (an organiser's own entry included), an organiser, or a visitor.
func readerOf(user *d5list.User, sub *d5list.Submission) templates.Reader {
	switch {
	case user == nil:
		return templates.Visitor
	case user.ID == sub.OwnerID:
		return templates.Competitor
	case user.Role.AtLeast(d5list.RoleOrganiser):
		return templates.Organiser
	}
	return templates.Visitor
}

// noRunnerFor says, for a queued job that no online runner can take, what
// a runner needs; "" when one can, or the job is not waiting.
func (h *Handler) noRunnerFor(ctx context.Context, job *d5list.QueuedJob, bench *d5list.Benchmark) (string, error) {
	if job.State != d5list.JobQueued || bench == nil {
		return "", nil
	}
	runners, err := h.runners.Runners(ctx)
	if err != nil {
		return "", err
	}
	for _, r := range runners {
		if r.Online && bench.RunnableBy(r.Labels) && d5list.HasLabels(r.Labels, job.Requires) {
			return "", nil
		}
	}
	return "No runner online can take this job: it needs a runner with " + bench.RunnerNeeds(job.Requires) + ". It waits in the queue until one calls in.", nil
}
