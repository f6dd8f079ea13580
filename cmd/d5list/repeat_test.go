package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	d5list "github.com/deep500/d5list"
)

// An account that uploads the files of one of its entries again is
// pointed to that entry, however the files are packed: the same folder
// submitted again from the command line, and the folder wrapped in
// another folder of another tar.gz through the API, which answers 200
// with the entry. Nothing is stored and no second job waits for a runner.
// Another account's upload of the same files, and the same account's
// upload of changed files, are new entries.
func TestRepeatedUploadPointsToTheEntry(t *testing.T) {
	p := startPortal(t, 0) // no runner: every upload's job stays queued
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "gemm")
	for _, args := range [][]string{{"init", "l0-gemm-cpu", dir, "--submitter", "Rita Lab"}, {"run", dir}} {
		if err := run(ctx, args, io.Discard, io.Discard); err != nil {
			t.Fatalf("%s: %v", args[0], err)
		}
	}
	first := p.submitFolder(t, dir)
	blobs := countBlobs(t, p.data)

	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"submit", dir, "--server", p.url, "--token", p.token}, &out, &errOut); err != nil {
		t.Fatalf("submitting the folder again: %v\n%s", err, errOut.String())
	}
	want := "You uploaded these files before, as submission " + strconv.FormatInt(first, 10) + " (queued)"
	if !strings.Contains(out.String(), want) || !strings.Contains(out.String(), "submission "+strconv.FormatInt(first, 10)+" queued\n") {
		t.Errorf("submitting the folder again printed %q, want %q and the first entry", out.String(), want)
	}

	files := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		files["wrapped/"+filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	code, answer, err := postBundle(p.url, p.token, bytes.NewReader(tarGz(t, files)))
	if err != nil || code != http.StatusOK || answer["id"] != float64(first) || answer["repeated"] != true ||
		!strings.Contains(answer["message"].(string), want) {
		t.Errorf("the same files wrapped in a folder: %d %v %v; want 200 and submission %d, repeated", code, answer, err, first)
	}
	if n := countBlobs(t, p.data); n != blobs {
		t.Errorf("the blob folder holds %d files after the repeats, %d before: a repeat stored its bundle", n, blobs)
	}
	var queue d5list.QueueView
	p.getJSON(t, "/api/v1/queue", &queue)
	if len(queue.Jobs) != 1 || queue.Jobs[0].SubmissionID != first {
		t.Errorf("the queue holds %+v, want only submission %d's job", queue.Jobs, first)
	}

	for name, upload := range map[string]struct {
		token string
		files map[string]string
	}{
		"another account's upload of the same files": {competitorToken(t, p.data), files},
		"an upload with one more file":               {p.token, withFile(files, "wrapped/README.md", "# the same runs, described\n")},
	} {
		code, answer, err := postBundle(p.url, upload.token, bytes.NewReader(tarGz(t, upload.files)))
		if err != nil || code != http.StatusCreated || answer["id"] == float64(first) || answer["repeated"] != nil {
			t.Errorf("%s: %d %v %v, want 201 and a new entry", name, code, answer, err)
		}
	}
}

func withFile(files map[string]string, name, body string) map[string]string {
	out := maps.Clone(files)
	out[name] = body
	return out
}
