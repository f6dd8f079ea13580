// Package portal is the service behind the HTTP API and the runners: it
// takes uploads through the checks into storage and the queue, turns a
// runner's re-run logs into a verdict, and serves the ranked lists. It
// talks to storage through the interfaces below, defined here, where they
// are used.
package portal

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/leaderboard"
	"github.com/deep500/d5list/verifier"
)

// Store is the persistence the portal needs.
type Store interface {
	Benchmarks(ctx context.Context) ([]d5list.Benchmark, error)
	Benchmark(ctx context.Context, id string) (*d5list.Benchmark, error)
	UserByToken(ctx context.Context, token string) (*d5list.User, error)
	CreateSubmission(ctx context.Context, s *d5list.Submission) error
	Submission(ctx context.Context, id int64) (*d5list.Submission, error)
	Submissions(ctx context.Context, f d5list.SubmissionFilter) ([]d5list.Submission, error)
	LeaseJob(ctx context.Context, runnerID string, labels map[string]string, ttl time.Duration) (*d5list.Lease, error)
	HeartbeatJob(ctx context.Context, jobID int64, secret string, ttl time.Duration) error
	CheckLease(ctx context.Context, jobID int64, secret string) (*d5list.Job, error)
	CompleteJob(ctx context.Context, jobID int64, secret string, measured *d5list.Result, st d5list.Status, reasons []d5list.Reason) error
	FailJob(ctx context.Context, jobID int64, secret string, message string) error
}

// Blobs is the content-addressed file store for bundles.
type Blobs interface {
	Create() (BlobWriter, error)
	Exists(sha string) bool
	Path(sha string) string
	Remove(sha string) error
}

// BlobWriter receives one blob; Commit files it under its sha256.
type BlobWriter interface {
	io.Writer
	Sum() string // the sha256 of what was written so far
	Commit() (sha string, size int64, err error)
	Abort()
}

// Config tunes the service.
type Config struct {
	Limits   bundle.Limits
	LeaseTTL time.Duration // how long a runner holds a job without a heartbeat
	// OnJobEnd, when set, hears of each finished verification attempt: the
	// verdict's status or "failed", and the time since the job was queued
	// (for the metrics of issue 8).
	OnJobEnd func(outcome string, sinceQueued time.Duration)
	// ReadRecipe, when set, is the re-run's reading of a recipe: an upload
	// whose recipe it refuses is refused (verifier.Runnable).
	ReadRecipe verifier.RecipeReader
	// ScratchDir holds the folders a check unpacks (CheckMLPerf); "" is the
	// system's temporary folder.
	ScratchDir string
	// RemeasureAfter is how long the timed runs of a verdict that rests on
	// timing alone wait before they are measured again, and
	// RemeasureElsewhere how long after that they wait for another runner
	// than the last (remeasure.go); zero takes the defaults.
	RemeasureAfter, RemeasureElsewhere time.Duration
}

// Service implements the portal's use cases.
type Service struct {
	store Store
	blobs Blobs
	cfg   Config
	log   *slog.Logger
	cache *leaderboard.Cache
	pool  *dispatcher // lease requests waiting for a job (dispatch.go)
	list  listState   // the latest edition, for rank changes (list.go)
	queue queueSnapshot
	// changes counts the writes a submission's live view shows (queued,
	// leased, lines, verdict, review), so that event streams read the
	// store only when something changed (Changes).
	changes atomic.Uint64
	// elsewhere makes asking the store for other processes' commits and
	// dropping what they made stale one step (Current).
	elsewhere sync.Mutex
}

