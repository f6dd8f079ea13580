package web_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"math"
	"mime/multipart"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/web"
)

type server struct {
	http.Handler
	fake *fakeService
	logs *syncBuffer
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newServer(t *testing.T, maxUpload int64) *server {
	t.Helper()
	fake := newFake()
	logs := &syncBuffer{}
	h := web.New(web.Config{Addr: "127.0.0.1:0", MaxUploadBytes: maxUpload}, fake, slog.New(slog.NewJSONHandler(logs, nil)))
	return &server{Handler: h, fake: fake, logs: logs}
}

func (s *server) do(req *http.Request) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return rec
}

func (s *server) get(path string) *httptest.ResponseRecorder {
	return s.do(httptest.NewRequest(http.MethodGet, path, nil))
}

type apiErr struct {
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Reasons []d5list.Reason `json:"reasons"`
}

// decodeError checks the error body has exactly the documented shape.
func decodeError(t *testing.T, rec *httptest.ResponseRecorder) apiErr {
	t.Helper()
	if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Fatalf("error Content-Type %q, want JSON; body %s", ct, rec.Body)
	}
	var raw map[string]map[string]json.RawMessage
	if err := json.Unmarshal(rec.Body.Bytes(), &raw); err != nil {
		t.Fatalf("error body %s: %v", rec.Body, err)
	}
	if len(raw) != 1 || raw["error"] == nil {
		t.Fatalf("error body %s, want one key \"error\"", rec.Body)
	}
	for _, k := range []string{"code", "message", "reasons"} {
		if _, ok := raw["error"][k]; !ok {
			t.Fatalf("error body %s lacks %q", rec.Body, k)
		}
	}
	if string(raw["error"]["reasons"]) == "null" {
		t.Fatalf("error body %s: reasons is null, want a list", rec.Body)
	}
	var body struct{ Error apiErr }
	_ = json.Unmarshal(rec.Body.Bytes(), &body)
	return body.Error
}

// bundleBytes stands for a tar.gz: binary, with CR LF and dashes that a
// multipart parser must not take for framing.
func bundleBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i/251)
	}
	copy(b, "\x1f\x8b\r\n--boundary\r\n")
	return b
}

func multipartBody(t *testing.T, fields map[string]string, file string, data []byte) (*bytes.Buffer, string) {
	t.Helper()
	var buf bytes.Buffer
	mw := multipart.NewWriter(&buf)
	for k, v := range fields {
		if err := mw.WriteField(k, v); err != nil {
			t.Fatal(err)
		}
	}
	if file != "" {
		fw, err := mw.CreateFormFile(file, "bundle.tar.gz")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = fw.Write(data)
	}
	if err := mw.Close(); err != nil {
		t.Fatal(err)
	}
	return &buf, mw.FormDataContentType()
}

func upload(body io.Reader, contentType, token string) *http.Request {
	req := httptest.NewRequest(http.MethodPost, "/api/v1/submissions", body)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	return req
}

func TestUploadNeedsACompetitorToken(t *testing.T) {
	tests := []struct {
		name   string
		auth   string
		status int
		code   string
	}{
		{"no header", "", 401, d5list.EUNAUTHORIZED},
		{"wrong token", "Bearer d5_wrong", 401, d5list.EUNAUTHORIZED},
		{"not a bearer token", "Basic YWxpY2U6cHc=", 401, d5list.EUNAUTHORIZED},
		{"empty bearer", "Bearer ", 401, d5list.EUNAUTHORIZED},
		{"token the service does not find", "Bearer d5_revoked", 401, d5list.EUNAUTHORIZED},
		{"public role", "Bearer d5_viewer", 403, d5list.EFORBIDDEN},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, 0)
			rec := s.do(upload(bytes.NewReader(bundleBytes(64)), "application/gzip", tt.auth))
			e := decodeError(t, rec)
			if rec.Code != tt.status || e.Code != tt.code {
				t.Fatalf("got %d %q (%s), want %d %q", rec.Code, e.Code, e.Message, tt.status, tt.code)
			}
			if tt.status == 401 && rec.Header().Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
			if s.fake.submits != 0 {
				t.Errorf("Submit was called %d times for a refused caller", s.fake.submits)
			}
		})
	}
}

