-- What a submission itself needs of a runner beyond its benchmark's
-- requires (the registry its recipe's image is pulled from), as JSON; ''
-- for nothing. A re-run's job copies it from the submission's last job.
ALTER TABLE jobs ADD COLUMN requires TEXT NOT NULL DEFAULT '';
