package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/catalog"
	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/portal"
	"github.com/deep500/d5list/runner"
	"github.com/deep500/d5list/store"
	"github.com/deep500/d5list/sysinfo"
	"github.com/deep500/d5list/web"
	"github.com/deep500/d5list/workloads"
)

// serveConfig is everything `d5list serve` is told.
type serveConfig struct {
	Addr      string
	DataDir   string
	Runners   int
	Demo      bool
	MaxUpload int64
	// LeaseTTL is how long a runner holds a job without a heartbeat;
	// 0 means the portal's default (2 min).
	LeaseTTL time.Duration
	// RemeasureAfter and RemeasureElsewhere: when a verdict that rests on
	// timing alone has its timed runs measured again, and how long it
	// waits for another runner (portal.Config); 0 takes the defaults.
	RemeasureAfter, RemeasureElsewhere time.Duration
	// Accounts (issue 7): sign-ups wait for an organiser when
	// RequireApproval; SecureCookies marks the session cookie Secure
	// behind a TLS proxy; Quota is uploads per user, benchmark and day
	// (0: unlimited).
	RequireApproval bool
	SecureCookies   bool
	Quota           int
	// UploadsPerDay, UploadsInFlight, ChecksInFlight and CheckMemory
	// bound uploads (handlers.BrowserOptions); 0 takes the defaults.
	UploadsPerDay, UploadsInFlight, ChecksInFlight int
	CheckMemory                                    int64
	// KeepLogsDays prunes the re-run output lines of jobs that ended more
	// than this many days ago, hourly; 0 keeps them.
	KeepLogsDays int
	// SyntheticChanges writes this many made-up changes a second to
	// SyntheticBenchmark's board, of the kinds SyntheticKinds in turn
	// (portal.SyntheticChangeKinds), through the store methods of real
	// ones, on a data folder of synthetic submissions only, and tells
	// SyntheticOut of each: the load measurements of BENCHMARKS.md ("The
	// list at a million submissions").
	SyntheticChanges   float64
	SyntheticKinds     []string
	SyntheticBenchmark string
	SyntheticOut       io.Writer
	// PprofAddr, when set, serves Go's profiles (net/http/pprof) on a
	// listener of their own, apart from the portal's routes: the
	// measurements of BENCHMARKS.md profile the real server with it.
	PprofAddr string
	// Ready, when set, receives the bound address once the server listens
	// (tests bind 127.0.0.1:0).
	Ready func(addr string)
	// Notice, when set, receives plain lines for the person who started a
	// demo: where to open the portal, the demo entry, how to make an
	// organiser. Only with Demo, as a collector of the JSON logs on the
	// same stream would trip over them.
	Notice io.Writer
}

// localRunnerPrefix starts the ids of the portal's in-process runners;
// remote runners may not take it (runnerCmd).
const localRunnerPrefix = "local-"

