-- A benchmark's own daily_quota (in its JSON definition) overrides the
-- portal-wide one; the count stays per user, per benchmark, per UTC day and
-- inside the inserting transaction, so concurrent uploads cannot beat it.
DROP TRIGGER submissions_quota;

CREATE TRIGGER submissions_quota BEFORE INSERT ON submissions
WHEN NEW.owner_id IS NOT NULL
  AND COALESCE(NULLIF((SELECT json_extract(definition, '$.daily_quota') FROM benchmarks WHERE id = NEW.benchmark_id), 0),
               (SELECT daily FROM submission_quota WHERE id = 1)) > 0
  AND (SELECT count(*) FROM submissions
        WHERE owner_id = NEW.owner_id AND benchmark_id = NEW.benchmark_id
          AND status NOT IN ('failed', 'rejected')
          AND created_at / 86400000000000 = NEW.created_at / 86400000000000)
      >= COALESCE(NULLIF((SELECT json_extract(definition, '$.daily_quota') FROM benchmarks WHERE id = NEW.benchmark_id), 0),
                  (SELECT daily FROM submission_quota WHERE id = 1))
BEGIN
    SELECT RAISE(ABORT, 'd5list: daily submission quota reached');
END;
