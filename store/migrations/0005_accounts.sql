-- Browser accounts (issue 7): passwords, sign-up approval, sessions and
-- the per-benchmark daily upload quota.

CREATE TABLE passwords (
    user_id    INTEGER PRIMARY KEY REFERENCES users (id) ON DELETE CASCADE,
    hash       TEXT NOT NULL,            -- $argon2id$v=19$m=..,t=..,p=..$salt$key
    approved   INTEGER NOT NULL DEFAULT 1, -- 0 while a sign-up waits for an organiser
    updated_at INTEGER NOT NULL
);

CREATE TABLE sessions (
    hash       TEXT PRIMARY KEY,         -- hex sha256 of the cookie value; the value itself is never stored
    user_id    INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    csrf       TEXT NOT NULL,            -- the session's CSRF token, echoed by forms and scripts
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);

CREATE INDEX sessions_by_user ON sessions (user_id);

-- One row: uploads per user, benchmark and UTC day; 0 is unlimited.
CREATE TABLE submission_quota (
    id    INTEGER PRIMARY KEY CHECK (id = 1),
    daily INTEGER NOT NULL
);
INSERT INTO submission_quota (id, daily) VALUES (1, 0);

-- The quota is checked inside the INSERT of the submission itself, so the
-- count and the new row are one atomic step under SQLite's single writer:
-- concurrent uploads cannot both take the last slot. Failed and rejected
-- submissions do not count.
CREATE TRIGGER submissions_quota BEFORE INSERT ON submissions
WHEN NEW.owner_id IS NOT NULL
  AND (SELECT daily FROM submission_quota WHERE id = 1) > 0
  AND (SELECT count(*) FROM submissions
        WHERE owner_id = NEW.owner_id AND benchmark_id = NEW.benchmark_id
          AND status NOT IN ('failed', 'rejected')
          AND created_at / 86400000000000 = NEW.created_at / 86400000000000)
      >= (SELECT daily FROM submission_quota WHERE id = 1)
BEGIN
    SELECT RAISE(ABORT, 'd5list: daily submission quota reached');
END;
