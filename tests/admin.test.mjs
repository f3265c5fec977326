// The operator's admin API on the built WASM workers (local workerd, real D1 and
// queues), every response checked against /openapi.json.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { jobMessage, startPlatform, TOKENS } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";
import { adminApi } from "./support/admin_api.mjs";
import { tick } from "./support/sweep.mjs";

let app;
before(async () => {
  app = await startAppServer();
  app.script("/gone", [{ status: 400, body: { error: "bad request" } }]);
});
after(() => app.close());

/**
 * A describe block's own platform (messages delivered by the test) and admin API, checked
 * against /openapi.json, with the helpers its tests share; `p` and `api` are set before its
 * tests run.
 */
function operatorPlatform() {
  const f = {
    /** Enqueues and returns {id, type}. */
    async enqueue(job) {
      const res = await f.p.enqueue(job);
      assert.equal(res.status, 202, JSON.stringify(res.body));
      return { id: res.body.id, type: job.type };
    },
    /** An http job that the app answers 400: dead at once (client_error). */
    async deadHttpJob(extra = {}) {
      const job = await f.enqueue({ type: "http", payload: { url: app.url("/gone") }, ...extra });
      await f.p.deliver("jobs-default", [jobMessage(job.id, job.type)]);
      assert.equal((await f.status(job.id)).status, "dead");
      return job;
    },
    status: async (id) => (await f.p.getJob(id)).body,
  };
  before(async () => {
    f.p = await startPlatform({ manualDelivery: true });
    f.api = await adminApi(f.p);
  });
  after(() => f.p.dispose());
  return f;
}

