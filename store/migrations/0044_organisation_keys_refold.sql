-- Organisation keys that fold names as people read them: store.organisationKey
-- now also drops spaces, punctuation, symbols and accents and reads Latin
-- small capitals as their letters, so "Alice Corp", "Alice-Corp",
-- "AliceCorp.", "AlíceCorp" and "ᴀliceCorp" are the confirmed "AliceCorp".
-- The keys are computed again with it; only the rows whose key changes are
-- written. Two organisations that an organiser confirmed under names that
-- now fold to one key become one: the first confirmed spelling is the one
-- later confirmations and uploads are held to (confirmedOrganisationTx).

UPDATE users SET organisation_key = d5list_organisation_key(organisation)
	WHERE organisation != '' AND organisation_key != d5list_organisation_key(organisation);
UPDATE submissions SET submitter_key = d5list_organisation_key(submitter)
	WHERE submitter_key != d5list_organisation_key(submitter);
