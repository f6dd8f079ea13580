package portal

import (
	"context"
	"sort"
	"strings"
	"sync"
	"time"

	d5list "github.com/deep500/d5list"
)

// PoolStore is the persistence of the runner pool: runner tokens, the
// runners as last seen, and the queue as organisers see it.
type PoolStore interface {
	RunnerByToken(ctx context.Context, token string) (*d5list.RunnerToken, error)
	TouchRunner(ctx context.Context, runnerName string, labels map[string]string, jobID int64) error
	Runners(ctx context.Context) ([]d5list.Runner, error)
	ActiveJobs(ctx context.Context) ([]d5list.QueuedJob, error)
	Jobs(ctx context.Context, submissionID int64) ([]d5list.Job, error)
	CancelJob(ctx context.Context, jobID int64) error
}

// StopWaiting ends every waiting lease request (they answer "no job") and
// the ones that come later, so that a server shutting down is not held up
// by runners' long polls.
func (s *Service) StopWaiting() { s.pool.stop() }

// JobQueued wakes the dispatcher: a job was queued by a path that does not
// tell the service itself.
func (s *Service) JobQueued() { s.pool.wake() }

func (s *Service) poolStore() (PoolStore, error) {
	ps, ok := s.store.(PoolStore)
	if !ok {
		return nil, d5list.Errorf(d5list.EUNAVAILABLE, "this portal has no runner pool")
	}
	return ps, nil
}

// AuthenticateRunner returns the runner a token was issued to.
func (s *Service) AuthenticateRunner(ctx context.Context, token string) (*d5list.RunnerToken, error) {
	if token == "" {
		return nil, d5list.Errorf(d5list.EUNAUTHORIZED, "a runner token is required (Authorization: Bearer d5r_...)")
	}
	ps, err := s.poolStore()
	if err != nil {
		return nil, err
	}
	return ps.RunnerByToken(ctx, token)
}

// WaitLease is Lease for remote runners: the request waits in line up to
// wait for the dispatcher (dispatch.go) to lease it a job that fits
// labels. A request whose client went away meanwhile gives its lease back.
func (s *Service) WaitLease(ctx context.Context, runner string, labels map[string]string, wait time.Duration) (*d5list.Lease, error) {
	ps, err := s.poolStore()
	if err != nil {
		return nil, err
	}
	if labels == nil {
		labels = map[string]string{}
	}
	if err := s.arrive(ctx, ps, runner, labels, wait); err != nil {
		return nil, err
	}
	w := &waiter{runner: runner, labels: labels, key: labelsKey(labels), arrived: time.Now(), done: make(chan leaseResult, 1)}
	start, ok := s.pool.join(w)
	if !ok {
		return nil, nil // shutting down
	}
	if start {
		go s.dispatch()
	}
	s.pool.wake()
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	var res leaseResult
	select {
	case res = <-w.done:
	case <-deadline.C:
		res = s.pool.leave(w)
	case <-s.pool.stopped:
		res = s.pool.leave(w)
	case <-ctx.Done():
		res = s.pool.leave(w)
		if res.lease != nil {
			s.giveBack(ctx, res.lease)
		}
		return nil, nil
	}
	if res.err != nil || res.lease == nil {
		return nil, res.err
	}
	lease := res.lease
	s.holds(context.WithoutCancel(ctx), ps, runner, lease.Job.ID)
	s.log.Info("job leased", "job", lease.Job.ID, "runner", runner, "attempt", lease.Job.Attempts)
	return lease, nil
}

// holds records that runner holds job jobID, for the runners page; a
// failure to record it is logged, since the lease stands either way.
func (s *Service) holds(ctx context.Context, ps PoolStore, runner string, jobID int64) {
	if err := ps.TouchRunner(ctx, runner, nil, jobID); err != nil {
		s.log.Warn("recording runner", "runner", runner, "err", err)
		return
	}
	s.touched(runner, jobID)
}

// giveBack returns a lease taken for a request that was cancelled before
// it could be answered. Without a store that can, the lease expires and
// the job is requeued then.
func (s *Service) giveBack(ctx context.Context, lease *d5list.Lease) {
	ds, ok := s.store.(DispatchStore)
	if !ok {
		return
	}
	err := ds.ReleaseLease(context.WithoutCancel(ctx), lease.Job.ID, lease.Secret, "the lease request ended before the lease reached the runner")
	if err != nil {
		s.log.Warn("giving back an undelivered lease", "job", lease.Job.ID, "runner", lease.Job.RunnerID, "err", err)
		return
	}
	s.changed()
	s.log.Info("undelivered lease given back", "job", lease.Job.ID, "runner", lease.Job.RunnerID)
	s.pool.wake()
}

