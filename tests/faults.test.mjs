// Fault injection on the consumer's batch (docs/guarantees.md "Guarantees and how they hold"):
// hostile remote answers,
// rows D1 refuses, leases lost under live work, and the limits of one invocation (connections,
// subrequests, wall time). Each test delivers real batches to the built consumer on local
// workerd with its real D1, and checks that no job is lost, stranded or run past its bounds.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { jobMessage, refuseSuccess, refuseWrites, startPlatform } from "./support/platform.mjs";
import { startHostileServer } from "./support/hostile_server.mjs";

const MAX_RESULT_BYTES = 64 * 1024;

let remote;
before(async () => {
  remote = await startHostileServer();
});
after(() => remote.close());

/** Enqueues `n` http jobs to `path` (with payload `extra`); returns their ids. */
async function enqueueHttp(p, path, n = 1, extra = {}) {
  const ids = [];
  for (let i = 0; i < n; i++) {
    const enq = await p.enqueue({ type: "http", payload: { url: remote.url(path), ...extra } });
    assert.equal(enq.status, 202, JSON.stringify(enq.body));
    ids.push(enq.body.id);
  }
  return ids;
}

const messages = (ids) => ids.map((id) => ({ id: `m-${id}`, ...jobMessage(id, "http") }));
const job = async (p, id) => (await p.getJob(id)).body;
const statuses = async (p, ids) => Promise.all(ids.map(async (id) => (await job(p, id)).status));

