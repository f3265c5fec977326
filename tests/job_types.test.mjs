// A team's own job types as data (docs/app-guide.md "Your own job types"), on the built workers
// on local workerd: defined with the CLI, no Rust and no rebuild; checked at enqueue against
// their payload schema; delivered to a URL or, over a service binding, to the team's own Worker
// (examples/app-worker, bundled as wrangler bundles it), which verifies each delivery with the
// client's verifyDelivery; versioned, audited, deleted; and in effect on an isolate that did not
// write them within the stated bound.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { verifyDelivery } from "@cf-jobs/client";
import { bundledWorker, ROOT, SIGNING_SECRET, startPlatform, TOKENS } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";
import { adminApi } from "./support/admin_api.mjs";

const APP_WORKER = join(ROOT, "examples", "app-worker", "index.js");
/** defined_types::REFRESH_MS, the bound a definition takes to reach every isolate. */
const REFRESH_MS = 5_000;

let app, p, api;
before(async () => {
  app = await startAppServer();
  const workers = [
    await bundledWorker(APP_WORKER, { name: "jobs-app", bindings: { SIGNING_SECRET } }),
    await bundledWorker(APP_WORKER, { name: "jobs-app-other-secret", bindings: { SIGNING_SECRET: "not-the-consumers" } }),
  ];
  p = await startPlatform({
    extraWorkers: workers,
    consumerServices: { APP: "jobs-app", OTHER: "jobs-app-other-secret" },
    consumerBindings: { ENDPOINT_WEATHER_REFRESH: app.url("/hooks/weather") },
  });
  api = await adminApi(p);
});
after(async () => {
  await p?.dispose();
  await app?.close();
});

/** Runs `cf-jobs args...` with the admin token, as an operator would. */
const cli = (...args) => p.cli(...args);

/** An admin call on /v1/admin/types (a type's, with `name`), checked against the OpenAPI document. */
const types = (method, name, options = {}) =>
  api.call(method, name === undefined ? "/v1/admin/types" : "/v1/admin/types/{name}", { params: { name }, ...options });

const INVOICE = {
  family: "high",
  target: { service: "APP", path: "/jobs" },
  retry: "quick",
  timeout_ms: 5000,
  payload_schema: {
    type: "object",
    required: ["customer"],
    properties: {
      customer: { type: "string", pattern: "^cus_[a-z0-9]+$" },
      cents: { type: "integer", minimum: 1, maximum: 1000000 },
    },
  },
};

test("a type defined with one CLI command is enqueued and delivered to the team's Worker over a service binding, which verifies it", async () => {
  const put = await cli("types", "put", "send_invoice", JSON.stringify(INVOICE));
  assert.equal(put.code, 0, put.stderr);
  assert.match(put.stdout, /send_invoice: version 1, delivered to service APP \/jobs/);

  const enq = await p.enqueue({ type: "send_invoice", payload: { customer: "cus_42", cents: 1200 } });
  assert.equal(enq.status, 202, JSON.stringify(enq.body));
  const job = await p.waitForStatus(enq.body.id, ["succeeded", "dead"]);
  assert.equal(job.status, "succeeded", JSON.stringify(job));
  assert.equal(job.family, "high");
  // The Worker answered only after verifyDelivery accepted the signature: its answer is the result.
  assert.deepEqual(job.result.body, {
    job: { id: enq.body.id, type: "send_invoice", attempt: 1 },
    result: { sent_to: "cus_42" },
  });

  // The same delivery to a Worker holding another secret is refused there: final, one attempt.
  const other = await types("PUT", "send_invoice_elsewhere", { json: { ...INVOICE, target: { service: "OTHER" } } });
  assert.equal(other.status, 201, JSON.stringify(other.body));
  const refused = await p.enqueue({ type: "send_invoice_elsewhere", payload: { customer: "cus_1" } });
  const dead = await p.waitForStatus(refused.body.id, "dead");
  assert.equal(dead.attempts, 1);
  assert.match(dead.error.message, /HTTP 401/);
});

