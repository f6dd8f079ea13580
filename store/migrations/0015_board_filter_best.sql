-- Each system's best entry under one filter (issue 15): a board filtered by
-- division, availability, accelerator or framework lists, per system, its
-- best row with that value, which need not be its best row overall. Kept
-- on write beside best_default and best_all (store.syncBoardRowTx), so that
-- a filtered page is a range of one index, as the unfiltered one is,
-- rather than a window over every row of the benchmark. One row per
-- system, view, filter column and value the system has.

CREATE TABLE board_filter_best (
    benchmark_id  TEXT NOT NULL,
    view          TEXT NOT NULL,    -- 'default' or 'all' (with the unverified)
    col           TEXT NOT NULL,    -- division, availability, accelerator, framework
    val           TEXT NOT NULL,    -- as board_rows holds it
    system_key    TEXT NOT NULL,
    submission_id INTEGER NOT NULL,
    k1            REAL NOT NULL,
    sec_missing   INTEGER NOT NULL,
    k2            REAL NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (benchmark_id, view, col, val, system_key)
) WITHOUT ROWID;

CREATE INDEX board_filter_best_rank ON board_filter_best
    (benchmark_id, view, col, val, k1, sec_missing, k2, created_at, submission_id);

-- Boards indexed before this table are elected again at the next start
-- (store.backfillBoards).

-- Every entry under one filter: the rows with the value, in ranking order,
-- of the board with the unverified (on_default rows are on it too), with
-- on_default at hand. Their counts are kept in board_counts under
-- filterCountView's keys.
CREATE INDEX board_on_all_by_division ON board_rows
    (benchmark_id, division, k1, sec_missing, k2, created_at, submission_id, on_default) WHERE on_all = 1;
CREATE INDEX board_on_all_by_availability ON board_rows
    (benchmark_id, availability, k1, sec_missing, k2, created_at, submission_id, on_default) WHERE on_all = 1;
CREATE INDEX board_on_all_by_accelerator ON board_rows
    (benchmark_id, accelerator, k1, sec_missing, k2, created_at, submission_id, on_default) WHERE on_all = 1;
CREATE INDEX board_on_all_by_framework ON board_rows
    (benchmark_id, framework, k1, sec_missing, k2, created_at, submission_id, on_default) WHERE on_all = 1;
