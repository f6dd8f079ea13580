package portal

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	d5list "github.com/deep500/d5list"
	"github.com/deep500/d5list/bundle"
	"github.com/deep500/d5list/store"
)

// storeBlobs is the store's blob folder as the portal's Blobs, as serve
// wires it.
type storeBlobs struct{ b *store.Blobs }

func (s storeBlobs) Create() (BlobWriter, error) { return s.b.Create() }
func (s storeBlobs) Exists(sha string) bool      { return s.b.Exists(sha) }
func (s storeBlobs) Path(sha string) string      { return s.b.Path(sha) }
func (s storeBlobs) Remove(sha string) error     { return s.b.Remove(sha) }

func spoolService(t *testing.T, lim bundle.Limits) (*Service, string) {
	t.Helper()
	db, dir := testStore(t)
	return New(db, storeBlobs{db.Blobs()}, Config{Limits: lim}, nil), filepath.Join(dir, "blobs")
}

// packed is the tar.gz of a submission folder holding files, as
// d5list pack makes it.
func packed(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, body, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	if err := bundle.Pack(dir, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func zipOf(t *testing.T, files map[string][]byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for name, body := range files {
		w, err := zw.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// folder is a submission folder's files with code as its code/train.py,
// changed by changes.
func folder(code []byte, changes map[string][]byte) map[string][]byte {
	out := map[string][]byte{
		"submission.json":      []byte(`{"format":"d5list/v1","benchmark":"l2-digits-mlp-cpu","division":"closed","availability":"available","submitter":"a","system_name":"s","framework":"f"}`),
		"recipe.yaml":          []byte("fixed: {dataset: synthetic-digits}\nmutable: {batch_size: 32}\nmetrics: [{name: test_accuracy, acceptable: 0.9}]\n"),
		"system.json":          []byte(`{"submitter":"a","system_name":"s","number_of_nodes":"1","host_processors_per_node":"1","host_processor_model_name":"cpu","host_processor_core_count":"2","accelerators_per_node":"0","framework":"f","operating_system":"linux"}`),
		"results/result_0.txt": []byte(":::MLLOG {\"namespace\": \"\", \"time_ms\": 1, \"event_type\": \"INTERVAL_START\", \"key\": \"run_start\", \"value\": null, \"metadata\": {}}\n"),
		"code/train.py":        code,
	}
	for k, v := range changes {
		out[k] = v
	}
	return out
}

// A tar.gz upload is read as a bundle while it arrives, on another core,
// and that reading is the one the stored file gives (bundle.Open), for a
// complete bundle, one whose result log is over the limit and one whose
// code is (whose reading stops early while the upload is still stored
// whole); a zip is read from the stored file.
func TestSpoolReadsTheBundleAsItArrives(t *testing.T) {
	lim := bundle.DefaultLimits()
	lim.MaxFileBytes, lim.MaxResultBytes = 3<<20, 1<<10
	svc, _ := spoolService(t, lim)
	noise := make([]byte, 4<<20) // past MaxFileBytes, and many chunks
	rand.Read(noise)
	files := func(changes map[string][]byte) map[string][]byte { return folder(noise[:2<<20], changes) }
	for _, c := range []struct {
		name   string
		body   []byte
		stream bool
		ok     bool
	}{
		{"a complete tar.gz", packed(t, files(nil)), true, true},
		{"a tar.gz with a result log over the limit", packed(t, files(map[string][]byte{"results/result_1.txt": noise[:2<<10]})), true, false},
		{"a tar.gz with code over the limit", packed(t, files(map[string][]byte{"code/weights.bin": noise})), true, false},
		{"a zip", zipOf(t, files(nil)), false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			up, err := svc.spool(bytes.NewReader(c.body))
			if err != nil {
				t.Fatal(err)
			}
			stored, err := os.ReadFile(svc.blobs.Path(up.sha))
			if err != nil || !bytes.Equal(stored, c.body) || up.size != int64(len(c.body)) {
				t.Fatalf("stored %d bytes (%v) as %s, want the upload's %d", len(stored), err, up.sha, len(c.body))
			}
			if up.read != c.stream {
				t.Fatalf("read while arriving: %v, want %v", up.read, c.stream)
			}
			want, wantErr := bundle.Open(svc.blobs.Path(up.sha), lim)
			if (wantErr == nil) != c.ok {
				t.Fatalf("the stored file reads with error %v, want ok %v", wantErr, c.ok)
			}
			if !c.stream {
				return
			}
			if d5list.ErrorMessage(up.readErr) != d5list.ErrorMessage(wantErr) || !reflect.DeepEqual(up.bundle, want) {
				t.Fatalf("read while arriving: %+v, %v\nfrom the stored file: %+v, %v", up.bundle, up.readErr, want, wantErr)
			}
		})
	}
}

// brokenBody fails after its first bytes, as a client that goes away
// half way through its upload.
type brokenBody struct{ r io.Reader }

var errGone = errors.New("the client went away")

func (b *brokenBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err == io.EOF {
		return n, errGone
	}
	return n, err
}

// An upload that breaks off half way is refused with a clear error, and
// leaves nothing in the blob folder.
func TestSpoolBrokenUploadLeavesNothing(t *testing.T) {
	svc, blobs := spoolService(t, bundle.DefaultLimits())
	noise := make([]byte, 3<<20)
	rand.Read(noise)
	body := packed(t, folder(noise, nil))
	_, err := svc.spool(&brokenBody{bytes.NewReader(body[:len(body)/2])})
	if d5list.ErrorCode(err) != d5list.EINVALID || !errors.Is(err, errGone) && !bytes.Contains([]byte(d5list.ErrorMessage(err)), []byte(errGone.Error())) {
		t.Fatalf("spooling a broken upload: %v, want EINVALID naming the read error", err)
	}
	var left []string
	_ = filepath.WalkDir(blobs, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			left = append(left, path)
		}
		return nil
	})
	if len(left) != 0 {
		t.Fatalf("a broken upload left %v", left)
	}
}
