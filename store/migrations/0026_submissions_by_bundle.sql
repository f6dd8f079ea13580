-- The stored bundles a killed portal left without their submission are
-- found at its next start by looking each blob up here
-- (store.RemoveUnreferencedBlobs); synthetic submissions have no bundle.

CREATE INDEX submissions_by_bundle ON submissions (bundle_sha256) WHERE bundle_sha256 != '';
