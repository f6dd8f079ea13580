package store

import (
	"context"
	"crypto/rand"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	d5list "github.com/deep500/d5list"
)

// The backup is taken while a writer keeps filing blobs and submissions;
// it is restored the way docs/operations.md says (tar -xzf into an empty
// folder) and must open, pass integrity_check and hold every row it
// names together with its blob.
func TestBackupWhileWritingRestores(t *testing.T) {
	if _, err := exec.LookPath("tar"); err != nil {
		t.Skip("tar is not installed; the documented restore uses it")
	}
	ctx := context.Background()
	dir := t.TempDir()
	db := openTestDB(t, dir)
	if err := db.UpsertBenchmarks(ctx, []d5list.Benchmark{testBenchmark("l2-digits", nil)}); err != nil {
		t.Fatal(err)
	}
	u, err := db.EnsureUser(ctx, "writer", d5list.RoleAdmin)
	if err != nil {
		t.Fatal(err)
	}
	insert := func() error {
		w, err := db.Blobs().Create()
		if err != nil {
			return err
		}
		buf := make([]byte, 4096)
		rand.Read(buf)
		if _, err := w.Write(buf); err != nil {
			w.Abort()
			return err
		}
		sha, size, err := w.Commit()
		if err != nil {
			return err
		}
		s := withOwner(testSubmission("l2-digits", 1), u.ID)
		s.BundleSHA256, s.BundleSize = sha, size
		return db.CreateSubmission(ctx, s)
	}
	for range 20 {
		if err := insert(); err != nil {
			t.Fatal(err)
		}
	}

	stop := make(chan struct{})
	var written atomic.Int64
	var wg sync.WaitGroup
	var writeErr error
	var failed atomic.Bool
	wg.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := insert(); err != nil {
				writeErr = err
				failed.Store(true)
				return
			}
			written.Add(1)
		}
	})
	// Let the writer get going so that the snapshot races real commits.
	for written.Load() < 5 && !failed.Load() {
		time.Sleep(time.Millisecond)
	}
	archive := filepath.Join(t.TempDir(), "backup.tar.gz")
	f, err := os.Create(archive)
	if err != nil {
		t.Fatal(err)
	}
	backupErr := db.Backup(ctx, f)
	f.Close()
	afterBackup := written.Load()
	for written.Load() < afterBackup+5 && !failed.Load() {
		time.Sleep(time.Millisecond)
	}
	close(stop)
	wg.Wait()
	if backupErr != nil {
		t.Fatalf("Backup: %v", backupErr)
	}
	if writeErr != nil {
		t.Fatalf("the writer failed during the backup: %v", writeErr)
	}

	restored := t.TempDir()
	if out, err := exec.Command("tar", "-xzf", archive, "-C", restored).CombinedOutput(); err != nil {
		t.Fatalf("tar -xzf: %v\n%s", err, out)
	}
	rdb := openTestDB(t, restored)
	if ok, err := rdb.IntegrityCheck(ctx); err != nil || ok != "ok" {
		t.Fatalf("integrity_check of the restored database: %q %v", ok, err)
	}
	subs, err := rdb.Submissions(ctx, d5list.SubmissionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	all, err := db.Submissions(ctx, d5list.SubmissionFilter{})
	if err != nil {
		t.Fatal(err)
	}
	// Everything committed before the backup began is there; what the
	// writer added after it finished is not; and none is half there.
	if len(subs) < 25 || len(subs) >= len(all) {
		t.Fatalf("restored %d submissions; %d existed when the writer was stopped, at least 25 before the backup", len(subs), len(all))
	}
	for _, s := range subs {
		if !rdb.Blobs().Exists(s.BundleSHA256) {
			t.Errorf("submission %d: its bundle %s is missing from the restore", s.ID, s.BundleSHA256)
		}
		jobs, err := rdb.Jobs(ctx, s.ID)
		if err != nil || len(jobs) != 1 {
			t.Errorf("submission %d: jobs %v %v, want its one queued job", s.ID, jobs, err)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".backup-*")); len(left) != 0 {
		t.Errorf("the backup left %v in the data folder", left)
	}
}
