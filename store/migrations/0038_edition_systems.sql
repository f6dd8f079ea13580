-- Each system's place in each frozen edition, for the system pages: an
-- edition keeps its boards as JSON (edition_boards), and finding one
-- system in them would read every edition whole. FreezeEdition writes a
-- row per entry of each board it freezes; this fills them for the editions
-- frozen before. d5list_system_key is leaderboard.SystemKey, registered
-- with the driver by the store; only this backfill calls it.

CREATE TABLE edition_systems (
    system_key   TEXT NOT NULL, -- leaderboard.SystemKey of the entry
    edition      TEXT NOT NULL REFERENCES editions (name),
    benchmark_id TEXT NOT NULL,
    entries      INTEGER NOT NULL, -- the length of that edition's board
    entry        TEXT NOT NULL,    -- the entry as the edition froze it (JSON d5list.Entry, ranked)
    PRIMARY KEY (system_key, edition, benchmark_id)
) WITHOUT ROWID;

INSERT OR IGNORE INTO edition_systems (system_key, edition, benchmark_id, entries, entry)
SELECT d5list_system_key(json_extract(j.value, '$.submitter'), json_extract(j.value, '$.system_name')),
       b.edition, b.benchmark_id, json_array_length(b.board, '$.entries'), j.value
FROM edition_boards b, json_each(b.board, '$.entries') j;

-- As frozen as the editions they index.
CREATE TRIGGER edition_systems_no_update BEFORE UPDATE ON edition_systems
BEGIN
    SELECT RAISE(ABORT, 'editions are frozen: their systems cannot be updated');
END;
CREATE TRIGGER edition_systems_no_delete BEFORE DELETE ON edition_systems
BEGIN
    SELECT RAISE(ABORT, 'editions are frozen: their systems cannot be deleted');
END;
