-- Callbacks (docs/app-guide.md "Callbacks"): a job's `callback` target (JSON), and the triggers
-- that write its delivery when the job ends, or, on a chain's first job, when its chain ends
-- (with its outcome as the chain view says it: `partial` when it failed after a step succeeded,
-- shared `job::chain::ChainPhases::outcome`).
-- The delivery is a job of the built-in type `callback` (its registry row: family default, 8
-- attempts), id `<job id>.callback`, born `queued` in the outbox: the consumer that ended the job
-- sends it, else the sweep. Written once: a job that ends again after an operator's retry does
-- not call back twice. Triggers, so that every path that ends a job (the consumer, an operator,
-- the app's cancel, the sweep) calls back without one of its own.
ALTER TABLE jobs ADD COLUMN callback TEXT;

CREATE TRIGGER jobs_callback_on_end AFTER UPDATE OF status ON jobs
WHEN NEW.callback IS NOT NULL AND NEW.chain_status IS NULL
  AND NEW.status IN ('succeeded', 'dead', 'cancelled', 'skipped')
  AND OLD.status NOT IN ('succeeded', 'dead', 'cancelled', 'skipped')
BEGIN
  INSERT OR IGNORE INTO jobs (id, type, family, status, priority, payload, attempts,
    max_attempts, run_at, created_at, updated_at, correlation_id, enqueued_by)
  VALUES (NEW.id || '.callback', 'callback', 'default', 'queued', NEW.priority,
    json_object('target', json(NEW.callback), 'event', 'job.ended',
      'job', json_object('id', NEW.id, 'type', NEW.type, 'status', NEW.status,
        'result', json(NEW.result),
        'error', json(CASE WHEN NEW.error_class IS NULL THEN NULL
          ELSE json_object('class', NEW.error_class, 'message', NEW.last_error) END),
        'finished_at', NEW.finished_at)),
    0, 8, NEW.updated_at, NEW.updated_at, NEW.updated_at, NEW.correlation_id, NEW.enqueued_by);
END;

CREATE TRIGGER jobs_callback_on_chain_end AFTER UPDATE OF chain_status ON jobs
WHEN NEW.callback IS NOT NULL AND NEW.chain_status IN ('succeeded', 'failed')
  AND OLD.chain_status IS 'running'
BEGIN
  INSERT OR IGNORE INTO jobs (id, type, family, status, priority, payload, attempts,
    max_attempts, run_at, created_at, updated_at, correlation_id, enqueued_by)
  VALUES (NEW.id || '.callback', 'callback', 'default', 'queued', NEW.priority,
    json_object('target', json(NEW.callback), 'event', 'chain.ended',
      'job', json_object('id', NEW.id, 'type', NEW.type, 'status', NEW.status),
      'chain', json_object('status', NEW.chain_status,
        'outcome', IIF(NEW.chain_status = 'failed' AND EXISTS (SELECT 1 FROM jobs s
          WHERE (s.id = NEW.id OR s.parent_id = NEW.id) AND s.status = 'succeeded'),
          'partial', NEW.chain_status),
        'error', NEW.chain_error)),
    0, 8, NEW.updated_at, NEW.updated_at, NEW.updated_at, NEW.correlation_id, NEW.enqueued_by);
END;

-- A lone job whose handler returned follow-ups starts a chain in the batch that ended it: its
-- callback then reports the chain's end, so the one its own end wrote, not yet sent, goes.
CREATE TRIGGER jobs_callback_on_chain_start AFTER UPDATE OF chain_status ON jobs
WHEN NEW.callback IS NOT NULL AND OLD.chain_status IS NULL AND NEW.chain_status = 'running'
BEGIN
  DELETE FROM jobs WHERE id = NEW.id || '.callback' AND status = 'queued' AND sent_at IS NULL;
END;
