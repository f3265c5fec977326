// Cost as the work grows (docs/performance.md "Benchmark"): the same enqueue and end-to-end runs
// with 1,000, 100,000 and 1,000,000 jobs already in D1, and the operator's reads against them. The
// rows are written straight into D1 in one statement each (a succeeded history, its run records and
// per-minute rows, and a live backlog), as the platform itself would have left them. What must
// stay flat: rows read per job, D1's SQL time per request and per consumer batch, throughput; the admin reads must
// answer in bounded time. Storage per job is D1's own figure (`size_after`).
import { d1Stats, logCollector, startPlatform, waitFor, TOKENS } from "../tests/support/platform.mjs";
import { dbBytes, median, round } from "./measure.mjs";

/** Of the jobs already there: this share is a live backlog (queued, its message sent). */
const LIVE_SHARE = 0.1;
const DAY_MS = 86_400_000;


/**
 * `count` jobs with ids sorting before any the platform mints (history is older), spread over
 * the last `days`: `LIVE_SHARE` of them queued, the rest succeeded with one run record each.
 */
async function seed(db, count, now) {
  const live = Math.round(count * LIVE_SHARE);
  const spanMs = 7 * DAY_MS;
  const seq = "WITH RECURSIVE seq(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM seq WHERE n < ?1)";
  // The time a job is placed at: the history spread over `spanMs` before now, oldest first.
  const at = `CAST(?2 - ?3 + n * ?3 / ?1 AS INTEGER)`;
  const insert = (status, finished) =>
    db.prepare(
      `${seq} INSERT INTO jobs (id, type, family, status, payload, max_attempts, attempts, runs, run_at, sent_at, ` +
        `created_at, updated_at, started_at, finished_at, run_cost_cents) SELECT printf('00%s%017d', ?4, n), 'noop', 'default', ` +
        `'${status}', '{}', 5, ${finished ? 1 : 0}, ${finished ? 1 : 0}, ${at}, ${at}, ${at}, ${at}, ` +
        `${finished ? at : "NULL"}, ${finished ? at : "NULL"}, ${finished ? 0 : "NULL"} FROM seq`,
    );
  const meta = [];
  meta.push((await insert("succeeded", true).bind(count - live, now, spanMs, "H").run()).meta);
  meta.push((await insert("queued", false).bind(live, now, spanMs, "L").run()).meta);
  meta.push(
    (
      await db
        .prepare(
          // The last hour's successes, in the consumer's batches of 100 (older ones are deleted).
          `INSERT INTO success_batches (finished_at, first_job_id, family, successes) ` +
            `SELECT MAX(finished_at), MIN(id), 'default', json_group_array(json_array('noop', 1, 0, 0)) ` +
            `FROM jobs WHERE id LIKE '00H%' AND finished_at >= ?1 GROUP BY CAST(substr(id, 4) AS INTEGER) / 100`,
        )
        .bind(now - 3_600_000)
        .run()
    ).meta,
  );
  // The per-minute history a succeeded history leaves (what stats count succeeded jobs from).
  await db
    .prepare(
      `${seq.replace("?1", "?3")} INSERT INTO job_minutes (family, minute, succeeded, sum_ms, max_ms) ` +
        `SELECT 'default', CAST(?2 - n * 60000 - ?2 % 60000 AS INTEGER), CAST(?1 / ?3 AS INTEGER), CAST(?1 / ?3 AS INTEGER), 1 FROM seq`,
    )
    .bind(count - live, now, Math.min(7 * 1440, Math.max(1, count - live)))
    .run();
  return meta.reduce((a, m) => a + (m.duration ?? 0), 0);
}

/** Median latency (ms) of `n` calls of `request` after one untimed call. */
async function latency(request, n = 5) {
  await request();
  const times = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    const res = await request();
    if (res.status !== 200) throw new Error(`answered ${res.status}: ${JSON.stringify(res.body)}`);
    times.push(performance.now() - t);
  }
  return round(median(times));
}

/** One scale point: `preexisting` jobs seeded, then enqueue, end to end and the admin reads. */
export async function scalePoint(preexisting, jobs) {
  const logs = logCollector();
  const p = await startPlatform({ onLog: logs.onLog });
  try {
    return await measureScale(p, logs, preexisting, jobs);
  } finally {
    // Even when a measurement fails: a running Miniflare keeps the process alive.
    await p.dispose();
  }
}

/** `scalePoint`'s measurements on its started platform `p`, whose logs `logs` collects. */
async function measureScale(p, logs, preexisting, jobs) {
  const empty = await dbBytes(p.db);
  const now = Date.now();
  const seedMs = await seed(p.db, preexisting, now);
  const seeded = await dbBytes(p.db);

  const headers = { "content-type": "application/json", authorization: `Bearer ${TOKENS.enqueue}` };
  const body = JSON.stringify({ jobs: Array.from({ length: 100 }, () => ({ type: "noop", payload: {} })) });
  const enqueue = [];
  const enqueueMs = [];
  const started = Date.now();
  for (let i = 0; i < jobs / 100; i++) {
    const t = performance.now();
    const res = await p.mf.dispatchFetch("http://jobs.local/v1/jobs/batch", { method: "POST", headers, body });
    if (res.status !== 202) throw new Error(`enqueue answered ${res.status}: ${await res.text()}`);
    enqueue.push(d1Stats(res.headers));
    await res.arrayBuffer();
    enqueueMs.push(performance.now() - t);
  }
  const settled = async () =>
    logs.events("batch.completed").filter((b) => !b.queue.endsWith("-dlq")).reduce((a, b) => a + b["jobs.succeeded"], 0);
  await waitFor(async () => (await settled()) >= jobs, { what: `${jobs} jobs at ${preexisting}`, everyMs: 200, timeoutMs: 120_000 + jobs * 50 });
  const batches = logs.events("batch.completed").filter((b) => !b.queue.endsWith("-dlq"));
  const seconds = (Math.max(...batches.map((b) => b.logged_at)) - started) / 1000;
  const grown = await dbBytes(p.db);

  const admin = (path) => () => p.request("GET", path, { token: TOKENS.admin });
  const result = {
    preexisting,
    seed_ms: round(seedMs),
    jobs,
    jobs_per_second: round(jobs / seconds, 1),
    enqueue_rows_read_per_job: round(enqueue.reduce((a, s) => a + s.own_rows_read, 0) / jobs),
    enqueue_ms_p50: round(median(enqueueMs)),
    enqueue_sql_ms_per_request: round(median(enqueue.map((s) => s.sql_ms))),
    consumer_rows_read_per_job: round(batches.reduce((a, b) => a + b["d1.rows_read"], 0) / jobs),
    consumer_rows_written_per_job: round(batches.reduce((a, b) => a + b["d1.rows_written"], 0) / jobs),
    consumer_ms_per_batch: round(median(batches.map((b) => b.duration_ms))),
    consumer_sql_ms_per_batch: round(median(batches.map((b) => b["d1.sql_ms"]))),
    bytes_per_seeded_job: preexisting ? round((seeded - empty) / preexisting) : null,
    bytes_per_new_job: round((grown - seeded) / jobs),
    admin_ms: {
      stats: await latency(admin("/v1/admin/stats")),
      list: await latency(admin("/v1/admin/jobs?limit=50")),
      list_queued: await latency(admin("/v1/admin/jobs?status=queued&limit=50")),
      list_dead: await latency(admin("/v1/admin/jobs?status=dead&limit=50")),
      history: await latency(admin("/v1/admin/history?minutes=60")),
      failures: await latency(admin("/v1/admin/failures")),
    },
  };
  return result;
}