func TestUploadAccepted(t *testing.T) {
	data := bundleBytes(300_000)
	tests := []struct {
		name        string
		body        func(t *testing.T) (io.Reader, string)
		contentType string
	}{
		{"multipart bundle field after another field", func(t *testing.T) (io.Reader, string) {
			return multipartBody(t, map[string]string{"note": "first"}, "bundle", data)
		}, ""},
		{"raw application/gzip", func(*testing.T) (io.Reader, string) { return bytes.NewReader(data), "application/gzip" }, ""},
		{"raw application/x-gzip", func(*testing.T) (io.Reader, string) { return bytes.NewReader(data), "application/x-gzip" }, ""},
		{"raw application/octet-stream", func(*testing.T) (io.Reader, string) { return bytes.NewReader(data), "application/octet-stream" }, ""},
		{"raw application/zip", func(*testing.T) (io.Reader, string) { return bytes.NewReader(data), "application/zip" }, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, 0)
			body, ct := tt.body(t)
			rec := s.do(upload(body, ct, "Bearer d5_alice"))
			if rec.Code != http.StatusCreated {
				t.Fatalf("status %d, body %s", rec.Code, rec.Body)
			}
			if !bytes.Equal(s.fake.received, data) {
				t.Fatalf("service received %d bytes, want the %d uploaded ones unchanged", len(s.fake.received), len(data))
			}
			var got struct {
				ID     int64         `json:"id"`
				Status d5list.Status `json:"status"`
				URL    string        `json:"url"`
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			if got.ID != s.fake.nextID || got.Status != d5list.StatusQueued || got.URL != "/submissions/101" {
				t.Fatalf("answer %+v, want id %d queued at /submissions/101", got, s.fake.nextID)
			}
			if loc := rec.Header().Get("Location"); loc != "/api/v1/submissions/101" {
				t.Fatalf("Location %q", loc)
			}
		})
	}
}

func TestUploadRefusedBodies(t *testing.T) {
	noBundle, noBundleType := multipartBody(t, map[string]string{"note": "x"}, "", nil)
	wrongField, wrongFieldType := multipartBody(t, nil, "file", []byte("data"))
	tests := []struct {
		name        string
		body        io.Reader
		contentType string
		status      int
		code        string
	}{
		{"no content type", strings.NewReader("x"), "", 415, "unsupported_media_type"},
		{"text/plain", strings.NewReader("x"), "text/plain", 415, "unsupported_media_type"},
		{"application/json", strings.NewReader(`{}`), "application/json", 415, "unsupported_media_type"},
		{"urlencoded form", strings.NewReader("bundle=x"), "application/x-www-form-urlencoded", 415, "unsupported_media_type"},
		{"unparsable content type", strings.NewReader("x"), "multipart/form-data; boundary", 400, d5list.EINVALID},
		{"multipart without boundary", strings.NewReader("x"), "multipart/form-data", 400, d5list.EINVALID},
		{"multipart without any file", noBundle, noBundleType, 400, d5list.EINVALID},
		{"multipart file under another name", wrongField, wrongFieldType, 400, d5list.EINVALID},
		{"multipart broken framing", strings.NewReader("not multipart at all"), "multipart/form-data; boundary=xyz", 400, d5list.EINVALID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, 0)
			rec := s.do(upload(tt.body, tt.contentType, "Bearer d5_alice"))
			e := decodeError(t, rec)
			if rec.Code != tt.status || e.Code != tt.code {
				t.Fatalf("got %d %q (%s), want %d %q", rec.Code, e.Code, e.Message, tt.status, tt.code)
			}
			if e.Message == "" {
				t.Error("error without a message")
			}
			if s.fake.submits != 0 {
				t.Errorf("Submit called for a refused body")
			}
		})
	}
}

