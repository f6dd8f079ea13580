-- The latest edition by one index lookup: every board rendered asks which
-- edition its snapshot holds (portal.Service.ReadSnapshot), and the list
-- of editions is read newest first. Without it each asking scanned and
-- sorted the whole table.
CREATE INDEX editions_by_time ON editions (frozen_at, name);