// New returns a Service. A zero Config gets the defaults. blobs may be
// nil for a service that takes no uploads and keeps no re-run logs (the
// tests of leasing, verdicts and pages).
func New(st Store, blobs Blobs, cfg Config, log *slog.Logger) *Service {
	if cfg.Limits == (bundle.Limits{}) {
		cfg.Limits = bundle.DefaultLimits()
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = 2 * time.Minute
	}
	if cfg.RemeasureAfter == 0 {
		cfg.RemeasureAfter = DefaultRemeasureAfter
	}
	if cfg.RemeasureElsewhere == 0 {
		cfg.RemeasureElsewhere = DefaultRemeasureElsewhere
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	s := &Service{store: st, blobs: blobs, cfg: cfg, log: log, cache: leaderboard.NewCache(), pool: newDispatcher(),
		queue: queueSnapshot{now: time.Now}}
	if n, ok := st.(BoardChangeNotifier); ok {
		n.NotifyBoardChanges(s.cache.BeginChange, s.boardChanged)
	}
	return s
}

// BoardChangeNotifier is asked of the store by type assertion: it tells
// the service of every benchmark whose boards a write of this process
// changed, whichever write it was (store.DB.NotifyBoardChanges), so that
// the cached boards follow the store, not a list of the service's calls.
type BoardChangeNotifier interface {
	NotifyBoardChanges(begin, end func(benchmarkID string))
}

// boardChanged drops a benchmark's cached boards once a write that changed
// them committed (the cache kept none since its BeginChange), and counts
// the change for the live views.
func (s *Service) boardChanged(benchmarkID string) {
	s.cache.EndChange(benchmarkID)
	s.changed()
}

// Authenticate returns the user owning an API token.
func (s *Service) Authenticate(ctx context.Context, token string) (*d5list.User, error) {
	if token == "" {
		return nil, d5list.Errorf(d5list.EUNAUTHORIZED, "an API token is required (Authorization: Bearer <token>)")
	}
	return s.store.UserByToken(ctx, token)
}

// Benchmarks lists the catalogue.
func (s *Service) Benchmarks(ctx context.Context) ([]d5list.Benchmark, error) {
	return s.store.Benchmarks(ctx)
}

// Benchmark returns one catalogue entry.
func (s *Service) Benchmark(ctx context.Context, id string) (*d5list.Benchmark, error) {
	return s.store.Benchmark(ctx, id)
}

// Submission returns one submission.
func (s *Service) Submission(ctx context.Context, id int64) (*d5list.Submission, error) {
	return s.store.Submission(ctx, id)
}

// Submit stores an uploaded bundle once it passes every static check, and
// queues its verification. A refused bundle leaves no row and no blob.
// Where the user uploaded the same files before (however packed) and that
// entry did not fail, nothing is stored or re-run: Submit returns that
// entry with repeated set.
func (s *Service) Submit(ctx context.Context, user *d5list.User, body io.Reader) (sub *d5list.Submission, repeated bool, err error) {
	if user == nil || !user.Role.AtLeast(d5list.RoleCompetitor) {
		return nil, false, d5list.Errorf(d5list.EFORBIDDEN, "only competitors may submit")
	}
	up, err := s.spool(body)
	if err != nil {
		return nil, false, err
	}
	sub, err = s.checkAndStore(ctx, user, up)
	var again *d5list.RepeatedUpload
	if errors.As(err, &again) {
		repeated = true
		sub, err = s.store.Submission(ctx, again.Existing)
		s.log.InfoContext(ctx, "upload repeats an entry", "id", again.Existing, "owner", user.Name)
	}
	if (err != nil || repeated) && !up.existed {
		// The same bytes may have been uploaded before; only a blob this
		// upload created is removed.
		if rmErr := s.blobs.Remove(up.sha); rmErr != nil {
			s.log.ErrorContext(ctx, "removing an unstored bundle", "sha256", up.sha, "err", rmErr)
		}
	}
	if err != nil {
		return nil, false, err
	}
	return sub, repeated, nil
}

func (s *Service) checkAndStore(ctx context.Context, user *d5list.User, up spooled) (*d5list.Submission, error) {
	b, err := up.bundle, up.readErr
	if !up.read {
		b, err = bundle.Open(s.blobs.Path(up.sha), s.cfg.Limits)
	}
	if err != nil {
		return nil, err
	}
	bench, err := s.store.Benchmark(ctx, b.Manifest.Benchmark)
	if d5list.ErrorCode(err) == d5list.ENOTFOUND {
		return nil, refused(d5list.Reason{Code: "unknown_benchmark", File: b.ManifestFile,
			Message: "benchmark " + quote(b.Manifest.Benchmark) + " is not in the catalogue"})
	} else if err != nil {
		return nil, err
	}
	claimed, reasons := verifier.Check(b, bench)
	reasons = append(reasons, verifier.Runnable(b, bench, claimed, s.cfg.ReadRecipe)...)
	if len(reasons) > 0 {
		return nil, refused(reasons...)
	}
	model, count := b.System.Accelerators()
	sub := &d5list.Submission{
		BenchmarkID:   bench.ID,
		OwnerID:       user.ID,
		Owner:         user.Name,
		Division:      b.Manifest.Division,
		Availability:  b.Manifest.Availability,
		Submitter:     b.Manifest.Submitter,
		SystemName:    b.Manifest.SystemName,
		Framework:     b.Manifest.Framework,
		Accelerator:   model,
		Accelerators:  count,
		Status:        d5list.StatusQueued,
		BundleSHA256:  up.sha,
		BundleSize:    up.size,
		Recipe:        &b.Recipe,
		Claimed:       claimed,
		Reasons:       []d5list.Reason{},
		HostCPU:       b.System.HostProcessorModelName,
		CodeURL:       b.Manifest.CodeURL,
		PaperURL:      b.Manifest.PaperURL,
		ContentSHA256: b.ContentSHA256,
		CostPerHour:   costPerHour(b.System.CostPerHour),
		System:        systemDescription(b.System),
	}
	if err := s.store.CreateSubmission(ctx, sub); err != nil {
		// The store names submission.json; the bundle may keep it in a folder.
		if rs := d5list.ErrorReasons(err); len(rs) > 0 {
			for i := range rs {
				rs[i].File = b.ManifestFile
			}
			return nil, refused(rs...)
		}
		return nil, err
	}
	s.changed()
	s.pool.wake()
	s.log.InfoContext(ctx, "submission queued", "id", sub.ID, "benchmark", bench.ID, "owner", user.Name, "bytes", up.size,
		"received_s", up.received.Seconds(), "synced_s", up.synced.Seconds())
	return sub, nil
}

func refused(reasons ...d5list.Reason) error {
	msg := reasons[0].Message
	if reasons[0].File != "" {
		msg = reasons[0].File + ": " + msg
	}
	if len(reasons) > 1 {
		if n := len(reasons) - 1; n == 1 {
			msg += " (and 1 more problem)"
		} else {
			msg += " (and " + itoa(n) + " more problems)"
		}
	}
	return &d5list.Error{Code: d5list.EINVALID, Message: msg, Reasons: reasons}
}

// Leaderboard ranks the verified submissions of a benchmark.
func (s *Service) Leaderboard(ctx context.Context, benchmarkID string) (*d5list.Leaderboard, error) {
	return s.rank(ctx, benchmarkID, leaderboard.Options{})
}

// Lease hands a runner the next job it can run, or nil when there is none.
func (s *Service) Lease(ctx context.Context, runnerID string, labels map[string]string) (*d5list.Lease, error) {
	// The in-process runners are on the runners page as remote ones are:
	// what they ask for with, and the job they hold.
	ps, poolErr := s.poolStore()
	if poolErr == nil {
		if err := s.arrive(ctx, ps, runnerID, labels, 0); err != nil {
			s.log.Warn("recording runner", "runner", runnerID, "err", err)
		}
	}
	// The boards this changes (the leased entry now running, and any
	// expired lease LeaseJob settles on the way) are dropped by the store's
	// notice of the write (boardChanged).
	lease, err := s.store.LeaseJob(ctx, runnerID, labels, s.cfg.LeaseTTL)
	if lease != nil {
		s.changed()
		if poolErr == nil {
			s.holds(ctx, ps, runnerID, lease.Job.ID)
		}
	}
	return lease, err
}

// Changes counts the writes that change what a submission's live view
// shows. Every such write of this process goes through the service; what
// it cannot see (a lease expiring, another process writing) a reader
// catches by reading again now and then anyway.
func (s *Service) Changes() uint64 { return s.changes.Load() }

func (s *Service) changed() { s.changes.Add(1) }

// Heartbeat extends a runner's lease; it fails once the job was cancelled.
func (s *Service) Heartbeat(ctx context.Context, jobID int64, secret string) error {
	return s.store.HeartbeatJob(ctx, jobID, secret, s.cfg.LeaseTTL)
}

// Fail reports a re-run that broke; the job is retried a bounded number of
// times.
func (s *Service) Fail(ctx context.Context, jobID int64, secret, message string) error {
	message = publicFailure(message)
	var queued time.Time
	if s.cfg.OnJobEnd != nil {
		if j, err := s.store.CheckLease(ctx, jobID, secret); err == nil {
			queued = j.CreatedAt
		}
	}
	// A job given up takes its submission off the boards that include
	// unverified ones; the job does not say which benchmark it was.
	s.cache.BeginChangeAll()
	err := s.store.FailJob(ctx, jobID, secret, message)
	s.cache.EndChangeAll()
	if err != nil {
		return err
	}
	s.changed()
	if s.cfg.OnJobEnd != nil && !queued.IsZero() {
		s.cfg.OnJobEnd("failed", time.Since(queued))
	}
	return nil
}

// maxFailureMessage bounds the public failure sentence.
const maxFailureMessage = 500

// publicFailure is what of a runner's failure message anyone may read: the
// queue, the audit page and the submission's public reasons show it. The
// run's output stays private: the runner streamed it to the submission's
// log, which only its owner and the organisers see, so the tail a runner
// appends is cut here, and a long message is cut to a sentence's length.
func publicFailure(message string) string {
	if i := strings.Index(message, d5list.FailureOutputMarker); i >= 0 {
		message = message[:i] + " (the run's output is in the submission's log)"
	}
	if len(message) > maxFailureMessage {
		cut := maxFailureMessage
		for cut > 0 && !utf8.RuneStart(message[cut]) {
			cut--
		}
		message = message[:cut] + "…"
	}
	return message
}
