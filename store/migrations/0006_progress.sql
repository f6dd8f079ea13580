-- Live progress of verification jobs: the output lines runners stream
-- while they work (only the latest lines of each job are kept, so that a
-- chatty run cannot fill the disk), and the events of each job's life for
-- the submission's timeline.

CREATE TABLE job_log (
    id            INTEGER PRIMARY KEY, -- the line's seq: grows across a submission's jobs
    job_id        INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    submission_id INTEGER NOT NULL REFERENCES submissions (id) ON DELETE CASCADE,
    attempt       INTEGER NOT NULL,
    run           INTEGER NOT NULL,
    stream        TEXT NOT NULL,
    text          TEXT NOT NULL,
    created_at    INTEGER NOT NULL
);

CREATE INDEX job_log_by_submission ON job_log (submission_id, id);
CREATE INDEX job_log_by_job ON job_log (job_id, id);

CREATE TABLE job_events (
    id            INTEGER PRIMARY KEY,
    job_id        INTEGER NOT NULL REFERENCES jobs (id) ON DELETE CASCADE,
    submission_id INTEGER NOT NULL REFERENCES submissions (id) ON DELETE CASCADE,
    attempt       INTEGER NOT NULL,
    kind          TEXT NOT NULL,
    runner        TEXT NOT NULL DEFAULT '',
    detail        TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL
);

CREATE INDEX job_events_by_submission ON job_events (submission_id, id);