func TestUploadOverTheLimit(t *testing.T) {
	const limit = 4096
	big := bundleBytes(3 * limit)
	tests := []struct {
		name        string
		body        func(t *testing.T) (io.Reader, string)
		knownLength bool
	}{
		{"raw with Content-Length", func(*testing.T) (io.Reader, string) { return bytes.NewReader(big), "application/gzip" }, true},
		{"raw chunked", func(*testing.T) (io.Reader, string) { return bytes.NewReader(big), "application/gzip" }, false},
		{"multipart chunked", func(t *testing.T) (io.Reader, string) { return multipartBody(t, nil, "bundle", big) }, false},
		{"multipart with a big field before the bundle", func(t *testing.T) (io.Reader, string) {
			return multipartBody(t, map[string]string{"a": string(big)}, "bundle", []byte("small"))
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newServer(t, limit)
			body, ct := tt.body(t)
			req := upload(body, ct, "Bearer d5_alice")
			if !tt.knownLength {
				req.ContentLength = -1
			}
			rec := s.do(req)
			e := decodeError(t, rec)
			if rec.Code != http.StatusRequestEntityTooLarge || e.Code != d5list.ETOOLARGE {
				t.Fatalf("got %d %q (%s), want 413 too_large", rec.Code, e.Code, e.Message)
			}
			if len(s.fake.received) > 0 {
				t.Fatalf("service kept %d bytes of an over-long body", len(s.fake.received))
			}
		})
	}

	t.Run("just under the limit passes", func(t *testing.T) {
		s := newServer(t, limit)
		data := bundleBytes(limit)
		rec := s.do(upload(bytes.NewReader(data), "application/gzip", "Bearer d5_alice"))
		if rec.Code != http.StatusCreated || !bytes.Equal(s.fake.received, data) {
			t.Fatalf("status %d, received %d bytes; body %s", rec.Code, len(s.fake.received), rec.Body)
		}
	})
}

func TestErrorCodesMapToStatuses(t *testing.T) {
	tests := []struct {
		code   string
		status int
	}{
		{d5list.EINVALID, 400},
		{d5list.EUNAUTHORIZED, 401},
		{d5list.EFORBIDDEN, 403},
		{d5list.ENOTFOUND, 404},
		{d5list.ECONFLICT, 409},
		{d5list.ETOOLARGE, 413},
		{d5list.ELIMIT, 429},
		{d5list.EUNAVAILABLE, 503},
		{d5list.EINTERNAL, 500},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			s := newServer(t, 0)
			line := 3
			s.fake.fail = &d5list.Error{Code: tt.code, Message: "the message of " + tt.code,
				Reasons: []d5list.Reason{{Code: "r1", Message: "first reason", File: "results/result_0.txt", Line: line}}}
			rec := s.get("/api/v1/benchmarks")
			e := decodeError(t, rec)
			if rec.Code != tt.status || e.Code != tt.code {
				t.Fatalf("got %d %q, want %d %q", rec.Code, e.Code, tt.status, tt.code)
			}
			if tt.code == d5list.EINTERNAL {
				if e.Message != "internal error" || len(e.Reasons) != 0 {
					t.Fatalf("internal error shows %q %+v", e.Message, e.Reasons)
				}
				return
			}
			if e.Message != "the message of "+tt.code {
				t.Fatalf("message %q", e.Message)
			}
			if len(e.Reasons) != 1 || e.Reasons[0].Code != "r1" || e.Reasons[0].File != "results/result_0.txt" || e.Reasons[0].Line != line {
				t.Fatalf("reasons %+v", e.Reasons)
			}
		})
	}

	t.Run("a plain error is internal, hidden and logged", func(t *testing.T) {
		s := newServer(t, 0)
		s.fake.fail = errors.New("sqlite: disk I/O error at /var/secret/d5list.db")
		rec := s.get("/api/v1/submissions/7")
		e := decodeError(t, rec)
		if rec.Code != 500 || e.Code != d5list.EINTERNAL || strings.Contains(rec.Body.String(), "secret") {
			t.Fatalf("got %d %s", rec.Code, rec.Body)
		}
		if !strings.Contains(s.logs.String(), "/var/secret/d5list.db") {
			t.Fatalf("internal error not logged; logs:\n%s", s.logs)
		}
	})

	t.Run("no reasons is an empty list", func(t *testing.T) {
		s := newServer(t, 0)
		s.fake.fail = d5list.Errorf(d5list.ECONFLICT, "busy")
		rec := s.get("/api/v1/benchmarks")
		if !strings.Contains(rec.Body.String(), `"reasons":[]`) {
			t.Fatalf("body %s", rec.Body)
		}
	})
}

