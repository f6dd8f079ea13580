-- The public list: what a submission declares for exports and charts, and
-- frozen editions.

ALTER TABLE submissions ADD COLUMN code_url TEXT NOT NULL DEFAULT '';
ALTER TABLE submissions ADD COLUMN cost_per_hour REAL NOT NULL DEFAULT 0;

CREATE TABLE editions (
    name       TEXT PRIMARY KEY,
    frozen_at  INTEGER NOT NULL,
    frozen_by  TEXT NOT NULL
);

-- One ranked board per benchmark, as JSON d5list.Leaderboard.
CREATE TABLE edition_boards (
    edition      TEXT NOT NULL REFERENCES editions (name),
    benchmark_id TEXT NOT NULL,
    board        TEXT NOT NULL,
    PRIMARY KEY (edition, benchmark_id)
);

-- An edition is a published record: it is never edited or withdrawn.
CREATE TRIGGER editions_no_update BEFORE UPDATE ON editions
BEGIN
    SELECT RAISE(ABORT, 'editions are frozen: rows cannot be updated');
END;
CREATE TRIGGER editions_no_delete BEFORE DELETE ON editions
BEGIN
    SELECT RAISE(ABORT, 'editions are frozen: rows cannot be deleted');
END;
CREATE TRIGGER edition_boards_no_update BEFORE UPDATE ON edition_boards
BEGIN
    SELECT RAISE(ABORT, 'editions are frozen: boards cannot be updated');
END;
CREATE TRIGGER edition_boards_no_delete BEFORE DELETE ON edition_boards
BEGIN
    SELECT RAISE(ABORT, 'editions are frozen: boards cannot be deleted');
END;
