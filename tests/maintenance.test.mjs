// The maintenance sweep on the built producer (its real `scheduled` handler, at chosen
// times), with real D1, real local queues and the built consumer. Where a test needs time to
// have passed for a job (a dead worker's lease, an old finished job) it moves that job's own
// timestamps back, which is all the sweep reads.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { enqueueBatch, jobMessage, startPlatform, TOKENS } from "./support/platform.mjs";
import { tick, unsentProducer, MINUTE, HOUR, DAY } from "./support/sweep.mjs";

const row = (p, id) => p.db.prepare("SELECT * FROM jobs WHERE id = ?").bind(id).first();
const set = (p, id, sql, ...params) => p.db.prepare(`UPDATE jobs SET ${sql} WHERE id = ?`).bind(...params, id).run();
const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
/** The job as if enqueued at `ms`: its ULID id (with its runs) and created_at moved back in time. */
/** The 10-character time part of a ULID minted at `ms`. */
const ulidTime = (ms) => Array.from({ length: 10 }, (_, i) => CROCKFORD[Math.floor(ms / 32 ** (9 - i)) % 32]).join("");

async function createdAt(p, id, ms) {
  const moved = ulidTime(ms) + id.slice(10);
  await p.db.batch([
    p.db.prepare("PRAGMA defer_foreign_keys = on"),
    p.db.prepare("UPDATE jobs SET id = ?1, created_at = ?3 WHERE id = ?2").bind(moved, id, ms),
    p.db.prepare("UPDATE job_runs SET job_id = ?1 WHERE job_id = ?2").bind(moved, id),
  ]);
  return moved;
}

