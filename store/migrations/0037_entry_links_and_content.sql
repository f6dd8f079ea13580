-- An entry's paper (submission.json paper_url, beside code_url), and the
-- sum of its bundle's files whatever archive held them (bundle.Bundle.
-- ContentSHA256): an account that uploads the same files again is pointed
-- to the entry they made instead of having them re-run. Entries uploaded
-- before have no sum and are not matched.

ALTER TABLE submissions ADD COLUMN paper_url TEXT NOT NULL DEFAULT '';
ALTER TABLE submissions ADD COLUMN content_sha256 TEXT NOT NULL DEFAULT '';

CREATE INDEX submissions_by_content ON submissions (owner_id, content_sha256) WHERE content_sha256 != '';
