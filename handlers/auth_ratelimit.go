package handlers

import (
	"math"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	d5list "github.com/deep500/d5list"
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
// burst of 30 then one per 2 s.
var (
	DefaultLoginRate       = RateLimit{Burst: 10, Every: 6 * time.Second}
	DefaultAccountFailRate = RateLimit{Burst: 20, Every: time.Minute}
	DefaultUploadRate      = RateLimit{Burst: 30, Every: 2 * time.Second}
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
func (l *limiter) allow(key string) (bool, time.Duration) { return l.check(key, true) }

// open says whether key has a token left, without taking it.
func (l *limiter) open(key string) (bool, time.Duration) { return l.check(key, false) }

// spend takes a token for key if one is left.
func (l *limiter) spend(key string) { l.check(key, true) }

func (l *limiter) check(key string, take bool) (bool, time.Duration) {
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
	if take {
		b.tokens--
	}
	return true, 0
}

// browserState is BrowserOptions with its defaults and the limiters.
type browserState struct {
	BrowserOptions
	login, upload *limiter
	// accountFails counts wrong passwords per account name from every
	// address, so that a guesser with many addresses is slowed too; only
	// failures spend it, so nobody locks an account out by logging in.
	accountFails *limiter
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
	return browserState{BrowserOptions: o, login: newLimiter(o.LoginRate), upload: newLimiter(o.UploadRate),
		accountFails: newLimiter(o.AccountFailRate)}
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
		next.ServeHTTP(w, r)
	})
}

// clientIP is the connection's address. X-Forwarded-For is not trusted:
// any client could set it to slip out of its bucket.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