describe("delays, outbox, rescue and retention on the real queues", () => {
  let p;
  before(async () => {
    p = await startPlatform({ extraWorkers: [unsentProducer()] });
  });
  after(() => p.dispose());

  test("a job delayed beyond the queue's 12 h limit is released within the limit and runs when due", async () => {
    const now = Date.now();
    const enq = await p.enqueue({ type: "noop", delay_seconds: 13 * 3600 });
    assert.equal(enq.body.status, "scheduled");
    await tick(p, now);
    assert.equal((await row(p, enq.body.id)).status, "scheduled", "13 h out: kept in D1");
    await tick(p, now + 2 * HOUR);
    const released = await row(p, enq.body.id);
    assert.equal(released.status, "queued", "11 h out: sent with the remaining delay");
    assert.ok(released.sent_at);

    // A year out, once due (its run_at now in the past), runs through the real queue.
    const year = await p.enqueue({ type: "noop", delay_seconds: 365 * 86_400 });
    assert.equal(year.body.status, "scheduled");
    await set(p, year.body.id, "run_at = ?", Date.now() - 1000);
    await tick(p, Date.now());
    const done = await p.waitForStatus(year.body.id, "succeeded");
    assert.equal(done.attempts, 1);
  });

  test("a retry kept in D1 (backoff beyond 12 h) is sent when due and stays retrying until claimed", async () => {
    const enq = await p.enqueue({ type: "noop", delay_seconds: 13 * 3600 });
    await set(p, enq.body.id, "status = 'retrying', attempts = 1, runs = 1, run_at = ?", Date.now() + 11 * HOUR);
    await tick(p, Date.now() - 2 * HOUR);
    assert.equal((await row(p, enq.body.id)).sent_at, null, "13 h ahead of that tick: not yet");
    await set(p, enq.body.id, "run_at = ?", Date.now() - 1000);
    await tick(p, Date.now());
    const done = await p.waitForStatus(enq.body.id, "succeeded");
    assert.equal(done.attempts, 2);
  });

  test("a failed send leaves the job in the outbox; after the grace a tick sends it", async () => {
    const unsent = "jobs-producer-unsent";
    const enq = await p.request("POST", "/v1/jobs", { json: { type: "noop" }, worker: unsent });
    assert.equal(enq.status, 202, "202: D1 holds the job even though the send failed");
    const { id } = enq.body;
    const t0 = Date.now();
    await tick(p, t0 + 10 * MINUTE, unsent); // its re-send fails too
    let job = await row(p, id);
    assert.deepEqual([job.status, job.sent_at], ["queued", null]);
    assert.equal(job.attempts, 0);

    await tick(p, t0 + MINUTE); // within the 5-minute grace: left alone
    assert.equal((await row(p, id)).sent_at, null);
    await tick(p, t0 + 6 * MINUTE);
    job = await row(p, id);
    assert.ok(job.sent_at, "re-sent, and the send recorded");
    const done = await p.waitForStatus(id, "succeeded");
    assert.equal(done.runs.length, 1);
  });

  test("an expired lease is rescued: back to the queue, or dead on the last attempt", async () => {
    const now = Date.now();
    // Jobs a worker claimed and then died on (their own messages are an hour away).
    const [retry, last, alive] = await Promise.all(
      [5, 1, 5].map((max_attempts) => p.enqueue({ type: "noop", delay_seconds: 3600, max_attempts })),
    );
    for (const [enq, leaseEnd] of [[retry, now - MINUTE], [last, now - MINUTE], [alive, now + 4 * MINUTE]]) {
      await set(p, enq.body.id, "status = 'running', attempts = 1, runs = 1, run_at = ?1, started_at = ?1, lease_until = ?2", now - 6 * MINUTE, leaseEnd);
    }
    await tick(p, now);

    const rescued = await p.waitForStatus(retry.body.id, "succeeded");
    assert.deepEqual(rescued.runs.map((r) => r.outcome), ["retrying", "succeeded"]);
    assert.equal(rescued.runs[0].error.class, "lease_expired");
    // The lost attempt's record says who found it and the lease it held.
    assert.equal(rescued.runs[0].found_by, "sweep");
    assert.equal(Date.parse(rescued.runs[0].lease_until), now - MINUTE);
    assert.equal(rescued.runs[1].found_by, undefined);
    assert.equal(rescued.attempts, 2);

    const dead = (await p.getJob(last.body.id)).body;
    assert.equal(dead.status, "dead");
    assert.equal(dead.error.class, "lease_expired");
    assert.deepEqual(dead.runs.map((r) => r.outcome), ["dead"]);
    await p.waitFor(() => p.count("SELECT count(*) FROM dead_letters WHERE job_id = ?", last.body.id), {
      what: "the DLQ arrival",
    });

    assert.equal((await row(p, alive.body.id)).status, "running", "a live lease is left alone");
    await tick(p, now); // a repeated tick changes nothing
    assert.equal((await p.getJob(last.body.id)).body.runs.length, 1);
  });

  test("a chain whose step the rescuer finds dead is failed, not left running", async () => {
    const now = Date.now();
    const enq = await p.enqueue({ type: "noop", delay_seconds: 3600, max_attempts: 1, steps: [{ type: "noop" }] });
    const id = enq.body.id;
    await set(p, id, "status = 'running', attempts = 1, runs = 1, run_at = ?1, started_at = ?1, lease_until = ?2", now - 6 * MINUTE, now - MINUTE);
    const before = await p.count("SELECT count(*) FROM jobs");
    await tick(p, now);
    const parent = (await p.getJob(id)).body;
    assert.equal(parent.status, "dead");
    assert.match(parent.error.message, /^the lease expired .* \(gave up after 1 attempt\)$/);
    assert.equal(parent.chain.status, "failed");
    assert.match(parent.chain.error, /^step 0 \(noop\) went dead: the lease expired/);
    assert.equal(await p.count("SELECT count(*) FROM jobs"), before, "no next step");
  });

  test("retention deletes only old finished jobs (and their runs, and the invocations no job kept can name)", async () => {
    const now = Date.now();
    const ids = [];
    for (let i = 0; i < 5; i++) ids.push((await p.enqueue({ type: "noop" })).body.id);
    await Promise.all(ids.slice(0, 4).map((id) => p.waitForStatus(id, "succeeded")));
    // Succeeded jobs are found by id (ULIDs sort by creation): theirs are as old as they are.
    const oldDone = await createdAt(p, ids[0], now - 92 * DAY);
    const newDone = await createdAt(p, ids[1], now - 90 * DAY);
    // Created 100 days ago, dead and kept: it holds back no invocation.
    const oldDead = await createdAt(p, ids[2], now - 100 * DAY);
    const ancientDead = ids[3];
    // Each succeeded on its second run: the first one's run record goes with the job.
    const failedFirst = (id) =>
      p.db.batch([
        p.db.prepare("UPDATE jobs SET runs = 2, attempts = 2 WHERE id = ?").bind(id),
        p.db.prepare("INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, outcome, duration_ms) VALUES (?, 1, 1, 0, 0, 'retrying', 0)").bind(id),
      ]);
    await failedFirst(oldDone);
    await failedFirst(newDone);
    await set(p, oldDone, "finished_at = ?", now - 91 * DAY);
    await set(p, newDone, "finished_at = ?", now - 89 * DAY);
    await set(p, oldDead, "status = 'dead', finished_at = ?", now - 100 * DAY);
    await set(p, ancientDead, "status = 'dead', finished_at = ?", now - 181 * DAY);
    const live = (await p.enqueue({ type: "noop", delay_seconds: 13 * 3600 })).body.id;
    await set(p, live, "created_at = ?, finished_at = ?", now - 400 * DAY, now - 400 * DAY);
    // Every succeeded job kept was created or finished inside the 90 days, so ran in an
    // invocation begun after them, less its wall time: one from 92 days ago is no job's
    // (though a dead job kept is older), one from 90.5 days ago is within the day's margin.
    const invocation = (days) => `${ulidTime(now - days * DAY)}${"0".repeat(16)}`;
    for (const days of [92, 90.5])
      await p.db.prepare("INSERT INTO invocations (id, details) VALUES (?, '{\"version\":\"old\"}')").bind(invocation(days)).run();
    const ranNewDone = (await row(p, newDone)).run_invocation;

    // Flow control's counts per key: a key none of whose jobs has run for 90 days goes.
    for (const [key, days] of [["gone-quiet", 91], ["recent", 89]])
      await p.db.prepare("INSERT INTO flow_keys (type, key, started, last_at) VALUES ('http', ?, 3, ?)").bind(key, now - days * DAY).run();

    await tick(p, now);
    const keys = await p.db.prepare("SELECT key FROM flow_keys WHERE type = 'http' ORDER BY key").all();
    assert.deepEqual(keys.results.map((k) => k.key), ["recent"], "a flow key quiet for 91 days: deleted; 89: kept");
    const left = async (id) => Boolean(await row(p, id));
    assert.equal(await left(oldDone), false, "succeeded, 91 days ago: deleted");
    assert.equal(await p.count("SELECT count(*) FROM job_runs WHERE job_id = ?", oldDone), 0, "with its runs");
    assert.equal(await left(newDone), true, "succeeded, 89 days ago: kept");
    assert.equal(await left(oldDead), true, "dead, 100 days ago: kept (180 days for dead)");
    assert.equal(await left(ancientDead), false, "dead, 181 days ago: deleted");
    assert.equal(await left(live), true, "live jobs are never deleted");
    assert.equal(await p.count("SELECT count(*) FROM job_runs WHERE job_id = ?", newDone), 1);
    const invocations = async (...ids) => p.count(`SELECT count(*) FROM invocations WHERE id IN (${ids.map(() => "?")})`, ...ids);
    assert.equal(await invocations(invocation(92)), 0, "an invocation older than the cutoff and its margin: deleted");
    assert.equal(await invocations(invocation(90.5), ranNewDone), 2, "within the margin, or a kept job's: kept");
    const { version } = JSON.parse(await p.db.prepare("SELECT details FROM invocations WHERE id = ?").bind(ranNewDone).first("details"));
    assert.equal((await p.getJob(newDone)).body.runs[1].version, version, "its run still shows what its invocation shares");
  });

  test("invocations wait while the jobs' retention delete is behind: a job it has yet to delete may name one", async () => {
    const now = Date.now();
    // 101 succeeded jobs created and finished 100 days ago: more than one tick deletes (SWEEP_BATCH 100).
    const enqueued = [...(await enqueueBatch(p, { type: "noop", delay_seconds: 3600 }, 100)), ...(await enqueueBatch(p, { type: "noop", delay_seconds: 3600 }, 1))];
    await p.db.prepare(
      "UPDATE jobs SET id = ?1 || substr(id, 11), status = 'succeeded', created_at = ?2, finished_at = ?2, run_at = ?2 " +
        "WHERE id IN (SELECT value FROM json_each(?3))",
    ).bind(ulidTime(now - 100 * DAY), now - 100 * DAY, JSON.stringify(enqueued)).run();
    const old = `${ulidTime(now - 95 * DAY)}${"1".repeat(16)}`;
    await p.db.prepare("INSERT INTO invocations (id, details) VALUES (?, '{}')").bind(old).run();
    const oldJobs = () => p.count("SELECT count(*) FROM jobs WHERE status = 'succeeded' AND id < ?", ulidTime(now - 99 * DAY));
    assert.ok((await oldJobs()) >= 101);

    await tick(p, now);
    assert.ok((await oldJobs()) >= 1, "a full page deleted, some left");
    assert.equal(await p.count("SELECT count(*) FROM invocations WHERE id = ?", old), 1, "kept while old jobs remain");
    await tick(p, now);
    assert.equal(await oldJobs(), 0);
    assert.equal(await p.count("SELECT count(*) FROM invocations WHERE id = ?", old), 0, "deleted once they are gone");
  });

  test("a batch's successes are one row, the job view still shows each run, and the row goes after the hour", async () => {
    const ids = await enqueueBatch(p, { type: "noop", payload: {} }, 3);
    await Promise.all(ids.map((id) => p.waitForStatus(id, "succeeded")));
    assert.equal(await p.count("SELECT count(*) FROM job_runs WHERE job_id IN (?, ?, ?)", ...ids), 0, "no run record of their own");
    const view = (await p.getJob(ids[0])).body;
    assert.deepEqual(view.runs.map((r) => [r.run, r.attempt, r.outcome]), [[1, 1, "succeeded"]]);
    assert.ok(view.runs[0].duration_ms >= 0 && view.runs[0].finished_at);
    const mine = "SELECT count(*) FROM success_batches b, json_each(b.successes) s WHERE b.finished_at >= ?";
    const since = Math.min(...(await Promise.all(ids.map(async (id) => (await row(p, id)).finished_at))));
    assert.equal(await p.count(mine, since), 3, "each success once, in its batch's row");
    const now = Date.now();
    await tick(p, now + 30 * MINUTE);
    assert.equal(await p.count(mine, since), 3, "inside the hour: kept for the windows");
    await tick(p, now + 3 * HOUR);
    await tick(p, now + 3 * HOUR);
    assert.equal(await p.count(mine, since), 0, "past the hour and rolled up: deleted");
  });
});

