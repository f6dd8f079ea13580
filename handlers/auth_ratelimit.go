package handlers

import (
	"fmt"
	"math"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
)

// RateLimit is a token bucket: Burst attempts at once, refilled at one
// per Every.
type RateLimit struct {
	Burst int
	Every time.Duration
}

// Defaults: a person mistyping a password is not slowed; a guesser gets
// one try every 6 s from one address, and one wrong password a minute on
// one account from all addresses together, after 20. Uploads allow a
// burst of 30 then one per 2 s, and 200 a day; two of one user's and
// eight in all are checked at once, within 768 MiB of what their checks
// may hold (bundle.Limits.CheckMemory: some 200 MiB for the largest,
// three of those at once; BENCHMARKS.md, "Upload check memory").
// Two password hashes are computed at once, 64 MiB each (argon2id): more
// attempts wait their turn rather than each taking its 64 MiB.
var (
	DefaultLoginRate       = RateLimit{Burst: 10, Every: 6 * time.Second}
	DefaultAccountFailRate = RateLimit{Burst: 20, Every: time.Minute}
	DefaultUploadRate      = RateLimit{Burst: 30, Every: 2 * time.Second}
)

// Upload limits by default (BrowserOptions): per account a day and at
// once, and portal-wide at once.
const (
	DefaultUploadsPerDay   = 200
	DefaultUploadsInFlight = 2
	DefaultChecksInFlight  = 8
	DefaultCheckMemory     = 768 << 20
	DefaultHashesAtOnce    = 2
)

type bucket struct {
	tokens float64
	last   time.Time
}

// limiter holds one bucket per key (client IP or user id). Full buckets
// are dropped now and then, so the map stays as large as the active keys.
type limiter struct {
	rate    RateLimit
	mu      sync.Mutex
	buckets map[string]*bucket
	swept   time.Time
	now     func() time.Time
}

func newLimiter(r RateLimit) *limiter {
	return &limiter{rate: r, buckets: map[string]*bucket{}, now: time.Now}
}

// allow takes a token for key, or says how long until one is back.
func (l *limiter) allow(key string) (bool, time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	full := float64(l.rate.Burst)
	if now.Sub(l.swept) > time.Minute {
		for k, b := range l.buckets {
			if b.tokens+now.Sub(b.last).Seconds()/l.rate.Every.Seconds() >= full {
				delete(l.buckets, k)
			}
		}
		l.swept = now
	}
	b := l.buckets[key]
	if b == nil {
		b = &bucket{tokens: full, last: now}
		l.buckets[key] = b
	}
	b.tokens = math.Min(full, b.tokens+now.Sub(b.last).Seconds()/l.rate.Every.Seconds())
	b.last = now
	if b.tokens < 1 {
		return false, time.Duration((1 - b.tokens) * float64(l.rate.Every))
	}
	b.tokens--
	return true, 0
}

// refund gives back a token that allow took for key.
func (l *limiter) refund(key string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.buckets[key]; b != nil {
		b.tokens = math.Min(float64(l.rate.Burst), b.tokens+1)
	}
}

// browserState is BrowserOptions with its defaults and the limiters.
type browserState struct {
	BrowserOptions
	login, upload *limiter
	// accountFails counts wrong passwords per account name, existing or
	// not, from every address, so that a guesser with many addresses is
	// slowed too. A token is taken before the password is hashed and given
	// back unless the password was wrong: many attempts at once on one
	// name are answered before they are hashed, and nobody locks an
	// account out by logging in.
	accountFails *limiter
	// hashes bounds the password hashes computed at once, portal-wide.
	hashes    *budget
	uploadDay *limiter
	inFlight  *inFlight
	// checks holds a token per upload being checked, portal-wide, and
	// checkMemory the most memory each of them may take.
	checks      chan struct{}
	checkMemory *budget
}

