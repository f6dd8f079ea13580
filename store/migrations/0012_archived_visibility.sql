-- Whether an archived verdict was public when a re-run replaced it (issue
-- 16): a verdict against an entry that no organiser had published stays
-- its competitor's and the organisers' in the entry's history. Verdicts
-- archived before this column are public unless they went against the
-- entry: whether such a one had been published is not known, so it stays
-- private.
ALTER TABLE job_results ADD COLUMN public INTEGER NOT NULL DEFAULT 0;
UPDATE job_results SET public = 1 WHERE status NOT IN ('discrepancy', 'failed', 'rejected');

-- A re-run used to keep the published mark, which would publish the next
-- verdict with nobody deciding it; an entry on its way has no verdict to
-- publish.
UPDATE submissions SET published = 0 WHERE status IN ('queued', 'running', 'checking');
