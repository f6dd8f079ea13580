package main

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestPortalChaos kills the real portal with SIGKILL at random moments
// while uploads stream in (whole bundles of the L1 inference benchmark,
// whose re-run takes a few seconds, and large bodies sent slowly) and its
// two in-process runners re-run and write verdicts, then starts it again, D5LIST_PORTAL_KILLS times (3 here; scripts/portal-chaos.sh
// runs 100). After every restart nothing is half-stored: no submission
// without its bundle, no bundle without its submission, no submission
// without its job, no verdict without its measurement (the submission's,
// or the history's for a verdict held back for a re-measure), no re-run log
// without its verdict, no job still leased by the runners that died, no
// upload temp or scratch left; and every upload answered 201 is there.
func TestPortalChaos(t *testing.T) {
	kills := 3
	if v := os.Getenv("D5LIST_PORTAL_KILLS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("D5LIST_PORTAL_KILLS=%q: want a number of kills", v)
		}
		kills = n
	}
	honest := honestBundle(t, "l1-mlp-inference-cpu")
	data, port := t.TempDir(), freePort(t)
	tokens := competitorTokens(t, data, "chaos", 4)
	db, err := sql.Open("sqlite", "file:"+filepath.Join(data, "d5list.db")+"?mode=ro&_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := mrand.New(mrand.NewPCG(26, uint64(time.Now().UnixNano())))

	var (
		mu           sync.Mutex
		acknowledged []int64
		uploads      atomic.Int64
		inFlight     atomic.Int64
		midUpload    int
		midRerun     int
	)
	seq := atomic.Int64{}
	upload := func(url, token string, body io.Reader) {
		inFlight.Add(1)
		defer inFlight.Add(-1)
		uploads.Add(1)
		code, answer, err := postBundle(url, token, body)
		if err == nil && code == http.StatusCreated {
			mu.Lock()
			acknowledged = append(acknowledged, int64(answer["id"].(float64)))
			mu.Unlock()
		}
	}
	start := time.Now()
	for kill := range kills {
		restart := time.Now()
		srv := startServerProc(t, data, port, "--runners", "2", "--lease-ttl", "5s")
		checkNothingHalfStored(t, db, data, srv.url, restart, acknowledged)
		if t.Failed() {
			t.Fatalf("after %d kills", kill)
		}

		// Uploaders until the kill: each competitor sends a bundle of its
		// own bytes (another system name) every second or two, about as
		// fast as the runners re-run them, and one of them a large body
		// slowly, so that the kill finds uploads in every step.
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for i, token := range tokens {
			wg.Go(func() {
				for {
					select {
					case <-stop:
						return
					case <-time.After(time.Duration(1000+mrand.IntN(2000)) * time.Millisecond):
					}
					if i == 0 {
						upload(srv.url, token, slowBody(stop, 4<<20))
						continue
					}
					n := seq.Add(1)
					upload(srv.url, token, bytes.NewReader(withManifestField(t, honest, "system_name", "chaos-"+strconv.FormatInt(n, 10))))
				}
			})
		}
		// Most kills come within a few seconds; some after a re-run's
		// length, so that verdicts are written and killed too.
		wait := time.Duration(300+rng.IntN(2700)) * time.Millisecond
		if rng.IntN(4) == 0 {
			wait = time.Duration(8+rng.IntN(8)) * time.Second
		}
		time.Sleep(wait)
		var leased int
		_ = db.QueryRow(`SELECT count(*) FROM jobs WHERE state = 'leased'`).Scan(&leased)
		if inFlight.Load() > 0 {
			midUpload++
		}
		if leased > 0 {
			midRerun++
		}
		srv.kill9()
		close(stop)
		wg.Wait()
	}
	restart := time.Now()
	srv := startServerProc(t, data, port, "--runners", "0")
	checkNothingHalfStored(t, db, data, srv.url, restart, acknowledged)
	var subs, verdicts int
	_ = db.QueryRow(`SELECT count(*) FROM submissions`).Scan(&subs)
	_ = db.QueryRow(`SELECT count(*) FROM jobs WHERE state = 'done'`).Scan(&verdicts)
	t.Logf("CHAOS %d kills -9 in %.0f s: %d with an upload under way, %d during a re-run; %d uploads sent, %d answered 201, %d submissions stored, %d verdicts written; nothing half-stored after any restart",
		kills, time.Since(start).Seconds(), midUpload, midRerun, uploads.Load(), len(acknowledged), subs, verdicts)
}

