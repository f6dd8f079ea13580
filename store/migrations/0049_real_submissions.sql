-- The submissions not made by `d5list admin seed-synthetic`, so that the
-- check that a folder holds synthetic submissions only reads this index
-- (empty in a seeded folder) instead of every row: at ten million that
-- scan took a minute. The literal is store.SyntheticSubmitter; SQLite uses
-- a partial index only for a query whose WHERE names the same literal.
CREATE INDEX submissions_real ON submissions (id)
	WHERE submitter != 'synthetic (d5list admin seed-synthetic)';
