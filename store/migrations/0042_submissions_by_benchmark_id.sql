-- A board's rebuild reads its benchmark's submissions in id order, a batch
-- at a time from the last id read. The index on (benchmark_id, status)
-- cannot give that order, so each batch read and sorted every submission
-- of the benchmark again: at a million, a rebuild (the next start after a
-- migration that marks a board) took half an hour, two milliseconds a row.
CREATE INDEX submissions_by_benchmark_id ON submissions (benchmark_id, id);
