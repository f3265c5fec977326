// Recurring jobs. The schedules API on the built producer, and the sweep's periodic
// enqueuer driven through the producer's real `scheduled` handler at chosen times.
import { after, before, describe, test } from "node:test";
import { createHash } from "node:crypto";
import assert from "node:assert/strict";
import { startPlatform, TOKENS } from "./support/platform.mjs";
import { tick, MINUTE, HOUR } from "./support/sweep.mjs";
import { adminApi } from "./support/admin_api.mjs";

const admin = { token: TOKENS.admin };

// One platform for both suites. The API's tests leave the migration's schedules unplanned, as the
// migration wrote them (a PUT of an unchanged expression keeps the plan), which is what the
// enqueuer's first test starts from.
let p;
let checked;
before(async () => {
  p = await startPlatform();
  checked = await adminApi(p);
});
after(() => p.dispose());

/** A schedules route (`path` after /v1/admin/schedules), its answer checked against /openapi.json. */
async function api(method, path, json, token = TOKENS.admin) {
  const res = await p.request(method, `/v1/admin/schedules${path}`, { token, json });
  const template = path.split("?")[0].replace(/^\/[^/]+/, "/{id}");
  return checked.check(method, `/v1/admin/schedules${template}`, res);
}

describe("schedules API", () => {

  test("the migration's cadences are installed, valid, and listed page by page", async () => {
    const names = [];
    let cursor = "";
    for (let pages = 0; pages < 10; pages++) {
      const res = await api("GET", `?limit=5${cursor}`);
      assert.equal(res.status, 200);
      assert.ok(res.body.schedules.length <= 5);
      names.push(...res.body.schedules.map((s) => s.name));
      if (!res.body.next_cursor) break;
      cursor = `&cursor=${res.body.next_cursor}`;
    }
    assert.equal(names.length, 14);
    assert.equal(new Set(names).size, 14);
    for (const name of ["rss_feed_refresh", "weather_forecast", "weather_alerts", "inbound_email", "ai_tagging"]) {
      assert.ok(names.includes(name), name);
    }
    const market = await api("GET", "/stock_refresh_market_hours");
    assert.equal(market.status, 200);
    assert.equal(market.body.type, "stock_refresh");
    assert.match(market.body.cron_expression, /^CRON_TZ=America\/New_York 30-55\/5 9 \* \* 1-5; \*\/5 10-15/);
    assert.equal(market.body.next_run_at, null, "planned by the first sweep");
    // Each default passes the same validation as a client's write: PUT it back unchanged.
    const all = (await api("GET", "?limit=100")).body.schedules;
    for (const s of all) {
      const { name, description, type, payload, cron_expression, enabled, priority, max_attempts, dedup_key, created_by } = s;
      const put = await api("PUT", `/${s.id}`, { name, description, type, payload, cron_expression, enabled, priority, max_attempts, dedup_key, created_by });
      assert.equal(put.status, 200, `${name}: ${JSON.stringify(put.body)}`);
    }
  });

  test("a bad expression or job is a 422 naming the problem, and nothing is written", async () => {
    const before = await p.count("SELECT count(*) FROM schedules");
    const cases = [
      [{ cron_expression: "61 * * * *" }, "invalid_cron", "cron_expression", /61/],
      [{ cron_expression: "* * * *" }, "invalid_cron", "cron_expression", /4 fields/],
      [{ cron_expression: "CRON_TZ=Mars/Base 0 * * * *" }, "invalid_cron", "cron_expression", /unknown time zone/],
      [{ cron_expression: "@every 10s" }, "invalid_cron", "cron_expression", /shorter than 1m/],
      [{ cron_expression: "0 0 30 2 *" }, "invalid_cron", "cron_expression", /never/],
      [{ type: "nope" }, "unknown_type", "type", /nope/],
      [{ type: "http", payload: { url: "ftp://x" } }, "invalid_payload", "payload.url", /./],
      [{ priority: 101 }, "out_of_range", "priority", /0 and 100/],
      [{ surprise: 1 }, "unknown_field", "surprise", /./],
    ];
    for (const [override, code, field, message] of cases) {
      const res = await api("POST", "", { name: "bad", type: "noop", cron_expression: "@hourly", ...override });
      assert.equal(res.status, 422, JSON.stringify(override));
      assert.equal(res.body.error.code, code, JSON.stringify(res.body));
      assert.equal(res.body.error.field, field);
      assert.match(res.body.error.message, message);
    }
    assert.equal(await p.count("SELECT count(*) FROM schedules"), before);
    const forbidden = await api("GET", "", undefined, TOKENS.enqueue);
    assert.equal(forbidden.status, 403);
  });

  test("create, get, patch, put, toggle, delete", async () => {
    const created = await api("POST", "", {
      name: "nightly_noop",
      description: "test",
      type: "noop",
      cron_expression: "CRON_TZ=Europe/Berlin 0 3 * * *",
      priority: 20,
      max_attempts: 2,
      created_by: "ops@example.com",
    });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    const s = created.body;
    assert.equal(s.enabled, true);
    assert.deepEqual([s.priority, s.max_attempts, s.created_by], [20, 2, "ops@example.com"]);
    const next = new Date(s.next_run_at);
    assert.ok(next > Date.now() && next - Date.now() <= 25 * HOUR, s.next_run_at);
    assert.equal(next.getUTCMinutes(), 0);
    assert.ok([1, 2].includes(next.getUTCHours()), "03:00 Berlin is 01:00 or 02:00 UTC");

    assert.equal((await api("POST", "", { name: "nightly_noop", type: "noop", cron_expression: "@daily" })).status, 409);

    const patched = await api("PATCH", `/${s.id}`, { priority: 30, cron_expression: "@every 90m" });
    assert.equal(patched.status, 200, JSON.stringify(patched.body));
    assert.equal(patched.body.priority, 30);
    assert.equal(patched.body.description, "test", "PATCH keeps the other fields");
    const every = new Date(patched.body.next_run_at) - Date.now();
    assert.ok(every > 89 * MINUTE && every <= 90 * MINUTE, "re-planned from now");
    assert.equal((await api("PATCH", `/${s.id}`, { cron_expression: "bad" })).body.error.field, "cron_expression");

    const put = await api("PUT", `/${s.id}`, { name: "nightly_noop", type: "noop", cron_expression: "@every 90m" });
    assert.equal(put.status, 200);
    assert.deepEqual([put.body.priority, put.body.description, put.body.max_attempts], [0, null, null], "PUT replaces");
    assert.equal(put.body.next_run_at, patched.body.next_run_at, "same expression: same plan");

    const off = await api("POST", `/${s.id}/toggle`);
    assert.equal(off.status, 200);
    assert.equal(off.body.enabled, false);
    assert.equal(off.body.next_run_at, null, "a disabled schedule has no next run");
    const edited = await api("PATCH", `/${s.id}`, { cron_expression: "7 3 * * *" });
    assert.equal(edited.body.next_run_at, null, "nor once its expression changes");
    const on = await api("POST", `/nightly_noop/toggle`, { enabled: true });
    assert.equal(on.body.enabled, true, "by name, with an explicit value");
    assert.match(on.body.next_run_at, /T03:07:00/, "planned from the expression it has now");
    assert.equal((await api("POST", `/${s.id}/toggle`, { enabled: "yes" })).status, 422);
    assert.equal((await api("POST", `/${s.id}/toggle`, {})).body.enabled, false, "an empty body flips too");

    assert.equal((await api("GET", `/${s.id}`)).body.name, "nightly_noop");
    assert.equal((await api("DELETE", `/${s.id}`)).status, 204);
    assert.equal((await api("GET", `/${s.id}`)).status, 404);
    assert.equal((await api("DELETE", `/${s.id}`)).status, 404);

    // Every change is in the audit log, once, naming who made it; refused calls are not.
    const audit = await p.db.prepare("SELECT action, actor, target FROM audit_log WHERE action LIKE 'schedule.%' ORDER BY id").all();
    const ofThis = audit.results.filter((r) => {
      const target = JSON.parse(r.target);
      return target.name === "nightly_noop" || String(target.id) === String(s.id);
    });
    assert.deepEqual(
      ofThis.map((r) => r.action),
      ["schedule.create", "schedule.update", "schedule.update", "schedule.toggle", "schedule.update", "schedule.toggle", "schedule.toggle", "schedule.delete"],
    );
    assert.ok(ofThis.every((r) => /^token:[0-9a-f]{12}$/.test(r.actor)), "the admin token's fingerprint");
  });
});

