// What a client chooses per job at enqueue (docs/http-api.md "HTTP API (producer)"): its own
// retry policy, an expiry,
// and (from its token) who enqueued it and which job types it may use. The built producer and consumer on local workerd with
// real D1; messages are delivered by the test, so each decision is one batch it can read.
import { after, before, describe, test } from "node:test";
import { createHash } from "node:crypto";
import assert from "node:assert/strict";
import { jobMessage, logCollector, startPlatform } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";
import { tick } from "./support/sweep.mjs";

// Named and unnamed entries, as an operator writes them in the secrets.
const WEB = "tok-web-7f3a";
const ANON = "tok-anon-91c2";
const OPS = "tok-ops-5d0e";
const SITE = "tok-site-4b8e";
const producerBindings = {
  ENQUEUE_TOKENS: `webapp:${WEB},${ANON},site:${SITE}`,
  ADMIN_TOKENS: `ops:${OPS}`,
  // As a TOML table under [vars] arrives: an object, not a string.
  ENQUEUE_TOKEN_TYPES: { site: ["noop", "http"] },
};
const fingerprint = (token) => `token:${createHash("sha256").update(token).digest("hex").slice(0, 12)}`;

let app;
let p;
const logs = logCollector();
before(async () => {
  app = await startAppServer();
  p = await startPlatform({ manualDelivery: true, producerBindings, onLog: logs.onLog });
});
after(async () => {
  await p.dispose();
  await app.close();
});

const enqueue = (json, token = WEB) => p.request("POST", "/v1/jobs", { json, token });
const getJob = async (id) => (await p.request("GET", `/v1/jobs/${id}`, { token: OPS })).body;
const admin = (method, path, json) => p.request(method, path, { json, token: OPS });
const deliver = (job, attempts = 1) => p.deliver("jobs-default", [{ id: `m-${job.id}-${attempts}`, attempts, ...jobMessage(job.id, job.type ?? "http") }]);
/** Makes a retrying job due now, so the next delivery runs it instead of waiting out its delay. */
const dueNow = (id) => p.db.prepare("UPDATE jobs SET run_at = 0 WHERE id = ?").bind(id).run();

