package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

func writeBlob(t *testing.T, b *Blobs, content string) (string, int64) {
	t.Helper()
	w, err := b.Create()
	if err != nil {
		t.Fatal(err)
	}
	// Two writes: the hash must cover the whole stream.
	half := len(content) / 2
	if _, err := io.WriteString(w, content[:half]); err != nil {
		t.Fatal(err)
	}
	if _, err := io.WriteString(w, content[half:]); err != nil {
		t.Fatal(err)
	}
	sha, size, err := w.Commit()
	if err != nil {
		t.Fatal(err)
	}
	return sha, size
}

func tempFiles(t *testing.T, b *Blobs) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(b.root, "tmp"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func TestBlobCommitDedupeAbort(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	b := db.Blobs()
	content := strings.Repeat("bundle bytes ", 1000)
	sum := sha256.Sum256([]byte(content))
	want := hex.EncodeToString(sum[:])

	sha, size := writeBlob(t, b, content)
	if sha != want || size != int64(len(content)) {
		t.Fatalf("Commit = %s, %d; want %s, %d", sha, size, want, len(content))
	}
	if p := b.Path(sha); p != filepath.Join(db.Dir(), "blobs", sha[:2], sha) || !b.Exists(sha) {
		t.Fatalf("blob not at %s", p)
	}
	f, err := b.Open(sha)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(f)
	f.Close()
	if string(got) != content {
		t.Fatal("stored content differs from what was written")
	}

	again, _ := writeBlob(t, b, content)
	if again != sha || len(tempFiles(t, b)) != 0 {
		t.Fatalf("second upload of the same content: %s, temps left %v", again, tempFiles(t, b))
	}

	w, err := b.Create()
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(w, "half an upload")
	if len(tempFiles(t, b)) != 1 {
		t.Fatalf("upload in progress not in tmp: %v", tempFiles(t, b))
	}
	w.Abort()
	w.Abort() // harmless twice
	if names := tempFiles(t, b); len(names) != 0 {
		t.Fatalf("Abort left %v", names)
	}
	if _, _, err := w.Commit(); err == nil {
		t.Fatal("Commit after Abort succeeded")
	}

	if err := b.Remove(sha); err != nil || b.Exists(sha) {
		t.Fatalf("Remove: %v, still there: %v", err, b.Exists(sha))
	}
	if err := b.Remove(sha); err != nil {
		t.Fatalf("removing a missing blob: %v", err)
	}
	_, err = b.Open(sha)
	wantCode(t, "open removed blob", err, d5list.ENOTFOUND)
}

func TestBlobNamesCannotEscape(t *testing.T) {
	db := openTestDB(t, t.TempDir())
	b := db.Blobs()
	for _, name := range []string{"", "../../etc/passwd", strings.Repeat("A", 64), strings.Repeat("a", 63),
		strings.Repeat("a", 62) + "/x", strings.Repeat("a", 65)} {
		if p := b.Path(name); p != "" {
			t.Errorf("Path(%q) = %q, want empty", name, p)
		}
		if b.Exists(name) {
			t.Errorf("Exists(%q) = true", name)
		}
		_, err := b.Open(name)
		wantCode(t, "Open("+name+")", err, d5list.EINVALID)
		wantCode(t, "Remove("+name+")", b.Remove(name), d5list.EINVALID)
	}
}

func TestCleanTempRemovesAbandonedUploads(t *testing.T) {
	dir := t.TempDir()
	db := openTestDB(t, dir)
	tmp := filepath.Join(dir, "blobs", "tmp")
	self := strconv.Itoa(os.Getpid())
	live, err := db.Blobs().Create() // this process's upload in progress
	if err != nil {
		t.Fatal(err)
	}
	io.WriteString(live, "in progress")
	defer live.Abort()

	files := map[string]bool{ // name -> should survive
		"2147483647-dead.part":       false, // beyond any pid_max: its process is gone
		"junk":                       false, // not an upload name
		self + "-stale.part":         false, // this process, but untouched for too long
		self + "-recent.part":        true,
		filepath.Base(live.f.Name()): true,
	}
	for name := range files {
		if name == filepath.Base(live.f.Name()) {
			continue
		}
		if err := os.WriteFile(filepath.Join(tmp, name), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-2 * tempGrace)
	if err := os.Chtimes(filepath.Join(tmp, self+"-stale.part"), old, old); err != nil {
		t.Fatal(err)
	}

	// A second handle on the folder, as a restarted process would open it.
	openTestDB(t, dir)
	for name, survive := range files {
		_, err := os.Stat(filepath.Join(tmp, name))
		if exists := err == nil; exists != survive {
			t.Errorf("%s: exists %v after Open, want %v", name, exists, survive)
		}
	}
	if _, _, err := live.Commit(); err != nil {
		t.Fatalf("the live upload was broken by the cleanup: %v", err)
	}
}

func TestOpenCreatesBlobFolder(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	db, err := Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if st, err := os.Stat(filepath.Join(dir, "blobs", "tmp")); err != nil || !st.IsDir() {
		t.Fatalf("blobs/tmp: %v", err)
	}
}

// A bundle stored without its submission (the portal killed between the
// two) is removed; one a submission names stays, so does the log of a
// re-run whose verdict was held back for a re-measure, and so does
// anything in the folder that is not a blob.
func TestRemoveUnreferencedBlobs(t *testing.T) {
	db, _ := newTestDB(t)
	ctx := context.Background()
	b := db.Blobs()
	kept, _ := writeBlob(t, b, "a submitted bundle")
	rerunLog, _ := writeBlob(t, b, ":::MLLOG a re-run's log")
	orphan, _ := writeBlob(t, b, "a bundle whose row was never written")
	s := testSubmission("l2-digits", 1, 2, 3)
	s.BundleSHA256 = kept
	mustCreate(t, db, s)
	l := mustLease(t, db, "r", nil, time.Minute)
	measured := &d5list.Result{Runs: []d5list.RunMetrics{{Index: 0, Seed: 1, LogSHA256: rerunLog}}}
	req := d5list.RemeasureRequest{Why: "a gap, seen once", After: time.Second, Elsewhere: time.Second}
	if err := db.RemeasureJob(ctx, l.Job.ID, l.Secret, measured, d5list.StatusDiscrepancy, nil, req); err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(b.root, orphan[:2], "notes.txt")
	if err := os.WriteFile(stray, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}

	n, err := db.RemoveUnreferencedBlobs(ctx)
	if err != nil || n != 1 {
		t.Fatalf("removed %d (%v), want the one orphan", n, err)
	}
	if b.Exists(orphan) || !b.Exists(kept) || !b.Exists(rerunLog) {
		t.Errorf("after the sweep: orphan stored %v, submitted bundle %v, re-run log %v; want false, true, true",
			b.Exists(orphan), b.Exists(kept), b.Exists(rerunLog))
	}
	if _, err := os.Stat(stray); err != nil {
		t.Errorf("a file that is not a blob was touched: %v", err)
	}
}
