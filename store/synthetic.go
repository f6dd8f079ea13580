package store

import (
	"context"
	"database/sql"
	"fmt"

	d5list "github.com/deep500/d5list"
)

// SyntheticSubmitter is the submitter of every synthetic submission, so
// that no list built for a benchmark run is mistaken for real results.
const SyntheticSubmitter = "synthetic (d5list admin seed-synthetic)"

// InsertSynthetic stores generated submissions as verified, without jobs,
// bundles or audit entries, many to a transaction: it fills a data folder
// for performance measurements (issue 6: a board of 100,000 submissions).
// It refuses a folder that holds any submission not labelled synthetic,
// and submissions whose submitter is not SyntheticSubmitter.
func (db *DB) InsertSynthetic(ctx context.Context, subs []d5list.Submission) error {
	for i := range subs {
		if subs[i].Submitter != SyntheticSubmitter {
			return d5list.Errorf(d5list.EINVALID, "synthetic submission %d: submitter %q, want %q", i+1, subs[i].Submitter, SyntheticSubmitter)
		}
	}
	var real int
	if err := db.read.QueryRowContext(ctx, `SELECT count(*) FROM submissions WHERE submitter != ?`, SyntheticSubmitter).Scan(&real); err != nil {
		return fmt.Errorf("store: counting submissions: %w", err)
	}
	if real > 0 {
		return d5list.Errorf(d5list.ECONFLICT, "%s holds %d real submissions; synthetic ones go into a data folder of their own", db.dir, real)
	}
	benches := map[string]*d5list.Benchmark{}
	for i := range subs {
		id := subs[i].BenchmarkID
		if benches[id] == nil {
			b, err := db.Benchmark(ctx, id)
			if err != nil {
				return err
			}
			benches[id] = b
		}
	}
	const batch = 5000
	for start := 0; start < len(subs); start += batch {
		part := subs[start:min(start+batch, len(subs))]
		err := db.writeTx(ctx, func(tx *sql.Tx) error {
			stmt, err := tx.PrepareContext(ctx, `INSERT INTO submissions (benchmark_id, division, availability,
					submitter, system_name, framework, accelerator, accelerators, host_cpu, status, claimed, measured, reasons,
					created_at, updated_at, code_url, cost_per_hour)
				VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id`)
			if err != nil {
				return err
			}
			defer stmt.Close()
			rowStmt, err := tx.PrepareContext(ctx, insertBoardRow)
			if err != nil {
				return err
			}
			defer rowStmt.Close()
			for i := range part {
				s := &part[i]
				claimed, err := encodeResult(s.Claimed)
				if err != nil {
					return err
				}
				measured, err := encodeResult(s.Measured)
				if err != nil {
					return err
				}
				reasons, err := encodeReasons(s.Reasons)
				if err != nil {
					return err
				}
				t := s.CreatedAt.UnixNano()
				if err := stmt.QueryRowContext(ctx, s.BenchmarkID, s.Division, s.Availability, s.Submitter, s.SystemName,
					s.Framework, s.Accelerator, s.Accelerators, s.HostCPU, string(d5list.StatusVerified), claimed, measured, reasons,
					t, t, s.CodeURL, s.CostPerHour).Scan(&s.ID); err != nil {
					return err
				}
				s.Status = d5list.StatusVerified
				if err := insertRowOf(ctx, rowStmt, benches[s.BenchmarkID], s); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return wrap(err, "storing synthetic submissions %d to %d", start+1, start+len(part))
		}
	}
	for id := range benches {
		if err := db.writeTx(ctx, func(tx *sql.Tx) error { return electAllBestTx(ctx, tx, id) }); err != nil {
			return wrap(err, "ranking the boards of %q", id)
		}
	}
	return nil
}
