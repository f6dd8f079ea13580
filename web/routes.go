package web

import (
	"net/http"

	"github.com/go-chi/chi/v5"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
)

// routes is the portal's whole URL space.
func routes(r chi.Router, h *handlers.Handler, assets http.Handler) {
	// Pages.
	r.Get("/", h.HomePage)
	r.Get("/benchmarks", h.BenchmarksPage)
	r.Get("/benchmarks/", h.BenchmarksPage)
	r.Get("/benchmarks/{id}", h.BenchmarkPage)
	r.Get("/submissions/{id}", h.SubmissionPage)
	// Identity (issue 16): organisations' and systems' pages, and the
	// competitor's message asking for a review.
	r.Get("/compare", h.ComparePage)
	r.Get("/submitters/{name}", h.SubmitterPage)
	r.Get("/submitters/{name}/systems/{system}", h.SystemPage)
	// Search across every benchmark's list (issue 27).
	r.Get("/search", h.SearchPage)
	r.With(h.RequireRole(d5list.RoleCompetitor)).Post("/submissions/{id}/appeal", h.AppealPage)

	// Accounts, the competitor's pages and the organiser console (issue 7).
	// Pages that need an account send visitors to /login; every unsafe
	// method with a session cookie carries the session's CSRF token.
	r.Get("/login", h.LoginPage)
	r.Post("/login", h.Login)
	r.Get("/signup", h.SignupPage)
	r.Post("/signup", h.Signup)
	r.Post("/logout", h.Logout)
	r.With(h.RequireRole(d5list.RolePublic)).Get("/account", h.AccountPage)
	r.With(h.RequireRole(d5list.RoleCompetitor)).Post("/account/tokens", h.CreateAPIToken)
	r.With(h.RequireRole(d5list.RoleCompetitor)).Post("/account/tokens/{id}/revoke", h.RevokeAPIToken)
	r.With(h.RequireRole(d5list.RoleCompetitor)).Get("/upload", h.UploadPage)
	r.With(h.RequireRole(d5list.RoleCompetitor)).Get("/mlperf", h.MLPerfCheckPage)
	r.With(h.RequireRole(d5list.RoleCompetitor)).Get("/my/submissions", h.MySubmissionsPage)
	r.Route("/console", func(r chi.Router) {
		r.Use(h.RequireRole(d5list.RoleOrganiser))
		r.Get("/", h.ConsolePage)
		r.Post("/users/{id}/role", h.ConsoleSetRole)
		r.Post("/users/{id}/approve", h.ConsoleApprove)
		r.Post("/users/{id}/organisation", h.ConsoleOrganisation)
		r.Post("/benchmarks", h.ConsoleBenchmarks)
		// A runner token can lease any job and report any measurement:
		// admins mint them, not every organiser.
		r.With(h.RequireRole(d5list.RoleAdmin)).Post("/runner-tokens", h.ConsoleRunnerTokens)
		r.Post("/review/{id}", h.ConsoleReview)
		r.Post("/editions", h.ConsoleFreezeEdition)
		r.Post("/audit-failures/clear", h.ConsoleClearAuditFailures)
		r.Post("/settings/show-failed-audits", h.ConsoleShowFailedAudits)
	})
	// End of accounts.

	// The public list (issue 6): navigation, editions, feed, badges.
	r.Get("/list", h.ListPage)
	r.Get("/editions", h.EditionsPage)
	r.Get("/editions/{name}", h.EditionPage)
	r.Get("/editions/{name}/benchmarks/{id}", h.EditionBoardPage)
	r.Get("/feed.atom", h.Feed)
	r.Get("/submissions/{id}/badge.svg", h.Badge)
	r.Get("/submissions/{id}/bundle", h.DownloadBundle)
	r.Get("/submissions/{id}/runs/{run}/log", h.DownloadRunLog)
	r.Get("/submissions/{id}/reruns/{run}/log", h.DownloadRerunLog)
	// End of the public list.

	// Live progress and the pool pages (issues 4 and 7): the submission's
	// event stream (status for all; the log for the submitter and
	// organisers), and the organisers' runners and queue pages.
	r.Get("/submissions/{id}/events", h.SubmissionEvents)
	r.With(h.RequireRole(d5list.RoleOrganiser)).Get("/console/runners", h.RunnersPage)
	r.With(h.RequireRole(d5list.RoleOrganiser)).Get("/console/queue", h.QueuePage)
	r.With(h.RequireRole(d5list.RoleOrganiser)).Post("/console/jobs/{id}/cancel", h.ConsoleCancelJob)
	// End of live progress.

	// JSON API.
	r.Route("/api/v1", func(r chi.Router) {
		r.With(h.RequireRole(d5list.RoleCompetitor), h.LimitUploads).Post("/submissions", h.CreateSubmission)
		// An MLPerf result folder checked as check --mlperf checks it (issue 13).
		r.With(h.RequireRole(d5list.RoleCompetitor), h.LimitUploads).Post("/mlperf/check", h.CheckMLPerf)
		r.Get("/submissions/{id}", h.ShowSubmission)
		r.With(h.RequireRole(d5list.RolePublic)).Get("/account", h.ShowAccount)
		r.With(h.RequireRole(d5list.RoleCompetitor)).Post("/submissions/{id}/appeal", h.AppealSubmission)
		r.Get("/leaderboards/{benchmark}", h.ShowLeaderboard)
		r.Get("/benchmarks", h.ListBenchmarks)

		// The public list (issue 6): editions and their exports; the
		// boards' CSV is /leaderboards/{benchmark}.csv (ShowLeaderboard).
		r.With(h.RequireRole(d5list.RoleOrganiser)).Post("/editions", h.FreezeEdition)
		r.Get("/editions", h.ListEditions)
		r.Get("/editions/{name}", h.ShowEdition)
		r.Get("/editions/{name}/benchmarks/{id}", h.ShowEditionBoard)
		// End of the public list.

		// Organiser review (issue 5): queue, actions, audit log, rescore.
		r.With(h.RequireRole(d5list.RoleOrganiser)).Get("/review", h.ReviewQueue)
		r.With(h.RequireRole(d5list.RoleOrganiser)).Post("/submissions/{id}/review", h.ReviewSubmission)
		r.Get("/submissions/{id}/audit", h.ShowAudit)
		r.With(h.RequireRole(d5list.RoleOrganiser)).Post("/benchmarks/{id}/rescore", h.RescoreBenchmark)
		// End of organiser review.

		// Runner API (issue 4): runner token auth, lease secret in
		// X-D5-Lease-Secret; queue and pool views; organisers cancel jobs.
		r.Route("/runner", func(r chi.Router) {
			r.Use(h.RequireRunner)
			r.Post("/lease", h.LeaseJob)
			r.Post("/jobs/{id}/heartbeat", h.HeartbeatJob)
			r.Post("/jobs/{id}/complete", h.CompleteJob)
			r.Post("/jobs/{id}/fail", h.FailJob)
			r.Get("/jobs/{id}/bundle", h.JobBundle)
			r.Post("/jobs/{id}/progress", h.JobProgress)
		})
		r.Get("/queue", h.ShowQueue)
		r.With(h.RequireRole(d5list.RoleOrganiser)).Get("/runners", h.ListRunners)
		r.With(h.RequireRole(d5list.RoleOrganiser)).Post("/jobs/{id}/cancel", h.CancelJob)
		// End of runner API.
	})

	// Operations and assets.
	r.Get("/healthz", h.Health)
	// The API's reference (issue 16): a page, and the OpenAPI document.
	r.Get("/api", h.APIReferencePage)
	r.Get("/api/openapi.yaml", h.OpenAPIDocument)
	r.Method(http.MethodGet, "/static/*", assets)
	// Browsers ask for /favicon.ico whatever the page's icon link says.
	r.Get("/favicon.ico", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/static/img/favicon.svg", http.StatusMovedPermanently)
	})
}