describe("a job's own retry policy", () => {
  test("a fixed table sets each retry's delay; the quick preset waits 2, 4 s and gives up after 3", async () => {
    app.script("/opt-fixed", [{ status: 500 }]);
    const fixed = await enqueue({ type: "http", payload: { url: app.url("/opt-fixed") }, retry: { policy: "fixed", table: [5, 7] } });
    assert.equal(fixed.status, 202, JSON.stringify(fixed.body));
    const delays = [];
    for (const attempt of [1, 2, 3]) {
      const res = await deliver(fixed.body, attempt);
      delays.push(res.retryMessages[0]?.delaySeconds);
      await dueNow(fixed.body.id);
    }
    assert.deepEqual(delays, [5, 7, 7], "the table, then its last entry");
    const shown = await getJob(fixed.body.id);
    assert.deepEqual(shown.retry, { policy: "fixed", table: [5, 7] });
    assert.equal(shown.max_attempts, 5, "the type's attempts");

    app.script("/opt-quick", [{ status: 503 }]);
    const quick = await enqueue({ type: "http", payload: { url: app.url("/opt-quick") }, retry: "quick" });
    assert.equal((await getJob(quick.body.id)).max_attempts, 3, "the preset brings its 3 attempts");
    const quickDelays = [];
    for (const attempt of [1, 2, 3]) {
      const res = await deliver(quick.body, attempt);
      quickDelays.push(res.retryMessages[0]?.delaySeconds);
      await dueNow(quick.body.id);
    }
    assert.deepEqual(quickDelays, [2, 4, undefined]);
    const dead = await getJob(quick.body.id);
    assert.equal(dead.status, "dead");
    assert.match(dead.error.message, /gave up after 3 attempts/);
    assert.deepEqual(dead.retry, { policy: "exponential", base_secs: 2, jitter_min: 1, jitter_max: 1 });
    assert.equal(app.requests("/opt-quick").length, 3);

    const typeDefault = await enqueue({ type: "http", payload: { url: app.url("/opt-fixed") } });
    assert.equal((await getJob(typeDefault.body.id)).retry, null, "no retry given: the type's policy");
  });

  test("a chain step carries its own policy; bad input is a 422 naming retry.<field>, and writes nothing", async () => {
    app.script("/opt-step", [{ status: 500 }]);
    const head = await enqueue({
      type: "noop",
      steps: [{ type: "http", payload: { url: app.url("/opt-step") }, retry: { policy: "fixed", table: [9] } }],
    });
    await deliver({ id: head.body.id, type: "noop" });
    const step = await p.db.prepare("SELECT id FROM jobs WHERE parent_id = ?").bind(head.body.id).first();
    const res = await deliver({ id: step.id, type: "http" });
    assert.deepEqual(res.retryMessages.map((m) => m.delaySeconds), [9]);

    const before = await p.count("SELECT COUNT(*) FROM jobs");
    const cases = [
      [{ retry: { policy: "fixed", table: [] } }, "out_of_range", "retry.table"],
      [{ retry: { policy: "exponential", base_secs: 0 } }, "out_of_range", "retry.base_secs"],
      [{ retry: { policy: "capped", cap_secs: 90_000 } }, "out_of_range", "retry.cap_secs"],
      [{ retry: { policy: "exponential", jitter_min: 2 } }, "out_of_range", "retry.jitter_min"],
      [{ retry: { policy: "linear" } }, "invalid_field", "retry.policy"],
      [{ retry: { policy: "fixed", table: [5], extra: 1 } }, "unknown_field", "retry.extra"],
      [{ retry: "slow" }, "invalid_field", "retry"],
    ];
    for (const [extra, code, field] of cases) {
      const bad = await enqueue({ type: "noop", ...extra });
      assert.equal(bad.status, 422, JSON.stringify(extra));
      assert.deepEqual([bad.body.error.code, bad.body.error.field], [code, field], JSON.stringify(bad.body));
    }
    const batch = await p.request("POST", "/v1/jobs/batch", { json: { jobs: [{ type: "noop" }, { type: "noop", retry: { policy: "fixed", table: [0] } }] }, token: WEB });
    assert.equal(batch.body.error.field, "jobs[1].retry.table[0]");
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs"), before, "nothing written");
  });
});

describe("expiry", () => {
  test("a job past its expires_at is skipped at delivery: no handler call, no attempt, a clear reason", async () => {
    const late = await enqueue({ type: "http", payload: { url: app.url("/opt-expired") }, expires_in_seconds: 1 });
    assert.equal(late.status, 202, JSON.stringify(late.body));
    const fresh = await enqueue({ type: "http", payload: { url: app.url("/opt-fresh") }, expires_in_seconds: 60 });
    const shown = await getJob(late.body.id);
    assert.equal(Date.parse(shown.expires_at) - Date.parse(shown.created_at), 1000);
    await new Promise((r) => setTimeout(r, 1200));

    const res = await p.deliver("jobs-default", [
      { id: "m-late", ...jobMessage(late.body.id, "http") },
      { id: "m-fresh", ...jobMessage(fresh.body.id, "http") },
    ]);
    assert.deepEqual([...res.explicitAcks].sort(), ["m-fresh", "m-late"]);
    assert.equal(app.requests("/opt-expired").length, 0, "the handler never ran");
    assert.equal(app.requests("/opt-fresh").length, 1);
    const job = await getJob(late.body.id);
    assert.deepEqual([job.status, job.attempts, job.runs.length], ["skipped", 0, 0]);
    assert.equal(job.error.class, "expired");
    assert.match(job.error.message, /expires_at passed before it started/);
    assert.ok(job.finished_at);
    assert.equal((await getJob(fresh.body.id)).status, "succeeded");
    const [line] = logs.of(late.body.id).filter((l) => l.event === "job.skipped");
    assert.equal(line.reason, "expired");
    assert.equal(line["error.class"], "expired");
    assert.equal(line["job.expires_at"], shown.expires_at);

    // A redelivery finds it finished and runs nothing.
    const again = await p.deliver("jobs-default", [{ id: "m-late-2", ...jobMessage(late.body.id, "http") }]);
    assert.deepEqual(again.explicitAcks, ["m-late-2"]);
    assert.equal(app.requests("/opt-expired").length, 0);
  });

  test("an expired chain step fails its chain, saying so", async () => {
    const head = await enqueue({ type: "noop", steps: [{ type: "noop", expires_in_seconds: 1 }] });
    await deliver({ id: head.body.id, type: "noop" });
    const step = await p.db.prepare("SELECT id FROM jobs WHERE parent_id = ?").bind(head.body.id).first();
    await new Promise((r) => setTimeout(r, 1200));
    await deliver({ id: step.id, type: "noop" });
    assert.equal((await getJob(step.id)).status, "skipped");
    const parent = await getJob(head.body.id);
    assert.equal(parent.chain.status, "failed");
    assert.match(parent.chain.error, /step 1 \(noop\) was skipped: its expires_at passed/);
  });

  test("expiry must come after the due time and within a year of it; nothing is written otherwise", async () => {
    const before = await p.count("SELECT COUNT(*) FROM jobs");
    const soon = new Date(Date.now() + 30_000).toISOString();
    const cases = [
      [{ delay_seconds: 60, expires_at: soon }, "out_of_range", "expires_at"],
      [{ delay_seconds: 60, expires_in_seconds: 30 }, "out_of_range", "expires_in_seconds"],
      [{ expires_in_seconds: 0 }, "out_of_range", "expires_in_seconds"],
      [{ expires_at: new Date(Date.now() + 400 * 86_400_000).toISOString() }, "out_of_range", "expires_at"],
      [{ expires_at: "tomorrow" }, "invalid_field", "expires_at"],
      [{ expires_at: soon, expires_in_seconds: 30 }, "conflicting_fields", "expires_at"],
      [{ steps: [{ type: "noop", expires_at: soon }] }, "unknown_field", "steps[0].expires_at"],
    ];
    for (const [extra, code, field] of cases) {
      const bad = await enqueue({ type: "noop", ...extra });
      assert.equal(bad.status, 422, JSON.stringify(extra));
      assert.deepEqual([bad.body.error.code, bad.body.error.field], [code, field], JSON.stringify(bad.body));
    }
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs"), before);
  });
});

