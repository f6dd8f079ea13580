package web_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/handlers"
	"github.com/deep500/d5list/web"
)

type fakePool struct {
	queued int
	oldest time.Time
}

func (p fakePool) QueueStats(context.Context) (int, time.Time, error) { return p.queued, p.oldest, nil }
func (p fakePool) Runners(context.Context) ([]d5list.Runner, error) {
	return []d5list.Runner{{Name: "a/0", Online: true}, {Name: "a/1", Online: true}, {Name: "b/0"}}, nil
}

// sample returns the value of the series name whose labels include every
// k="v" pair given, and whether there was exactly one such series.
func sample(t *testing.T, exposition, name string, labels ...string) (float64, bool) {
	t.Helper()
	var found []float64
	sc := bufio.NewScanner(strings.NewReader(exposition))
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		series, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		metric, labelText, _ := strings.Cut(series, "{")
		if metric != name {
			continue
		}
		match := true
		for i := 0; i+1 < len(labels); i += 2 {
			if !strings.Contains(labelText, labels[i]+`="`+labels[i+1]+`"`) {
				match = false
			}
		}
		if match {
			v, err := strconv.ParseFloat(value, 64)
			if err != nil {
				t.Fatalf("series %s: value %q: %v", series, value, err)
			}
			found = append(found, v)
		}
	}
	if len(found) != 1 {
		return 0, false
	}
	return found[0], true
}

