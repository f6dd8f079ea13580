-- A verdict that rests on timing alone waits for its timed runs to be
-- measured again: a new job of the submission, its remeasure the count of
-- such jobs in a row, that no runner takes before not_before, and that
-- avoid_runner (the runner of the measurement it repeats) takes only after
-- elsewhere_until where another runner that can run it is online.
ALTER TABLE jobs ADD COLUMN remeasure INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN not_before INTEGER NOT NULL DEFAULT 0;
ALTER TABLE jobs ADD COLUMN avoid_runner TEXT NOT NULL DEFAULT '';
ALTER TABLE jobs ADD COLUMN elsewhere_until INTEGER NOT NULL DEFAULT 0;
