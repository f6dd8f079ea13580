package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/verifier"
)

// postMLPerf posts archive to the portal's MLPerf check with query and
// answers the status and the error object, if any.
func postMLPerf(t *testing.T, p *portalUnderTest, query string, archive []byte) (int, string, []d5list.Reason, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, p.url+"/api/v1/mlperf/check"+query, bytes.NewReader(archive))
	req.Header.Set("Content-Type", "application/gzip")
	req.Header.Set("Authorization", "Bearer "+p.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var got struct {
		Error struct {
			Message string          `json:"message"`
			Reasons []d5list.Reason `json:"reasons"`
		} `json:"error"`
	}
	_ = json.Unmarshal(body, &got)
	return resp.StatusCode, got.Error.Message, got.Error.Reasons, body
}

func mlperfRounds(reasons []d5list.Reason) []string {
	var out []string
	for _, r := range reasons {
		if r.Code == verifier.CodeMLPerfRound {
			out = append(out, r.Message)
		}
	}
	return out
}

// A published folder whose name and path say no round (resnet, in every
// round from 0.6 to 4.0) is not judged by a guessed round: check --mlperf
// and the portal's API refuse it with the rounds to choose from and how to
// give one, the API without the server's own paths; given the round, both
// judge it.
func TestCheckMLPerfAsksForTheRound(t *testing.T) {
	src := "../../../shared/peer-data/mlperf/v4.0-asustek-resnet"
	if !dirExists(src) {
		t.Skip("shared/peer-data not beside the repository")
	}
	folder := filepath.Join(t.TempDir(), "resnet")
	if err := os.MkdirAll(folder, 0o755); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(src, "result_*.txt"))
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(folder, filepath.Base(f)), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	resnetRounds := []string{"0.6", "0.7", "1.0", "1.1", "2.0", "2.1", "3.0", "3.1", "4.0"}

	var out bytes.Buffer
	err := run(context.Background(), []string{"check", "--mlperf", "--json", folder}, &out, io.Discard)
	var got struct {
		Error struct {
			Code    string          `json:"code"`
			Message string          `json:"message"`
			Reasons []d5list.Reason `json:"reasons"`
		} `json:"error"`
	}
	if jerr := json.Unmarshal(out.Bytes(), &got); jerr != nil || err == nil {
		t.Fatalf("check --mlperf --json: exit %v, stdout %s", err, out.String())
	}
	if got.Error.Code != d5list.EINVALID || !slices.Equal(mlperfRounds(got.Error.Reasons), resnetRounds) ||
		!strings.HasPrefix(got.Error.Message, folder+": the MLPerf Training round cannot be told") || !strings.HasSuffix(got.Error.Message, "with --round X.Y") {
		t.Errorf("check --mlperf: %+v", got.Error)
	}
	if err := run(context.Background(), []string{"check", "--mlperf", "--round", "4.0", folder}, io.Discard, io.Discard); err != nil {
		t.Errorf("check --mlperf --round 4.0: %v", err)
	}

	data := t.TempDir()
	p := startPortalIn(t, data, 0)
	archive := tarGzFolder(t, folder, "resnet")
	status, msg, reasons, body := postMLPerf(t, p, "", archive)
	if status != http.StatusBadRequest || !slices.Equal(mlperfRounds(reasons), resnetRounds) ||
		!strings.HasPrefix(msg, "resnet: the MLPerf Training round cannot be told") || !strings.HasSuffix(msg, "with ?round=X.Y") {
		t.Errorf("the API without ?round=: %d %s", status, body)
	}
	status, msg, reasons, body = postMLPerf(t, p, "?round=9.9", archive)
	if status != http.StatusBadRequest || !slices.Equal(mlperfRounds(reasons), verifier.MLPerfRoundNames()) || !strings.HasPrefix(msg, "resnet: MLPerf Training round 9.9 is not one d5list knows") {
		t.Errorf("the API with ?round=9.9: %d %s", status, body)
	}
	// At the archive's top, the upload is "the upload".
	status, msg, _, body = postMLPerf(t, p, "", tarGzFolder(t, folder, "."))
	if status != http.StatusBadRequest || !strings.HasPrefix(msg, "the upload: the MLPerf Training round cannot be told") {
		t.Errorf("the API on an unwrapped folder: %d %s", status, body)
	}
	for _, leak := range []string{data, "scratch", "d5list-mlperf-"} {
		if bytes.Contains(body, []byte(leak)) {
			t.Errorf("the answer names the server's folder %q: %s", leak, body)
		}
	}
	if status, _, _, body := postMLPerf(t, p, "?round=4.0", archive); status != http.StatusOK {
		t.Errorf("the API with ?round=4.0: %d %s", status, body)
	}
}