func newBrowserState(o BrowserOptions) browserState {
	if o.SessionTTL <= 0 {
		o.SessionTTL = 7 * 24 * time.Hour
	}
	if o.LoginRate.Burst <= 0 || o.LoginRate.Every <= 0 {
		o.LoginRate = DefaultLoginRate
	}
	if o.UploadRate.Burst <= 0 || o.UploadRate.Every <= 0 {
		o.UploadRate = DefaultUploadRate
	}
	if o.AccountFailRate.Burst <= 0 || o.AccountFailRate.Every <= 0 {
		o.AccountFailRate = DefaultAccountFailRate
	}
	if o.UploadsPerDay <= 0 {
		o.UploadsPerDay = DefaultUploadsPerDay
	}
	if o.UploadsInFlight <= 0 {
		o.UploadsInFlight = DefaultUploadsInFlight
	}
	if o.ChecksInFlight <= 0 {
		o.ChecksInFlight = DefaultChecksInFlight
	}
	if o.CheckMemory <= 0 {
		o.CheckMemory = DefaultCheckMemory
	}
	if o.HashesAtOnce <= 0 {
		o.HashesAtOnce = DefaultHashesAtOnce
	}
	return browserState{BrowserOptions: o, login: newLimiter(o.LoginRate), upload: newLimiter(o.UploadRate),
		accountFails: newLimiter(o.AccountFailRate), hashes: newBudget(int64(o.HashesAtOnce)),
		uploadDay: newLimiter(RateLimit{Burst: o.UploadsPerDay, Every: 24 * time.Hour / time.Duration(o.UploadsPerDay)}),
		inFlight:  &inFlight{max: o.UploadsInFlight, held: map[string]int{}},
		checks:    make(chan struct{}, o.ChecksInFlight), checkMemory: newBudget(o.CheckMemory)}
}

func (h *Handler) refuseLimited(w http.ResponseWriter, r *http.Request, wait time.Duration, what string) {
	w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(wait.Seconds()))))
	h.Error(w, r, d5list.Errorf(d5list.ELIMIT, "too many %s; try again in %d s", what, int(math.Ceil(wait.Seconds()))))
}

// LimitUploads bounds uploads per user; it runs after RequireRole.
func (h *Handler) LimitUploads(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		key := r.RemoteAddr
		if u := userFrom(r.Context()); u != nil {
			key = "user:" + strconv.FormatInt(u.ID, 10)
		}
		if ok, wait := h.browser.upload.allow(key); !ok {
			h.refuseLimited(w, r, wait, "uploads")
			return
		}
		if ok, wait := h.browser.uploadDay.allow(key); !ok {
			h.refuseLimited(w, r, wait, fmt.Sprintf("uploads today (%d a day)", h.browser.UploadsPerDay))
			return
		}
		if !h.browser.inFlight.take(key) {
			w.Header().Set("Retry-After", "10")
			h.Error(w, r, d5list.Errorf(d5list.ELIMIT, "%d uploads of yours are being checked; send the next one when one of them has been answered", h.browser.UploadsInFlight))
			return
		}
		defer h.browser.inFlight.give(key)
		select {
		case h.browser.checks <- struct{}{}:
			defer func() { <-h.browser.checks }()
		case <-r.Context().Done():
			return
		}
		// Weighed by its declared size, the largest for a body without one:
		// the upload is not read until its check fits.
		size := r.ContentLength
		if size < 0 {
			size = h.opts.MaxUploadBytes
		}
		release, err := h.browser.checkMemory.hold(r.Context(), bundle.DefaultLimits().CheckMemory(size))
		if err != nil {
			return
		}
		defer release()
		next.ServeHTTP(w, r)
	})
}

// inFlight counts the requests each key has in progress.
type inFlight struct {
	max  int
	mu   sync.Mutex
	held map[string]int
}

func (f *inFlight) take(key string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held[key] >= f.max {
		return false
	}
	f.held[key]++
	return true
}

func (f *inFlight) give(key string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.held[key]--; f.held[key] <= 0 {
		delete(f.held, key)
	}
}

// clientIP is the connection's address, an IPv6 one as its /64: a
// network hands each client a /64 at least, and each of its addresses
// would otherwise have a bucket of its own. X-Forwarded-For is not
// trusted: any client could set it to slip out of its bucket.
func clientIP(r *http.Request) string {
	addr, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	ip := addr.Addr().Unmap()
	if ip.Is4() {
		return ip.String()
	}
	prefix, _ := ip.Prefix(64)
	return prefix.String()
}
