-- Every failed audit of a re-run (a verdict carrying an audit_* reason),
-- written with the verdict: under the account that uploaded the entry and
-- its organisation as they stood then (the account's own, else the
-- entry's submitter), so that organisers see who failed, and a later
-- change of name or organisation does not wipe the record. An uncleared
-- failure makes the account's next job of the benchmark a full audit; two
-- hold its uploads of the benchmark until an organiser clears them
-- (cleared_at, cleared_by: the organiser, by name at the time).
CREATE TABLE audit_failures (
    id               INTEGER PRIMARY KEY,
    submission_id    INTEGER NOT NULL REFERENCES submissions (id),
    job_id           INTEGER NOT NULL REFERENCES jobs (id),
    owner_id         INTEGER REFERENCES users (id),
    owner            TEXT NOT NULL,
    organisation     TEXT NOT NULL DEFAULT '',
    organisation_key TEXT NOT NULL DEFAULT '',
    benchmark_id     TEXT NOT NULL,
    reasons          TEXT NOT NULL, -- JSON: the verdict's audit_* reasons
    created_at       INTEGER NOT NULL,
    cleared_at       INTEGER,
    cleared_by_id    INTEGER REFERENCES users (id),
    cleared_by       TEXT NOT NULL DEFAULT '',
    UNIQUE (job_id)
);

-- What the lease and the upload ask: an account's uncleared failures of a
-- benchmark.
CREATE INDEX audit_failures_by_owner ON audit_failures (owner_id, benchmark_id) WHERE cleared_at IS NULL;
CREATE INDEX audit_failures_by_submission ON audit_failures (submission_id);

-- The organisers' settings of the portal, one row each; a setting with no
-- row has its default. show_failed_audits: 'on' shows the entries whose
-- re-run failed its audit to everyone, as if an organiser had published
-- each; off (the default) they stay their competitor's and the
-- organisers'.
CREATE TABLE settings (
    name          TEXT PRIMARY KEY,
    value         TEXT NOT NULL,
    updated_by_id INTEGER REFERENCES users (id),
    updated_by    TEXT NOT NULL DEFAULT '',
    updated_at    INTEGER NOT NULL
) WITHOUT ROWID;
