-- The system description (system.json) of each entry as the portal read it
-- at upload (issue 16): a JSON object with MLPerf's field names, NULL for
-- entries uploaded before it was kept (their bundle still holds it).
ALTER TABLE submissions ADD COLUMN system TEXT;
