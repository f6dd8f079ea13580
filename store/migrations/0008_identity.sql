-- Identity and visibility (issue 16): an account submits for one
-- organisation, which an organiser confirms; a verdict against an entry is
-- seen by its submitter and the organisers until an organiser publishes it.

ALTER TABLE users ADD COLUMN organisation TEXT NOT NULL DEFAULT '';
ALTER TABLE users ADD COLUMN organisation_confirmed INTEGER NOT NULL DEFAULT 0;

-- Two accounts may share an organisation; its confirmed name is looked up
-- case-insensitively when another account tries to post under it.
CREATE INDEX users_by_organisation ON users (organisation COLLATE NOCASE) WHERE organisation != '';

ALTER TABLE submissions ADD COLUMN published INTEGER NOT NULL DEFAULT 0;

-- The pages of an organisation and of one of its systems.
CREATE INDEX submissions_by_submitter ON submissions (submitter COLLATE NOCASE, system_name COLLATE NOCASE);