// heldBy checks secret against the job's live lease and that one of the
// agents of the runner token tokenName holds it, and returns the agent.
func (s *Service) heldBy(ctx context.Context, tokenName string, jobID int64, secret string) (string, error) {
	job, err := s.heldJob(ctx, tokenName, jobID, secret)
	if err != nil {
		return "", err
	}
	return job.RunnerID, nil
}

func (s *Service) heldJob(ctx context.Context, tokenName string, jobID int64, secret string) (*d5list.Job, error) {
	job, err := s.store.CheckLease(ctx, jobID, secret)
	if err != nil {
		return nil, err
	}
	if !strings.HasPrefix(job.RunnerID, tokenName+"/") {
		return nil, d5list.Errorf(d5list.EFORBIDDEN, "job %d is held by another runner", jobID)
	}
	return job, nil
}

// RunnerHeartbeat renews the lease of a job the runner holds.
func (s *Service) RunnerHeartbeat(ctx context.Context, tokenName string, jobID int64, secret string) error {
	agent, err := s.heldBy(ctx, tokenName, jobID, secret)
	if err != nil {
		return err
	}
	if err := s.Heartbeat(ctx, jobID, secret); err != nil {
		return err
	}
	s.touch(ctx, agent, jobID)
	return nil
}

// RunnerComplete is Complete for a remote runner.
func (s *Service) RunnerComplete(ctx context.Context, tokenName string, jobID int64, secret string, logs []d5list.RunLog, labels map[string]string) error {
	agent, err := s.heldBy(ctx, tokenName, jobID, secret)
	if err != nil {
		return err
	}
	if err := s.Complete(ctx, jobID, secret, logs, labels); err != nil {
		return err
	}
	s.touch(ctx, agent, 0)
	return nil
}

// RunnerFail is Fail for a remote runner; a job with attempts left is
// queued again, so waiting runners are woken.
func (s *Service) RunnerFail(ctx context.Context, tokenName string, jobID int64, secret, message string) error {
	agent, err := s.heldBy(ctx, tokenName, jobID, secret)
	if err != nil {
		return err
	}
	if err := s.Fail(ctx, jobID, secret, message); err != nil {
		return err
	}
	s.pool.wake()
	s.touch(ctx, agent, 0)
	return nil
}

func (s *Service) touch(ctx context.Context, runner string, jobID int64) {
	ps, err := s.poolStore()
	if err == nil {
		err = ps.TouchRunner(context.WithoutCancel(ctx), runner, nil, jobID)
	}
	if err != nil {
		s.log.Warn("recording runner", "runner", runner, "err", err)
		return
	}
	s.touched(runner, jobID)
}

// BundlePath returns the file of the bundle of the job held under secret;
// only the current lease holder gets it.
func (s *Service) BundlePath(ctx context.Context, tokenName string, jobID int64, secret string) (string, error) {
	job, err := s.heldJob(ctx, tokenName, jobID, secret)
	if err != nil {
		return "", err
	}
	// heldJob also knows the lease whose report ended the job, so that a
	// repeated report is recognised; the bundle is for a live lease only.
	if job.State != d5list.JobLeased {
		return "", d5list.Errorf(d5list.ECONFLICT, "job %d is %s: its bundle is for the runner holding its lease", jobID, job.State)
	}
	sub, err := s.store.Submission(ctx, job.SubmissionID)
	if err != nil {
		return "", err
	}
	if sub.BundleSHA256 == "" || !s.blobs.Exists(sub.BundleSHA256) {
		return "", d5list.Errorf(d5list.ENOTFOUND, "job %d: submission %d has no stored bundle", jobID, sub.ID)
	}
	return s.blobs.Path(sub.BundleSHA256), nil
}

// CancelJob stops a job for good; the runner holding it learns on its next
// heartbeat and kills the work.
func (s *Service) CancelJob(ctx context.Context, user *d5list.User, jobID int64) error {
	if user == nil || !user.Role.AtLeast(d5list.RoleOrganiser) {
		return d5list.Errorf(d5list.EFORBIDDEN, "only organisers may cancel jobs")
	}
	ps, err := s.poolStore()
	if err != nil {
		return err
	}
	// The cancelled submission leaves the boards that include unverified
	// ones; the job id does not say which benchmark it was, and cancels
	// are rare.
	s.cache.BeginChangeAll()
	err = ps.CancelJob(ctx, jobID)
	s.cache.EndChangeAll()
	if err != nil {
		return err
	}
	s.changed()
	s.log.Info("job cancelled", "job", jobID, "by", user.Name)
	return nil
}