describe("who enqueued a job", () => {
  test("a token's name (or fingerprint) is recorded, shown, filterable, inherited, and never the token", async () => {
    const web = await enqueue({ type: "noop", steps: [{ type: "noop" }] }, WEB);
    const anon = await enqueue({ type: "noop" }, ANON);
    const ops = await enqueue({ type: "noop" }, OPS);
    assert.equal((await getJob(web.body.id)).enqueued_by, "webapp");
    assert.equal((await getJob(anon.body.id)).enqueued_by, fingerprint(ANON));
    assert.equal((await getJob(ops.body.id)).enqueued_by, "ops");

    // A chain's next step was enqueued by whoever started the chain.
    await deliver({ id: web.body.id, type: "noop" });
    const step = await p.db.prepare("SELECT id FROM jobs WHERE parent_id = ?").bind(web.body.id).first();
    assert.equal((await getJob(step.id)).enqueued_by, "webapp");

    const listed = await admin("GET", "/v1/admin/jobs?enqueued_by=webapp&limit=100");
    assert.equal(listed.status, 200);
    const ids = listed.body.jobs.map((j) => j.id);
    assert.ok(ids.includes(web.body.id) && ids.includes(step.id));
    assert.ok(listed.body.jobs.every((j) => j.enqueued_by === "webapp"));
    assert.ok(!ids.includes(anon.body.id) && !ids.includes(ops.body.id));

    // Bulk actions take the same filter: only the anonymous token's queued job is cancelled.
    const cancel = await admin("POST", "/v1/admin/jobs/cancel", { filter: { enqueued_by: fingerprint(ANON) } });
    assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
    assert.deepEqual(cancel.body.ids, [anon.body.id]);
    assert.equal((await getJob(ops.body.id)).status, "queued");
    // The audit log names the operator the same way.
    const audit = await admin("GET", "/v1/admin/audit?limit=5");
    assert.equal(audit.body.entries.find((e) => e.action === "jobs.cancel")?.actor, "ops");

    const bad = await admin("GET", "/v1/admin/jobs?enqueued_by=");
    assert.deepEqual([bad.status, bad.body.error.field], [422, "enqueued_by"]);

    // Never the token's value, in any table.
    for (const token of [WEB, ANON, OPS]) {
      const dump = JSON.stringify([
        await p.db.prepare("SELECT * FROM jobs").all(),
        await p.db.prepare("SELECT * FROM audit_log").all(),
      ]);
      assert.ok(!dump.includes(token), `${token} stored`);
      assert.ok(!JSON.stringify(listed.body).includes(token));
    }
    assert.ok(!logs.lines.some((l) => [WEB, ANON, OPS].some((t) => JSON.stringify(l).includes(t))), "nor logged");
  });
});