// checkNothingHalfStored reads the portal's data folder and database as it
// serves again after a kill, restarted at restart.
func checkNothingHalfStored(t *testing.T, db *sql.DB, data, url string, restart time.Time, acknowledged []int64) {
	t.Helper()
	count := func(what, query string, args ...any) {
		t.Helper()
		var n int
		if err := db.QueryRow(query, args...).Scan(&n); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if n != 0 {
			t.Errorf("%d %s", n, what)
		}
	}
	count("submissions without a job", `SELECT count(*) FROM submissions s WHERE NOT EXISTS (SELECT 1 FROM jobs j WHERE j.submission_id = s.id)`)
	// A finished job's measurement is its submission's, or, where its
	// verdict was held back for a re-measure, archived in job_results.
	count("finished jobs whose measurement is neither their submission's nor archived",
		`SELECT count(*) FROM jobs j JOIN submissions s ON s.id = j.submission_id
		WHERE j.state = 'done' AND s.measured IS NULL AND NOT EXISTS (SELECT 1 FROM job_results r WHERE r.job_id = j.id)`)
	// A lease the restarted portal's own runners took is newer than it.
	count("jobs still leased by the runners that died with the portal",
		`SELECT count(*) FROM jobs WHERE state = 'leased' AND runner_id LIKE 'local-%' AND updated_at < ?`, restart.UnixNano())

	rows, err := db.Query(`SELECT bundle_sha256, 'submission''s bundle' FROM submissions WHERE bundle_sha256 != ''
		UNION SELECT sha256, 're-run log' FROM rerun_logs`)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for rows.Next() {
		var sha, what string
		if err := rows.Scan(&sha, &what); err != nil {
			t.Fatal(err)
		}
		named[sha] = true
		if _, err := os.Stat(filepath.Join(data, "blobs", sha[:2], sha)); err != nil {
			t.Errorf("%s %s is not stored: %v", what, sha, err)
		}
	}
	rows.Close()
	stored, _ := filepath.Glob(filepath.Join(data, "blobs", "[0-9a-f][0-9a-f]", "*"))
	for _, p := range stored {
		if !named[filepath.Base(p)] {
			t.Errorf("blob %s is stored without a submission or a verdict naming it", filepath.Base(p))
		}
	}
	if left := uploadTemps(t, data); len(left) != 0 {
		t.Errorf("upload temps left after the restart: %v", left)
	}
	if left, _ := os.ReadDir(filepath.Join(data, "scratch")); len(left) != 0 {
		t.Errorf("%d entries left in the upload scratch folder after the restart", len(left))
	}
	for _, id := range acknowledged {
		resp, err := http.Get(url + "/api/v1/submissions/" + strconv.FormatInt(id, 10))
		if err != nil {
			t.Fatal(err)
		}
		var sub struct{ BundleSHA256 string }
		_ = json.NewDecoder(resp.Body).Decode(&sub)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("submission %d, answered 201 before a kill, answers %d after it", id, resp.StatusCode)
		}
	}
}

// slowBody is size random bytes, sent 256 KiB every 50 ms until stop.
func slowBody(stop <-chan struct{}, size int) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		chunk := make([]byte, 256<<10)
		for sent := 0; sent < size; sent += len(chunk) {
			select {
			case <-stop:
				pw.CloseWithError(io.ErrUnexpectedEOF)
				return
			case <-time.After(50 * time.Millisecond):
			}
			rand.Read(chunk)
			if _, err := pw.Write(chunk); err != nil {
				return
			}
		}
		pw.Close()
	}()
	return pr
}
