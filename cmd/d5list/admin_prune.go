package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/deep500/d5list/store"
)

// adminPruneLogs deletes the re-run output lines of jobs that ended more
// than --days days ago. It is safe while the server runs.
func adminPruneLogs(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlags("admin prune-logs", stderr)
	data := fs.String("data", envOr("D5LIST_DATA", "./data"), "data folder of the portal")
	days := fs.Int("days", 0, "delete the output lines of jobs that ended more than this many days ago")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *days <= 0 {
		return fmt.Errorf("admin prune-logs: --days must be a number of days above 0, got %d", *days)
	}
	db, err := store.Open(ctx, *data)
	if err != nil {
		return err
	}
	defer db.Close()
	n, err := db.PruneJobLogs(ctx, time.Now().Add(-time.Duration(*days)*24*time.Hour))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "deleted %d output lines of jobs that ended more than %d days ago\n", n, *days)
	return nil
}

// logPruneInterval is how often `serve --keep-logs-days` prunes.
const logPruneInterval = time.Hour

// pruneLogsEvery prunes the output lines of jobs that ended more than keep
// ago, at once and then every interval, until ctx ends. A failed prune is
// logged and tried again at the next interval.
func pruneLogsEvery(ctx context.Context, db *store.DB, keep, interval time.Duration, log *slog.Logger) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		n, err := db.PruneJobLogs(ctx, time.Now().Add(-keep))
		switch {
		case err != nil && ctx.Err() == nil:
			log.Warn("pruning job logs", "err", err)
		case n > 0:
			log.Info("pruned job logs", "lines", n, "ended_before", time.Now().Add(-keep).Format(time.RFC3339))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}
