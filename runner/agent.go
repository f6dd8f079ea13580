// Package runner re-runs submissions: an agent leases jobs from the portal
// (in process, or over HTTP from a remote machine), hands them to an
// executor and reports the run logs back.
package runner

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	d5list "github.com/deep500/d5list"
)

// Queue is the portal as a runner sees it.
type Queue interface {
	Lease(ctx context.Context, runnerID string, labels map[string]string) (*d5list.Lease, error)
	Heartbeat(ctx context.Context, jobID int64, secret string) error
	Complete(ctx context.Context, jobID int64, secret string, logs []d5list.RunLog, runner map[string]string) error
	Fail(ctx context.Context, jobID int64, secret, message string) error
}

// Executor re-runs a job and returns one MLLOG per run.
type Executor interface {
	Execute(ctx context.Context, spec d5list.JobSpec) ([]d5list.RunLog, error)
}

// runsLabel is what an executor runs (d5list.LabelRuns); the agent
// advertises it so that it leases only the jobs its executor can run.
func runsLabel(e Executor) string {
	switch e.(type) {
	case Builtin, *Builtin:
		return d5list.RunsBuiltin
	case *Process, *Slurm:
		return d5list.RunsEntrypoint
	}
	return ""
}

// Agent is one runner: it polls for a job, runs it, reports, and repeats.
type Agent struct {
	ID        string
	Labels    map[string]string
	Queue     Queue
	Executor  Executor
	Poll      time.Duration // wait between polls when idle
	Heartbeat time.Duration // lease renewal interval
	Log       *slog.Logger
}

// Run works until ctx is cancelled.
func (a *Agent) Run(ctx context.Context) error {
	poll := a.Poll
	if poll == 0 {
		poll = time.Second
	}
	log := a.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if runs := runsLabel(a.Executor); runs != "" {
		labels := map[string]string{d5list.LabelRuns: runs}
		// Recipe images run only in bubblewrap (Process.image).
		if p, ok := a.Executor.(*Process); ok && p.Sandboxed() {
			labels[d5list.LabelImages] = "yes"
		}
		for k, v := range a.Labels {
			labels[k] = v
		}
		a.Labels = labels
	}
	for {
		lease, err := a.Queue.Lease(ctx, a.ID, a.Labels)
		if err != nil && ctx.Err() == nil {
			log.Warn("lease failed", "runner", a.ID, "err", err)
		}
		if lease == nil {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(poll):
			}
			continue
		}
		a.work(ctx, lease, log)
	}
}

// work runs one leased job. The lease is renewed while the executor runs;
// a cancelled job (the heartbeat answers conflict) stops the executor.
func (a *Agent) work(ctx context.Context, lease *d5list.Lease, log *slog.Logger) {
	job := lease.Job
	log.Info("job leased", "runner", a.ID, "job", job.ID, "submission", job.SubmissionID, "attempt", job.Attempts)
	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go a.keepAlive(runCtx, cancel, lease)

	execCtx := runCtx
	var progress *progressStream
	if pq, ok := a.Queue.(ProgressQueue); ok {
		progress = newProgressStream(pq, lease, log)
		execCtx = WithLines(runCtx, progress.line)
		sending, stopSending := context.WithCancel(runCtx)
		defer stopSending()
		go progress.run(sending)
	}
	logs, err := a.Executor.Execute(execCtx, lease.Spec)
	if cause := context.Cause(runCtx); cause != nil && !errors.Is(cause, context.Canceled) {
		log.Info("job stopped", "job", job.ID, "cause", cause)
		return
	}
	if progress != nil && ctx.Err() == nil {
		// The run's last lines reach the portal before its verdict.
		progress.close(context.WithoutCancel(ctx))
	}
	// Reports use a fresh context so that a verdict is not lost to the
	// executor's cancellation.
	reportCtx, done := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
	defer done()
	if ctx.Err() != nil && err != nil {
		// Shutting down interrupted the work: hand the job back at once
		// rather than leave it until the lease expires (which happens if
		// this fails). Work that finished anyway is still reported.
		_ = a.Queue.Fail(reportCtx, job.ID, lease.Secret, "runner "+a.ID+" stopped before finishing")
		log.Info("job handed back", "runner", a.ID, "job", job.ID)
		return
	}
	if err != nil {
		log.Warn("job failed", "job", job.ID, "err", err)
		if ferr := retryReport(reportCtx, func() error { return a.Queue.Fail(reportCtx, job.ID, lease.Secret, err.Error()) }); ferr != nil {
			log.Warn("reporting failure", "job", job.ID, "err", ferr)
		}
		return
	}
	if err := retryReport(reportCtx, func() error { return a.Queue.Complete(reportCtx, job.ID, lease.Secret, logs, a.Labels) }); err != nil {
		log.Warn("reporting result", "job", job.ID, "err", err)
		return
	}
	log.Info("job done", "runner", a.ID, "job", job.ID)
}

func (a *Agent) keepAlive(ctx context.Context, stop context.CancelCauseFunc, lease *d5list.Lease) {
	every := a.Heartbeat
	if every == 0 {
		every = 10 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			err := a.Queue.Heartbeat(ctx, lease.Job.ID, lease.Secret)
			switch d5list.ErrorCode(err) {
			case "":
			case d5list.ECONFLICT, d5list.EFORBIDDEN:
				stop(fmt.Errorf("lease lost: %w", err))
				return
			}
		}
	}
}

// retryReport repeats a report while the portal cannot be reached (a
// restart, a network blip): reports are idempotent, and a verdict that is
// dropped costs a whole re-run. An answer from the portal is final.
func retryReport(ctx context.Context, report func() error) error {
	wait := 250 * time.Millisecond
	for {
		err := report()
		var de *d5list.Error
		if err == nil || errors.As(err, &de) && de.Code != d5list.EINTERNAL && de.Code != d5list.EUNAVAILABLE {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}