describe("admin API (messages delivered by the test)", () => {
  const f = operatorPlatform();
  const { enqueue, deadHttpJob, status } = f;
  let p, api;
  before(() => ({ p, api } = f));

  test("every admin route refuses a missing token (401) and an enqueue token (403)", async () => {
    const routes = [
      ["GET", "/v1/admin/stats"], ["GET", "/v1/admin/history"], ["GET", "/v1/admin/jobs"], ["GET", "/v1/admin/jobs/{id}"],
      ["POST", "/v1/admin/jobs/{id}/status"], ["POST", "/v1/admin/jobs/{id}/priority"], ["POST", "/v1/admin/jobs/{id}/boost"],
      ["POST", "/v1/admin/jobs/{id}/retry"], ["POST", "/v1/admin/jobs/{id}/cancel"], ["POST", "/v1/admin/jobs/retry"],
      ["POST", "/v1/admin/jobs/cancel"], ["POST", "/v1/admin/jobs/status"], ["GET", "/v1/admin/failures"], ["GET", "/v1/admin/dead-letters"],
      ["POST", "/v1/admin/dead-letters/{id}/replay"], ["POST", "/v1/admin/dead-letters/replay"], ["GET", "/v1/admin/pauses"],
      ["POST", "/v1/admin/pauses"], ["DELETE", "/v1/admin/pauses/{kind}/{name}"], ["GET", "/v1/admin/audit"],
    ];
    for (const [method, template] of routes) {
      const params = { id: "01JNOPE", kind: "family", name: "low" };
      const json = method === "POST" ? { ids: ["x"] } : undefined;
      const forbidden = await api.call(method, template, { params, json, token: TOKENS.enqueue });
      assert.equal(forbidden.status, 403, `${method} ${template}`);
      assert.equal(forbidden.body.error.code, "forbidden");
      const anonymous = await api.call(method, template, { params, json, token: null });
      assert.equal(anonymous.status, 401, `${method} ${template}`);
    }
    assert.equal((await p.count("SELECT COUNT(*) FROM audit_log")), 0, "refused calls are not actions");
  });

  test("job list: filters, newest first, and cursor pages (through an index or the primary key)", async () => {
    const ids = [];
    for (const priority of [5, 50, 5, 90, 50]) {
      ids.push((await enqueue({ type: "noop", payload: {}, priority, dedup_key: `list-${ids.length}` })).id);
    }
    const newestFirst = [...ids].sort().reverse();
    // status=queued reads the live jobs' index; no status walks the table's key.
    for (const filter of ["type=noop&status=queued", "type=noop"]) {
      const seen = [];
      let cursor = null;
      do {
        const res = await api.call("GET", "/v1/admin/jobs", { query: `?${filter}&limit=2${cursor ? `&cursor=${cursor}` : ""}` });
        assert.equal(res.status, 200);
        assert.ok(res.body.jobs.length <= 2);
        seen.push(...res.body.jobs.map((j) => j.id));
        cursor = res.body.next_cursor;
      } while (cursor);
      assert.deepEqual(seen.filter((id) => ids.includes(id)), newestFirst, filter);
    }

    const bad = [
      ["?status=failed", "status"], ["?family=huge", "family"], ["?created_after=yesterday", "created_after"],
      ["?colour=red", "colour"], ["?cursor=zz", "cursor"], ["?limit=0", "limit"], ["?type=http&type=noop", "type"],
    ];
    for (const [query, field] of bad) {
      const res = await api.call("GET", "/v1/admin/jobs", { query });
      assert.equal(res.status, 422, query);
      assert.equal(res.body.error.field, field, query);
    }
    const detail = await api.call("GET", "/v1/admin/jobs/{id}", { params: { id: ids[0] } });
    assert.equal(detail.body.id, ids[0]);
    assert.deepEqual(detail.body.runs, []);
    assert.equal((await api.call("GET", "/v1/admin/jobs/{id}", { params: { id: "01JNOPE" } })).status, 404);
  });

  test("set status, priority and boost: allowed moves, 409 naming both states, 422 for bad input", async () => {
    const queued = await enqueue({ type: "noop", payload: {} });
    const moved = await api.call("POST", "/v1/admin/jobs/{id}/status", { params: queued, json: { status: "skipped" } });
    assert.equal(moved.status, 200);
    assert.equal(moved.body.job.status, "skipped");
    const again = await api.call("POST", "/v1/admin/jobs/{id}/status", { params: queued, json: { status: "queued" } });
    assert.deepEqual([again.status, again.body.error.field], [409, "status"], "the job's status keeps it from moving");
    assert.equal(again.body.error.message, "cannot move a job from skipped to queued");

    for (const [json, code, field] of [
      [{ status: "succeeded" }, "invalid_field", "status"], [{}, "invalid_field", "status"], [{ status: "cancelled", why: 1 }, "unknown_field", "why"],
    ]) {
      const res = await api.call("POST", "/v1/admin/jobs/{id}/status", { params: queued, json });
      assert.deepEqual([res.status, res.body.error.code, res.body.error.field], [422, code, field]);
    }
    const notJson = await api.call("POST", "/v1/admin/jobs/{id}/status", { params: queued, body: "{", headers: { "content-type": "application/json" } });
    assert.equal(notJson.status, 400);
    assert.equal((await api.call("POST", "/v1/admin/jobs/{id}/status", { params: { id: "01JNOPE" }, json: { status: "cancelled" } })).status, 404);

    const live = await enqueue({ type: "noop", payload: {}, priority: 10 });
    assert.equal((await api.call("POST", "/v1/admin/jobs/{id}/priority", { params: live, json: { priority: 70 } })).body.job.priority, 70);
    assert.equal((await api.call("POST", "/v1/admin/jobs/{id}/boost", { params: live, json: { by: 20 } })).body.job.priority, 90);
    assert.equal((await api.call("POST", "/v1/admin/jobs/{id}/boost", { params: live, json: { by: 20 } })).body.job.priority, 100, "capped");
    const range = await api.call("POST", "/v1/admin/jobs/{id}/priority", { params: live, json: { priority: 101 } });
    assert.deepEqual([range.status, range.body.error.code, range.body.error.field], [422, "out_of_range", "priority"]);
    assert.equal((await api.call("POST", "/v1/admin/jobs/{id}/boost", { params: live, json: { by: 0 } })).status, 422);
    const terminal = await api.call("POST", "/v1/admin/jobs/{id}/priority", { params: queued, json: { priority: 1 } });
    assert.deepEqual([terminal.status, terminal.body.error.code, terminal.body.error.field], [409, "not_live", "status"]);
    assert.match(terminal.body.error.message, /skipped/);

    const cancelled = await api.call("POST", "/v1/admin/jobs/{id}/cancel", { params: live });
    assert.equal(cancelled.body.job.status, "cancelled");
    const twice = await api.call("POST", "/v1/admin/jobs/{id}/cancel", { params: live });
    assert.equal(twice.status, 409);
    assert.equal(twice.body.error.message, "cannot move a job from cancelled to cancelled");
  });

  test("retry one: attempts reset, the history kept, the next attempt is a new run", async () => {
    const job = await deadHttpJob();
    const succeeded = await enqueue({ type: "noop", payload: {} });
    await p.deliver("jobs-default", [jobMessage(succeeded.id, succeeded.type)]);
    const refused = await api.call("POST", "/v1/admin/jobs/{id}/retry", { params: succeeded });
    assert.equal(refused.status, 409);
    assert.equal(refused.body.error.message, "cannot move a job from succeeded to queued");

    const res = await api.call("POST", "/v1/admin/jobs/{id}/retry", { params: job });
    assert.equal(res.status, 200);
    assert.deepEqual([res.body.job.status, res.body.job.attempts, res.body.job.runs], ["queued", 0, 1]);
    app.script("/gone", [{ status: 200 }, { status: 400 }]);
    await p.deliver("jobs-default", [jobMessage(job.id, job.type)]);
    const after = await status(job.id);
    assert.equal(after.status, "succeeded");
    assert.equal(after.attempts, 1);
    assert.deepEqual(after.runs.map((r) => [r.run, r.attempt, r.outcome]), [[1, 1, "dead"], [2, 1, "succeeded"]]);
  });

  test("bulk retry by filter moves exactly the matching jobs; the dry run only counts them", async () => {
    const http = [await deadHttpJob(), await deadHttpJob()];
    const other = await enqueue({ type: "weather_refresh", payload: { kind: "alerts" } }); // no endpoint: dead, not_configured
    await p.deliver("jobs-default", [jobMessage(other.id, other.type)]);
    assert.equal((await status(other.id)).status, "dead");
    const filter = { type: "http", error_class: "client_error", status: "dead" };
    const matching = await p.count("SELECT COUNT(*) FROM jobs WHERE type = 'http' AND status = 'dead' AND error_class = 'client_error'");
    assert.ok(matching >= 2);

    const dry = await api.call("POST", "/v1/admin/jobs/retry", { json: { filter, dry_run: true } });
    assert.deepEqual(dry.body, { dry_run: true, count: matching, conflicts: 0 });
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE type = 'http' AND status = 'dead' AND error_class = 'client_error'"), matching, "dry run moved nothing");

    const real = await api.call("POST", "/v1/admin/jobs/retry", { json: { filter } });
    assert.equal(real.body.count, matching);
    assert.equal(real.body.remaining, 0);
    for (const j of http) assert.ok(real.body.ids.includes(j.id));
    for (const j of http) assert.deepEqual([(await status(j.id)).status, (await status(j.id)).attempts], ["queued", 0]);
    assert.equal((await status(other.id)).status, "dead", "the non-matching dead job stays");

    for (const [json, field] of [[{}, "ids"], [{ ids: ["a"], filter: {} }, "filter"], [{ filter: { status: "nope" } }, "filter.status"], [{ ids: [] }, "ids"], [{ filter: {}, dry_run: 1 }, "dry_run"], [{ filter: {} }, "filter"]]) {
      const res = await api.call("POST", "/v1/admin/jobs/retry", { json });
      assert.equal(res.status, 422, JSON.stringify(json));
      assert.equal(res.body.error.field, field);
    }
  });

  test("bulk cancel by ids only moves the ids the state machine lets cancel", async () => {
    const a = await enqueue({ type: "noop", payload: {} });
    const b = await enqueue({ type: "noop", payload: {} });
    const done = await enqueue({ type: "noop", payload: {} });
    await p.deliver("jobs-default", [jobMessage(done.id, done.type)]);
    const dry = await api.call("POST", "/v1/admin/jobs/cancel", { json: { ids: [a.id, b.id, done.id, "01JNOPE"], dry_run: true } });
    assert.equal(dry.body.count, 2);
    const res = await api.call("POST", "/v1/admin/jobs/cancel", { json: { ids: [a.id, b.id, done.id, "01JNOPE"] } });
    assert.deepEqual([res.body.count, [...res.body.ids].sort()], [2, [a.id, b.id].sort()]);
    assert.equal((await status(done.id)).status, "succeeded");
    const refused = await api.call("POST", "/v1/admin/jobs/cancel", { json: { ids: [a.id] } });
    assert.equal(refused.body.count, 0);
  });

  test("bulk set status: by ids only the moves the state machine allows, by filter after a dry run, audited; bad input is a 422 naming the field", async () => {
    const waiting = [];
    for (let i = 0; i < 3; i++) waiting.push(await enqueue({ type: "noop", payload: {} }));
    const done = await enqueue({ type: "noop", payload: {} });
    await p.deliver("jobs-default", [jobMessage(done.id, done.type)]);
    const ids = [...waiting.map((j) => j.id), done.id];

    const dry = await api.call("POST", "/v1/admin/jobs/status", { json: { status: "skipped", ids, dry_run: true } });
    assert.deepEqual(dry.body, { dry_run: true, count: 3, conflicts: 0 });
    assert.equal((await status(waiting[0].id)).status, "queued", "the dry run moved nothing");
    const skipped = await api.call("POST", "/v1/admin/jobs/status", { json: { status: "skipped", ids } });
    assert.equal(skipped.status, 200, JSON.stringify(skipped.body));
    assert.deepEqual(
      [skipped.body.count, [...skipped.body.ids].sort(), skipped.body.conflicts, skipped.body.remaining],
      [3, waiting.map((j) => j.id).sort(), [], 0],
    );
    for (const j of waiting) assert.equal((await status(j.id)).status, "skipped");
    assert.equal((await status(done.id)).status, "succeeded", "a succeeded job cannot be skipped");
    const audited = await p.db.prepare("SELECT target, affected FROM audit_log WHERE action = 'jobs.set_status'").all();
    assert.deepEqual(audited.results.map((r) => [JSON.parse(r.target).to, r.affected]), [["skipped", 3]]);

    // By filter: every dead http job back to queued, attempts reset, as a bulk retry would.
    const dead = [await deadHttpJob(), await deadHttpJob()];
    const filter = { type: "http", status: "dead" };
    const matching = await p.count("SELECT COUNT(*) FROM jobs WHERE type = 'http' AND status = 'dead'");
    const count = await api.call("POST", "/v1/admin/jobs/status", { json: { status: "queued", filter, dry_run: true } });
    assert.deepEqual(count.body, { dry_run: true, count: matching, conflicts: 0 });
    const requeued = await api.call("POST", "/v1/admin/jobs/status", { json: { status: "queued", filter } });
    assert.equal(requeued.body.count, matching);
    for (const j of dead) assert.deepEqual([(await status(j.id)).status, (await status(j.id)).attempts], ["queued", 0]);
    const cancelled = await api.call("POST", "/v1/admin/jobs/status", { json: { status: "cancelled", ids: dead.map((j) => j.id) } });
    assert.equal(cancelled.body.count, 2);

    const auditRows = await p.count("SELECT COUNT(*) FROM audit_log");
    for (const [json, code, field] of [
      [{ status: "running", ids }, "invalid_field", "status"],
      [{ status: "succeeded", ids }, "invalid_field", "status"],
      [{ ids }, "invalid_field", "status"],
      [{ status: "skipped" }, "invalid_field", "ids"],
      [{ status: "skipped", ids, why: 1 }, "unknown_field", "why"],
      [{ status: "skipped", filter: { status: "nope" } }, "invalid_field", "filter.status"],
    ]) {
      const res = await api.call("POST", "/v1/admin/jobs/status", { json });
      assert.deepEqual([res.status, res.body.error.field], [422, field], JSON.stringify(json));
      if (code !== "invalid_field") assert.equal(res.body.error.code, code);
    }
    assert.equal(await p.count("SELECT COUNT(*) FROM audit_log"), auditRows, "refused calls write nothing");
  });

  test("dead letters: list with filters, replay one and by filter (dry run first), only dead jobs", async () => {
    const one = await deadHttpJob();
    const two = await deadHttpJob();
    const list = await api.call("GET", "/v1/admin/dead-letters", { query: "?type=http&error_class=client_error" });
    const listed = list.body.dead_letters.map((j) => j.id);
    assert.ok(listed.includes(one.id) && listed.includes(two.id));
    assert.ok(list.body.dead_letters.every((j) => j.status === "dead" && j.type === "http" && j.dlq));
    assert.equal((await api.call("GET", "/v1/admin/dead-letters", { query: "?family=nope" })).status, 422);

    // One job's routes take no body: an option they lack is refused, not dropped while the move runs.
    for (const [route, json, field] of [
      ["/v1/admin/dead-letters/{id}/replay", { dry_run: true }, "dry_run"],
      ["/v1/admin/jobs/{id}/retry", { foo: 1 }, "foo"],
      ["/v1/admin/jobs/{id}/cancel", [], "body"],
    ]) {
      const res = await api.call("POST", route, { params: one, json });
      assert.deepEqual([res.status, res.body.error?.code, res.body.error?.field], [422, "unknown_field", field], route);
    }
    assert.equal((await status(one.id)).status, "dead", "nothing moved");
    const replayed = await api.call("POST", "/v1/admin/dead-letters/{id}/replay", { params: one, json: {} });
    assert.equal(replayed.body.job.status, "queued");
    const notDead = await api.call("POST", "/v1/admin/dead-letters/{id}/replay", { params: one });
    assert.equal(notDead.status, 409);
    assert.match(notDead.body.error.message, /queued/);
    assert.equal((await api.call("POST", "/v1/admin/dead-letters/{id}/replay", { params: { id: "01JNOPE" } })).status, 404);

    const deadHttp = () => p.count("SELECT COUNT(*) FROM jobs WHERE type = 'http' AND status = 'dead'");
    const before = await deadHttp();
    const dry = await api.call("POST", "/v1/admin/dead-letters/replay", { json: { filter: { type: "http" }, dry_run: true } });
    assert.deepEqual(dry.body, { dry_run: true, count: before, conflicts: 0 });
    assert.equal(await deadHttp(), before);
    const queuedBefore = await p.count("SELECT COUNT(*) FROM jobs WHERE status = 'queued'");
    const real = await api.call("POST", "/v1/admin/dead-letters/replay", { json: { filter: { type: "http", status: ["queued", "dead"] } } });
    assert.equal(real.body.count, before);
    assert.equal(await deadHttp(), 0);
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE status = 'queued'"), queuedBefore + before, "queued jobs were not touched");
    assert.ok(real.body.ids.includes(two.id));
    const byIds = await api.call("POST", "/v1/admin/dead-letters/replay", { json: { ids: [one.id] } });
    assert.equal(byIds.body.count, 0, "a queued job is no dead letter");
  });

  test("replay when a dead job's dedup_key is held by a live job: that job is a conflict with its reason, the others move", async () => {
    const taken = await deadHttpJob({ dedup_key: "replay-taken" });
    const free = await deadHttpJob({ dedup_key: "replay-free" });
    const plain = await deadHttpJob();
    const holder = await enqueue({ type: "http", payload: { url: app.url("/gone") }, dedup_key: "replay-taken" });
    const row = (id) => p.db.prepare("SELECT * FROM jobs WHERE id = ?").bind(id).first();
    const takenBefore = await row(taken.id);
    const auditBefore = await p.count("SELECT COUNT(*) FROM audit_log");

    const single = await api.call("POST", "/v1/admin/dead-letters/{id}/replay", { params: taken });
    assert.equal(single.status, 409);
    assert.deepEqual([single.body.error.code, single.body.error.field], ["dedup_key_taken", "dedup_key"]);
    assert.match(single.body.error.message, new RegExp(`held by job ${holder.id}`));
    assert.equal(await p.count("SELECT COUNT(*) FROM audit_log"), auditBefore, "a refused replay is no action");

    const dry = await api.call("POST", "/v1/admin/dead-letters/replay", { json: { ids: [taken.id, free.id, plain.id], dry_run: true } });
    assert.deepEqual(dry.body, { dry_run: true, count: 2, conflicts: 1 });
    const bulk = await api.call("POST", "/v1/admin/dead-letters/replay", { json: { ids: [taken.id, free.id, plain.id] } });
    assert.equal(bulk.status, 200, JSON.stringify(bulk.body));
    assert.equal(bulk.body.count, 2);
    assert.deepEqual([...bulk.body.ids].sort(), [free.id, plain.id].sort());
    assert.equal(bulk.body.remaining, 0);
    assert.deepEqual(bulk.body.conflicts, [{
      id: taken.id, outcome: "conflict", field: "dedup_key", held_by: holder.id,
      reason: `dedup_key held by job ${holder.id}, which is live; it must finish first`,
    }]);
    assert.equal((await status(free.id)).status, "queued");
    assert.equal((await status(plain.id)).status, "queued");
    assert.deepEqual(await row(taken.id), takenBefore, "nothing written for the conflicting job");
    assert.equal((await status(holder.id)).status, "queued", "the live holder is untouched");

    // Two dead jobs with one key in one request: the first (priority, then age) moves, the
    // other is a conflict held by it. A filter that keeps matching a conflict does not wedge.
    const first = await deadHttpJob({ dedup_key: "replay-twin", priority: 9 });
    const second = await deadHttpJob({ dedup_key: "replay-twin", priority: 1 });
    const twins = await api.call("POST", "/v1/admin/dead-letters/replay", { json: { filter: { type: "http" } } });
    assert.equal(twins.status, 200, JSON.stringify(twins.body));
    assert.ok(twins.body.ids.includes(first.id) && !twins.body.ids.includes(second.id));
    const conflicts = Object.fromEntries(twins.body.conflicts.map((c) => [c.id, c.held_by]));
    assert.deepEqual(conflicts, { [second.id]: first.id, [taken.id]: holder.id });
    assert.equal(twins.body.remaining, 0, "repeating while remaining > 0 ends");
    assert.equal((await status(second.id)).status, "dead");
  });

  /** The attempts recorded with these outcomes (SQL literals), of `family` or all: failed ones
   * by their run records, successes by their job rows, which hold their run record. */
  const attempts = (outcomes, family = "%") =>
    p.count(
      `SELECT (SELECT COUNT(*) FROM job_runs r JOIN jobs j ON j.id = r.job_id WHERE j.family LIKE ?1 AND r.outcome IN (${outcomes})) + ` +
        `(SELECT COUNT(*) FROM jobs WHERE family LIKE ?1 AND status = 'succeeded' AND run_cost_cents IS NOT NULL AND status IN (${outcomes}))`,
      family,
    );

  test("history: each family's minutes add up to its recorded attempts and carry the sweep's backlog reading", async () => {
    const res = await api.call("GET", "/v1/admin/history");
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("cache-control"), "private, max-age=15");
    const points = res.body.families.default;
    assert.equal(points.length, 60, "the last hour by default, minute by minute");
    const sum = (key) => points.reduce((n, point) => n + point[key], 0);
    assert.ok(sum("succeeded") > 0);
    assert.equal(sum("succeeded"), await attempts("'succeeded'", "default"));
    assert.equal(sum("failed"), await attempts("'retrying', 'dead'", "default"));
    assert.equal(sum("dead"), await attempts("'dead'", "default"));
    const ran = points.filter((point) => point.succeeded + point.failed > 0);
    assert.ok(ran.every((point) => point.avg_ms >= 0 && point.max_ms >= point.avg_ms));

    const at = Date.now();
    await tick(p, at);
    const after = (await api.call("GET", "/v1/admin/history", { query: "?minutes=2" })).body.families.default;
    assert.equal(after.length, 2);
    const backlog = await p.count("SELECT COUNT(*) FROM jobs WHERE family = 'default' AND status IN ('queued','retrying','scheduled') AND run_at <= ?", at);
    const read = after.find((point) => point.minute === Math.floor(at / 60_000) * 60_000);
    assert.equal(read.backlog, backlog, "the tick's reading, on its minute");
    for (const bad of ["?minutes=0", "?minutes=1441", "?minutes=x", "?window=5"]) {
      const refused = await api.call("GET", "/v1/admin/history", { query: bad });
      assert.equal(refused.status, 422, bad);
    }
  });

  test("stats match D1: counts, backlog, the last hour's outcomes and percentiles", async () => {
    const res = await api.call("GET", "/v1/admin/stats");
    assert.equal(res.status, 200);
    const d = res.body.families.default;
    for (const s of ["queued", "succeeded", "dead", "cancelled", "skipped"]) {
      assert.equal(d.counts[s], await p.count("SELECT COUNT(*) FROM jobs WHERE family = 'default' AND status = ?", s), s);
    }
    assert.equal(d.backlog, await p.count("SELECT COUNT(*) FROM jobs WHERE family = 'default' AND status IN ('queued','retrying','scheduled')"));
    assert.ok(d.oldest_waiting_secs >= 0);
    const runs = await attempts("'succeeded', 'retrying', 'dead', 'skipped'");
    assert.equal(d.last_hour.finished, runs);
    assert.equal(d.last_hour.succeeded, await attempts("'succeeded'"));
    assert.ok(d.last_hour.succeeded > 0);
    assert.equal(d.last_hour.dead, await attempts("'dead'"));
    assert.ok(d.last_hour.p50_ms <= d.last_hour.p95_ms);
    // One value per attempt of the family: `failed` of each run record, the `at`th of each
    // success as its batch's row keeps it ([type, duration_ms, wait_ms, latency_ms]).
    const perAttempt = (failed, at) =>
      `SELECT ${failed} AS v FROM job_runs r JOIN jobs j ON j.id = r.job_id WHERE j.family = 'default' UNION ALL ` +
      `SELECT s.value ->> ${at} FROM success_batches b, json_each(b.successes) s WHERE b.family = 'default'`;
    const longest = await p.count(`SELECT MAX(v) FROM (${perAttempt("r.duration_ms", 1)})`);
    assert.ok(d.last_hour.p95_ms <= longest, "a percentile is never past the longest attempt");
    const waits = perAttempt("IIF(r.run = 1, r.started_at - j.created_at, NULL)", 2);
    assert.equal(d.last_hour.avg_wait_ms, await p.count(`SELECT ROUND(AVG(v)) FROM (${waits})`), "the first runs' average wait");
    assert.equal(res.body.totals.last_hour.finished, runs);
    assert.equal(res.body.totals.counts.queued, await p.count("SELECT COUNT(*) FROM jobs WHERE status = 'queued'"));
    const failures = await api.call("GET", "/v1/admin/failures", { query: "?limit=5" });
    assert.ok(failures.body.failures.length > 0);
    assert.ok(failures.body.failures.every((f) => f.outcome !== "succeeded" && f.error.class));
    assert.equal((await api.call("GET", "/v1/admin/failures", { query: "?limit=abc" })).status, 422);
  });

  test("pauses: bad targets are 422, resume of nothing is 404, list shows what is paused", async () => {
    for (const [json, field] of [[{ kind: "queue", name: "low" }, "kind"], [{ kind: "type", name: "nope" }, "name"], [{ kind: "family", name: "low", reason: 3 }, "reason"]]) {
      const res = await api.call("POST", "/v1/admin/pauses", { json });
      assert.deepEqual([res.status, res.body.error.field], [422, field]);
    }
    const created = await api.call("POST", "/v1/admin/pauses", { json: { kind: "family", name: "low", reason: "maintenance" } });
    assert.equal(created.status, 201);
    assert.equal((await api.call("POST", "/v1/admin/pauses", { json: { kind: "family", name: "low" } })).status, 200);
    const list = await api.call("GET", "/v1/admin/pauses");
    assert.deepEqual(list.body.pauses.map((x) => [x.kind, x.name, x.reason]), [["family", "low", "maintenance"]]);
    assert.equal((await api.call("GET", "/v1/admin/stats")).body.families.low.paused, true);
    assert.equal((await api.call("DELETE", "/v1/admin/pauses/{kind}/{name}", { params: { kind: "family", name: "low" } })).status, 200);
    const gone = await api.call("DELETE", "/v1/admin/pauses/{kind}/{name}", { params: { kind: "family", name: "low" } });
    assert.equal(gone.status, 404);
    assert.equal((await api.call("DELETE", "/v1/admin/pauses/{kind}/{name}", { params: { kind: "colour", name: "low" } })).status, 422);
  });

  test("the audit log names who did what, when, and to how many", async () => {
    const res = await api.call("GET", "/v1/admin/audit", { query: "?limit=200" });
    const actions = res.body.entries.map((e) => e.action);
    for (const a of ["job.set_status", "job.priority", "job.boost", "job.cancel", "job.retry", "jobs.retry", "jobs.cancel", "jobs.set_status",
      "dead_letter.replay", "dead_letters.replay", "pause", "resume"]) {
      assert.ok(actions.includes(a), `${a} is audited`);
    }
    const bulk = res.body.entries.find((e) => e.action === "dead_letters.replay" && e.target.filter?.status);
    assert.equal(bulk.affected, 1, "the filtered replay moved the one dead http job left");
    assert.deepEqual(bulk.target.filter, { type: "http", status: ["queued", "dead"] });
    assert.ok(res.body.entries.every((e) => e.actor === res.body.entries[0].actor && !e.actor.includes(TOKENS.admin)));
    assert.equal(await p.count("SELECT COUNT(*) FROM audit_log WHERE action = 'pause'"), 1, "a no-op re-pause is not logged");
    const page = await api.call("GET", "/v1/admin/audit", { query: "?limit=1" });
    const next = await api.call("GET", "/v1/admin/audit", { query: `?limit=1&cursor=${page.body.next_cursor}` });
    assert.ok(next.body.entries[0].id < page.body.entries[0].id);
    assert.equal((await api.call("GET", "/v1/admin/audit", { query: "?who=me" })).status, 422);
  });

  test("RSS sources answer as documented (tests/rss.test.mjs tests what they do)", async () => {
    const added = await api.call("POST", "/v1/admin/rss-sources", { json: { name: "Docs", url: "https://feeds.example/docs.xml" } });
    assert.equal(added.status, 201);
    assert.equal((await api.call("POST", "/v1/admin/rss-sources", { json: { name: "Again", url: "https://feeds.example/docs.xml" } })).status, 409);
    assert.ok((await api.call("GET", "/v1/admin/rss-sources")).body.sources.some((s) => s.id === added.body.id));
    const off = await api.call("PATCH", "/v1/admin/rss-sources/{id}", { params: { id: added.body.id }, json: { is_active: false } });
    assert.deepEqual([off.status, off.body.is_active], [200, false]);
    assert.equal((await api.call("PATCH", "/v1/admin/rss-sources/{id}", { params: { id: "nope" }, json: { is_active: true } })).status, 404);
    assert.equal((await api.call("PATCH", "/v1/admin/rss-sources/{id}", { params: { id: added.body.id }, json: { error_count: 3 } })).status, 422);
  });

  test("OpenAPI 3.1 documents every route, and every admin operation was exercised against it", async () => {
    assert.equal(api.doc.openapi, "3.1.0");
    const res = await p.request("GET", "/openapi.json", { token: null });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /application\/json/);
    const documented = Object.entries(api.doc.paths).flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
    // Schedules, budgets and types have their own test files, which check their own coverage
    // (schedules.test.mjs, ai_tagging.test.mjs, job_types.test.mjs).
    const own = ["schedules", "budgets", "/types"];
    const missing = documented.filter((op) => op.includes("/v1/admin/") && !own.some((o) => op.includes(o)) && !api.covered.has(op));
    assert.deepEqual(missing, []);
    // The public routes, checked once here.
    const enq = await p.enqueue({ type: "noop", payload: {} });
    api.check("POST", "/v1/jobs", enq);
    api.check("GET", "/v1/jobs/{id}", await p.getJob(enq.body.id));
    api.check("POST", "/v1/jobs/batch", await p.request("POST", "/v1/jobs/batch", { json: { jobs: [{ type: "noop", payload: {} }] } }));
    api.check("POST", "/v1/jobs", await p.enqueue({ type: "nope", payload: {} }));
    api.check("GET", "/healthz", await p.request("GET", "/healthz", { token: null }));
    // The schedules routes, documented here too.
    const schedules = await p.request("GET", "/v1/admin/schedules", { token: TOKENS.admin });
    api.check("GET", "/v1/admin/schedules", schedules);
    const first = schedules.body.schedules[0];
    api.check("GET", "/v1/admin/schedules/{id}", await p.request("GET", `/v1/admin/schedules/${first.id}`, { token: TOKENS.admin }));
  });
});

