-- Each system's best entries of every board (best_default, best_all) in
-- ranking order, each with its entry and what its confirmation needs,
-- clustered by that order. A page or an export of such a board read, for
-- every entry, a board_rows page and a submissions page; after each change
-- of the database every reader's page cache is dropped, so at a million
-- submissions those were most of what every answer after a change cost.
-- Read from here, a thousand entries are a few dozen consecutive pages;
-- a search or another order reads the board's thousand rows from here too.
-- Triggers keep it in the transaction of every write of board_rows (and
-- of a submission's owner or organisation key), whichever store method or
-- migration writes it.

CREATE TABLE board_ranked (
    benchmark_id  TEXT NOT NULL,
    best_all      INTEGER NOT NULL, -- 0: a best_default row, 1: a best_all row
    k1            REAL NOT NULL,
    sec_missing   INTEGER NOT NULL,
    k2            REAL NOT NULL,
    created_at    INTEGER NOT NULL,
    submission_id INTEGER NOT NULL,
    search        TEXT NOT NULL,
    sort_submitter TEXT NOT NULL,
    sort_system   TEXT NOT NULL,
    owner_id      INTEGER,
    submitter_key TEXT NOT NULL,
    entry         TEXT NOT NULL,
    PRIMARY KEY (benchmark_id, best_all, k1, sec_missing, k2, created_at, submission_id)
) WITHOUT ROWID;

CREATE INDEX board_ranked_by_submission ON board_ranked (submission_id);

INSERT INTO board_ranked
SELECT b.benchmark_id, v.best_all, b.k1, b.sec_missing, b.k2, b.created_at, b.submission_id, b.search, b.sort_submitter, b.sort_system, s.owner_id, s.submitter_key, b.entry
FROM board_rows b JOIN (SELECT 0 AS best_all UNION ALL SELECT 1) v JOIN submissions s ON s.id = b.submission_id
WHERE (v.best_all = 0 AND b.best_default = 1) OR (v.best_all = 1 AND b.best_all = 1);

CREATE TRIGGER board_ranked_insert AFTER INSERT ON board_rows
    WHEN new.best_default = 1 OR new.best_all = 1 BEGIN
    INSERT INTO board_ranked
    SELECT new.benchmark_id, v.best_all, new.k1, new.sec_missing, new.k2, new.created_at, new.submission_id, new.search, new.sort_submitter, new.sort_system, s.owner_id, s.submitter_key, new.entry
    FROM (SELECT 0 AS best_all WHERE new.best_default = 1 UNION ALL SELECT 1 WHERE new.best_all = 1) v
    JOIN submissions s ON s.id = new.submission_id;
END;

CREATE TRIGGER board_ranked_delete AFTER DELETE ON board_rows
    WHEN old.best_default = 1 OR old.best_all = 1 BEGIN
    DELETE FROM board_ranked WHERE submission_id = old.submission_id;
END;

CREATE TRIGGER board_ranked_update AFTER UPDATE ON board_rows
    WHEN old.best_default = 1 OR old.best_all = 1 OR new.best_default = 1 OR new.best_all = 1 BEGIN
    DELETE FROM board_ranked WHERE submission_id = old.submission_id;
    INSERT INTO board_ranked
    SELECT new.benchmark_id, v.best_all, new.k1, new.sec_missing, new.k2, new.created_at, new.submission_id, new.search, new.sort_submitter, new.sort_system, s.owner_id, s.submitter_key, new.entry
    FROM (SELECT 0 AS best_all WHERE new.best_default = 1 UNION ALL SELECT 1 WHERE new.best_all = 1) v
    JOIN submissions s ON s.id = new.submission_id;
END;

CREATE TRIGGER board_ranked_owner AFTER UPDATE OF owner_id, submitter_key ON submissions BEGIN
    UPDATE board_ranked SET owner_id = new.owner_id, submitter_key = new.submitter_key WHERE submission_id = new.id;
END;