test("every documented schedules operation was exercised against the OpenAPI document", () => {
  const { documented, missing } = checked.coverage("/v1/admin/schedules");
  assert.equal(documented.length, 7);
  assert.deepEqual(missing, []);
});

describe("the periodic enqueuer", () => {
  const runsOf = (id) => p.count("SELECT count(*) FROM schedule_runs WHERE schedule_id = ?", id);
  const jobsOf = (id) =>
    p.count("SELECT count(*) FROM jobs WHERE id IN (SELECT job_id FROM schedule_runs WHERE schedule_id = ?)", id);

  test("the migration's schedules: app-delivered ones start disabled; planned by the first tick, then run", async () => {
    const get = async (name) => (await api("GET", `/${name}`)).body;
    assert.equal((await get("rss_feed_refresh")).enabled, true, "built-in handler: on");
    assert.equal((await get("inbound_email")).enabled, false, "delivered to an app: off until configured");
    // As a deployment that ships them on would have them: enabled and never yet planned.
    await p.db.prepare("UPDATE schedules SET enabled = 1 WHERE name IN ('inbound_email', 'stock_refresh_market_hours')").run();
    const t0 = Date.UTC(2030, 0, 7, 14, 2); // a Monday, 09:02 in New York
    await tick(p, t0);
    const market = (await api("GET", "/stock_refresh_market_hours")).body;
    assert.equal(market.next_run_at, new Date(Date.UTC(2030, 0, 7, 14, 30)).toISOString(), "09:30 New York");
    const inbound = (await api("GET", "/inbound_email")).body;
    assert.equal(inbound.next_run_at, new Date(t0 + MINUTE).toISOString());
    assert.equal(await runsOf(inbound.id), 0, "planning does not run it");
    await tick(p, t0 + MINUTE);
    assert.equal(await runsOf(inbound.id), 1);
  });

  test("the ai_tagging schedule enqueues only while untagged feed items exist, with their count", async () => {
    const enabled = await api("PATCH", "/ai_tagging", { enabled: true });
    assert.equal(enabled.status, 200);
    const aiJobs = () => p.count("SELECT count(*) FROM jobs WHERE type = 'ai_tagging'");
    const schedule = async () => (await api("GET", "/ai_tagging")).body;
    const t0 = Date.UTC(2031, 0, 1, 0, 30);
    await tick(p, t0); // brings it to 01:00 (a run it was due for now fires, with nothing to tag)
    const { id, next_run_at } = await schedule();
    assert.equal(next_run_at, new Date(t0 + 30 * MINUTE).toISOString());
    const runs = await runsOf(id);
    await tick(p, t0 + 30 * MINUTE);
    assert.equal(await runsOf(id), runs + 1, "due: its run is recorded...");
    assert.equal((await schedule()).next_run_at, new Date(t0 + 90 * MINUTE).toISOString(), "...and the schedule advances");
    assert.equal(await aiJobs(), 0, "nothing to tag: no job");
    const idle = (await schedule()).recent_runs[0];
    assert.deepEqual([idle.due_at, idle.job_id, idle.skipped], [new Date(t0 + 30 * MINUTE).toISOString(), null, "no_untagged_items"]);

    await p.db.prepare("INSERT INTO rss_sources (id, name, url, created_at, updated_at) VALUES ('sched-src', 'News', 'https://n.io/feed', 0, 0)").run();
    await p.db.batch(
      [1, 2, 3].map((i) =>
        p.db
          .prepare("INSERT INTO feed_items (source_id, item_guid, title, url, content_hash, created_at) VALUES ('sched-src', ?, 't', 'https://n.io/x', 'h', 0)")
          .bind(`sched-${i}`),
      ),
    );
    await tick(p, t0 + 90 * MINUTE);
    assert.equal(await aiJobs(), 1);
    const ran = (await schedule()).recent_runs[0];
    assert.equal(ran.skipped, null);
    assert.match(ran.job_id, /^[0-9A-HJKMNP-TV-Z]{26}$/);
    const job = await p.db.prepare("SELECT payload FROM jobs WHERE type = 'ai_tagging'").first();
    assert.deepEqual(JSON.parse(job.payload), { trigger: "scheduled", untagged_count: 3 });
    await p.db.prepare("DELETE FROM rss_sources WHERE id = 'sched-src'").run();
  });

  test("fires on its ticks, once per due time, and catches up once after a gap", async () => {
    const created = await p.request("POST", "/v1/admin/schedules", {
      ...admin,
      json: { name: "every_ten", type: "noop", payload: { fail_times: 0 }, cron_expression: "*/10 * * * *", priority: 7 },
    });
    assert.equal(created.status, 201);
    const { id } = created.body;
    const due = Date.parse(created.body.next_run_at);
    assert.equal(due % (10 * MINUTE), 0);

    await tick(p, due - MINUTE);
    assert.equal(await runsOf(id), 0, "not before it is due");

    await tick(p, due);
    assert.equal(await runsOf(id), 1);
    assert.equal(await jobsOf(id), 1);
    const job = await p.db
      .prepare("SELECT * FROM jobs WHERE id = (SELECT job_id FROM schedule_runs WHERE schedule_id = ?)")
      .bind(id)
      .first();
    assert.deepEqual([job.type, job.family, job.priority, job.payload], ["noop", "default", 7, '{"fail_times":0}']);
    assert.ok(job.sent_at, "sent to its queue");

    await tick(p, due); // the same tick again (a retried or overlapping cron run)
    await tick(p, due + 30_000);
    await tick(p, due + MINUTE);
    assert.equal(await runsOf(id), 1, "never twice for one due time");
    assert.equal(await jobsOf(id), 1);

    await tick(p, due + 10 * MINUTE);
    assert.equal(await runsOf(id), 2);

    // Down from due+20m until due+3h15m: one run now, the 17 it missed are recorded.
    await tick(p, due + 3 * HOUR + 15 * MINUTE);
    assert.equal(await runsOf(id), 3);
    const s = (await api("GET", `/${id}`)).body;
    assert.equal(s.missed_runs, 17);
    assert.equal(s.recent_runs.length, 3);
    assert.equal(s.recent_runs[0].missed, 17);
    assert.equal(s.recent_runs[0].due_at, new Date(due + 20 * MINUTE).toISOString());
    assert.equal(s.next_run_at, new Date(due + 3 * HOUR + 20 * MINUTE).toISOString());
    assert.equal(s.last_run_at, new Date(due + 3 * HOUR + 15 * MINUTE).toISOString());

    // Disabled: nothing fires; re-enabled: planned from now, the disabled time not caught up.
    await api("POST", `/${id}/toggle`, { enabled: false });
    await tick(p, due + 4 * HOUR);
    assert.equal(await runsOf(id), 3);
  });
  test("a run while a job holds the schedule's dedup_key enqueues nothing and says why", async () => {
    const created = await api("POST", "", { name: "deduped", type: "noop", cron_expression: "*/10 * * * *", dedup_key: "one-at-a-time" });
    assert.equal(created.status, 201);
    const { id } = created.body;
    const due = Date.parse(created.body.next_run_at);
    // A live job with the key: due in an hour, so it stays queued.
    const holder = await p.enqueue({ type: "noop", dedup_key: "one-at-a-time", delay_seconds: 3600 });
    assert.equal(holder.status, 202);
    await tick(p, due);
    const run = (await api("GET", `/${id}`)).body.recent_runs[0];
    assert.deepEqual([run.job_id, run.skipped], [null, "dedup_key_live"]);
    assert.equal(await jobsOf(id), 0);

    const cancelled = await p.request("POST", `/v1/admin/jobs/${holder.body.id}/cancel`, admin);
    assert.equal(cancelled.status, 200);
    await tick(p, due + 10 * MINUTE);
    const fired = (await api("GET", `/${id}`)).body.recent_runs[0];
    assert.equal(fired.skipped, null, "the key free again: its job is enqueued");
    assert.equal(await jobsOf(id), 1);
  });

  test("a schedule run's job id is random, not computable from the schedule and due time; one job per due time still", async () => {
    // What ids used to be: a ULID of the due time and the SHA-256 of "schedule:<id>:<due>".
    const CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    const formerId = (scheduleId, dueMs) => {
      const digest = createHash("sha256").update(`schedule:${scheduleId}:${dueMs}`).digest();
      let random = 0n;
      for (let i = 15; i >= 0; i--) random = (random << 8n) | BigInt(digest[i]);
      const value = (BigInt(dueMs) << 80n) | (random & ((1n << 80n) - 1n));
      return Array.from({ length: 26 }, (_, i) => CROCKFORD[Number((value >> BigInt(5 * (25 - i))) & 31n)]).join("");
    };
    const created = await p.request("POST", "/v1/admin/schedules", {
      ...admin,
      json: { name: "unguessable", type: "noop", cron_expression: "*/10 * * * *", priority: 37 },
    });
    assert.equal(created.status, 201);
    const { id } = created.body;
    const due = Date.parse(created.body.next_run_at);
    const ours = () => p.count("SELECT count(*) FROM jobs WHERE type = 'noop' AND priority = 37");

    // Two overlapping ticks for the same fire time.
    await Promise.all([tick(p, due), tick(p, due)]);
    assert.equal(await ours(), 1);
    const run = await p.db.prepare("SELECT job_id FROM schedule_runs WHERE schedule_id = ? AND due_at = ?").bind(id, due).first();
    assert.match(run.job_id, /^[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.notEqual(run.job_id, formerId(id, due), "not the computable id");
    assert.equal(await p.count("SELECT count(*) FROM jobs WHERE id = ?", formerId(id, due)), 0);
    const read = await p.getJob(formerId(id, due));
    assert.equal(read.status, 404, "an enqueue token cannot read it by computing its id");

    // A tick that read the schedule before the first one advanced it (its next_run_at put back
    // to the same due time) still makes no second job: the run record is the key.
    await p.db.prepare("UPDATE schedules SET next_run_at = ? WHERE id = ?").bind(due, id).run();
    await tick(p, due + 1000);
    assert.equal(await ours(), 1, "one job per (schedule, due time)");
    assert.equal(await runsOf(id), 1);
  });
});