describe("operator moves of a job whose attempt is in flight or backing off", () => {
  const f = operatorPlatform();
  const { enqueue, deadHttpJob, status } = f;
  let p, api;
  before(() => ({ p, api } = f));

  test("retry of a retrying job runs it now, not after its backoff; the message its backoff held then runs nothing", async () => {
    app.script("/backoff", [{ status: 503 }, { status: 200, body: { ok: 1 } }]);
    const job = await enqueue({ type: "http", payload: { url: app.url("/backoff") }, retry: { policy: "fixed", table: [3600] } });
    const first = await p.deliver("jobs-default", [jobMessage(job.id, job.type)]);
    assert.equal(first.retryMessages[0]?.delaySeconds, 3600, "an hour's backoff");
    assert.equal((await status(job.id)).status, "retrying");
    const res = await api.call("POST", "/v1/admin/jobs/{id}/retry", { params: job });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual([res.body.job.status, res.body.job.attempts], ["queued", 0]);
    await p.deliver("jobs-default", [jobMessage(job.id, job.type)]);
    // The hour-late message of the backoff: the job is finished, so it is acked and runs nothing.
    const late = await p.deliver("jobs-default", [{ id: "late", attempts: 2, ...jobMessage(job.id, job.type) }]);
    assert.deepEqual([late.retryMessages.length, late.explicitAcks.length], [0, 1]);
    const after = await status(job.id);
    assert.deepEqual([after.status, after.attempts], ["succeeded", 1]);
    assert.deepEqual(after.runs.map((r) => [r.run, r.outcome]), [[1, "retrying"], [2, "succeeded"]]);
    assert.equal(app.requests("/backoff").length, 2, "the target was called once per attempt");
  });

  test("retry of a job delayed at enqueue makes it due now; a queued job already due is a 409; the delayed message then runs nothing", async () => {
    app.script("/later", [{ status: 200, body: { ok: 1 } }]);
    const later = () => enqueue({ type: "http", payload: { url: app.url("/later") }, delay_seconds: 3600 });
    const delayed = await later();
    const due = await enqueue({ type: "http", payload: { url: app.url("/later") } });
    const view = async (job) => (await api.call("GET", "/v1/admin/jobs/{id}", { params: job })).body;
    assert.deepEqual([(await view(delayed)).status, (await view(delayed)).actions.includes("retry")], ["queued", true]);
    assert.equal((await view(due)).actions.includes("retry"), false, "a due job has nothing to hurry");

    const refused = await api.call("POST", "/v1/admin/jobs/{id}/retry", { params: due });
    assert.equal(refused.status, 409, JSON.stringify(refused.body));
    assert.equal(refused.body.error.code, "already_due");
    assert.match(refused.body.error.message, /queued and due/);
    const before = Date.now();
    const res = await api.call("POST", "/v1/admin/jobs/{id}/retry", { params: delayed });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.equal(res.body.job.status, "queued");
    assert.ok(Date.parse((await status(delayed.id)).run_at) <= Date.now() && Date.parse((await status(delayed.id)).run_at) >= before - 1000, "due now");
    await p.deliver("jobs-default", [jobMessage(delayed.id, delayed.type)]);
    assert.equal((await status(delayed.id)).status, "succeeded");
    // The message sent with the hour's delay at enqueue: the job is finished, so it runs nothing.
    const late = await p.deliver("jobs-default", [{ id: "delayed-late", ...jobMessage(delayed.id, delayed.type) }]);
    assert.deepEqual([late.retryMessages.length, late.explicitAcks.length], [0, 1]);
    assert.equal((await status(delayed.id)).runs.length, 1);

    // In bulk, likewise: of a delayed job and a due one, only the delayed one moves.
    const delayed2 = await later();
    const dry = await api.call("POST", "/v1/admin/jobs/retry", { json: { ids: [delayed2.id, due.id], dry_run: true } });
    assert.deepEqual(dry.body, { dry_run: true, count: 1, conflicts: 0 });
    const bulk = await api.call("POST", "/v1/admin/jobs/retry", { json: { ids: [delayed2.id, due.id] } });
    assert.deepEqual([bulk.body.count, bulk.body.ids], [1, [delayed2.id]]);
    assert.ok(Date.parse((await status(delayed2.id)).run_at) <= Date.now());
  });

  test("bulk retry of a retrying job and a dead one with its dedup_key: the live one moves, the dead one is its conflict", async () => {
    const dead = await deadHttpJob({ dedup_key: "retry-both" });
    app.script("/backoff-both", [{ status: 503 }]);
    const live = await enqueue({ type: "http", payload: { url: app.url("/backoff-both") }, dedup_key: "retry-both", retry: { policy: "fixed", table: [3600] } });
    await p.deliver("jobs-default", [jobMessage(live.id, live.type)]);
    assert.equal((await status(live.id)).status, "retrying");
    const res = await api.call("POST", "/v1/admin/jobs/retry", { json: { ids: [dead.id, live.id] } });
    assert.equal(res.status, 200, JSON.stringify(res.body));
    assert.deepEqual(
      [res.body.count, res.body.ids, res.body.conflicts.map((c) => [c.id, c.held_by])],
      [1, [live.id], [[dead.id, live.id]]],
      "the older dead job does not hold the live one back",
    );
  });


  test("skipping a running job, one or in bulk, ends its attempt's run record then; its late outcome writes nothing", async () => {
    for (const [route, json] of [
      ["/v1/admin/jobs/{id}/status", () => ({ status: "skipped" })],
      ["/v1/admin/jobs/status", (job) => ({ status: "skipped", ids: [job.id] })],
    ]) {
      const path = `/slow-${route.length}`;
      app.script(path, [{ status: 200, body: { done: true }, delayMs: 1500 }]);
      const job = await enqueue({ type: "http", payload: { url: app.url(path) } });
      const delivery = p.deliver("jobs-default", [jobMessage(job.id, job.type)]);
      await p.waitFor(async () => (await status(job.id)).status === "running");
      const skipped = await api.call("POST", route, { params: job, json: json(job) });
      assert.equal(skipped.status, 200, JSON.stringify(skipped.body));
      await delivery;
      const shown = await status(job.id);
      assert.deepEqual([shown.status, shown.result], ["skipped", null], "the late success changes nothing");
      assert.equal(shown.runs.length, 1, JSON.stringify(shown.runs));
      const [run] = shown.runs;
      assert.deepEqual([run.run, run.outcome, run.error?.class], [1, "skipped", "operator"]);
      assert.equal(typeof run.lease_until, "string", "the lease the attempt held");
      assert.match(run.error.message, /skipped the job while this attempt ran/);
      assert.ok(run.duration_ms >= 0 && run.duration_ms < 1500, `ended at the skip: ${run.duration_ms} ms`);
    }
  });
});

