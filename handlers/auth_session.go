package handlers

import (
	"context"
	"crypto/subtle"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/templates"
)

// Accounts is what browser accounts need from storage (the store
// implements it). Without it the account pages answer 503 and only API
// tokens authenticate.
type Accounts interface {
	SignUp(ctx context.Context, name, organisation, password string, approved bool) (*d5list.User, error)
	Login(ctx context.Context, name, password string) (*d5list.User, error)
	CreateSession(ctx context.Context, userID int64, ttl time.Duration) (cookie, csrf string, err error)
	SessionUser(ctx context.Context, cookie string) (*d5list.User, string, error)
	DeleteSession(ctx context.Context, cookie string) error
	CreateToken(ctx context.Context, userID int64, label string) (string, error)
	Tokens(ctx context.Context, userID int64) ([]d5list.APIToken, error)
	RevokeTokenOf(ctx context.Context, userID, tokenID int64) error
	Accounts(ctx context.Context) ([]d5list.Account, error)
	SetRole(ctx context.Context, userID int64, role d5list.Role) error
	Approve(ctx context.Context, userID int64) error
	UpsertBenchmarks(ctx context.Context, bs []d5list.Benchmark) error
	Submissions(ctx context.Context, f d5list.SubmissionFilter) ([]d5list.Submission, error)
	DailyQuota(ctx context.Context) (int, error)
}

// RunnerTokens is the runner pool's credentials, offered by stores that
// have one (migration 0002).
type RunnerTokens interface {
	CreateRunnerToken(ctx context.Context, name string) (string, error)
	RevokeRunnerToken(ctx context.Context, name string) error
}

// BrowserOptions tunes accounts, sessions and the browser pages.
type BrowserOptions struct {
	Accounts Accounts
	// Workloads are the builtin workloads the portal's runners run
	// (workloads.Names): the console refuses a benchmark that names
	// another. Nil checks nothing.
	Workloads []string
	// RequireApproval keeps new sign-ups from logging in until an
	// organiser approves them.
	RequireApproval bool
	// SecureCookies marks the session cookie Secure even when this server
	// sees plain HTTP (TLS ends at a proxy); requests over TLS always get it.
	SecureCookies bool
	// SessionTTL is how long a session lasts; 0 means 7 days.
	SessionTTL time.Duration
	// LoginRate and UploadRate bound attempts per client IP (login) and
	// per user (upload); zero values take the defaults below.
	LoginRate, UploadRate RateLimit
	// AccountFailRate bounds wrong passwords per account name, from all
	// addresses together.
	AccountFailRate RateLimit
	// HashesAtOnce bounds the password hashes (log-ins, sign-ups) computed
	// at once, each of which holds 64 MiB; 0 means DefaultHashesAtOnce.
	HashesAtOnce int
	// UploadsPerDay bounds one user's uploads (bundles and MLPerf checks,
	// refused ones included) per 24 hours; 0 means DefaultUploadsPerDay.
	UploadsPerDay int
	// UploadsInFlight bounds one user's uploads being read and checked at
	// once, and ChecksInFlight everybody's. Checking an upload holds its
	// files and parsed logs in memory (BENCHMARKS.md, "Upload check
	// memory"): CheckMemory bounds, in bytes, the sum of what the uploads
	// being checked may take (bundle.Limits.CheckMemory of each one's
	// size). Uploads past ChecksInFlight or CheckMemory wait their turn,
	// unread; past UploadsInFlight they get a 429. 0 means the defaults.
	UploadsInFlight, ChecksInFlight int
	CheckMemory                     int64
}

// SessionCookie names the session cookie. Its value is 256 random bits;
// the store keeps only their hash.
const SessionCookie = "d5_session"

// maxFormBytes bounds urlencoded form bodies (the benchmark editor is the
// largest form).
const maxFormBytes = 1 << 20

type sessionKey struct{}

type session struct {
	user *d5list.User
	csrf string
}

func sessionFrom(ctx context.Context) *session {
	s, _ := ctx.Value(sessionKey{}).(*session)
	return s
}

