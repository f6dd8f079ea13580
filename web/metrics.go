package web

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	d5list "github.com/deep500/d5list"
)

// MetricsSource is what the scrape-time collectors read: the job queue
// and the runner pool. Either method may be absent (nil source).
type MetricsSource interface {
	QueueStats(ctx context.Context) (queued int, oldest time.Time, err error)
	Runners(ctx context.Context) ([]d5list.Runner, error)
}

// Metrics is the portal's Prometheus registry. It uses the official client
// (exposition format, escaping, histogram buckets and the Go runtime
// collectors are its job, not ours). One Metrics serves one process.
type Metrics struct {
	reg         *prometheus.Registry
	httpSeconds *prometheus.HistogramVec
	bodyBytes   *prometheus.CounterVec
	jobSeconds  prometheus.Histogram
	jobs        prometheus.Counter
	// observers holds httpSeconds' series by routeKey.
	observers sync.Map
}

// NewMetrics registers the portal's series; src may be nil, in which case
// the queue and runner gauges are not exported.
func NewMetrics(src MetricsSource, log *slog.Logger) *Metrics {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		httpSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "d5list_http_request_duration_seconds",
			Help:    "HTTP request latency by chi route pattern, method and status class.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 120},
		}, []string{"route", "method", "code"}),
		bodyBytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "d5list_http_request_body_bytes_total",
			Help: "Request body bytes read, by route pattern; bundle uploads are route /api/v1/submissions.",
		}, []string{"route"}),
		jobSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "d5list_job_duration_seconds",
			Help: "Time from a job being queued to its verdict or failed attempt.",
			// Jobs range from a second (CPU digits) to days (GPU benchmarks).
			Buckets: prometheus.ExponentialBuckets(1, 4, 10),
		}),
		jobs: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "d5list_jobs_finished_total",
			Help: "Verification attempts finished (verdicts and failed attempts alike).",
		}),
	}
	m.reg.MustRegister(m.httpSeconds, m.bodyBytes, m.jobSeconds, m.jobs,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if src != nil {
		m.reg.MustRegister(&poolCollector{src: src, log: log})
	}
	return m
}

// Handler serves the registry in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// JobFinished records one finished verification attempt; it has the shape
// of portal.Config.OnJobEnd. The outcome is not exported: /metrics is
// public, and a verdict shown only to its competitor and the organisers
// (a discrepancy, a failure) would show its kind on the counter as the
// entry that was public while it ran disappears. Organisers read the
// verdicts in the console.
func (m *Metrics) JobFinished(_ string, sinceQueued time.Duration) {
	m.jobs.Inc()
	m.jobSeconds.Observe(sinceQueued.Seconds())
}

// Middleware times each request under its route pattern, not its path, so
// that /submissions/1 and /submissions/2 are one series and the label set
// stays bounded. It must sit outside the router so that chi has filled in
// the pattern by the time the handler returns.
func (m *Metrics) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rec, ok := w.(*recorder)
		if !ok {
			rec = &recorder{ResponseWriter: w}
		}
		var body *countingBody
		if r.Body != nil && r.Body != http.NoBody {
			body = &countingBody{ReadCloser: r.Body}
			r.Body = body
		}
		defer func() {
			status := rec.status
			if status == 0 {
				status = http.StatusOK
			}
			key := routeKey{method: methodLabel(r.Method), class: status / 100}
			rc := chi.RouteContext(r.Context())
			if rc != nil && len(rc.RoutePatterns) <= len(key.patterns) {
				copy(key.patterns[:], rc.RoutePatterns)
			} else if rc != nil {
				key.joined = rc.RoutePattern()
			}
			m.observer(key, rc).Observe(time.Since(start).Seconds())
			if body != nil && body.n > 0 {
				if route := routeLabel(rc); !runnerRoute(route) {
					m.bodyBytes.WithLabelValues(route).Add(float64(body.n))
				}
			}
		}()
		next.ServeHTTP(rec, r)
	})
}

// routeKey is what one series of the request histogram is found by: chi's
// route patterns as they are (deeper nestings than fit: joined), the
// method and the status class. Looking it up costs a map read, where the
// labels themselves cost joining the patterns, formatting the class and
// hashing the three strings in the vector on every request.
type routeKey struct {
	patterns [4]string
	joined   string
	method   string
	class    int
}

// observer is the histogram series of key, found once per key.
func (m *Metrics) observer(key routeKey, rc *chi.Context) prometheus.Observer {
	if o, ok := m.observers.Load(key); ok {
		return o.(prometheus.Observer)
	}
	var o prometheus.Observer = prometheus.ObserverFunc(func(float64) {})
	if route := routeLabel(rc); !runnerRoute(route) {
		o = m.httpSeconds.WithLabelValues(route, key.method, strconv.Itoa(key.class)+"xx")
	}
	m.observers.Store(key, o)
	return o
}

// runnerRoute reports whether route is the runner API's, which the public
// series leave out: a runner reports a job's end on its own route, fail or
// complete, so their counts (and their bodies' sizes, a failure's sentence
// against a re-run's logs) would tell a visitor whether an entry that
// disappeared failed or got a discrepancy.
func runnerRoute(route string) bool {
	return strings.HasPrefix(route, "/api/v1/runner/")
}

// routeLabel is the route pattern of a request, "unmatched" for none.
func routeLabel(rc *chi.Context) string {
	if rc != nil {
		if p := rc.RoutePattern(); p != "" {
			return p
		}
	}
	return "unmatched"
}

// methodLabel keeps the method label to the methods HTTP defines: a
// client may send any token as a method, and each would otherwise be a
// series of its own (and an entry of the observers' map) for good.
func methodLabel(method string) string {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return method
	}
	return "other"
}

type countingBody struct {
	io.ReadCloser
	n int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	return n, err
}

// poolCollector reads the queue and the runners at scrape time, so that
// the gauges are never stale and nothing has to be kept in step.
type poolCollector struct {
	src MetricsSource
	log *slog.Logger
}

var (
	queueDepthDesc = prometheus.NewDesc("d5list_queue_depth",
		"Jobs waiting for a runner (queued, or leased with an expired lease).", nil, nil)
	queueOldestDesc = prometheus.NewDesc("d5list_queue_oldest_job_age_seconds",
		"Age of the oldest waiting job; 0 when none waits.", nil, nil)
	runnersDesc = prometheus.NewDesc("d5list_runners",
		"Runner agents known to the portal, by whether they were seen recently.", []string{"state"}, nil)
)

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- queueDepthDesc
	ch <- queueOldestDesc
	ch <- runnersDesc
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if n, oldest, err := c.src.QueueStats(ctx); err != nil {
		c.log.Warn("metrics: queue stats", "err", err)
		ch <- prometheus.NewInvalidMetric(queueDepthDesc, err)
	} else {
		age := 0.0
		if !oldest.IsZero() {
			age = time.Since(oldest).Seconds()
		}
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(n))
		ch <- prometheus.MustNewConstMetric(queueOldestDesc, prometheus.GaugeValue, age)
	}
	runners, err := c.src.Runners(ctx)
	if err != nil {
		c.log.Warn("metrics: runners", "err", err)
		ch <- prometheus.NewInvalidMetric(runnersDesc, err)
		return
	}
	online := 0
	for _, r := range runners {
		if r.Online {
			online++
		}
	}
	ch <- prometheus.MustNewConstMetric(runnersDesc, prometheus.GaugeValue, float64(online), "online")
	ch <- prometheus.MustNewConstMetric(runnersDesc, prometheus.GaugeValue, float64(len(runners)-online), "offline")
}
