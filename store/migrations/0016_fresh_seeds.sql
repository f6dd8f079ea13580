-- The seeds a job's latest lease drew for its fresh runs (JSON array): the
-- runs whose seeds the competitor's code could not know in advance. Drawn
-- anew by every lease, and never published: the portal checks the reported
-- runs against them.
ALTER TABLE jobs ADD COLUMN fresh_seeds TEXT NOT NULL DEFAULT '';
