-- Organiser review: the append-only audit log of every review action, and
-- the verdicts of earlier verification attempts kept when a submission is
-- re-run.

CREATE TABLE audit_log (
    id            INTEGER PRIMARY KEY,
    submission_id INTEGER NOT NULL REFERENCES submissions (id),
    actor_id      INTEGER REFERENCES users (id),
    actor         TEXT NOT NULL, -- the name at the time, kept if the account changes
    action        TEXT NOT NULL,
    reason        TEXT NOT NULL DEFAULT '',
    note          TEXT NOT NULL DEFAULT '',
    from_status   TEXT NOT NULL,
    to_status     TEXT NOT NULL,
    job_id        INTEGER, -- the new job of a re-run
    created_at    INTEGER NOT NULL
);

CREATE INDEX audit_log_by_submission ON audit_log (submission_id, id);

-- The log is evidence: no code path may rewrite or remove it.
CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: rows cannot be updated');
END;

CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
BEGIN
    SELECT RAISE(ABORT, 'audit_log is append-only: rows cannot be deleted');
END;

-- The verdict a job produced, archived when a re-run replaces it on the
-- submission.
CREATE TABLE job_results (
    job_id        INTEGER PRIMARY KEY REFERENCES jobs (id),
    submission_id INTEGER NOT NULL REFERENCES submissions (id),
    status        TEXT NOT NULL,
    measured      TEXT, -- JSON d5list.Result or NULL
    reasons       TEXT NOT NULL DEFAULT '[]',
    archived_at   INTEGER NOT NULL
);