func serveCmd(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("serve", stderr)
	cfg := serveConfig{}
	env := &envDefaults{}
	fs.StringVar(&cfg.Addr, "addr", envOr("D5LIST_ADDR", "127.0.0.1:8080"), "listen address")
	fs.StringVar(&cfg.DataDir, "data", envOr("D5LIST_DATA", "./data"), "data folder: SQLite database and bundle blobs")
	fs.IntVar(&cfg.Runners, "runners", env.Int("D5LIST_RUNNERS", 1), "in-process CPU runners (0: none)")
	fs.BoolVar(&cfg.Demo, "demo", env.Bool("D5LIST_DEMO", false), "create a demo competitor and submit a demo entry through the normal pipeline")
	fs.Int64Var(&cfg.MaxUpload, "max-upload", env.Int64("D5LIST_MAX_UPLOAD", 1<<30), "largest accepted bundle in bytes")
	fs.DurationVar(&cfg.LeaseTTL, "lease-ttl", env.Duration("D5LIST_LEASE_TTL", 2*time.Minute), "how long a runner holds a job without a heartbeat; a crashed runner's job is handed out again after it")
	fs.DurationVar(&cfg.RemeasureAfter, "remeasure-after", env.Duration("D5LIST_REMEASURE_AFTER", portal.DefaultRemeasureAfter), "a verdict that rests on timing alone has its timed runs measured again this long after (a busy moment of a runner passes)")
	fs.DurationVar(&cfg.RemeasureElsewhere, "remeasure-elsewhere", env.Duration("D5LIST_REMEASURE_ELSEWHERE", portal.DefaultRemeasureElsewhere), "then, for this long, only another runner than the last may measure them, where one that can is online")
	fs.BoolVar(&cfg.RequireApproval, "require-approval", env.Bool("D5LIST_REQUIRE_APPROVAL", false), "new sign-ups log in only once an organiser approved them")
	fs.BoolVar(&cfg.SecureCookies, "secure-cookies", env.Bool("D5LIST_SECURE_COOKIES", false), "mark the session cookie Secure (set it when TLS ends at a proxy)")
	fs.IntVar(&cfg.Quota, "quota", env.Int("D5LIST_QUOTA", 0), "submissions per user, benchmark and UTC day, e.g. 10; failed and rejected ones do not count (0: unlimited); a benchmark's daily_quota overrides it")
	fs.IntVar(&cfg.UploadsPerDay, "uploads-per-day", env.Int("D5LIST_UPLOADS_PER_DAY", handlers.DefaultUploadsPerDay), "uploads per user and 24 hours, refused ones included (bundles and MLPerf checks)")
	fs.IntVar(&cfg.UploadsInFlight, "uploads-in-flight", env.Int("D5LIST_UPLOADS_IN_FLIGHT", handlers.DefaultUploadsInFlight), "one user's uploads checked at once; more get a 429")
	fs.IntVar(&cfg.ChecksInFlight, "checks-in-flight", env.Int("D5LIST_CHECKS_IN_FLIGHT", handlers.DefaultChecksInFlight), "uploads checked at once by the portal; more wait for a slot")
	fs.Int64Var(&cfg.CheckMemory, "check-memory", env.Int64("D5LIST_CHECK_MEMORY", handlers.DefaultCheckMemory), "bytes of memory the uploads checked at once may take together, each counted at the most its size allows (about 200 MiB for the largest); more wait their turn")
	fs.IntVar(&cfg.KeepLogsDays, "keep-logs-days", env.Int("D5LIST_KEEP_LOGS_DAYS", 0), "delete the re-run output lines of jobs that ended more than this many days ago, hourly (0: keep them); verdicts and MLLOG logs are never deleted")
	fs.Float64Var(&cfg.SyntheticChanges, "synthetic-changes", 0, "load measurements only: made-up changes per second on a data folder from `admin seed-synthetic` (0: none), each told on stdout")
	kinds := fs.String("synthetic-kinds", strings.Join(portal.SyntheticChangeKinds, ","), "the kinds of --synthetic-changes, written in turn")
	fs.StringVar(&cfg.SyntheticBenchmark, "synthetic-benchmark", "l2-digits-mlp-cpu", "the benchmark of --synthetic-changes")
	fs.StringVar(&cfg.PprofAddr, "pprof", "", "measurements only: serve Go's profiles (/debug/pprof/) on this address, e.g. 127.0.0.1:6060 (never a public one)")
	level := fs.String("log-level", envOr("D5LIST_LOG_LEVEL", "info"), "debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := env.err(); err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(*level)); err != nil {
		return fmt.Errorf("serve: --log-level (D5LIST_LOG_LEVEL) %q: want debug, info, warn or error", *level)
	}
	cfg.SyntheticKinds, cfg.SyntheticOut, cfg.Notice = strings.Split(*kinds, ","), stdout, stderr
	return serve(ctx, cfg, newLeveledLogger(stderr, lv))
}

