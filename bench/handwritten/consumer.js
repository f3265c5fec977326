// The hand-written consumer (see producer.js): one claim per batch (UPDATE ... RETURNING), then
// one db.batch of the finish update and the run records, and ackAll. Every job is a noop.
const CLAIM = `UPDATE jobs SET status = 'running', attempts = attempts + 1, started_at = ?1
  WHERE id IN (SELECT value FROM json_each(?2)) AND status = 'queued' RETURNING id, attempts`;
const FINISH = `UPDATE jobs SET status = 'succeeded', finished_at = ?1
  WHERE id IN (SELECT value ->> 0 FROM json_each(?2))`;
const RECORD = `INSERT INTO job_runs (job_id, attempt, started_at, finished_at, outcome)
  SELECT value ->> 0, value ->> 1, ?1, ?2, 'succeeded' FROM json_each(?3)`;

export default {
  async queue(batch, env) {
    const started = Date.now();
    const ids = JSON.stringify(batch.messages.map((m) => m.body.id));
    const { results } = await env.DB.prepare(CLAIM).bind(started, ids).all();
    const finished = Date.now();
    const runs = JSON.stringify(results.map(({ id, attempts }) => [id, attempts]));
    await env.DB.batch([
      env.DB.prepare(FINISH).bind(finished, runs),
      env.DB.prepare(RECORD).bind(started, finished, runs),
    ]);
    batch.ackAll();
  },
};