test("a type delivered to a URL is signed as every delivery is: the client's verifyDelivery accepts what the app received", async () => {
  const def = { family: "default", target: { url: app.url("/hooks/report") } };
  assert.equal((await types("PUT", "build_report", { json: def })).status, 201);
  const enq = await p.enqueue({ type: "build_report", payload: { month: "2026-11" } });
  assert.equal(enq.status, 202, JSON.stringify(enq.body));
  await p.waitForStatus(enq.body.id, "succeeded");
  const [received] = app.requests("/hooks/report");
  const request = new Request(app.url("/hooks/report"), { method: received.method, headers: received.headers, body: received.body });
  const check = await verifyDelivery(request, { secrets: SIGNING_SECRET });
  assert.equal(check.valid, true, JSON.stringify(check));
  assert.deepEqual(JSON.parse(check.body), { id: enq.body.id, type: "build_report", attempt: 1, payload: { month: "2026-11" } });
});

test("a bad definition or payload answers 422 naming the field, and writes nothing", async () => {
  const rows = () => p.count("SELECT (SELECT COUNT(*) FROM job_types) + (SELECT COUNT(*) FROM job_type_versions) + (SELECT COUNT(*) FROM audit_log)");
  const before = await rows();
  const cases = [
    [{ ...INVOICE, family: "urgent" }, 422, "family"],
    [{ ...INVOICE, target: { url: "ftp://x" } }, 422, "target.url"],
    [{ ...INVOICE, target: { service: "app" } }, 422, "target.service"],
    [{ ...INVOICE, timeout_ms: 10 }, 422, "timeout_ms"],
    [{ ...INVOICE, colour: "red" }, 422, "colour"],
    [{ ...INVOICE, payload_schema: { properties: { a: { pattern: "(" } } } }, 422, "payload_schema.properties.a.pattern"],
    [{ ...INVOICE, payload_schema: { format: "email" } }, 422, "payload_schema.format"],
  ];
  for (const [def, status, field] of cases) {
    const res = await types("PUT", "bad_type", { json: def });
    assert.equal(res.status, status, JSON.stringify(res.body));
    assert.equal(res.body.error.field, field);
  }
  const builtIn = await types("PUT", "http", { json: INVOICE });
  assert.deepEqual([builtIn.status, builtIn.body.error.code], [409, "built_in_type"]);
  assert.equal((await types("PUT", "Bad-Name", { json: INVOICE })).body.error.field, "name");
  const malformed = await types("PUT", "bad_type", { body: "{", headers: { "content-type": "application/json" } });
  assert.equal(malformed.status, 400);
  assert.equal((await types("PUT", "bad_type", { json: INVOICE, token: TOKENS.enqueue })).status, 403, "an enqueue token may not define types");
  assert.equal((await types("DELETE", "no_such_type")).status, 404);
  assert.equal((await types("DELETE", "noop")).status, 409);
  assert.equal((await types("GET", "no_such_type")).status, 404);
  assert.equal((await types("GET", "noop")).body.built_in, true);
  assert.equal(await rows(), before);

  await types("PUT", "send_invoice", { json: INVOICE });
  const jobsBefore = await p.count("SELECT COUNT(*) FROM jobs");
  for (const [payload, field] of [
    [{}, "payload.customer"],
    [{ customer: "bob" }, "payload.customer"],
    [{ customer: "cus_1", cents: 0 }, "payload.cents"],
    [{ customer: "cus_1", cents: 1.5 }, "payload.cents"],
    [{ customer: "cus_1", note: "x" }, "payload.note"],
  ]) {
    const res = await p.enqueue({ type: "send_invoice", payload });
    assert.equal(res.status, 422, JSON.stringify(res.body));
    assert.deepEqual([res.body.error.code, res.body.error.field], ["invalid_payload", field]);
  }
  assert.equal(await p.count("SELECT COUNT(*) FROM jobs"), jobsBefore);
});

