package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"
)

// TestLoginReturnsOnlyToLocalPaths: the page a log-in returns to (?next=
// on the form, next in the post) is a plain path of this site, or else
// the home page. Browsers drop tabs and newlines anywhere in a URL and
// read a backslash as a slash, so each refused value below would lead off
// the site if it were kept.
func TestLoginReturnsOnlyToLocalPaths(t *testing.T) {
	p := startReal(t)
	cases := []struct{ next, want string }{
		{"/upload", "/upload"},
		{"/submissions/3?tab=log#runs", "/submissions/3?tab=log#runs"},
		// A percent-encoded tab stays encoded in a path: no browser reads
		// it as a slash.
		{"/%09/evil.example", "/%09/evil.example"},
		{"/\t/evil.example", "/"},
		{"/\n/evil.example", "/"},
		{"/\r\n/evil.example", "/"},
		{"/\t\t/evil.example", "/"},
		{"\t//evil.example", "/"},
		{"/x/\t/evil.example", "/"},
		{"//evil.example", "/"},
		{"///evil.example", "/"},
		{"/\\evil.example", "/"},
		{"/x\\..\\..\\evil.example", "/"},
		{"/\x00/evil.example", "/"},
		{"/\x7f/evil.example", "/"},
		{"/\u0085/evil.example", "/"}, // NEL, a C1 control
		{"https://evil.example/", "/"},
		{"javascript:alert(1)", "/"},
		{"/ok:path", "/ok:path"},
		{"evil.example", "/"},
		{" /upload", "/"},
		{"", "/"},
	}
	for _, c := range cases {
		resp, err := http.Get(p.url + "/login?next=" + url.QueryEscape(c.next))
		if err != nil {
			t.Fatal(err)
		}
		doc, err := goquery.NewDocumentFromReader(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := doc.Find(`[data-testid=login-form] input[name=next]`).Attr("value"); got != c.want {
			t.Errorf("GET /login?next=%q: the form returns to %q, want %q", c.next, got, c.want)
		}

		// The transport, not a client: a client refuses to parse a
		// Location with a control character, which is what is looked for.
		form := url.Values{"name": {"competitor-user"}, "password": {"password of competitor-user"}, "next": {c.next}}
		req, _ := http.NewRequest(http.MethodPost, p.url+"/login", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err = http.DefaultTransport.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != c.want {
			t.Errorf("log-in with next=%q: %d to %q, want 303 to %q", c.next, resp.StatusCode, resp.Header.Get("Location"), c.want)
		}
	}
}
