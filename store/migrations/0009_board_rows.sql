-- The boards answered from an index (issue 15): each submission's place
-- on the boards, derived when it changes (leaderboard.RowOf), in the
-- transaction that changes it. A page is then a range of one partial
-- index, not a rebuild of the benchmark's ranking.

CREATE TABLE board_rows (
    submission_id  INTEGER PRIMARY KEY REFERENCES submissions (id),
    benchmark_id   TEXT NOT NULL,
    on_default     INTEGER NOT NULL, -- on the default board (verified, re-measured, unflagged)
    on_all         INTEGER NOT NULL, -- on the board that includes unverified entries
    best_default   INTEGER NOT NULL DEFAULT 0, -- its system's best row of on_default
    best_all       INTEGER NOT NULL DEFAULT 0, -- its system's best row of on_all
    k1             REAL NOT NULL,    -- ranked value, ascending is better
    sec_missing    INTEGER NOT NULL,
    k2             REAL NOT NULL,    -- secondary value, ascending is better
    created_at     INTEGER NOT NULL,
    system_key     TEXT NOT NULL,
    division       TEXT NOT NULL,
    availability   TEXT NOT NULL,
    accelerator    TEXT NOT NULL,
    framework      TEXT NOT NULL,
    search         TEXT NOT NULL,
    sort_submitter TEXT NOT NULL,
    sort_system    TEXT NOT NULL,
    -- What the charts aggregate: accelerator count, declared price,
    -- performance (leaderboard.Performance), the names as written.
    accelerators   INTEGER NOT NULL,
    cost           REAL NOT NULL,
    perf           REAL NOT NULL,
    accelerator_name TEXT NOT NULL,
    framework_name TEXT NOT NULL,
    entry          TEXT NOT NULL     -- JSON d5list.Entry without its rank
);

CREATE INDEX board_best_default ON board_rows (benchmark_id, k1, sec_missing, k2, created_at, submission_id) WHERE best_default = 1;
CREATE INDEX board_on_default ON board_rows (benchmark_id, k1, sec_missing, k2, created_at, submission_id) WHERE on_default = 1;
CREATE INDEX board_best_all ON board_rows (benchmark_id, k1, sec_missing, k2, created_at, submission_id) WHERE best_all = 1;
CREATE INDEX board_on_all ON board_rows (benchmark_id, k1, sec_missing, k2, created_at, submission_id) WHERE on_all = 1;
-- The newest entries of the default board, for the home page.
CREATE INDEX board_best_default_by_time ON board_rows (benchmark_id, created_at) WHERE best_default = 1;
CREATE INDEX board_by_system ON board_rows (benchmark_id, system_key, k1, sec_missing, k2, created_at, submission_id);

-- Rows per benchmark and view, kept with the rows, so that a page's
-- "rows 1-50 of N" does not count an index.
CREATE TABLE board_counts (
    benchmark_id TEXT NOT NULL,
    view         TEXT NOT NULL,
    n            INTEGER NOT NULL,
    PRIMARY KEY (benchmark_id, view)
);

-- The Atom feed: the newest verified entries without reading them all.
CREATE INDEX submissions_by_update ON submissions (status, updated_at);