test("versions and audit: a changed definition is a new version, the same one changes nothing; deleted, enqueue refuses it and its enqueued jobs still run", async () => {
  const def = { family: "low", target: { url: app.url("/hooks/sync") } };
  assert.equal((await types("PUT", "sync_crm", { json: def })).status, 201);
  const same = await types("PUT", "sync_crm", { json: def });
  assert.deepEqual([same.status, same.body.version, same.body.changed], [200, 1, false]);
  const changed = await types("PUT", "sync_crm", { json: { ...def, max_attempts: 2 } });
  assert.deepEqual([changed.status, changed.body.version, changed.body.changed], [200, 2, true]);

  // Due in 2 s: still waiting when its type is deleted.
  const waiting = await p.enqueue({ type: "sync_crm", payload: {}, delay_seconds: 2 });
  assert.equal(waiting.status, 202);
  const del = await cli("types", "delete", "sync_crm");
  assert.equal(del.code, 0, del.stderr);
  const refused = await p.enqueue({ type: "sync_crm", payload: {} });
  assert.deepEqual([refused.status, refused.body.error.code], [422, "unknown_type"]);
  await p.waitForStatus(waiting.body.id, "succeeded", { timeoutMs: 30_000 });

  const got = await types("GET", "sync_crm");
  assert.deepEqual(got.body.versions.map((v) => [v.version, v.definition?.max_attempts ?? null]), [[3, null], [2, 2], [1, null]]);
  assert.ok(got.body.deleted_at);
  const audit = await p.db.prepare("SELECT action FROM audit_log WHERE target LIKE '%sync_crm%' ORDER BY id").all();
  assert.deepEqual(audit.results.map((r) => r.action), ["type.put", "type.put", "type.delete"]);

  const list = JSON.parse((await cli("types", "list", "--json")).stdout);
  assert.ok(list.some((t) => t.name === "http" && t.built_in));
  assert.ok(list.some((t) => t.name === "sync_crm" && t.deleted_at));
  // Put again, it is back.
  assert.equal((await types("PUT", "sync_crm", { json: def })).body.version, 4);
  assert.equal((await p.enqueue({ type: "sync_crm", payload: {} })).status, 202);
});

