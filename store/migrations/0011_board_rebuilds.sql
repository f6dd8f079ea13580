-- Benchmarks whose board rows must be derived again (issue 15): a changed
-- definition may rank every submission differently. The triggers mark the
-- benchmark in the very transaction that changes its definition, so that
-- a rebuild cut short (a crash, an error, a stopped process) is never
-- forgotten: RebuildBoards clears the mark only when it has finished with
-- the definition of that generation, and Open finishes whatever is marked.

CREATE TABLE board_rebuilds (
    benchmark_id TEXT PRIMARY KEY,
    generation   INTEGER NOT NULL -- bumped by each change of the definition
);

CREATE TRIGGER board_rebuild_on_insert AFTER INSERT ON benchmarks
BEGIN
    INSERT INTO board_rebuilds (benchmark_id, generation) VALUES (NEW.id, 1)
        ON CONFLICT (benchmark_id) DO UPDATE SET generation = generation + 1;
END;

CREATE TRIGGER board_rebuild_on_update AFTER UPDATE OF definition ON benchmarks
    WHEN OLD.definition IS NOT NEW.definition
BEGIN
    INSERT INTO board_rebuilds (benchmark_id, generation) VALUES (NEW.id, 1)
        ON CONFLICT (benchmark_id) DO UPDATE SET generation = generation + 1;
END;

-- A benchmark that has submissions but no counted views was never indexed
-- (a database made before 0009), or lost its index to a rebuild that an
-- earlier version left half done (it cleared the rows and counts first and
-- counted only at the end): both are rebuilt at the next start.
INSERT INTO board_rebuilds (benchmark_id, generation)
    SELECT b.id, 1 FROM benchmarks b
    WHERE EXISTS (SELECT 1 FROM submissions s WHERE s.benchmark_id = b.id)
        AND NOT EXISTS (SELECT 1 FROM board_counts c WHERE c.benchmark_id = b.id);
