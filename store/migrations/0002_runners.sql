-- Runner pool: organiser-issued runner tokens (hashed like API tokens) and
-- the agents as last seen. Online is derived from last_seen when read.

CREATE TABLE runner_tokens (
    id         INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    hash       TEXT NOT NULL UNIQUE, -- hex sha256 of the token
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);

CREATE INDEX runner_tokens_by_name ON runner_tokens (name);

CREATE TABLE runners (
    name        TEXT PRIMARY KEY, -- token name "/" agent id
    labels      TEXT NOT NULL DEFAULT '{}', -- JSON object
    last_seen   INTEGER NOT NULL,
    current_job INTEGER NOT NULL DEFAULT 0
);
