-- Organisation keys that also catch lookalikes: store.organisationKey now
-- compares names after NFKC, without default-ignorable characters and by
-- Unicode's confusable skeleton, so "АliceCorp" (a Cyrillic А),
-- "Alice<zero-width space>Corp" and "ＡliceCorp" are the confirmed
-- "AliceCorp". The keys migration 0014 computed are computed again with
-- it; only the rows whose key changes are written.

UPDATE users SET organisation_key = d5list_organisation_key(organisation)
	WHERE organisation != '' AND organisation_key != d5list_organisation_key(organisation);
UPDATE submissions SET submitter_key = d5list_organisation_key(submitter)
	WHERE submitter_key != d5list_organisation_key(submitter);