describe("priority aging and promotion", () => {
  let p;
  before(async () => {
    p = await startPlatform({ manualDelivery: true });
  });
  after(() => p.dispose());

  test("a job waiting over an hour gains +10 every 5 minutes and moves up a family at its threshold", async () => {
    const now = Date.now();
    const waiting = (await p.enqueue({ type: "noop", priority: 75 })).body.id;
    const bulk = (await p.enqueue({ type: "ai_tagging", priority: 0 })).body.id;

    await tick(p, now + 30 * MINUTE);
    assert.equal((await row(p, waiting)).priority, 75, "waiting under an hour: unchanged");

    await tick(p, now + 61 * MINUTE);
    let job = await row(p, waiting);
    assert.deepEqual([job.priority, job.family], [85, "default"]);
    await tick(p, now + 61 * MINUTE);
    await tick(p, now + 63 * MINUTE);
    assert.equal((await row(p, waiting)).priority, 85, "once per 5 minutes, however often ticks run");

    await tick(p, now + 66 * MINUTE);
    job = await row(p, waiting);
    assert.deepEqual([job.priority, job.family], [95, "high"], "90 reaches high's threshold");
    assert.ok(job.sent_at, "sent to jobs-high");
    const ai = await row(p, bulk);
    assert.deepEqual([ai.priority, ai.family], [20, "bulk"], "bulk: raised, below low's threshold of 50");

    await tick(p, now + 71 * MINUTE);
    assert.equal((await row(p, waiting)).priority, 100);
    await tick(p, now + 76 * MINUTE);
    assert.equal((await row(p, waiting)).priority, 100, "capped at 100");

    // The message still in jobs-default is stale: acked without running.
    const stale = await p.deliver("jobs-default", [{ id: "stale", ...jobMessage(waiting, "noop") }]);
    assert.deepEqual(stale.explicitAcks, ["stale"]);
    job = await row(p, waiting);
    assert.deepEqual([job.status, job.attempts], ["queued", 0]);

    await p.deliver("jobs-high", [{ id: "fresh", ...jobMessage(waiting, "noop") }]);
    assert.equal((await row(p, waiting)).status, "succeeded");
  });

  test("a job aged to 50 inside its family is sent to the family's express lane", async () => {
    const now = Date.now();
    const id = (await p.enqueue({ type: "link_health_check", priority: 45 })).body.id;
    assert.equal((await row(p, id)).sent_at, null, "the happy path records no send");
    await tick(p, now + 61 * MINUTE);
    const job = await row(p, id);
    assert.deepEqual([job.priority, job.family], [55, "low"], "below default's threshold of 70: stays low");
    assert.ok(job.sent_at, "sent to jobs-low-express");
    const run = await p.deliver("jobs-low-express", [{ id: "express", ...jobMessage(id, "link_health_check") }]);
    assert.deepEqual(run.explicitAcks, ["express"]);
    assert.equal((await row(p, id)).status, "succeeded", "the express lane's message runs it");
  });

  test("a job in a paused family is not promoted out of its pause, and moves once resumed", async () => {
    const admin = { token: TOKENS.admin };
    const pause = await p.request("POST", "/v1/admin/pauses", { json: { kind: "family", name: "low" }, ...admin });
    assert.equal(pause.status, 201);
    const now = Date.now();
    const id = (await p.enqueue({ type: "click_rollup", payload: { hour: "2025-01-01T10:00:00Z" }, priority: 65 })).body.id;

    await tick(p, now + 61 * MINUTE);
    let job = await row(p, id);
    assert.deepEqual([job.priority, job.family], [75, "low"], "aged, but kept in low: not sent to jobs-default");

    assert.equal((await p.request("DELETE", "/v1/admin/pauses/family/low", admin)).status, 200);
    await tick(p, now + 66 * MINUTE);
    job = await row(p, id);
    assert.deepEqual([job.priority, job.family], [85, "default"], "resumed: it climbs as usual");
    assert.ok(job.sent_at);
  });
});
