-- edition_systems keyed by edition first, so that a freeze appends its
-- rows in one run of pages: keyed by system first, the thousand systems of
-- a board each landed on a page of their own, and a freeze rewrote a page
-- for every system, reading most of them back from disk (on a folder of
-- 345 editions, about 60 ms of a core's time a freeze, while readers wait
-- for their boards). A system's places are found by one lookup in each
-- edition: a list has a few editions a year.
CREATE TABLE edition_systems_by_edition (
    edition      TEXT NOT NULL REFERENCES editions (name),
    system_key   TEXT NOT NULL, -- leaderboard.SystemKey of the entry
    benchmark_id TEXT NOT NULL,
    entries      INTEGER NOT NULL, -- the length of that edition's board
    entry        TEXT NOT NULL,    -- the entry as the edition froze it (JSON d5list.Entry, ranked)
    PRIMARY KEY (edition, system_key, benchmark_id)
) WITHOUT ROWID;

INSERT INTO edition_systems_by_edition (edition, system_key, benchmark_id, entries, entry)
SELECT edition, system_key, benchmark_id, entries, entry FROM edition_systems ORDER BY edition, system_key, benchmark_id;

DROP TRIGGER IF EXISTS edition_systems_no_update;
DROP TRIGGER IF EXISTS edition_systems_no_delete;
DROP TABLE edition_systems;
ALTER TABLE edition_systems_by_edition RENAME TO edition_systems;

-- As frozen as the editions they index.
CREATE TRIGGER edition_systems_no_update BEFORE UPDATE ON edition_systems
BEGIN
    SELECT RAISE(ABORT, 'editions are frozen: their systems cannot be updated');
END;
CREATE TRIGGER edition_systems_no_delete BEFORE DELETE ON edition_systems
BEGIN
    SELECT RAISE(ABORT, 'editions are frozen: their systems cannot be deleted');
END;