func (h *Handler) accounts() (Accounts, error) {
	if h.browser.Accounts == nil {
		return nil, d5list.Errorf(d5list.EUNAVAILABLE, "accounts are not available on this server")
	}
	return h.browser.Accounts, nil
}

// Session reads the session cookie and, for a live session, puts its user
// in the context for RequireRole and the pages. It is also where CSRF is
// stopped: an unsafe request that a session cookie authenticates must
// carry the session's token (the hidden form field "csrf" or the header
// X-CSRF-Token). Requests with a bearer token are not cookie-authenticated
// and are exempt; RequireRole then ignores the cookie.
func (h *Handler) Session(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if isForm(r) {
			r.Body = http.MaxBytesReader(w, r.Body, maxFormBytes)
		}
		c, err := r.Cookie(SessionCookie)
		if err != nil || c.Value == "" || h.browser.Accounts == nil {
			next.ServeHTTP(w, r)
			return
		}
		user, csrf, err := h.browser.Accounts.SessionUser(r.Context(), c.Value)
		if err != nil {
			if d5list.ErrorCode(err) != d5list.EUNAUTHORIZED {
				h.Error(w, r, err)
				return
			}
			// An ended session: forget the cookie and go on as a visitor.
			h.clearSessionCookie(w, r)
			next.ServeHTTP(w, r)
			return
		}
		_, hasBearer := bearerToken(r)
		if !hasBearer && !safeMethod(r.Method) && !csrfMatches(r, csrf) {
			h.Error(w, r, d5list.Errorf(d5list.EFORBIDDEN, "the form's CSRF token is missing or wrong; reload the page and try again"))
			return
		}
		ctx := context.WithValue(r.Context(), sessionKey{}, &session{user: user, csrf: csrf})
		ctx = templates.WithViewer(ctx, &templates.Viewer{Name: user.Name, Role: user.Role, CSRF: csrf})
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

func safeMethod(m string) bool {
	return m == http.MethodGet || m == http.MethodHead || m == http.MethodOptions
}

func isForm(r *http.Request) bool {
	return strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded")
}

func csrfMatches(r *http.Request, want string) bool {
	got := r.Header.Get("X-CSRF-Token")
	if got == "" && isForm(r) {
		got = r.PostFormValue("csrf")
	}
	return got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(want)) == 1
}

func (h *Handler) setSessionCookie(w http.ResponseWriter, r *http.Request, value string) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: value, Path: "/", HttpOnly: true,
		Secure: h.browser.SecureCookies || r.TLS != nil, SameSite: http.SameSiteLaxMode,
		MaxAge: int(h.browser.SessionTTL / time.Second),
	})
}

func (h *Handler) clearSessionCookie(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{
		Name: SessionCookie, Value: "", Path: "/", HttpOnly: true,
		Secure: h.browser.SecureCookies || r.TLS != nil, SameSite: http.SameSiteLaxMode, MaxAge: -1,
	})
}

// sessionUser is RequireRole's fallback when there is no bearer token.
func sessionUser(r *http.Request) *d5list.User {
	if s := sessionFrom(r.Context()); s != nil {
		return s.user
	}
	return nil
}

// toLogin sends a visitor who asked for a page that needs an account to
// the log-in form, which brings them back.
func toLogin(w http.ResponseWriter, r *http.Request) bool {
	if wantsJSON(r) || r.Method != http.MethodGet {
		return false
	}
	http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
	return true
}

// localPath keeps redirects after log-in on this site: p must be a plain
// path of it, or the redirect goes home. Browsers drop tabs and newlines
// anywhere in a URL and read a backslash as a slash, so "/\t/evil.example"
// and "/\evil.example" would both lead to evil.example; url.Parse refuses
// ASCII controls, and the rest is checked here.
func localPath(p string) string {
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.Opaque != "" ||
		!strings.HasPrefix(p, "/") || strings.HasPrefix(p, "//") ||
		strings.ContainsFunc(p, func(c rune) bool { return c == '\\' || unicode.IsControl(c) }) {
		return "/"
	}
	return p
}
