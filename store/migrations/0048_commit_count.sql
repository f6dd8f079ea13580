-- Every commit of d5list's store counts itself here, in its own
-- transaction, so that a portal can tell another process's commits from
-- its own: SQLite's data_version says that some connection committed, and
-- a count that moved past the portal's own commits says one of them was
-- not the portal's (store.DB.CommittedElsewhere).
CREATE TABLE commit_count (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO commit_count (id, n) VALUES (1, 0);