func TestMetricsAfterRequests(t *testing.T) {
	fake := newFake()
	m := web.NewMetrics(fakePool{queued: 4, oldest: time.Now().Add(-90 * time.Second)}, nil)
	srv := httptest.NewServer(web.New(web.Config{MaxUploadBytes: 1 << 20, Metrics: m}, fake, slog.New(slog.DiscardHandler)))
	defer srv.Close()

	get := func(path string) {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	// Two different submissions must land in one route series.
	get("/api/v1/submissions/7")
	get("/api/v1/submissions/8")
	get("/api/v1/submissions/999") // 404 from the handler, same route
	get("/no/such/page")
	payload := bytes.Repeat([]byte("x"), 3000)
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/submissions", bytes.NewReader(payload))
	req.Header.Set("Authorization", "Bearer d5_alice")
	req.Header.Set("Content-Type", "application/gzip")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	m.JobFinished("verified", 3*time.Second)
	m.JobFinished("verified", 5*time.Second)
	m.JobFinished("failed", time.Second)

	resp, err = http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/metrics: %d", resp.StatusCode)
	}
	text := string(body)
	if strings.Contains(text, `route="/api/v1/submissions/7"`) {
		t.Error("a raw path became a label: the route label must be the pattern")
	}
	tests := []struct {
		name   string
		labels []string
		want   float64
	}{
		{"d5list_http_request_duration_seconds_count", []string{"route", "/api/v1/submissions/{id}", "method", "GET", "code", "2xx"}, 2},
		{"d5list_http_request_duration_seconds_count", []string{"route", "/api/v1/submissions/{id}", "method", "GET", "code", "4xx"}, 1},
		{"d5list_http_request_duration_seconds_count", []string{"route", "unmatched", "code", "4xx"}, 1},
		{"d5list_http_request_duration_seconds_count", []string{"route", "/api/v1/submissions", "method", "POST"}, 1},
		{"d5list_http_request_body_bytes_total", []string{"route", "/api/v1/submissions"}, float64(len(payload))},
		{"d5list_jobs_finished_total", nil, 3},
		{"d5list_job_duration_seconds_sum", nil, 9},
		{"d5list_queue_depth", nil, 4},
		{"d5list_runners", []string{"state", "online"}, 2},
		{"d5list_runners", []string{"state", "offline"}, 1},
	}
	for _, tc := range tests {
		got, ok := sample(t, text, tc.name, tc.labels...)
		if !ok || got != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	if age, ok := sample(t, text, "d5list_queue_oldest_job_age_seconds"); !ok || age < 90 || age > 3600 {
		t.Errorf("oldest job age %v (found %v), want about 90 s", age, ok)
	}
	if fake.submits != 1 {
		t.Errorf("the upload reached the service %d times", fake.submits)
	}
}

// An anonymous client cannot tell from /metrics what kind of verdict a
// job got: a verified job, a discrepancy (hidden from the public) and a
// failed one (hidden too) leave the same series, though the runner
// reported them on different routes with bodies of different sizes.
func TestMetricsTellNoVerdictsKind(t *testing.T) {
	scrape := func(route string, body []byte, outcome string) string {
		m := web.NewMetrics(nil, nil)
		srv := httptest.NewServer(web.New(web.Config{MaxUploadBytes: 1 << 20, Metrics: m}, reportingRunner{newFake()}, slog.New(slog.DiscardHandler)))
		defer srv.Close()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/v1/runner/jobs/5/"+route, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer d5r_runner")
		req.Header.Set(handlers.LeaseSecretHeader, "secret")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			t.Fatalf("the runner's %s report answered %d", route, resp.StatusCode)
		}
		m.JobFinished(outcome, 3*time.Second)
		resp, err = http.Get(srv.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		text, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("/metrics: %d", resp.StatusCode)
		}
		if got, ok := sample(t, string(text), "d5list_jobs_finished_total"); !ok || got != 1 {
			t.Errorf("%s: d5list_jobs_finished_total = %v (found %v), want 1", outcome, got, ok)
		}
		// The portal's own series; the Go runtime's and the process's
		// differ from one server to the next whatever the verdict.
		var own []string
		for _, line := range strings.Split(string(text), "\n") {
			if strings.HasPrefix(line, "d5list_") || strings.HasPrefix(line, "# HELP d5list_") {
				own = append(own, line)
			}
		}
		return strings.Join(own, "\n")
	}
	logs, err := json.Marshal(map[string][]d5list.RunLog{"logs": {{Index: 0, Seed: 1, Log: bytes.Repeat([]byte(":::MLLOG {}\n"), 4000)}}})
	if err != nil {
		t.Fatal(err)
	}
	verified := scrape("complete", logs, string(d5list.StatusVerified))
	for _, hidden := range []struct {
		route   string
		body    []byte
		outcome d5list.Status
	}{
		{"complete", logs, d5list.StatusDiscrepancy},
		{"fail", []byte(`{"message": "the entrypoint exited 1"}`), d5list.StatusFailed},
	} {
		if got := scrape(hidden.route, hidden.body, string(hidden.outcome)); got != verified {
			t.Errorf("a %s job's /metrics differs from a verified one's:\n%s\n--- verified:\n%s", hidden.outcome, got, verified)
		}
	}
}

// reportingRunner is the fake portal with a runner pool that takes every
// runner's report.
type reportingRunner struct{ *fakeService }

func (reportingRunner) AuthenticateRunner(context.Context, string) (*d5list.RunnerToken, error) {
	return &d5list.RunnerToken{Name: "runner"}, nil
}
func (reportingRunner) WaitLease(context.Context, string, map[string]string, time.Duration) (*d5list.Lease, error) {
	return nil, nil
}
func (reportingRunner) RunnerHeartbeat(context.Context, string, int64, string) error { return nil }
func (reportingRunner) RunnerComplete(context.Context, string, int64, string, []d5list.RunLog, map[string]string) error {
	return nil
}
func (reportingRunner) RunnerFail(context.Context, string, int64, string, string) error { return nil }
func (reportingRunner) BundlePath(context.Context, string, int64, string) (string, error) {
	return "", nil
}
func (reportingRunner) CancelJob(context.Context, *d5list.User, int64) error { return nil }
func (reportingRunner) Queue(context.Context) (*d5list.QueueView, error) {
	return &d5list.QueueView{}, nil
}
func (reportingRunner) Runners(context.Context) ([]d5list.Runner, error) { return nil, nil }
func (reportingRunner) SubmissionJob(context.Context, int64) (*d5list.QueuedJob, error) {
	return nil, nil
}
