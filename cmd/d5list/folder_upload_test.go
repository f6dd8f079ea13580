package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"net/textproto"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deep500/d5list/bundle"
)

// A submission folder uploaded as its files (the browser's folder picker)
// becomes the very bundle `d5list pack` makes of it, and a folder with a
// bad name or a missing file is refused naming it, with nothing stored.
func TestFolderUpload(t *testing.T) {
	if testing.Short() {
		t.Skip("needs an honest bundle (about 10 s of training)")
	}
	packed := faultBundle(t)
	archive := filepath.Join(t.TempDir(), "b.tar.gz")
	if err := os.WriteFile(archive, packed, 0o644); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(t.TempDir(), "sub")
	if err := bundle.Extract(archive, folder, bundle.DefaultLimits()); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	err := filepath.WalkDir(folder, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(folder, p)
		files[filepath.ToSlash(rel)], err = os.ReadFile(p)
		return err
	})
	if err != nil || len(files) < 8 {
		t.Fatalf("extracted %d files: %v", len(files), err)
	}
	scratch := t.TempDir()
	t.Setenv("TMPDIR", scratch) // where the server unpacks folder uploads
	p := startPortal(t, 0)

	post := func(t *testing.T, parts map[string][]byte, extra ...string) (int, map[string]any) {
		t.Helper()
		var body bytes.Buffer
		mw := multipart.NewWriter(&body)
		names := append([]string{}, extra...)
		for name := range parts {
			names = append(names, name)
		}
		for _, name := range names {
			h := textproto.MIMEHeader{}
			h.Set("Content-Disposition", `form-data; name="files"; filename="`+name+`"`)
			w, err := mw.CreatePart(h)
			if err != nil {
				t.Fatal(err)
			}
			w.Write(parts[name])
		}
		mw.Close()
		req, _ := http.NewRequest(http.MethodPost, p.url+"/api/v1/submissions", &body)
		req.Header.Set("Content-Type", mw.FormDataContentType())
		req.Header.Set("Authorization", "Bearer "+p.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(resp.Body)
		var out map[string]any
		if err := json.Unmarshal(data, &out); err != nil {
			t.Fatalf("answer %d %q: %v", resp.StatusCode, data, err)
		}
		return resp.StatusCode, out
	}

	without := func(name string) map[string][]byte {
		m := map[string][]byte{}
		for k, v := range files {
			if k != name {
				m[k] = v
			}
		}
		return m
	}
	for _, tc := range []struct {
		name  string
		parts map[string][]byte
		extra []string
		want  string
	}{
		{"a path out of the folder", files, []string{"../escape.txt"}, "../escape.txt"},
		{"an absolute path", files, []string{"/etc/cron.d/x"}, "/etc/cron.d/x"},
		{"a file sent twice", files, []string{"system.json"}, "system.json: sent twice"},
		{"a run missing", without("results/result_3.txt"), nil, "result"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out := post(t, tc.parts, tc.extra...)
			text, _ := json.Marshal(out)
			if code != http.StatusBadRequest || !strings.Contains(string(text), tc.want) {
				t.Fatalf("got %d %s, want 400 naming %q", code, text, tc.want)
			}
		})
	}
	var blobs int
	filepath.WalkDir(filepath.Join(p.data, "blobs"), func(_ string, d fs.DirEntry, _ error) error {
		if d != nil && !d.IsDir() {
			blobs++
		}
		return nil
	})
	if blobs != 0 {
		t.Fatalf("%d blobs stored by refused folder uploads", blobs)
	}

	code, out := post(t, files)
	if code != http.StatusCreated {
		t.Fatalf("folder upload: %d %v", code, out)
	}
	var sub struct {
		BundleSHA256 string `json:"bundle_sha256"`
		Status       string `json:"status"`
	}
	if c := p.getJSON(t, "/api/v1/submissions/"+jsonNumber(out["id"]), &sub); c != http.StatusOK {
		t.Fatalf("GET submission: %d", c)
	}
	sum := sha256.Sum256(packed)
	if sub.BundleSHA256 != hex.EncodeToString(sum[:]) {
		t.Errorf("the folder upload stored bundle %s; `d5list pack` of the same folder is %x", sub.BundleSHA256, sum)
	}
	if left, _ := os.ReadDir(scratch); len(left) != 0 {
		t.Errorf("folder uploads left %d scratch entries behind", len(left))
	}
	if sub.Status != "queued" {
		t.Errorf("status %q, want queued (no runners)", sub.Status)
	}
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
