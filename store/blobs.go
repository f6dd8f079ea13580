package store

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	d5list "github.com/deep500/d5list"
)

// tempGrace is how old an upload temp of a live process must be before
// CleanTemp treats it as abandoned. Uploads are bounded by the server's
// 30-minute read timeout and write continuously, so an hour without a write
// means nobody is writing.
const tempGrace = time.Hour

// Blobs is a folder of files named by the sha256 of their content:
// root/<sha[:2]>/<sha>, with uploads in progress under root/tmp.
type Blobs struct {
	root string
}

func openBlobs(root string) (*Blobs, error) {
	if err := os.MkdirAll(filepath.Join(root, "tmp"), 0o750); err != nil {
		return nil, fmt.Errorf("store: creating %s: %w", root, err)
	}
	return &Blobs{root: root}, nil
}

// ValidSHA reports whether s is a lowercase hex sha256, the only names the
// folder accepts, so that no name can reach outside it.
func ValidSHA(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func invalidSHA(sha string) error {
	return d5list.Errorf(d5list.EINVALID, "blob name %q is not a lowercase hex sha256", sha)
}

// Path is where the blob sha lives, or "" for a malformed sha.
func (b *Blobs) Path(sha string) string {
	if !ValidSHA(sha) {
		return ""
	}
	return filepath.Join(b.root, sha[:2], sha)
}

// Exists reports whether the blob sha is stored.
func (b *Blobs) Exists(sha string) bool {
	p := b.Path(sha)
	if p == "" {
		return false
	}
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}

// Open opens the blob sha for reading.
func (b *Blobs) Open(sha string) (*os.File, error) {
	p := b.Path(sha)
	if p == "" {
		return nil, invalidSHA(sha)
	}
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, d5list.Errorf(d5list.ENOTFOUND, "blob %s not found", sha)
	}
	return f, err
}

// Remove deletes the blob sha; removing a missing blob is not an error.
func (b *Blobs) Remove(sha string) error {
	p := b.Path(sha)
	if p == "" {
		return invalidSHA(sha)
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// Create starts an upload. The caller must end it with Commit or Abort.
func (b *Blobs) Create() (*BlobWriter, error) {
	var rnd [8]byte
	rand.Read(rnd[:])
	// The pid in the name lets CleanTemp tell a dead process's leftovers
	// from another live process's upload.
	name := strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(rnd[:]) + ".part"
	f, err := os.OpenFile(filepath.Join(b.root, "tmp", name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o640)
	if err != nil {
		return nil, noSpace(fmt.Errorf("store: creating upload: %w", err))
	}
	return &BlobWriter{blobs: b, f: f, h: sha256.New()}, nil
}

// CleanTemp removes uploads left behind by processes that are gone, and
// any older than an hour.
func (b *Blobs) CleanTemp() error {
	dir := filepath.Join(b.root, "tmp")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("store: cleaning %s: %w", dir, err)
	}
	var errs []error
	for _, e := range entries {
		if !abandoned(e) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func abandoned(e fs.DirEntry) bool {
	pidText, _, ok := strings.Cut(e.Name(), "-")
	pid, err := strconv.Atoi(pidText)
	if !ok || err != nil || pid <= 0 || !e.Type().IsRegular() {
		return true // not an upload of ours
	}
	if pid != os.Getpid() && !processAlive(pid) {
		return true
	}
	info, err := e.Info()
	return err == nil && time.Since(info.ModTime()) > tempGrace
}

// BlobWriter receives one blob and hashes it on the way to disk.
type BlobWriter struct {
	blobs   *Blobs
	f       *os.File
	h       hash.Hash
	size    int64
	flushed int64 // bytes the disk was asked to start writing
	done    bool
}

// writebackEvery is how many written bytes a blob asks the disk to start
// on at a time (startWriteback), so that an upload's fsync waits for
// little more than the last of them.
const writebackEvery = 8 << 20

// Write appends p to the blob.
func (w *BlobWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, errors.New("store: write to a finished blob")
	}
	n, err := w.f.Write(p)
	w.h.Write(p[:n])
	w.size += int64(n)
	if w.size-w.flushed >= writebackEvery {
		startWriteback(w.f, w.flushed, w.size-w.flushed)
		w.flushed = w.size
	}
	return n, noSpace(err)
}

// Sum is the hex sha256 of what was written so far: after the last write,
// the name Commit files the blob under.
func (w *BlobWriter) Sum() string { return hex.EncodeToString(w.h.Sum(nil)) }

// Commit makes the blob durable under its sha256 and returns it. If the
// same content is already stored, the upload is dropped.
func (w *BlobWriter) Commit() (sha string, size int64, err error) {
	if w.done {
		return "", 0, errors.New("store: blob already committed or aborted")
	}
	w.done = true
	tmp := w.f.Name()
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if err := w.f.Sync(); err != nil {
		w.f.Close()
		return "", 0, noSpace(fmt.Errorf("store: syncing upload: %w", err))
	}
	if err := w.f.Close(); err != nil {
		return "", 0, noSpace(fmt.Errorf("store: closing upload: %w", err))
	}
	sha = w.Sum()
	dst := w.blobs.Path(sha)
	if err := os.MkdirAll(filepath.Dir(dst), 0o750); err != nil {
		return "", 0, fmt.Errorf("store: %w", err)
	}
	if _, err := os.Stat(dst); err == nil {
		os.Remove(tmp)
		return sha, w.size, nil
	}
	if err := os.Rename(tmp, dst); err != nil {
		return "", 0, fmt.Errorf("store: filing blob %s: %w", sha, err)
	}
	syncDir(filepath.Dir(dst))
	return sha, w.size, nil
}

// Abort drops the upload; after Commit it does nothing.
func (w *BlobWriter) Abort() {
	if w.done {
		return
	}
	w.done = true
	w.f.Close()
	os.Remove(w.f.Name())
}

// syncDir makes a rename durable; where directories cannot be synced the
// rename is still atomic, only possibly lost on power failure.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// RemoveUnreferencedBlobs removes the stored blobs that no row names (a
// submission its bundle, rerun_logs a re-run's log) and returns how many:
// a portal killed between storing an upload's bytes and writing its row
// (or removing a refused one's), or between keeping a re-run's logs and
// writing its verdict, leaves them. A
// portal calls it as it starts, before it takes uploads: an upload of a
// process still running would lose its bytes between the two steps.
func (db *DB) RemoveUnreferencedBlobs(ctx context.Context) (int, error) {
	dirs, err := os.ReadDir(db.blobs.root)
	if err != nil {
		return 0, fmt.Errorf("store: listing %s: %w", db.blobs.root, err)
	}
	removed := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "tmp" {
			continue
		}
		files, err := os.ReadDir(filepath.Join(db.blobs.root, d.Name()))
		if err != nil {
			return removed, fmt.Errorf("store: listing blobs: %w", err)
		}
		for _, f := range files {
			sha := f.Name()
			if !f.Type().IsRegular() || db.blobs.Path(sha) != filepath.Join(db.blobs.root, d.Name(), sha) {
				continue // not a blob's name where it belongs
			}
			var named bool
			if err := db.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM submissions WHERE bundle_sha256 = ?)
				OR EXISTS (SELECT 1 FROM rerun_logs WHERE sha256 = ?)`, sha, sha).Scan(&named); err != nil {
				return removed, fmt.Errorf("store: looking up blob %s: %w", sha, err)
			}
			if named {
				continue
			}
			if err := db.blobs.Remove(sha); err != nil {
				return removed, err
			}
			removed++
		}
	}
	return removed, nil
}
