-- What a board's charts and filter choices show, kept with the write
-- (issue 28) instead of aggregate queries over the board after each change:
-- at a million entries those passes took seconds, and a page that waited
-- for one took up to two.

-- Each system's best entries grouped by a name (the shares charts), and
-- every listed entry grouped by a name (the filter choices): how many, and
-- their summed performance (leaderboard.Performance). A group leaves when
-- its last entry does.
CREATE TABLE board_groups (
    benchmark_id TEXT NOT NULL,
    view         TEXT NOT NULL, -- best_default, best_all (shares); on_all (choices)
    col          TEXT NOT NULL, -- accelerator_name or framework_name
    name         TEXT NOT NULL,
    n            INTEGER NOT NULL,
    perf         REAL NOT NULL,
    PRIMARY KEY (benchmark_id, view, col, name)
) WITHOUT ROWID;

-- The largest groups first, as the shares list them.
CREATE INDEX board_groups_by_size ON board_groups (benchmark_id, view, col, n DESC, name);

-- The Pareto fronts against accelerator count and declared price: for
-- each value above 0 among a view's best entries, how many have it and the
-- best of them; on_front marks the values whose best ranks better than the
-- best of every smaller value, which is the front the charts draw.
CREATE TABLE board_fronts (
    benchmark_id  TEXT NOT NULL,
    view          TEXT NOT NULL, -- best_default or best_all
    col           TEXT NOT NULL, -- accelerators or cost
    x             REAL NOT NULL,
    n             INTEGER NOT NULL,
    submission_id INTEGER NOT NULL,
    k1            REAL NOT NULL,
    sec_missing   INTEGER NOT NULL,
    k2            REAL NOT NULL,
    created_at    INTEGER NOT NULL,
    on_front      INTEGER NOT NULL,
    PRIMARY KEY (benchmark_id, view, col, x)
) WITHOUT ROWID;

CREATE INDEX board_fronts_ranked ON board_fronts (benchmark_id, view, col, k1, submission_id) WHERE on_front = 1;

-- A system's best rows, and each value's best among the best rows, found
-- by a seek: only the best rows are in these indexes, one per system.
CREATE INDEX board_best_default_by_system ON board_rows (benchmark_id, system_key) WHERE best_default = 1;
CREATE INDEX board_best_all_by_system ON board_rows (benchmark_id, system_key) WHERE best_all = 1;
CREATE INDEX board_best_default_by_accelerators ON board_rows
    (benchmark_id, accelerators, k1, sec_missing, k2, created_at, submission_id) WHERE best_default = 1;
CREATE INDEX board_best_all_by_accelerators ON board_rows
    (benchmark_id, accelerators, k1, sec_missing, k2, created_at, submission_id) WHERE best_all = 1;
CREATE INDEX board_best_default_by_cost ON board_rows
    (benchmark_id, cost, k1, sec_missing, k2, created_at, submission_id) WHERE best_default = 1;
CREATE INDEX board_best_all_by_cost ON board_rows
    (benchmark_id, cost, k1, sec_missing, k2, created_at, submission_id) WHERE best_all = 1;

-- board_filter_best now keeps each system's best under every set of
-- filter columns at once (col 'division,framework', val the values joined
-- by NUL), and board_counts the entries under each: the boards are elected
-- again at the next start (store.electUnelected), which fills the tables
-- above too.
DELETE FROM board_filter_best;
DELETE FROM board_counts WHERE instr(view, char(0)) > 0;