// check --mlperf says what is wrong with a path it cannot check, naming
// the path as given: it does not exist, it is a file, a part of it is a
// file; in text and in JSON.
func TestCheckMLPerfInputErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "results.tar.gz")
	if err := os.WriteFile(file, []byte("not a folder"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, says string }{
		{filepath.Join(dir, "missing"), ": no such file or folder"},
		{file, ": not a folder: give a benchmark's result folder"},
		{filepath.Join(file, "v4.0"), ": no such file or folder (a part of the path is a file, not a folder)"},
	} {
		err := run(context.Background(), []string{"check", "--mlperf", c.path}, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), c.path+c.says) {
			t.Errorf("%s: %v, want %q", c.path, err, c.path+c.says)
		}
		var out bytes.Buffer
		_ = run(context.Background(), []string{"check", "--mlperf", "--json", c.path}, &out, io.Discard)
		var got struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(out.Bytes(), &got) != nil || got.Error.Message == "" || !strings.HasPrefix(got.Error.Message, c.path+c.says) {
			t.Errorf("%s --json: %s", c.path, out.String())
		}
	}
}

// A published tree that round 4.0's own tools accepted (v4.0
// GigaComputing: its system's status "available", which today's checker
// refuses) is accepted by default and refused with --rules today, on the
// command line and in the API, and each answer names the rules that
// judged it.
func TestCheckMLPerfRulesToday(t *testing.T) {
	tree := filepath.Join(mlperfTestdata, "v4.0", "GigaComputing")
	const release = "mlcommons/logging 4.0.0-rc3-rcp-prunning, the round's own release"
	const today = "today's mlcommons/logging (7bbf792)"
	p := startPortal(t, 0)
	archive := tarGzFolder(t, tree, "v4.0/GigaComputing")
	for _, c := range []struct {
		args     []string
		query    string
		accepted bool
		rules    string
	}{
		{nil, "", true, release},
		{[]string{"--rules", "release"}, "?rules=release", true, release},
		{[]string{"--rules", "today"}, "?rules=today", false, today},
	} {
		var text bytes.Buffer
		err := run(context.Background(), append(append([]string{"check", "--mlperf"}, c.args...), tree), &text, io.Discard)
		if (err == nil) != c.accepted || !strings.Contains(text.String(), "judged by the rules of "+c.rules+"\n") {
			t.Errorf("check --mlperf %v: exit %v\n%s", c.args, err, text.String())
		}
		status, _, _, body := postMLPerf(t, p, c.query, archive)
		var rep struct {
			Accepted bool   `json:"accepted"`
			Rules    string `json:"rules"`
		}
		if status != http.StatusOK || json.Unmarshal(body, &rep) != nil || rep.Accepted != c.accepted || rep.Rules != c.rules {
			t.Errorf("the API with %q: %d %.300s", c.query, status, body)
		}
	}
	if err := run(context.Background(), []string{"check", "--mlperf", "--rules", "yesterday", tree}, io.Discard, io.Discard); err == nil || !strings.Contains(err.Error(), `rules "yesterday"`) {
		t.Errorf("--rules yesterday: %v", err)
	}
	if status, msg, _, _ := postMLPerf(t, p, "?rules=yesterday", archive); status != http.StatusBadRequest || !strings.Contains(msg, `rules "yesterday"`) {
		t.Errorf("?rules=yesterday: %d %s", status, msg)
	}
}

// The dlrm_dcnv2 folders published for rounds 3.0 and 3.1 log no seed:
// the rounds' own seed checkers passed them, today's refuses them.
func TestCheckMLPerfSeedlessFoldersByTheirRounds(t *testing.T) {
	for _, name := range []string{"v3.0-gigabyte-dlrm_dcnv2", "v3.1-gigacomputing-dlrm_dcnv2"} {
		dir := filepath.Join(sharedRounds, name)
		if !dirExists(dir) {
			t.Skip("shared/peer-data not beside the repository")
		}
		var own, today bytes.Buffer
		if err := run(context.Background(), []string{"check", "--mlperf", dir}, &own, io.Discard); err != nil {
			t.Errorf("%s by its round's rules: %v\n%s", name, err, own.String())
		}
		err := run(context.Background(), []string{"check", "--mlperf", "--rules", "today", dir}, &today, io.Discard)
		if err == nil || !strings.Contains(today.String(), "logs no seed.") || !strings.Contains(today.String(), "(rules: today's mlcommons/logging (7bbf792))") {
			t.Errorf("%s by today's rules: exit %v\n%s", name, err, today.String())
		}
	}
}

// A refused folder keeps the score MLCommons' result summarizer computes
// for it, marked in the folder's score line and in the summary table.
func TestCheckMLPerfMarksTheScoresOfRefusedFolders(t *testing.T) {
	var text bytes.Buffer
	err := run(context.Background(), []string{"check", "--mlperf", filepath.Join(mlperfTestdata, "v1.0", "Graphcore")}, &text, io.Discard)
	out := text.String()
	if err == nil {
		t.Fatalf("check --mlperf accepted v1.0 Graphcore, which 1.0.0's package checker refuses (RCP)\n%s", out)
	}
	for _, want := range []string{
		"11.076 minutes (olympic mean", "the result summarizer's, of a refused folder)\nresults/ipu-pod64-POPART-closed/bert: refused\n",
		"11.076 (refused)\n",
		"(refused): the package checker refuses the folder; the score is the one MLCommons' result summarizer computes all the same",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q in\n%s", want, out)
		}
	}
	if n := strings.Count(out, "(refused)"); n != 2 { // the cell and the note's key
		t.Errorf("%d marks; only IPU-POD64's closed bert is refused\n%s", n, out)
	}
}