describe("schedules", () => {
  test("a schedule's runs take its retry policy and are enqueued by schedule:<name>", async () => {
    const bad = await admin("POST", "/v1/admin/schedules", { name: "opt_bad", type: "noop", cron_expression: "* * * * *", retry: { policy: "fixed" } });
    assert.deepEqual([bad.status, bad.body.error.field], [422, "retry.table"]);
    const created = await admin("POST", "/v1/admin/schedules", { name: "opt_every_minute", type: "noop", cron_expression: "* * * * *", retry: "quick" });
    assert.equal(created.status, 201, JSON.stringify(created.body));
    assert.deepEqual([created.body.retry?.base_secs, created.body.max_attempts], [2, 3]);
    // A PATCH of another field keeps the policy.
    const patched = await admin("PATCH", `/v1/admin/schedules/${created.body.id}`, { priority: 4 });
    assert.deepEqual(patched.body.retry, created.body.retry);
    await tick(p, Date.parse(created.body.next_run_at));
    const fired = await p.db.prepare("SELECT job_id FROM schedule_runs WHERE schedule_id = ?").bind(created.body.id).first();
    const job = await getJob(fired.job_id);
    assert.equal(job.enqueued_by, "schedule:opt_every_minute");
    assert.deepEqual([job.retry, job.max_attempts], [created.body.retry, 3]);
    assert.equal(job.correlation_id, job.id, "no request brought it: it goes by its own id, as in its logs");
  });
});