func TestNotFound(t *testing.T) {
	tests := []struct {
		path string
		json bool
	}{
		{"/api/v1/submissions/999", true},
		{"/api/v1/submissions/abc", true},
		{"/api/v1/submissions/-1", true},
		{"/api/v1/leaderboards/l9-nonsense", true},
		{"/api/v1/nothing-here", true},
		{"/benchmarks/l9-nonsense", false},
		{"/submissions/999", false},
		{"/submissions/abc", false},
		{"/no/such/page", false},
		{"/static/js/missing.js", false},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			s := newServer(t, 0)
			rec := s.get(tt.path)
			if rec.Code != http.StatusNotFound {
				t.Fatalf("status %d, body %s", rec.Code, rec.Body)
			}
			if tt.json {
				if e := decodeError(t, rec); e.Code != d5list.ENOTFOUND {
					t.Fatalf("code %q", e.Code)
				}
				return
			}
			doc := parseHTML(t, rec)
			if doc.Find(`[data-testid="error"][data-code="not_found"]`).Length() != 1 {
				t.Fatalf("404 page has no error section:\n%s", rec.Body)
			}
		})
	}
}

func TestWrongMethod(t *testing.T) {
	s := newServer(t, 0)
	rec := s.do(httptest.NewRequest(http.MethodDelete, "/api/v1/submissions/7", nil))
	if e := decodeError(t, rec); rec.Code != http.StatusMethodNotAllowed || e.Code != "method_not_allowed" {
		t.Fatalf("got %d %q", rec.Code, e.Code)
	}
}

func TestSubmissionJSON(t *testing.T) {
	s := newServer(t, 0)
	s.fake.submissions[9] = &d5list.Submission{ID: 9, BenchmarkID: "l2-digits-mlp-cpu", Owner: "alice", OwnerID: 1, Status: d5list.StatusChecking}
	tests := []struct {
		id      string
		check   func(t *testing.T, m map[string]json.RawMessage)
		nonNull []string
	}{
		{"7", func(t *testing.T, m map[string]json.RawMessage) {
			var measured d5list.Result
			if err := json.Unmarshal(m["measured"], &measured); err != nil || len(measured.Runs) != 5 || measured.Score.Value != s.fake.submissions[7].Measured.Score.Value {
				t.Fatalf("measured %s", m["measured"])
			}
			var reasons []d5list.Reason
			_ = json.Unmarshal(m["reasons"], &reasons)
			if len(reasons) != 1 || reasons[0].Code != "accuracy_mismatch" || reasons[0].Run == nil || *reasons[0].Run != 2 {
				t.Fatalf("reasons %s", m["reasons"])
			}
			if string(m["status"]) != `"verified"` || string(m["final"]) != "true" || string(m["benchmark"]) != `"l2-digits-mlp-cpu"` {
				t.Fatalf("status %s final %s benchmark %s", m["status"], m["final"], m["benchmark"])
			}
		}, []string{"claimed", "measured"}},
		{"9", func(t *testing.T, m map[string]json.RawMessage) {
			if string(m["claimed"]) != "null" || string(m["measured"]) != "null" || string(m["reasons"]) != "[]" || string(m["final"]) != "false" {
				t.Fatalf("claimed %s measured %s reasons %s final %s", m["claimed"], m["measured"], m["reasons"], m["final"])
			}
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			rec := s.get("/api/v1/submissions/" + tt.id)
			if rec.Code != 200 {
				t.Fatalf("status %d %s", rec.Code, rec.Body)
			}
			var m map[string]json.RawMessage
			if err := json.Unmarshal(rec.Body.Bytes(), &m); err != nil {
				t.Fatal(err)
			}
			for _, k := range []string{"id", "benchmark", "status", "division", "availability", "submitter", "system_name", "framework", "claimed", "measured", "reasons", "created_at", "updated_at"} {
				if _, ok := m[k]; !ok {
					t.Errorf("submission JSON lacks %q", k)
				}
			}
			for _, k := range []string{"owner", "owner_id"} {
				if _, ok := m[k]; ok {
					t.Errorf("submission JSON exposes the account field %q", k)
				}
			}
			tt.check(t, m)
		})
	}
}