func serve(ctx context.Context, cfg serveConfig, log *slog.Logger) error {
	if cfg.KeepLogsDays < 0 {
		return fmt.Errorf("serve: --keep-logs-days (D5LIST_KEEP_LOGS_DAYS) must be 0 (keep) or a number of days, got %q", strconv.Itoa(cfg.KeepLogsDays))
	}
	db, err := store.Open(ctx, cfg.DataDir)
	if err != nil {
		return fmt.Errorf("opening %s: %w", cfg.DataDir, err)
	}
	defer db.Close()
	benchmarks, err := catalog.Benchmarks()
	if err != nil {
		return err
	}
	if err := db.UpsertBenchmarks(ctx, benchmarks); err != nil {
		return fmt.Errorf("seeding the catalogue: %w", err)
	}
	limits := bundle.DefaultLimits()
	limits.MaxArchiveBytes = cfg.MaxUpload
	metrics := web.NewMetrics(db, log)
	if err := db.SetDailyQuota(ctx, cfg.Quota); err != nil {
		return err
	}
	// Upload scratch lives under --data, emptied at start: what a portal
	// killed during an upload left is gone before it serves again.
	scratch := filepath.Join(cfg.DataDir, "scratch")
	if err := os.RemoveAll(scratch); err != nil {
		return fmt.Errorf("emptying %s: %w", scratch, err)
	}
	if err := os.MkdirAll(scratch, 0o700); err != nil {
		return err
	}
	// So are the bundles and re-run logs it stored without getting to
	// write their rows.
	if n, err := db.RemoveUnreferencedBlobs(ctx); err != nil {
		return err
	} else if n > 0 {
		log.Info("removed the blobs of uploads and verdicts the portal stopped during", "blobs", n)
	}
	svc := portal.New(store.Quota{DB: db}, blobStore{db.Blobs()}, portal.Config{Limits: limits, LeaseTTL: cfg.LeaseTTL, OnJobEnd: metrics.JobFinished,
		ReadRecipe: workloads.PlanRecipe, ScratchDir: scratch, RemeasureAfter: cfg.RemeasureAfter, RemeasureElsewhere: cfg.RemeasureElsewhere}, log)

	webCfg := web.Config{Addr: cfg.Addr, MaxUploadBytes: cfg.MaxUpload, Metrics: metrics, ScratchDir: scratch,
		Browser: handlers.BrowserOptions{Accounts: db, Workloads: workloads.Names(), RequireApproval: cfg.RequireApproval, SecureCookies: cfg.SecureCookies,
			UploadsPerDay: cfg.UploadsPerDay, UploadsInFlight: cfg.UploadsInFlight, ChecksInFlight: cfg.ChecksInFlight,
			CheckMemory: cfg.CheckMemory}}
	handler := web.New(webCfg, svc, log)
	// Each board's first reader after a start finds its rendering's
	// reads made once already.
	if err := warmBoards(ctx, svc, webCfg, log); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", cfg.Addr)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		// Uploads of large bundles take long; the body is bounded by size.
		ReadTimeout:  30 * time.Minute,
		WriteTimeout: 2 * time.Minute,
		IdleTimeout:  2 * time.Minute,
	}
	// Runners' lease requests wait up to 20 s for work; shutting down ends
	// them at once instead of waiting them out.
	srv.RegisterOnShutdown(svc.StopWaiting)

	work, stopWork := context.WithCancel(ctx)
	defer stopWork()
	var wg sync.WaitGroup
	if cfg.PprofAddr != "" {
		stop, err := servePprof(cfg.PprofAddr, log)
		if err != nil {
			return err
		}
		defer stop()
	}
	labels := sysinfo.Detect().Labels()
	heartbeat := 10 * time.Second
	if cfg.LeaseTTL > 0 && cfg.LeaseTTL/3 < heartbeat {
		heartbeat = cfg.LeaseTTL / 3
	}
	// The in-process runners' jobs ended with the process that ran them:
	// a portal that crashed or was killed gives them back uncounted, not
	// as an attempt of the competitor's.
	if n, err := db.RequeueLeasesOf(ctx, localRunnerPrefix, "the portal stopped during the re-run; not counted as an attempt"); err != nil {
		return err
	} else if n > 0 {
		log.Info("requeued the jobs the in-process runners held when the portal stopped", "jobs", n)
	}
	for i := range cfg.Runners {
		agent := &runner.Agent{
			ID: localRunnerPrefix + strconv.Itoa(i), Labels: labels, Queue: svc, Executor: runner.Builtin{},
			Poll: 500 * time.Millisecond, Heartbeat: heartbeat, Log: log,
		}
		wg.Go(func() { _ = agent.Run(work) })
	}
	if cfg.SyntheticChanges > 0 {
		changes, err := newSyntheticChanges(ctx, db, svc, cfg)
		if err != nil {
			return err
		}
		wg.Go(func() { changes.run(work, log) })
	}
	if cfg.KeepLogsDays > 0 {
		keep := time.Duration(cfg.KeepLogsDays) * 24 * time.Hour
		wg.Go(func() { pruneLogsEvery(work, db, keep, logPruneInterval, log) })
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	addr := ln.Addr().String()
	log.Info("d5list serving", "url", "http://"+addr, "data", cfg.DataDir, "runners", cfg.Runners)
	if cfg.Demo {
		notice := cfg.Notice
		if notice == nil {
			notice = io.Discard
		}
		fmt.Fprint(notice, demoNotice(browseURL(addr), cfg.DataDir))
		told := func(id int64) { fmt.Fprint(notice, demoEntryNotice(browseURL(addr), cfg.DataDir, id, cfg.Runners)) }
		wg.Go(func() {
			if err := runDemo(work, db, svc, log, told); err != nil && work.Err() == nil {
				log.Error("demo submission failed", "err", err)
			}
		})
	}
	if cfg.Ready != nil {
		cfg.Ready(addr)
	}
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	err = srv.Shutdown(shutdownCtx)
	stopWork()
	wg.Wait()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// The portal asks its store for most of these by type assertion, so a
// method that drifted apart would switch a feature off without a word; the
// build checks them here, where the two are wired together.
var (
	_ portal.Store         = store.Quota{}
	_ portal.PoolStore     = store.Quota{}
	_ portal.DispatchStore = store.Quota{}
	_ portal.ProgressStore = store.Quota{}
	_ portal.ReviewStore   = store.Quota{}
	_ portal.EditionStore  = store.Quota{}
)

// blobStore adapts the store's blob folder to the portal's interface.
type blobStore struct{ b *store.Blobs }

func (s blobStore) Create() (portal.BlobWriter, error) { return s.b.Create() }
func (s blobStore) Exists(sha string) bool             { return s.b.Exists(sha) }
func (s blobStore) Path(sha string) string             { return s.b.Path(sha) }
func (s blobStore) Remove(sha string) error            { return s.b.Remove(sha) }

func newLogger(w io.Writer) *slog.Logger { return newLeveledLogger(w, slog.LevelInfo) }

// newLeveledLogger logs text to a terminal and JSON lines elsewhere (log
// collectors); every line logged within a request carries its request_id.
func newLeveledLogger(w io.Writer, level slog.Level) *slog.Logger {
	opts := &slog.HandlerOptions{Level: level}
	var h slog.Handler = slog.NewJSONHandler(w, opts)
	if f, ok := w.(*os.File); ok && isTerminal(f) {
		h = slog.NewTextHandler(w, opts)
	}
	return slog.New(web.WithRequestIDs(h))
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func envOr(key, def string) string {
	if v, ok := os.LookupEnv(key); ok {
		return v
	}
	return def
}

// warmBoards renders each benchmark's default board page and JSON export
// once (web.WarmBoards), which reads what the list's pages keep in memory
// too, so that the first reader after a start waits for little of it.
func warmBoards(ctx context.Context, svc *portal.Service, cfg web.Config, log *slog.Logger) error {
	benches, err := svc.Benchmarks(ctx)
	if err != nil {
		return err
	}
	ids := make([]string, len(benches))
	for i, b := range benches {
		ids[i] = b.ID
	}
	return web.WarmBoards(ctx, cfg, svc, log, ids)
}
