-- Board entries say whether an organiser accepted them over their
-- re-run's findings (d5list.Entry.Accepted), which the rows indexed
-- before this migration do not hold: the boards with such an entry are
-- derived again at the next start.
INSERT INTO board_rebuilds (benchmark_id, generation)
    SELECT DISTINCT benchmark_id, 1 FROM submissions
    WHERE status = 'verified' AND reasons NOT IN ('', '[]', 'null')
    ON CONFLICT (benchmark_id) DO UPDATE SET generation = generation + 1;
