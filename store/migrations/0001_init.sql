-- Times are INTEGER unix nanoseconds (UTC), so that lease expiry compares
-- as numbers and tests can move the clock. JSON columns hold the domain
-- types as encoding/json writes them.

CREATE TABLE benchmarks (
    id         TEXT PRIMARY KEY,
    level      INTEGER NOT NULL,
    category   TEXT NOT NULL,
    definition TEXT NOT NULL, -- the whole d5list.Benchmark as JSON
    updated_at INTEGER NOT NULL
);

CREATE TABLE users (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL UNIQUE,
    role       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);

CREATE TABLE tokens (
    id         INTEGER PRIMARY KEY,
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    hash       TEXT NOT NULL UNIQUE, -- hex sha256 of the token; the token itself is never stored
    label      TEXT NOT NULL DEFAULT '',
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);

CREATE TABLE submissions (
    id            INTEGER PRIMARY KEY,
    benchmark_id  TEXT NOT NULL REFERENCES benchmarks (id),
    owner_id      INTEGER REFERENCES users (id),
    division      TEXT NOT NULL DEFAULT '',
    availability  TEXT NOT NULL DEFAULT '',
    submitter     TEXT NOT NULL DEFAULT '',
    system_name   TEXT NOT NULL DEFAULT '',
    framework     TEXT NOT NULL DEFAULT '',
    accelerator   TEXT NOT NULL DEFAULT '',
    accelerators  INTEGER NOT NULL DEFAULT 0,
    host_cpu      TEXT NOT NULL DEFAULT '',
    status        TEXT NOT NULL,
    bundle_sha256 TEXT NOT NULL DEFAULT '',
    bundle_size   INTEGER NOT NULL DEFAULT 0,
    recipe        TEXT, -- JSON d5list.Recipe or NULL
    claimed       TEXT, -- JSON d5list.Result or NULL
    measured      TEXT, -- JSON d5list.Result or NULL
    reasons       TEXT NOT NULL DEFAULT '[]',
    flag          TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);

CREATE INDEX submissions_by_benchmark ON submissions (benchmark_id, status);
CREATE INDEX submissions_by_owner ON submissions (owner_id);

CREATE TABLE jobs (
    id            INTEGER PRIMARY KEY,
    submission_id INTEGER NOT NULL REFERENCES submissions (id) ON DELETE CASCADE,
    benchmark_id  TEXT NOT NULL,
    state         TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    max_attempts  INTEGER NOT NULL DEFAULT 3,
    runner_id     TEXT NOT NULL DEFAULT '',
    secret_hash   TEXT NOT NULL DEFAULT '', -- hex sha256 of the lease secret
    lease_expires INTEGER NOT NULL DEFAULT 0,
    error         TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);

-- LeaseJob scans waiting jobs oldest first.
CREATE INDEX jobs_by_state ON jobs (state, id);
CREATE INDEX jobs_by_submission ON jobs (submission_id);
