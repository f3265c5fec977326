-- Each success a consumer batch recorded (success_batches, 0016), one row each with named
-- columns: the one place the layout 0016 stores them in, [type, duration_ms, wait_ms or null,
-- latency_ms], is read by position. The windows over attempts (store/src/attempts.rs) and the
-- execution histogram's roll-up read successes here, by name. A view stores nothing: SQLite
-- folds it into the statement that reads it, with that statement's conditions on finished_at.
CREATE VIEW success_attempts AS
  SELECT b.family, b.finished_at,
         s.value ->> 0 AS type,
         s.value ->> 1 AS duration_ms,
         s.value ->> 2 AS wait_ms,
         s.value ->> 3 AS latency_ms
  FROM success_batches b, json_each(b.successes) s;