func TestLeaderboardAndBenchmarksJSON(t *testing.T) {
	s := newServer(t, 0)
	rec := s.get("/api/v1/leaderboards/l2-digits-mlp-cpu")
	var board d5list.Leaderboard
	if err := json.Unmarshal(rec.Body.Bytes(), &board); err != nil || rec.Code != 200 {
		t.Fatalf("status %d: %v", rec.Code, err)
	}
	want := rankedEntries()
	if board.Benchmark.ID != "l2-digits-mlp-cpu" || len(board.Entries) != len(want) {
		t.Fatalf("board %+v", board)
	}
	for i := range want {
		if board.Entries[i].Rank != want[i].Rank || board.Entries[i].SubmissionID != want[i].SubmissionID || board.Entries[i].Value != want[i].Value {
			t.Fatalf("entry %d: %+v, want %+v", i, board.Entries[i], want[i])
		}
	}

	s.fake.boards["l2-digits-mlp-cpu"].Entries = nil
	if rec := s.get("/api/v1/leaderboards/l2-digits-mlp-cpu"); !strings.Contains(rec.Body.String(), `"entries":[]`) {
		t.Fatalf("empty board %s, want entries []", rec.Body)
	}

	rec = s.get("/api/v1/benchmarks")
	var list struct {
		Benchmarks []d5list.Benchmark `json:"benchmarks"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &list); err != nil || len(list.Benchmarks) != 2 || list.Benchmarks[0].ID != "l2-digits-mlp-cpu" {
		t.Fatalf("benchmarks %s (%v)", rec.Body, err)
	}
}

func TestHealthz(t *testing.T) {
	s := newServer(t, 0)
	s.fake.fail = errors.New("database down")
	rec := s.get("/healthz")
	if rec.Code != 200 || rec.Body.String() != "ok" {
		t.Fatalf("got %d %q", rec.Code, rec.Body)
	}
	s.fake.fail = nil
	for _, path := range []string{"/healthz", "/", "/static/js/charts.js"} {
		if head := s.do(httptest.NewRequest(http.MethodHead, path, nil)); head.Code != 200 {
			t.Errorf("HEAD %s: %d", path, head.Code)
		}
	}
}

func TestPanicIsAnInternalError(t *testing.T) {
	s := newServer(t, 0)
	s.fake.panicMsg = "nil map in the service"
	rec := s.get("/api/v1/benchmarks")
	e := decodeError(t, rec)
	if rec.Code != 500 || e.Code != d5list.EINTERNAL || strings.Contains(rec.Body.String(), "nil map") {
		t.Fatalf("got %d %s", rec.Code, rec.Body)
	}
	logs := s.logs.String()
	if !strings.Contains(logs, "nil map in the service") || !strings.Contains(logs, `"status":500`) {
		t.Fatalf("panic not logged with status 500:\n%s", logs)
	}
}

func TestLogsNeverHoldTokens(t *testing.T) {
	s := newServer(t, 0)
	s.do(upload(bytes.NewReader(bundleBytes(100)), "application/gzip", "Bearer d5_alice"))
	s.do(upload(bytes.NewReader(bundleBytes(100)), "application/gzip", "Bearer d5_wrong_secret"))
	req := httptest.NewRequest(http.MethodGet, "/api/v1/benchmarks?token=d5_query_secret", nil)
	req.Header.Set("X-Request-Id", "req-42")
	rec := s.do(req)
	if rec.Header().Get("X-Request-Id") != "req-42" {
		t.Errorf("request id %q, want the proxy's req-42", rec.Header().Get("X-Request-Id"))
	}
	logs := s.logs.String()
	for _, secret := range []string{"d5_alice", "d5_wrong_secret", "d5_query_secret", "Bearer"} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain %q:\n%s", secret, logs)
		}
	}
	if strings.Count(logs, `"msg":"request"`) != 3 || !strings.Contains(logs, `"request_id":"req-42"`) {
		t.Errorf("want three request lines, one with request_id req-42:\n%s", logs)
	}
}

// A number JSON cannot hold that reached a stored result is a logged 500
// with an error body, never a 200 with an empty one.
func TestAnswerThatCannotBeJSON(t *testing.T) {
	s := newServer(t, 0)
	s.fake.submissions[11] = &d5list.Submission{ID: 11, BenchmarkID: "l2-digits-mlp-cpu", Owner: "alice", OwnerID: 1, Status: d5list.StatusVerified,
		Measured: &d5list.Result{Runs: []d5list.RunMetrics{{Index: 0, Throughput: math.Inf(1)}}}}
	rec := s.get("/api/v1/submissions/11")
	if rec.Code != http.StatusInternalServerError {
		t.Fatalf("status %d %q, want 500", rec.Code, rec.Body)
	}
	if e := decodeError(t, rec); e.Code != d5list.EINTERNAL {
		t.Fatalf("error %+v", e)
	}
	if !strings.Contains(s.logs.String(), "answer not encodable as JSON") {
		t.Errorf("not logged: %s", s.logs.String())
	}
}
