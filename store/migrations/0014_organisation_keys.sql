-- Organisation names compared in SQL as they are in Go (issue 16):
-- d5list.SameOrganisation folds Unicode case and collapses spaces, while
-- SQLite's NOCASE and lower() fold ASCII letters only, so the organisation
-- page and the board's confirmed mark missed "Équipe" for "ÉQUIPE". Each
-- name gets a key, computed in Go (store.organisationKey) by every write
-- that stores the name, and compared instead of the name.
-- d5list_organisation_key is that Go function, registered with the driver
-- by the store; only this backfill calls it.

ALTER TABLE users ADD COLUMN organisation_key TEXT NOT NULL DEFAULT '';
UPDATE users SET organisation_key = d5list_organisation_key(organisation) WHERE organisation != '';
DROP INDEX IF EXISTS users_by_organisation;
CREATE INDEX users_by_organisation_key ON users (organisation_key) WHERE organisation_key != '';

ALTER TABLE submissions ADD COLUMN submitter_key TEXT NOT NULL DEFAULT '';
UPDATE submissions SET submitter_key = d5list_organisation_key(submitter);
-- The pages of an organisation and of one of its systems.
DROP INDEX IF EXISTS submissions_by_submitter;
CREATE INDEX submissions_by_submitter_key ON submissions (submitter_key, system_name COLLATE NOCASE);