describe("pause holds jobs without spending attempts; resume runs them (real queues)", () => {
  let p, api;
  before(async () => {
    p = await startPlatform();
    api = await adminApi(p);
  });
  after(() => p.dispose());

  test("a paused type is held, not run; resume releases it and it runs", async () => {
    await api.call("POST", "/v1/admin/pauses", { json: { kind: "type", name: "noop", reason: "test" } });
    const held = [];
    for (let i = 0; i < 3; i++) held.push((await p.enqueue({ type: "noop", payload: {} })).body.id);
    const other = (await p.enqueue({ type: "http", payload: { url: app.url("/fine") } })).body.id;
    await p.waitForStatus(other, "succeeded");
    await p.waitFor(async () => (await p.count("SELECT COUNT(*) FROM jobs WHERE type = 'noop' AND held_at IS NOT NULL")) === 3, { what: "held noop jobs" });
    for (const id of held) {
      const job = (await p.getJob(id)).body;
      assert.deepEqual([job.status, job.held, job.attempts, job.runs.length], ["queued", true, 0, 0]);
    }
    const viewed = await api.call("GET", "/v1/admin/jobs/{id}", { params: { id: held[0] } });
    assert.equal(viewed.body.held, true, "the operator's job view says it is held, as its list does");
    const pauses = await api.call("GET", "/v1/admin/pauses");
    assert.equal(pauses.body.pauses[0].held, 3);
    assert.equal((await api.call("GET", "/v1/admin/stats")).body.families.default.held, 3);

    const resumed = await api.call("DELETE", "/v1/admin/pauses/{kind}/{name}", { params: { kind: "type", name: "noop" } });
    assert.deepEqual([resumed.status, resumed.body.released], [200, 3]);
    for (const id of held) {
      const job = await p.waitForStatus(id, "succeeded");
      assert.equal(job.attempts, 1, "the held time spent no attempt");
      assert.equal(job.runs.length, 1);
    }
    const audit = (await api.call("GET", "/v1/admin/audit")).body.entries.find((e) => e.action === "resume");
    assert.equal(audit.affected, 3);
  });
});
