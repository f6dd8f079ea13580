package store

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"database/sql"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// BackupDBName is the database's name inside a backup archive; restoring
// is extracting the archive into an empty data folder (docs/operations.md).
const BackupDBName = "d5list.db"

// Backup writes a gzipped tar of the data folder to w while the portal may
// be serving from it: d5list.db as one consistent snapshot, then blobs/.
//
// The snapshot is VACUUM INTO a temporary file on a read connection: it
// reads one WAL snapshot, so writers go on meanwhile and the copy has no
// half-applied transaction. Blobs are copied after the snapshot; a blob is
// filed before the row naming it is committed and referenced blobs are
// never removed, so every blob the snapshot names is on disk by then.
// Uploads still in progress (blobs/tmp) are left out.
func (db *DB) Backup(ctx context.Context, w io.Writer) error {
	tmpDir, err := os.MkdirTemp(db.dir, ".backup-")
	if err != nil {
		return noSpace(fmt.Errorf("store: backup: %w", err))
	}
	defer os.RemoveAll(tmpDir)
	snap := filepath.Join(tmpDir, BackupDBName)
	if err := db.snapshot(ctx, snap); err != nil {
		return err
	}

	gz := gzip.NewWriter(w)
	tw := tar.NewWriter(gz)
	if err := addFile(tw, snap, BackupDBName); err != nil {
		return err
	}
	blobRoot := db.blobs.root
	err = filepath.WalkDir(blobRoot, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(blobRoot, path)
		if d.IsDir() {
			if rel == "tmp" {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !ValidSHA(d.Name()) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		return addFile(tw, path, "blobs/"+filepath.ToSlash(rel))
	})
	if err != nil {
		return fmt.Errorf("store: backup: blobs: %w", err)
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	if err := gz.Close(); err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	return nil
}

// snapshot runs VACUUM INTO on a connection of its own: the read pool is
// query_only, which forbids VACUUM, and the single writer connection must
// not be held for the length of a copy.
func (db *DB) snapshot(ctx context.Context, dst string) error {
	src := filepath.Join(db.dir, "d5list.db")
	conn, err := sql.Open("sqlite", "file:"+src+"?_pragma=busy_timeout(10000)")
	if err != nil {
		return fmt.Errorf("store: backup: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `VACUUM INTO ?`, dst); err != nil {
		return noSpace(fmt.Errorf("store: backup: VACUUM INTO %s: %w", dst, err))
	}
	return nil
}

func addFile(tw *tar.Writer, path, name string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	hdr := &tar.Header{Name: name, Mode: 0o640, Size: st.Size(), ModTime: st.ModTime().Truncate(time.Second), Typeflag: tar.TypeReg}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	// The size is fixed in the header; a blob is immutable once filed.
	if _, err := io.CopyN(tw, f, st.Size()); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// IntegrityCheck runs SQLite's integrity_check and returns its answer,
// "ok" for a sound file.
func (db *DB) IntegrityCheck(ctx context.Context) (string, error) {
	var lines []string
	err := db.readTx(ctx, func(tx *sql.Tx) error {
		rows, err := tx.QueryContext(ctx, `PRAGMA integrity_check`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var s string
			if err := rows.Scan(&s); err != nil {
				return err
			}
			lines = append(lines, s)
		}
		return rows.Err()
	})
	return strings.Join(lines, "; "), err
}
