-- The search across every benchmark (store.Search): the names a board
-- lists, each once, searched by substring through a trigram index, then
-- each name's best rows looked up on each board through an index of its
-- column. A search costs the names it matches and their systems' rows,
-- never a pass over the boards.

-- Each organisation, system, framework and accelerator name that has been
-- some system's best row on a default board, under the key the board
-- keeps for it (board_rows' column, lower case), as first written. Names
-- are never taken out: one no board lists any more finds no row.
CREATE TABLE search_names (
    id   INTEGER PRIMARY KEY,
    kind TEXT NOT NULL, -- the board_rows column of the key: sort_submitter, sort_system, framework, accelerator
    key  TEXT NOT NULL,
    name TEXT NOT NULL,
    UNIQUE (kind, key)
);
-- Queries of one or two characters, which trigrams cannot answer, match
-- the start of a key.
CREATE INDEX search_names_by_key ON search_names (key);

CREATE VIRTUAL TABLE search_names_text USING fts5(name, content = 'search_names', content_rowid = 'id', tokenize = 'trigram');
CREATE TRIGGER search_names_ai AFTER INSERT ON search_names BEGIN
    INSERT INTO search_names_text (rowid, name) VALUES (new.id, new.name);
END;
CREATE TRIGGER search_names_ad AFTER DELETE ON search_names BEGIN
    INSERT INTO search_names_text (search_names_text, rowid, name) VALUES ('delete', old.id, old.name);
END;
CREATE TRIGGER search_names_au AFTER UPDATE ON search_names BEGIN
    INSERT INTO search_names_text (search_names_text, rowid, name) VALUES ('delete', old.id, old.name);
    INSERT INTO search_names_text (rowid, name) VALUES (new.id, new.name);
END;

-- A row that becomes its system's best on the default board names its
-- organisation, system, framework and accelerator. Every write path
-- (syncBoardRowTx, the rebuild, seeding) inserts rows unmarked and then
-- elects the best with an UPDATE, so that is where the names are taken.
CREATE TRIGGER board_rows_names_update AFTER UPDATE OF best_default ON board_rows
    WHEN new.best_default = 1 AND old.best_default = 0 BEGIN
    INSERT OR IGNORE INTO search_names (kind, key, name)
    SELECT kind, key, name FROM (
        SELECT 'sort_submitter' AS kind, new.sort_submitter AS key, json_extract(new.entry, '$.submitter') AS name
        UNION ALL SELECT 'sort_system', new.sort_system, json_extract(new.entry, '$.system_name')
        UNION ALL SELECT 'framework', new.framework, json_extract(new.entry, '$.framework')
        UNION ALL SELECT 'accelerator', new.accelerator, json_extract(new.entry, '$.accelerator'))
    WHERE key != '' AND coalesce(name, '') != '';
END;

INSERT OR IGNORE INTO search_names (kind, key, name)
SELECT kind, key, name FROM (
    SELECT 'sort_submitter' AS kind, sort_submitter AS key, json_extract(entry, '$.submitter') AS name, submission_id FROM board_rows WHERE best_default = 1
    UNION ALL SELECT 'sort_system', sort_system, json_extract(entry, '$.system_name'), submission_id FROM board_rows WHERE best_default = 1
    UNION ALL SELECT 'framework', framework, json_extract(entry, '$.framework'), submission_id FROM board_rows WHERE best_default = 1
    UNION ALL SELECT 'accelerator', accelerator, json_extract(entry, '$.accelerator'), submission_id FROM board_rows WHERE best_default = 1)
WHERE key != '' AND coalesce(name, '') != ''
ORDER BY submission_id;

-- Each name's best rows on one board, in ranking order.
CREATE INDEX board_best_default_by_submitter ON board_rows (benchmark_id, sort_submitter, k1, sec_missing, k2, created_at, submission_id) WHERE best_default = 1;
CREATE INDEX board_best_default_by_system_name ON board_rows (benchmark_id, sort_system, k1, sec_missing, k2, created_at, submission_id) WHERE best_default = 1;
CREATE INDEX board_best_default_by_framework ON board_rows (benchmark_id, framework, k1, sec_missing, k2, created_at, submission_id) WHERE best_default = 1;
CREATE INDEX board_best_default_by_accelerator ON board_rows (benchmark_id, accelerator, k1, sec_missing, k2, created_at, submission_id) WHERE best_default = 1;
