package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/deep500/d5list/store"
)

// adminBackup writes an online backup of a data folder to -o: a consistent
// snapshot of the database plus the blobs, as one tar.gz. It is written
// beside the target and renamed, so that a failed backup never leaves a
// truncated file under the name an operator trusts.
func adminBackup(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("admin backup", stderr)
	data := fs.String("data", envOr("D5LIST_DATA", "./data"), "data folder of the portal (it may be serving)")
	out := fs.String("o", "", "the backup file to write (.tar.gz)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *out == "" {
		return fmt.Errorf("admin backup: -o FILE is required")
	}
	if _, err := os.Stat(filepath.Join(*data, "d5list.db")); err != nil {
		return fmt.Errorf("admin backup: --data %s: no d5list.db there: %w", *data, err)
	}
	db, err := store.Open(ctx, *data)
	if err != nil {
		return err
	}
	defer db.Close()
	tmp, err := os.CreateTemp(filepath.Dir(*out), ".d5list-backup-*")
	if err != nil {
		return fmt.Errorf("admin backup: -o %s: %w", *out, err)
	}
	defer os.Remove(tmp.Name())
	if err := db.Backup(ctx, tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return fmt.Errorf("admin backup: %s: %w", *out, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("admin backup: %s: %w", *out, err)
	}
	if err := os.Rename(tmp.Name(), *out); err != nil {
		return fmt.Errorf("admin backup: %w", err)
	}
	st, _ := os.Stat(*out)
	fmt.Fprintf(stdout, "backup of %s written to %s (%d bytes)\n", *data, *out, st.Size())
	return nil
}