describe("hostile answers cannot stall, poison or multiply a batch", () => {
  let p;
  before(async () => {
    p = await startPlatform({ manualDelivery: true });
  });
  after(() => p.dispose());

  test("a 3 MB answer is cut and flagged, and the rest of its batch is recorded", async () => {
    const [huge] = await enqueueHttp(p, "/huge?bytes=3000000");
    const others = await enqueueHttp(p, "/slow?ms=1", 5);
    const result = await p.deliver("jobs-default", messages([...others, huge]));
    assert.equal(result.explicitAcks.length, 6, JSON.stringify(result));
    assert.deepEqual(await statuses(p, [huge, ...others]), Array(6).fill("succeeded"));
    // Each run keeps its own details, whether they are the batch's shared ones or not.
    const runs = await Promise.all(others.map(async (id) => (await job(p, id)).runs[0]));
    assert.deepEqual(runs.map((r) => [r.handler, r.bytes.in]), Array(5).fill(["http", 11]));
    assert.ok((await job(p, huge)).runs[0].bytes.in >= 48 * 1024);
    const stored = await p.db.prepare("SELECT length(result) AS n FROM jobs WHERE id = ?").bind(huge).first();
    assert.ok(stored.n <= MAX_RESULT_BYTES, `stored ${stored.n} bytes`);
    const view = await job(p, huge);
    assert.equal(view.result.status, 200);
    assert.equal(view.result.body_truncated, true);
  });

  test("a small gzip answer that inflates to 3 MB is cut at the cap as read, not trusted by its length", async () => {
    const [bomb] = await enqueueHttp(p, "/gzip?bytes=3000000");
    await p.deliver("jobs-default", messages([bomb]));
    const view = await job(p, bomb);
    assert.equal(view.status, "succeeded");
    assert.equal(view.result.body_truncated, true);
    const read = view.runs[0].bytes.in;
    assert.ok(read < 3_000_000 / 10, `read ${read} bytes of the inflated body`);
  });

  test("a body that stops short of its Content-Length fails at the timeout", async () => {
    const [short] = await enqueueHttp(p, "/trickle?length=1000", 1, { timeout_ms: 1500 });
    const started = Date.now();
    const result = await p.deliver("jobs-default", messages([short]));
    assert.ok(Date.now() - started < 10_000, `batch took ${Date.now() - started} ms`);
    assert.equal(result.retryMessages.length, 1);
    const failed = await job(p, short);
    assert.equal(failed.status, "retrying");
    assert.equal(failed.error.class, "timeout");
  });

  test("fifty 100 KB answers in one batch are all recorded", async () => {
    const ids = await enqueueHttp(p, "/huge?bytes=100000", 50);
    const result = await p.deliver("jobs-default", messages(ids));
    assert.equal(result.explicitAcks.length, 50);
    assert.deepEqual(new Set(await statuses(p, ids)), new Set(["succeeded"]));
  });

  test("a body that never ends fails its job at the timeout instead of holding the batch", async () => {
    const [trickle] = await enqueueHttp(p, "/trickle", 1, { timeout_ms: 1500 });
    const [fine] = await enqueueHttp(p, "/slow?ms=1");
    const started = Date.now();
    const result = await p.deliver("jobs-default", messages([trickle, fine]));
    assert.ok(Date.now() - started < 10_000, `batch took ${Date.now() - started} ms`);
    assert.equal(result.retryMessages.length, 1);
    const failed = await job(p, trickle);
    assert.equal(failed.status, "retrying");
    assert.equal(failed.error.class, "timeout");
    assert.equal((await job(p, fine)).status, "succeeded");
  });

  test("an http target cannot create jobs unless its enqueuer allowed it", async () => {
    const count = () => p.count("SELECT count(*) FROM jobs");
    const [untrusted] = await enqueueHttp(p, "/follow-up");
    const before = await count();
    await p.deliver("jobs-default", messages([untrusted]));
    const done = await job(p, untrusted);
    assert.equal(done.status, "succeeded");
    assert.deepEqual(done.result.body.follow_up, [{ type: "noop" }], "the answer is kept as data");
    assert.equal(await count(), before, "no job was created");

    const [trusted] = await enqueueHttp(p, "/follow-up", 1, { allow_follow_ups: true });
    await p.deliver("jobs-default", messages([trusted]));
    assert.equal(await count(), before + 2, "the allowed follow-up was created");
  });

  test("a trusted answer cut at the read cap fails its step rather than drop its follow-ups", async () => {
    const [cut] = await enqueueHttp(p, "/follow-up?pad=60000", 1, { allow_follow_ups: true });
    const before = await p.count("SELECT count(*) FROM jobs");
    await p.deliver("jobs-default", messages([cut]));
    const done = await job(p, cut);
    assert.equal(done.status, "dead");
    assert.equal(done.error.class, "invalid_payload");
    assert.match(done.error.message, /over 49152 bytes .* follow-up jobs it may hold could not be read/);
    assert.equal(await p.count("SELECT count(*) FROM jobs"), before, "no job was created");
    // The same answer within the cap adds its follow-up.
    const [whole] = await enqueueHttp(p, "/follow-up?pad=40000", 1, { allow_follow_ups: true });
    await p.deliver("jobs-default", messages([whole]));
    assert.equal((await job(p, whole)).status, "succeeded");
    assert.equal(await p.count("SELECT count(*) FROM jobs"), before + 2);
  });

  test("follow-ups cannot grow a chain past its length", async () => {
    const [looping] = await enqueueHttp(p, "/follow-up", 1, { allow_follow_ups: true });
    const before = await p.count("SELECT count(*) FROM jobs");
    // As if 99 steps had run already: a follow-up would be step 101.
    await p.db.prepare("UPDATE jobs SET chain_step = 99 WHERE id = ?").bind(looping).run();
    await p.deliver("jobs-default", messages([looping]));
    const done = await job(p, looping);
    assert.equal(done.status, "succeeded");
    assert.equal(done.chain.status, "failed");
    assert.match(done.chain.error, /at most 100/);
    assert.equal(await p.count("SELECT count(*) FROM jobs"), before, "no step was created");
  });

  test("100 slow endpoints in one batch: at most 6 requests open at once, none timed out", async () => {
    const ids = await enqueueHttp(p, "/slow?ms=150", 100, { timeout_ms: 2000 });
    remote.resetMaxOpen();
    const result = await p.deliver("jobs-default", messages(ids));
    assert.equal(result.explicitAcks.length, 100, JSON.stringify(result.retryMessages.slice(0, 3)));
    assert.ok(remote.maxOpen() <= 6, `${remote.maxOpen()} requests open at once`);
    assert.deepEqual(new Set(await statuses(p, ids)), new Set(["succeeded"]));
  });

  test("a row D1 refuses fails its own job alone; the batch's other outcomes are written", async () => {
    const ids = await enqueueHttp(p, "/slow?ms=1", 4);
    const poisoned = ids[2];
    const undo = await refuseSuccess(p, poisoned);
    try {
      const result = await p.deliver("jobs-default", messages(ids));
      assert.equal(result.ackAll, false, "one retried: each message settled on its own");
      assert.equal(result.explicitAcks.length, 3);
      assert.deepEqual(result.retryMessages.map((m) => m.msgId), [`m-${poisoned}`]);
    } finally {
      await undo();
    }
    const refused = await job(p, poisoned);
    assert.equal(refused.status, "retrying");
    assert.equal(refused.error.class, "internal");
    assert.match(refused.error.message, /could not be recorded/);
    assert.deepEqual(refused.runs.map((r) => r.outcome), ["retrying"], "its run is recorded");
    for (const id of ids.filter((id) => id !== poisoned)) {
      assert.equal((await job(p, id)).status, "succeeded");
    }
  });
});

