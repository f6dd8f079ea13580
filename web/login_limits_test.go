package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/web"
)

// accounts is handlers.Accounts under a name that does not clash with its
// own method Accounts when embedded.
type accounts = handlers.Accounts

// heldLogins is the store's accounts with each log-in's password check
// held until the test lets it go, counting the checks and the most at once.
type heldLogins struct {
	accounts
	entered chan struct{} // one value per check that started
	open    chan struct{} // closed to let every check go on
	opened  sync.Once
	mu      sync.Mutex
	in      int
	most    int
}

func holdLogins(c *web.Config) *heldLogins {
	h := &heldLogins{accounts: c.Browser.Accounts, entered: make(chan struct{}, 100), open: make(chan struct{})}
	c.Browser.Accounts = h
	return h
}

// release lets every held check go on.
func (h *heldLogins) release() { h.opened.Do(func() { close(h.open) }) }

func (h *heldLogins) Login(ctx context.Context, name, password string) (*d5list.User, error) {
	h.mu.Lock()
	h.in++
	h.most = max(h.most, h.in)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.in--
		h.mu.Unlock()
	}()
	h.entered <- struct{}{}
	<-h.open
	return h.accounts.Login(ctx, name, password)
}

// next is the next answer, within a time that only a hang exceeds.
func next(t *testing.T, answers <-chan *http.Response) *http.Response {
	t.Helper()
	select {
	case resp := <-answers:
		return resp
	case <-time.After(time.Minute):
		t.Fatal("no answer to a log-in within a minute")
		return nil
	}
}

// attempt posts a log-in and sends its answer on answers.
func attempt(p *realPortal, name, password string, answers chan<- *http.Response) {
	resp, err := http.DefaultTransport.RoundTrip(loginRequest(p.url, name, password))
	if err != nil {
		answers <- &http.Response{StatusCode: -1, Status: err.Error()}
		return
	}
	resp.Body.Close()
	answers <- resp
}

func loginRequest(base, name, password string) *http.Request {
	req, _ := http.NewRequest(http.MethodPost, base+"/login", strings.NewReader(url.Values{"name": {name}, "password": {password}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return req
}

// Each password check holds 64 MiB (argon2id): at most HashesAtOnce run
// at once, portal-wide, and the attempts past them wait their turn.
func TestPasswordHashesAtOnce(t *testing.T) {
	var held *heldLogins
	p := startReal(t, func(c *web.Config) {
		c.Browser.HashesAtOnce = 2
		held = holdLogins(c)
	})
	t.Cleanup(held.release) // before the server's Close, which waits for the held requests
	const attempts = 6
	answers := make(chan *http.Response, attempts)
	for i := range attempts {
		go attempt(p, "nobody-"+strconv.Itoa(i), "not the password", answers)
	}
	for range 2 {
		select {
		case <-held.entered:
		case <-time.After(time.Minute):
			t.Fatal("no password check started within a minute")
		}
	}
	select {
	case <-held.entered:
		t.Fatal("a third password check started while two were running")
	case <-time.After(300 * time.Millisecond):
	}
	held.release()
	for range attempts {
		if resp := next(t, answers); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("a failed log-in: %d %s, want 401", resp.StatusCode, resp.Status)
		}
	}
	if held.most != 2 {
		t.Errorf("%d password checks ran at once, want 2", held.most)
	}
}

// Many attempts at once on one name, even one no account has, are
// answered by the name's limit before their passwords are hashed: only
// the name's burst reaches the hash, the rest get a 429 with Retry-After
// while those are still running. A right password gives its token back.
func TestWrongPasswordsPerNameAnsweredBeforeHashing(t *testing.T) {
	var held *heldLogins
	p := startReal(t, func(c *web.Config) {
		c.Browser.AccountFailRate = handlers.RateLimit{Burst: 3, Every: time.Hour}
		c.Browser.HashesAtOnce = 8
		held = holdLogins(c)
	})
	t.Cleanup(held.release)
	const attempts = 8
	answers := make(chan *http.Response, attempts)
	for range attempts {
		go attempt(p, "Nobody", "not the password", answers)
	}
	for range attempts - 3 {
		resp := next(t, answers)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Fatalf("an attempt past the name's burst: %d %s, Retry-After %q; want 429 with Retry-After", resp.StatusCode, resp.Status, resp.Header.Get("Retry-After"))
		}
	}
	// The five over the burst are answered; the three within it may still
	// be on their way to the check, and no other request is left.
	for i := range 3 {
		select {
		case <-held.entered:
		case <-time.After(time.Minute):
			t.Fatalf("%d password checks started within a minute, want the name's burst of 3", i)
		}
	}
	if n := len(held.entered); n != 0 {
		t.Errorf("%d password checks started, want the name's burst of 3", 3+n)
	}
	held.release()
	for range 3 {
		if resp := next(t, answers); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("an attempt within the burst: %d %s, want 401", resp.StatusCode, resp.Status)
		}
	}

	for i := range 5 {
		go attempt(p, "competitor-user", "password of competitor-user", answers)
		if resp := next(t, answers); resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("right password %d on an account with a burst of 3: %d, want a log-in (303)", i+1, resp.StatusCode)
		}
	}
}
