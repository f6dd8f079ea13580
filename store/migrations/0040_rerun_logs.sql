-- The blobs that hold the portal's re-run logs (each measured run's
-- RunMetrics.LogSHA256), one row per run of each ended job, written with
-- its verdict, published or held back for a re-measure: with
-- submissions.bundle_sha256, what names a blob, so that the sweep of the
-- blobs no row names (store.RemoveUnreferencedBlobs) finds these by an
-- index too.

CREATE TABLE rerun_logs (
    job_id        INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    run           INTEGER NOT NULL,
    submission_id INTEGER NOT NULL REFERENCES submissions (id) ON DELETE CASCADE,
    sha256        TEXT NOT NULL,
    PRIMARY KEY (job_id, run)
) WITHOUT ROWID;

CREATE INDEX rerun_logs_by_blob ON rerun_logs (sha256);