describe("a token fenced to job types (ENQUEUE_TOKEN_TYPES)", () => {
  const sites = async () => (await p.db.prepare("SELECT COUNT(*) AS n FROM jobs WHERE enqueued_by = 'site'").first()).n;

  test("it enqueues its types only, steps and follow-ups included, and a refusal names the field and writes nothing", async () => {
    const ok = await enqueue({ type: "noop", steps: [{ type: "http", payload: { url: app.url("/fenced") } }] }, SITE);
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
    const before = await sites();
    const url = app.url("/fenced");
    for (const [path, json, field] of [
      ["/v1/jobs", { type: "weather_refresh", payload: {} }, "type"],
      ["/v1/jobs/batch", { jobs: [{ type: "noop" }, { type: "weather_refresh", payload: {} }] }, "jobs[1].type"],
      ["/v1/jobs", { type: "noop", steps: [{ type: "noop" }, { type: "ai_tagging", payload: {} }] }, "steps[1].type"],
      ["/v1/jobs", { type: "http", payload: { url, allow_follow_ups: true } }, "payload.allow_follow_ups"],
      ["/v1/jobs/batch", { jobs: [{ type: "noop", steps: [{ type: "http", payload: { url, allow_follow_ups: true } }] }] },
        "jobs[0].steps[0].payload.allow_follow_ups"],
    ]) {
      const res = await p.request("POST", path, { json, token: SITE });
      assert.deepEqual([res.status, res.body.error?.code, res.body.error?.field], [403, "forbidden", field], JSON.stringify(res.body));
      assert.match(res.body.error.message, /it may use: noop, http|cannot let a target add jobs/);
    }
    assert.equal(await sites(), before, "nothing written");
    // Another token, and an admin token, are not fenced.
    assert.equal((await enqueue({ type: "weather_refresh", payload: {} }, WEB)).status, 202);
    assert.equal((await enqueue({ type: "http", payload: { url, allow_follow_ups: true } }, OPS)).status, 202);
  });

  test("it reads jobs of its types only: another type's job is not found, its artifacts neither", async () => {
    const own = await enqueue({ type: "noop" }, SITE);
    const other = await enqueue({ type: "weather_refresh", payload: {} }, WEB);
    const read = (id, token) => p.request("GET", `/v1/jobs/${id}`, { token });
    assert.equal((await read(own.body.id, SITE)).status, 200);
    const hidden = await read(other.body.id, SITE);
    assert.deepEqual([hidden.status, hidden.body.error.code, hidden.body.error.field], [404, "not_found", "id"]);
    assert.equal((await read(other.body.id, WEB)).status, 200, "the unfenced token reads it");
    const artifact = await p.request("GET", `/v1/jobs/${other.body.id}/artifacts/1/summary`, { token: SITE });
    assert.deepEqual([artifact.status, artifact.body.error.field], [404, "id"]);
  });

  test("no token sees another's chain; in its own, a step of a type outside its fence shows only its number and status", async () => {
    const theirs = await enqueue({ type: "noop", steps: [{ type: "noop" }] }, WEB);
    assert.equal((await p.request("GET", `/v1/jobs/${theirs.body.id}`, { token: SITE })).status, 404);
    const chain = await enqueue({ type: "noop", steps: [{ type: "noop" }] }, SITE);
    assert.equal(chain.status, 202, JSON.stringify(chain.body));
    await deliver({ id: chain.body.id, type: "noop" });
    const step = await p.db.prepare("SELECT id FROM jobs WHERE parent_id = ?").bind(chain.body.id).first();
    // As a trusted handler's follow-up of another type would have it.
    await p.db.prepare("UPDATE jobs SET type = 'weather_refresh' WHERE id = ?").bind(step.id).run();
    // No endpoint is set for weather_refresh: the step is dead at once, and the chain failed.
    await deliver({ id: step.id, type: "weather_refresh" });
    const read = async (token) => (await p.request("GET", `/v1/jobs/${chain.body.id}`, { token })).body.chain;
    const full = await read(OPS);
    assert.deepEqual([full.status, full.steps[1].id, full.steps[1].type], ["failed", step.id, "weather_refresh"]);
    assert.match(full.error, /weather_refresh|not_configured/);
    const fenced = await read(SITE);
    const seen = ({ step, id, type, status, name }) => ({ step, id, type, status, name });
    assert.deepEqual(fenced.steps.map(seen), [
      { step: 0, id: chain.body.id, type: "noop", status: "succeeded", name: null },
      { step: 1, id: null, type: null, status: "dead", name: null },
    ]);
    assert.deepEqual([fenced.status, fenced.outcome, fenced.error], ["failed", full.outcome, null]);
    assert.equal((await p.request("GET", `/v1/jobs/${step.id}`, { token: SITE })).status, 404);
  });


  test("a var that does not hold (a misspelt name) refuses every enqueue token, logs why, and shows in /healthz", async () => {
    const brokenLogs = logCollector();
    const broken = await startPlatform({
      manualDelivery: true,
      onLog: brokenLogs.onLog,
      producerBindings: { ...producerBindings, ENQUEUE_TOKEN_TYPES: JSON.stringify({ sight: ["noop"] }) },
    });
    try {
      for (const token of [SITE, WEB]) {
        const res = await broken.request("POST", "/v1/jobs", { json: { type: "noop" }, token });
        assert.deepEqual([res.status, res.body.error.code], [503, "not_configured"]);
        assert.match(res.body.error.message, /ENQUEUE_TOKEN_TYPES is refused.*log/);
        assert.ok(!res.body.error.message.includes("sight"), "an enqueue token is not told the var's names");
      }
      const [why] = brokenLogs.events("worker.error").filter((l) => l.source === "config");
      assert.match(why?.message ?? "", /"sight" names no ENQUEUE_TOKENS entry/, "the log says why");
      const jobs = await broken.db.prepare("SELECT COUNT(*) AS n FROM jobs").first();
      assert.equal(jobs.n, 0);
      assert.equal((await broken.request("GET", "/v1/admin/stats", { token: OPS })).status, 200, "admin tokens still work");
      const health = await broken.request("GET", "/healthz");
      assert.equal(health.status, 503);
      assert.equal(health.body.auth.enqueue_token_types, "refused");
      assert.ok(!JSON.stringify(health.body).includes("sight"), "the public route names no token");
      assert.equal((await p.request("GET", "/healthz")).body.auth.enqueue_token_types, "ok");
    } finally {
      await broken.dispose();
    }
  });
});
