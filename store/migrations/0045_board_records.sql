-- Each board view's best result over time, kept with the writes: the rows
-- whose value is better than that of every row submitted before them
-- (leaderboard.Records). Made by a pass over the whole board for every
-- summary before, which at a million rows cost seconds on every board
-- answer after a change; syncBoardRowTx now keeps it in the change's own
-- transaction and electAllBestTx makes it again with the rest.

CREATE TABLE board_records (
    benchmark_id  TEXT NOT NULL,
    view          TEXT NOT NULL, -- on_default or on_all
    created_at    INTEGER NOT NULL,
    submission_id INTEGER NOT NULL,
    k1            REAL NOT NULL,
    PRIMARY KEY (benchmark_id, view, created_at, submission_id)
) WITHOUT ROWID;

INSERT INTO board_records (benchmark_id, view, created_at, submission_id, k1)
SELECT benchmark_id, 'on_default', created_at, submission_id, k1 FROM (
    SELECT benchmark_id, created_at, submission_id, k1,
        min(k1) OVER (PARTITION BY benchmark_id ORDER BY created_at, submission_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
    FROM board_rows WHERE on_default = 1)
WHERE before IS NULL OR k1 < before;

INSERT INTO board_records (benchmark_id, view, created_at, submission_id, k1)
SELECT benchmark_id, 'on_all', created_at, submission_id, k1 FROM (
    SELECT benchmark_id, created_at, submission_id, k1,
        min(k1) OVER (PARTITION BY benchmark_id ORDER BY created_at, submission_id ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS before
    FROM board_rows WHERE on_all = 1)
WHERE before IS NULL OR k1 < before;