// Runners lists the pool, online runners first. A runner waiting in a
// lease request now is online and was last seen when it asked, which its
// row may not say yet (arrive writes it only every runnerFresh).
func (s *Service) Runners(ctx context.Context) ([]d5list.Runner, error) {
	ps, err := s.poolStore()
	if err != nil {
		return nil, err
	}
	runners, err := ps.Runners(ctx)
	if err != nil {
		return nil, err
	}
	waiting := s.pool.waitingSince()
	for i := range runners {
		if at, ok := waiting[runners[i].Name]; ok {
			runners[i].Online = true
			if at.After(runners[i].LastSeen) {
				runners[i].LastSeen = at.UTC()
			}
		}
	}
	sort.SliceStable(runners, func(i, j int) bool {
		if runners[i].Online != runners[j].Online {
			return runners[i].Online
		}
		return runners[i].Name < runners[j].Name
	})
	return runners, nil
}

// Queue returns the unfinished jobs and the backlog of each benchmark.
func (s *Service) Queue(ctx context.Context) (*d5list.QueueView, error) {
	ps, err := s.poolStore()
	if err != nil {
		return nil, err
	}
	jobs, err := ps.ActiveJobs(ctx)
	if err != nil {
		return nil, err
	}
	now := time.Now()
	byBench := map[string]*d5list.Backlog{}
	for _, j := range jobs {
		b := byBench[j.BenchmarkID]
		if b == nil {
			b = &d5list.Backlog{Benchmark: j.BenchmarkID}
			byBench[j.BenchmarkID] = b
		}
		if j.Position == 0 {
			b.Running++
			continue
		}
		b.Waiting++
		if b.Oldest.IsZero() || j.CreatedAt.Before(b.Oldest) {
			b.Oldest = j.CreatedAt
			b.OldestAgeSeconds = max(now.Sub(j.CreatedAt).Seconds(), 0)
		}
	}
	view := &d5list.QueueView{Backlog: []d5list.Backlog{}, Jobs: jobs}
	for _, b := range byBench {
		view.Backlog = append(view.Backlog, *b)
	}
	sort.Slice(view.Backlog, func(i, j int) bool { return view.Backlog[i].Benchmark < view.Backlog[j].Benchmark })
	return view, nil
}

// SubmissionJob returns the latest job of a submission with its place in
// the queue, or nil when it has none.
func (s *Service) SubmissionJob(ctx context.Context, submissionID int64) (*d5list.QueuedJob, error) {
	ps, err := s.poolStore()
	if err != nil {
		return nil, err
	}
	var last d5list.QueuedJob
	// The job itself is read fresh; only its place in line comes from the
	// shared snapshot. An expired lease is back in the line, as the store
	// counts it. A job the snapshot does not place was read before it
	// left the line (the snapshot is then newer than the read: position
	// takes a new one for an unplaced job), so it is read again rather
	// than shown waiting with no place. A job that leaves and rejoins the
	// line as fast as it is read shows its last state without a place.
	for range 3 {
		jobs, err := ps.Jobs(ctx, submissionID)
		if err != nil || len(jobs) == 0 {
			return nil, err
		}
		last = d5list.QueuedJob{Job: jobs[len(jobs)-1]}
		waiting := last.State == d5list.JobQueued ||
			(last.State == d5list.JobLeased && !last.LeaseExpires.After(s.queue.now()))
		if !waiting {
			break
		}
		if last.Position, err = s.queue.position(ctx, ps, last.ID); err != nil {
			return nil, err
		}
		if last.Position > 0 {
			break
		}
	}
	return &last, nil
}

// queueSnapshotAge is how long one listing of the active jobs answers
// every caller of SubmissionJob. Each open event stream asks for its place
// in line twice a second; 256 streams would otherwise list the whole queue
// 512 times a second. A place in line up to this old is good enough to
// show.
const queueSnapshotAge = 250 * time.Millisecond

// queueSnapshot is the places in line that SubmissionJob shares. Callers
// wait on its lock while one of them lists the queue, and all reuse that
// listing.
type queueSnapshot struct {
	mu     sync.Mutex
	now    func() time.Time // tests move the clock
	taken  time.Time
	places map[int64]int // job id -> place in line, waiting jobs only
}

// position returns the place in line of a job that waits. One the
// snapshot does not place (newer than it, or running when it was taken)
// takes a new snapshot, so a fresh upload never reads as running.
func (q *queueSnapshot) position(ctx context.Context, ps PoolStore, jobID int64) (int, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.now()
	if pos := q.places[jobID]; pos > 0 && now.Sub(q.taken) < queueSnapshotAge {
		return pos, nil
	}
	active, err := ps.ActiveJobs(ctx)
	if err != nil {
		return 0, err
	}
	q.places, q.taken = make(map[int64]int, len(active)), now
	for _, j := range active {
		if j.Position > 0 {
			q.places[j.ID] = j.Position
		}
	}
	return q.places[jobID], nil
}