test("the bundled catalog's types are rows like a team's: listed, delivered to the URL in their var, changed and deleted as data", async () => {
  const { body } = await types("GET");
  const catalog = body.types.filter((t) => t.updated_by === "migration").map((t) => t.name);
  assert.deepEqual(catalog.sort(), ["click_rollup", "image_processing", "inbound_email", "listing_expiration", "message_relay",
    "rank_recalculation", "sitemap_generation", "social_refresh", "stock_refresh", "weather_refresh"]);
  assert.ok(body.types.filter((t) => t.built_in).every((t) => !catalog.includes(t.name)));
  const relay = await types("GET", "message_relay");
  assert.deepEqual([relay.body.built_in, relay.body.definition.target], [false, { url_var: "ENDPOINT_MESSAGE_RELAY" }]);

  // Its schema holds as the source app's payload did, naming the field.
  const blank = await p.enqueue({ type: "message_relay", payload: { message_id: " " } });
  assert.deepEqual([blank.status, blank.body.error.field], [422, "payload.message_id"]);
  // This consumer has no ENDPOINT_MESSAGE_RELAY: dead at once, saying which var to set.
  const unset = await p.enqueue({ type: "message_relay", payload: { message_id: "m1" } });
  const dead = await p.waitForStatus(unset.body.id, "dead");
  assert.deepEqual([dead.attempts, dead.error.class], [1, "not_configured"]);
  assert.match(dead.error.message, /set ENDPOINT_MESSAGE_RELAY/);

  // A team's type may read its URL from a var too; a var the consumer has is delivered to.
  const byVar = await cli("types", "put", "relay_by_var", JSON.stringify({ family: "high", target: { url_var: "ENDPOINT_WEATHER_REFRESH" } }));
  assert.equal(byVar.code, 0, byVar.stderr);
  assert.match(byVar.stdout, /relay_by_var: version 1, delivered to the URL in the consumer's ENDPOINT_WEATHER_REFRESH/);
  const bad = await types("PUT", "relay_bad_var", { json: { family: "high", target: { url_var: "endpoint" } } });
  assert.deepEqual([bad.status, bad.body.error.field], [422, "target.url_var"]);
  const sent = await p.enqueue({ type: "relay_by_var", payload: { n: 1 } });
  await p.waitForStatus(sent.body.id, "succeeded");
  assert.equal(JSON.parse(app.requests("/hooks/weather").at(-1).body).type, "relay_by_var");

  // A deployment that does not run the source apps deletes their types: enqueue refuses them.
  assert.equal((await cli("types", "delete", "rank_recalculation")).code, 0);
  const gone = await p.enqueue({ type: "rank_recalculation", payload: {} });
  assert.deepEqual([gone.status, gone.body.error.code], [422, "unknown_type"]);
});

test("a budgeted type spends what its app reports; once the month's limit is reached its jobs are skipped, not delivered", async () => {
  app.script("/hooks/priced", [{ status: 200, body: { ok: true, cost_cents: 600 } }]);
  const def = { family: "default", target: { url: app.url("/hooks/priced") }, budget: { monthly_limit_cents: 1000 } };
  assert.equal((await types("PUT", "priced_call", { json: def })).status, 201);
  const bad = await types("PUT", "priced_bad", { json: { ...def, budget: { monthly_limit_cents: 0 } } });
  assert.deepEqual([bad.status, bad.body.error.field], [422, "budget.monthly_limit_cents"]);

  const run = async () => p.waitForStatus((await p.enqueue({ type: "priced_call", payload: {} })).body.id, ["succeeded", "skipped", "dead"]);
  const first = await run();
  const second = await run();
  assert.deepEqual([first.status, second.status], ["succeeded", "succeeded"], "600 then 1200 of 1000 cents: both started under the limit");
  assert.equal(first.runs[0].cost_cents, 600);
  const third = await run();
  assert.deepEqual([third.status, third.error.class], ["skipped", "budget_hard_stop"]);
  assert.match(third.error.message, /priced_call budget is at 120 %/);
  assert.equal(app.requests("/hooks/priced").length, 2, "the skipped job was not delivered");

  const budgets = await api.call("GET", "/v1/admin/budgets");
  const mine = budgets.body.budgets.find((b) => b.job_type === "priced_call");
  assert.deepEqual([mine?.spent_cents, mine?.limit_cents], [1200, 1000], JSON.stringify(budgets.body));
  const alerts = await p.db.prepare("SELECT threshold FROM budget_alerts WHERE job_type = 'priced_call' ORDER BY threshold").all();
  assert.deepEqual(alerts.results.map((a) => a.threshold), [75, 90, 100]);
});

test("a definition another isolate wrote is in effect here within the bound", async () => {
  // This isolate reads the table now (any authenticated request when its copy is due)...
  await types("GET");
  // ...and another isolate defines a type (its write, straight to D1).
  const definition = JSON.stringify({ family: "default", target: { url: app.url("/hooks/late") } });
  await p.db.prepare("INSERT INTO job_types (name, version, definition, updated_at, updated_by) VALUES ('late_type', 1, ?, 0, 'elsewhere')").bind(definition).run();
  const started = Date.now();
  let accepted;
  while (Date.now() - started < REFRESH_MS + 3_000) {
    const res = await p.enqueue({ type: "late_type", payload: {} });
    if (res.status === 202) {
      accepted = Date.now() - started;
      break;
    }
    assert.equal(res.body.error.code, "unknown_type");
    await new Promise((r) => setTimeout(r, 200));
  }
  assert.ok(accepted !== undefined && accepted <= REFRESH_MS + 1_000, `accepted after ${accepted} ms`);
});

test("every documented types operation was exercised against the OpenAPI document", async () => {
  // A type without flow control has no keys to show (tests/flow_control.test.mjs shows them).
  const flow = await api.call("GET", "/v1/admin/types/{name}/flow", { params: { name: "build_report" } });
  assert.deepEqual([flow.status, flow.body.flow, flow.body.keys], [200, null, []]);
  assert.equal((await api.call("GET", "/v1/admin/types/{name}/flow", { params: { name: "nope" } })).status, 404);
  const { documented, missing } = api.coverage("/v1/admin/types");
  assert.equal(documented.length, 5);
  assert.deepEqual(missing, []);
});