describe("leases: a lost attempt is recorded and counted", () => {
  let p;
  before(async () => {
    p = await startPlatform({ manualDelivery: true });
  });
  after(() => p.dispose());

  /** Puts the job in `running` with an expired lease, as a worker that died would leave it. */
  const loseLease = (id, attempts) =>
    p.db
      .prepare(
        `UPDATE jobs SET status = 'running', attempts = ?2, runs = ?2, started_at = ?3,
         lease_until = ?4, sent_at = ?3 WHERE id = ?1`,
      )
      .bind(id, attempts, Date.now() - 600_000, Date.now() - 1000)
      .run();

  test("a lost last attempt makes the job dead on redelivery instead of running it again", async () => {
    const enq = await p.enqueue({ type: "http", payload: { url: remote.url("/slow?ms=1&t=last") }, max_attempts: 1 });
    await loseLease(enq.body.id, 1);
    const hits = remote.hits("/slow");
    const result = await p.deliver("jobs-default", messages([enq.body.id]));
    assert.equal(remote.hits("/slow"), hits, "not run a second time");
    assert.equal(result.retryMessages.length, 0);
    const dead = await job(p, enq.body.id);
    assert.equal(dead.status, "dead");
    assert.equal(dead.attempts, 1);
    assert.equal(dead.error.class, "lease_expired");
    assert.deepEqual(dead.runs.map((r) => [r.attempt, r.outcome, r.error?.class]), [[1, "dead", "lease_expired"]]);
  });

  test("a chain whose step lost its last attempt is failed, not left running", async () => {
    const enq = await p.enqueue({
      type: "http",
      payload: { url: remote.url("/slow?ms=1") },
      max_attempts: 1,
      steps: [{ type: "noop" }],
    });
    await loseLease(enq.body.id, 1);
    const before = await p.count("SELECT count(*) FROM jobs");
    await p.deliver("jobs-default", messages([enq.body.id]));
    const parent = await job(p, enq.body.id);
    assert.equal(parent.status, "dead");
    assert.equal(parent.chain.status, "failed");
    assert.match(parent.chain.error, /^step 0 \(http\) went dead: the lease expired/);
    assert.equal(await p.count("SELECT count(*) FROM jobs"), before, "no next step");
  });

  test("a lost attempt with attempts left is recorded, then the job runs again", async () => {
    const enq = await p.enqueue({ type: "http", payload: { url: remote.url("/slow?ms=1") }, max_attempts: 3 });
    await loseLease(enq.body.id, 1);
    await p.deliver("jobs-default", messages([enq.body.id]));
    const done = await job(p, enq.body.id);
    assert.equal(done.status, "succeeded");
    assert.equal(done.attempts, 2);
    assert.deepEqual(
      done.runs.map((r) => [r.attempt, r.outcome, r.error?.class ?? null]),
      [
        [1, "retrying", "lease_expired"],
        [2, "succeeded", null],
      ],
    );
    // The lost attempt's record names the consumer invocation whose claim found it: the one
    // that then ran the job.
    const [lost, ran] = done.runs;
    assert.equal(lost.found_by, "consumer");
    assert.match(lost.invocation, /^[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.equal(lost.invocation, ran.invocation);
    assert.ok(Date.parse(lost.lease_until) < Date.parse(lost.finished_at), "the lease it held had run out");
  });

  test("a worker that outlived its lease cannot overwrite the attempt that took over, nor count its success", async () => {
    const since = Date.now();
    const enq = await p.enqueue({ type: "http", payload: { url: remote.url("/slow?ms=2500") } });
    const id = enq.body.id;
    // A job of the same batch that keeps its lease: its success counts, the late one's does not.
    const [kept] = await enqueueHttp(p, "/slow?ms=10");
    const first = p.deliver("jobs-default", [{ id: "m-first", ...jobMessage(id, "http") }, ...messages([kept])]);
    await p.waitFor(async () => (await job(p, id)).status === "running", { what: "the first attempt" });
    await p.db.prepare("UPDATE jobs SET lease_until = ? WHERE id = ?").bind(Date.now() - 1, id).run();
    await p.deliver("jobs-default", [{ id: "m-second", ...jobMessage(id, "http") }]);
    await first;
    const done = await job(p, id);
    assert.equal(done.status, "succeeded");
    assert.deepEqual(
      done.runs.map((r) => [r.run ?? r.attempt, r.outcome]),
      [
        [1, "retrying"],
        [2, "succeeded"],
      ],
      "the late first attempt wrote nothing",
    );
    assert.equal((await job(p, kept)).status, "succeeded");
    // The successes the windows count (stats' last hour, alerts, the histogram): the second
    // attempt's and the kept job's, once each.
    const counted = await p.db
      .prepare("SELECT b.successes FROM success_batches b WHERE b.finished_at >= ?")
      .bind(since)
      .all();
    const successes = counted.results.flatMap((b) => JSON.parse(b.successes));
    assert.equal(successes.length, 2, JSON.stringify(counted.results));
  });
});

describe("an invocation's limits: connections, subrequests, wall time, heartbeats", () => {
  let p;
  before(async () => {
    p = await startPlatform({
      manualDelivery: true,
      consumerBindings: { OUTBOUND_CONNECTIONS: "2", SUBREQUEST_LIMIT: "8", LEASE_HEARTBEAT_SECS: "1" },
    });
  });
  after(() => p.dispose());

  test("slow endpoints share the batch's connections, and waiting for one never times a job out", async () => {
    // 8 answers of 700 ms on 2 connections take 2.8 s: past the 2 s timeout had it started at once.
    const ids = await enqueueHttp(p, "/slow?ms=700", 8, { timeout_ms: 2000 });
    remote.resetMaxOpen();
    const result = await p.deliver("jobs-default", messages(ids));
    assert.equal(result.explicitAcks.length, 8, JSON.stringify(result.retryMessages));
    assert.ok(remote.maxOpen() <= 2, `${remote.maxOpen()} requests open at once`);
    assert.deepEqual(new Set(await statuses(p, ids)), new Set(["succeeded"]));
  });

  test("jobs past the invocation's subrequests are released unstarted, with no attempt spent", async () => {
    const ids = await enqueueHttp(p, "/slow?ms=1", 10);
    const result = await p.deliver("jobs-default", messages(ids));
    assert.equal(result.explicitAcks.length, 8);
    assert.equal(result.retryMessages.length, 2);
    assert.ok(result.retryMessages.every((m) => m.delaySeconds === 1));
    const released = result.retryMessages.map((m) => m.msgId.slice(2));
    for (const id of released) {
      const row = await job(p, id);
      assert.equal(row.status, "queued");
      assert.equal(row.attempts, 0);
      assert.equal(row.runs.length, 0);
    }
    // Their messages come back and run in the next invocation.
    const again = await p.deliver("jobs-default", messages(released));
    assert.equal(again.explicitAcks.length, 2);
  });

  test("a running batch extends the leases of every job it holds, finished or not", async () => {
    const [fast] = await enqueueHttp(p, "/slow?ms=1");
    const [slow] = await enqueueHttp(p, "/slow?ms=3500", 1, { timeout_ms: 5000 });
    const lease = async (id) =>
      (await p.db.prepare("SELECT lease_until FROM jobs WHERE id = ?").bind(id).first()).lease_until;
    const running = p.deliver("jobs-default", messages([fast, slow]));
    await p.waitFor(async () => (await job(p, slow)).status === "running", { what: "the attempt" });
    const [fastFirst, slowFirst] = [await lease(fast), await lease(slow)];
    await new Promise((r) => setTimeout(r, 2200));
    // The fast job ran long ago, but its outcome waits for the batch's record: its lease must
    // not run out under it.
    assert.ok((await lease(fast)) > fastFirst + 1000, "the finished job's lease is extended");
    const extended = await lease(slow);
    assert.ok(extended > slowFirst + 1000, "the running job's lease is extended");
    await running;
    assert.deepEqual(await statuses(p, [fast, slow]), ["succeeded", "succeeded"]);
    // Each run record holds the lease as the last heartbeat left it, not the claim's.
    for (const id of [fast, slow]) {
      const [run] = (await job(p, id)).runs;
      assert.ok(Date.parse(run.lease_until) >= extended, `${id}: the extended lease is on its run record`);
    }
  });

  test("a heartbeat D1 refuses leaves the lease the job still holds on its run record", async () => {
    const [id] = await enqueueHttp(p, "/slow?ms=2500", 1, { timeout_ms: 5000 });
    // The heartbeat's extension of a running job is refused; the claim's lease and the
    // record's clearing of it are not.
    const undo = await refuseWrites(p, "refuse_heartbeat", "UPDATE OF lease_until ON jobs", "OLD.status = 'running' AND NEW.status = 'running'");
    let claimed;
    try {
      const running = p.deliver("jobs-default", messages([id]));
      await p.waitFor(async () => (await job(p, id)).status === "running", { what: "the attempt" });
      claimed = (await p.db.prepare("SELECT lease_until FROM jobs WHERE id = ?").bind(id).first()).lease_until;
      await running;
    } finally {
      await undo();
    }
    const done = await job(p, id);
    assert.equal(done.status, "succeeded");
    // The claim's lease, which the job still held: not the one the refused heartbeats asked for.
    assert.equal(Date.parse(done.runs[0].lease_until), claimed);
  });
});

describe("an invocation's wall time", () => {
  let p;
  before(async () => {
    p = await startPlatform({
      manualDelivery: true,
      consumerBindings: { OUTBOUND_CONNECTIONS: "1", CONSUMER_WALL_SECS: "40" },
    });
  });
  after(() => p.dispose());

  test("a job that could not end before the wall time is released, not started", async () => {
    // A deadline is the 3 s timeout plus 30 s of connection wait, and 5 s of grace: the first
    // job starts at 0 (ends by 38 s); on one connection the second could start at ~2.5 s, and
    // might not end before the 40 s wall time.
    const ids = await enqueueHttp(p, "/slow?ms=2500", 2, { timeout_ms: 3000 });
    const result = await p.deliver("jobs-default", messages(ids));
    assert.deepEqual(result.explicitAcks, [`m-${ids[0]}`]);
    assert.deepEqual(result.retryMessages, [{ msgId: `m-${ids[1]}`, delaySeconds: 1 }]);
    assert.equal((await job(p, ids[0])).status, "succeeded");
    const released = await job(p, ids[1]);
    assert.equal(released.status, "queued");
    assert.equal(released.attempts, 0);
  });
});
