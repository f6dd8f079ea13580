-- What each frozen board contributes to its benchmark's development chart
-- (leaderboard.Development: its entry count, best, 10th and median value),
-- kept when the edition is frozen. Reading it before meant decoding every
-- board of every edition: 186 editions of a million-entry list, 100 MB of
-- JSON, 4 s before the first board after a start could answer.

CREATE TABLE edition_board_points (
    edition      TEXT NOT NULL REFERENCES editions (name),
    benchmark_id TEXT NOT NULL,
    entries      INTEGER NOT NULL,
    best         REAL NOT NULL,
    tenth        REAL,           -- NULL below 10 entries
    median       REAL NOT NULL,
    PRIMARY KEY (edition, benchmark_id)
);

CREATE TRIGGER edition_board_points_no_update BEFORE UPDATE ON edition_board_points
BEGIN
    SELECT RAISE(ABORT, 'editions are frozen: boards cannot be updated');
END;
CREATE TRIGGER edition_board_points_no_delete BEFORE DELETE ON edition_board_points
BEGIN
    SELECT RAISE(ABORT, 'editions are frozen: boards cannot be deleted');
END;

-- The entries are in rank order, so the best is the first entry's value
-- and the 10th the tenth's; the median is of the values sorted.
INSERT INTO edition_board_points (edition, benchmark_id, entries, best, tenth, median)
SELECT edition, benchmark_id, n,
    json_extract(board, '$.entries[0].value'),
    CASE WHEN n >= 10 THEN json_extract(board, '$.entries[9].value') END,
    (SELECT avg(v) FROM (SELECT json_extract(j.value, '$.value') AS v,
            row_number() OVER (ORDER BY json_extract(j.value, '$.value')) AS i
        FROM json_each(b.board, '$.entries') j)
     WHERE i IN ((b.n + 1) / 2, (b.n + 2) / 2))
FROM (SELECT edition, benchmark_id, board, json_array_length(board, '$.entries') AS n FROM edition_boards) b
WHERE n > 0;
