// Structured job logs, correlation ids end to end, GET /metrics, escalation of dead
// jobs per family and the sweep's alerts. The built WASM on local workerd, real D1 and queues;
// the app endpoint and the PagerDuty/Slack/digest webhooks are real local HTTP servers.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { enqueueAndDeliver, enqueueBatch, jobMessage, logCollector, ROOT, startPlatform, TOKENS } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";
import { tick, DAY, MINUTE } from "./support/sweep.mjs";
import { parsePrometheusText, sampleValue } from "./support/prometheus_text.mjs";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const TRACEPARENT = `00-${TRACE}-00f067aa0ba902b7-01`;
const SPAN_ATTRIBUTES = ["job.id", "job.type", "job.queue", "job.attempt", "job.handler", "correlation_id"];

let app;
before(async () => {
  app = await startAppServer();
});
after(() => app.close());

describe("job logs and correlation ids (real queues)", () => {
  let p;
  const logs = logCollector();
  before(async () => {
    p = await startPlatform({
      // Every success logged, as LOG_SUCCESS_PERCENT=100 asks (by default none is: see below).
      consumerBindings: { ENDPOINT_WEATHER_REFRESH: app.url("/apps/weather"), LOG_SUCCESS_PERCENT: "100" },
      onLog: logs.onLog,
    });
  });
  after(() => p.dispose());

  test("a traceparent's trace id goes to the response, D1, the app's request and every log line", async () => {
    const enq = await p.enqueue({ type: "weather_refresh", payload: { kind: "alerts" } }, { headers: { traceparent: TRACEPARENT } });
    assert.equal(enq.status, 202);
    assert.equal(enq.headers.get("x-request-id"), TRACE);
    assert.equal(enq.body.correlation_id, TRACE);
    assert.equal(await p.count("SELECT correlation_id FROM jobs WHERE id = ?", enq.body.id), TRACE);
    await p.waitForStatus(enq.body.id, "succeeded");

    const [req] = app.requests("/apps/weather").filter((r) => JSON.parse(r.body).id === enq.body.id);
    assert.equal(req.headers["x-request-id"], TRACE);
    assert.match(req.headers.traceparent, new RegExp(`^00-${TRACE}-[0-9a-f]{16}-01$`));
    assert.notEqual(req.headers.traceparent, TRACEPARENT, "a new span for the job's request");

    const lines = await p.waitFor(() => {
      const l = logs.of(enq.body.id);
      return l.some((x) => x.event === "job.completed") && l;
    }, { what: "the job's log lines" });
    assert.deepEqual(lines.map((l) => l.event), ["job.completed"], "one line per successful attempt at 100 %");
    for (const line of lines) {
      for (const key of SPAN_ATTRIBUTES) assert.ok(key in line, `${line.event} has ${key}`);
      assert.equal(line.correlation_id, TRACE);
      assert.equal(line["job.type"], "weather_refresh");
      assert.equal(line["job.queue"], "default");
      assert.equal(line["job.attempt"], 1);
      assert.equal(line["job.handler"], "consumer::handlers::forward");
    }
    assert.equal(typeof lines[0].duration_ms, "number");
    assert.equal(lines[0]["delivery.attempts"], 1);
    const [batch] = logs.events("batch.completed");
    assert.equal(typeof batch["d1.rows_written"], "number", "the benchmark's batch line stays");
    // D1's own SQL time, the capacity model's input. Local D1 times statements with a coarse
    // clock: a one-job batch may take less than a tick of it, so only its presence is certain.
    assert.ok(batch["d1.sql_ms"] >= 0, "D1's own SQL time, the capacity model's input");
  });

  test("X-Request-Id is used when there is no traceparent, and an id is minted when neither is sent", async () => {
    const given = await p.enqueue({ type: "http", payload: { url: app.url("/rid") } }, { headers: { "x-request-id": "req-abc.1" } });
    assert.equal(given.body.correlation_id, "req-abc.1");
    assert.equal(given.headers.get("x-request-id"), "req-abc.1");
    await p.waitForStatus(given.body.id, "succeeded");
    const [req] = app.requests("/rid");
    assert.equal(req.headers["x-request-id"], "req-abc.1");
    assert.equal(req.headers.traceparent, undefined, "not a trace id: no traceparent");

    const minted = await p.request("POST", "/v1/jobs/batch", {
      json: { jobs: [{ type: "noop", payload: {} }, { type: "noop", payload: {} }] },
      headers: { "x-request-id": "bad id with spaces" },
    });
    const cid = minted.headers.get("x-request-id");
    assert.match(cid, /^[0-9a-f]{32}$/);
    assert.deepEqual(minted.body.jobs.map((j) => j.correlation_id), [cid, cid]);
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE correlation_id = ?", cid), 2);

    // A refused request's answer carries it too, so a client can quote it either way.
    const refused = await p.enqueue({ type: "no_such_type" }, { headers: { "x-request-id": "req-err.1" } });
    assert.deepEqual([refused.status, refused.headers.get("x-request-id")], [422, "req-err.1"]);
    const refusedBatch = await p.request("POST", "/v1/jobs/batch", { json: { jobs: [] } });
    assert.equal(refusedBatch.status, 422);
    assert.match(refusedBatch.headers.get("x-request-id") ?? "", /^[0-9a-f]{32}$/);
  });

  test("a chain's next step inherits the correlation id", async () => {
    const enq = await p.enqueue(
      { type: "http", payload: { url: app.url("/step0") }, steps: [{ type: "http", payload: { url: app.url("/step1") } }] },
      { headers: { traceparent: TRACEPARENT.replace(TRACE, "0af7651916cd43dd8448eb211c80319c") } },
    );
    const step = await p.waitFor(() => p.db.prepare("SELECT id, correlation_id FROM jobs WHERE parent_id = ?").bind(enq.body.id).first(), { what: "step 1" });
    assert.equal(step.correlation_id, "0af7651916cd43dd8448eb211c80319c");
    await p.waitForStatus(step.id, "succeeded");
    assert.equal(app.requests("/step1")[0].headers["x-request-id"], "0af7651916cd43dd8448eb211c80319c");
  });

  test("a failing job logs job.failed with its error, job.retry_scheduled, then job.exhausted", async () => {
    app.script("/always-503", [{ status: 503, headers: { "retry-after": "1" } }]);
    const enq = await p.enqueue({ type: "http", payload: { url: app.url("/always-503") }, max_attempts: 2 });
    await p.waitForStatus(enq.body.id, "dead");
    const lines = await p.waitFor(() => {
      const l = logs.of(enq.body.id);
      return l.some((x) => x.event === "job.exhausted") && l;
    }, { what: "job.exhausted" });
    assert.deepEqual(lines.map((l) => l.event), [
      "job.failed", "job.retry_scheduled", "job.failed", "job.exhausted",
    ]);
    const failed = lines.filter((l) => l.event === "job.failed");
    assert.deepEqual(failed.map((l) => l["job.attempt"]), [1, 2]);
    for (const l of failed) {
      assert.equal(l["error.class"], "server_error");
      assert.match(l["error.message"], /503/);
      assert.equal(typeof l.duration_ms, "number");
      assert.equal(l.level, "warn");
    }
    assert.equal(lines.find((l) => l.event === "job.retry_scheduled")["retry.delay_secs"], 1);
    assert.equal(lines.at(-1).level, "error");
  });
});

describe("skipped and interrupted jobs (manual delivery)", () => {
  let p;
  const logs = logCollector();
  before(async () => {
    p = await startPlatform({ manualDelivery: true, onLog: logs.onLog });
  });
  after(() => p.dispose());

  test("a message whose job does not exist, or already finished, is logged as job.skipped", async () => {
    await p.deliver("jobs-default", [jobMessage("01JNOPE", "noop", { cid: "req-x" })]);
    const [missing] = logs.of("01JNOPE");
    assert.equal(missing.event, "job.skipped");
    assert.equal(missing.reason, "not_found");
    assert.equal(missing.correlation_id, "req-x");
    for (const key of SPAN_ATTRIBUTES) assert.ok(key in missing, key);

    const enq = await p.enqueue({ type: "noop", payload: {} });
    const message = jobMessage(enq.body.id, "noop");
    await p.deliver("jobs-default", [message]);
    await p.deliver("jobs-default", [message]);
    const events = logs.of(enq.body.id).map((l) => `${l.event}${l.reason ? `:${l.reason}` : ""}`);
    assert.deepEqual(events, ["job.skipped:finished"], "the success itself is counted, not logged");
  });

  test("by default a success writes no line of its own: its batch's batch.completed counts it; a failure always logs", async () => {
    app.script("/settled-fail", [{ status: 500 }]);
    const ok = await enqueueBatch(p, { type: "noop" }, 3);
    const bad = await enqueueBatch(p, { type: "http", max_attempts: 1, payload: { url: app.url("/settled-fail") } }, 1);
    const before = logs.events("batch.completed").length;
    await p.deliver("jobs-default", [...ok.map((id) => jobMessage(id, "noop")), jobMessage(bad[0], "http")]);
    for (const id of ok) assert.deepEqual(logs.of(id), [], "no line for a success");
    assert.deepEqual(logs.of(bad[0]).map((l) => l.event), ["job.failed", "job.exhausted"]);
    const [batch] = logs.events("batch.completed").slice(before);
    assert.deepEqual(
      [batch["jobs.succeeded"], batch["jobs.retried"], batch["jobs.dead"], batch["jobs.skipped"], batch.messages],
      [3, 0, 1, 0, 4],
    );
    assert.ok(batch["attempts.duration_ms.max"] >= 0 && batch["attempts.duration_ms.sum"] >= batch["attempts.duration_ms.max"]);
  });

  test("the dashboard's Workers Logs queries name fields the Workers log", async () => {
    app.script("/dashboard-queries", [{ status: 500 }]);
    const failing = await p.enqueue({ type: "http", max_attempts: 1, payload: { url: app.url("/dashboard-queries") } });
    await p.deliver("jobs-default", [jobMessage(failing.body.id, "http")]);
    await p.deliver("jobs-default", [jobMessage("01JNOPE2", "noop")]);
    await tick(p, Date.now());

    // The table of docs/operating.md "In the Cloudflare dashboard": | question | filter | fields |.
    const guide = readFileSync(join(ROOT, "docs", "operating.md"), "utf8");
    const section = guide.slice(guide.indexOf("### In the Cloudflare dashboard"), guide.indexOf("### Analytics Engine"));
    const rows = section.split("\n").filter((l) => l.startsWith("| ") && l.includes("`"));
    assert.ok(rows.length >= 5, "the table is there");
    for (const row of rows) {
      const [, , filter, show] = row.split("|").map((cell) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]));
      const [key, value] = filter;
      const matching = logs.lines.filter((l) => (key === "event" ? l.event === value : key in l));
      assert.ok(matching.length > 0, `some line has ${key}${key === "event" ? ` = ${value}` : ""}`);
      for (const field of show) {
        assert.ok(matching.some((l) => field in l), `${row}: no ${key === "event" ? value : key} line has ${field}`);
      }
    }
  });

  test("the lease rescuer logs job.interrupted with the lost attempt's duration", async () => {
    const enq = await p.enqueue({ type: "noop", payload: {} }, { headers: { "x-request-id": "lost-1" } });
    const started = Date.now() - 20 * MINUTE;
    await p.db.prepare("UPDATE jobs SET status = 'running', attempts = 1, runs = 1, started_at = ?, lease_until = ? WHERE id = ?")
      .bind(started, started + 5 * MINUTE, enq.body.id).run();
    await tick(p, Date.now());
    const lines = logs.of(enq.body.id);
    const interrupted = lines.find((l) => l.event === "job.interrupted");
    assert.ok(interrupted, JSON.stringify(lines));
    assert.equal(interrupted["error.class"], "lease_expired");
    assert.equal(interrupted.correlation_id, "lost-1");
    assert.ok(interrupted.duration_ms >= 20 * MINUTE - 1000, `${interrupted.duration_ms}`);
    assert.equal(lines.at(-1).event, "job.retry_scheduled");
  });
});

describe("GET /metrics", () => {
  let p;
  before(async () => {
    p = await startPlatform({ manualDelivery: true, producerBindings: { METRICS_TOKENS: "scrape-token" } });
  });
  after(() => p.dispose());

  // A tick whose roll-up reaches the present: run records are final 16 minutes after they end.
  const rollUp = async () => {
    await new Promise((r) => setTimeout(r, 5));
    await tick(p, Date.now() + 16 * MINUTE);
  };

  test("after a known workload it shows the histogram, retries, backlog, budget, DLQ, schedules and screenshots", async () => {
    await enqueueAndDeliver(p, "jobs-default", { type: "noop", payload: {} }, 3);
    app.script("/metrics-503", [{ status: 503 }]);
    await enqueueAndDeliver(p, "jobs-default", { type: "http", payload: { url: app.url("/metrics-503") } });
    const high = await enqueueBatch(p, { type: "stock_refresh", payload: {} }, 3);
    await p.deliver("jobs-high", [jobMessage(high[0], "stock_refresh")]); // no endpoint: dead
    await p.deliver("jobs-default-dlq", [jobMessage(high[0], "stock_refresh")]);
    await p.db.prepare("INSERT INTO budgets (job_type, month, limit_cents, spent_cents, updated_at) VALUES ('ai_tagging', '2025-01', 50000, 1234, 0)").run();
    await p.db.prepare("UPDATE schedules SET missed_runs = 2 WHERE name = 'rss_feed_refresh'").run();
    await p.db.prepare("INSERT INTO jobs (id, type, family, status, payload, max_attempts, run_at, created_at, updated_at, started_at) VALUES ('01JSHOT', 'screenshot_capture', 'screenshot', 'running', '{}', 3, 0, 0, 0, 0)").run();

    // The sweep rolls run records into the histogram once they are final (16 min after).
    const before = parsePrometheusText((await p.request("GET", "/metrics", { token: TOKENS.admin })).body);
    assert.equal(sampleValue(before, "job_execution_duration_seconds_count", { job_type: "noop", queue: "default", status: "succeeded" }), undefined);
    await rollUp();
    await rollUp(); // a repeated tick adds nothing twice
    const res = await p.mf.dispatchFetch("http://jobs.local/metrics", { headers: { authorization: `Bearer ${TOKENS.admin}` } });
    assert.equal(res.status, 200);
    assert.match(res.headers.get("content-type"), /^text\/plain; version=0\.0\.4/);
    const m = parsePrometheusText(await res.text());

    assert.equal(m.get("job_execution_duration_seconds").type, "histogram");
    const noop = { job_type: "noop", queue: "default", status: "succeeded" };
    assert.equal(sampleValue(m, "job_execution_duration_seconds_count", noop), 3);
    assert.equal(sampleValue(m, "job_execution_duration_seconds_bucket", { ...noop, le: "+Inf" }), 3);
    assert.ok(sampleValue(m, "job_execution_duration_seconds_sum", noop) >= 0);
    assert.equal(sampleValue(m, "job_execution_duration_seconds_count", { job_type: "http", queue: "default", status: "retrying" }), 1);
    assert.equal(sampleValue(m, "job_execution_duration_seconds_count", { job_type: "stock_refresh", queue: "high", status: "dead" }), 1);
    assert.equal(sampleValue(m, "job_retry_total", { job_type: "http", queue: "default" }), 1);
    assert.equal(sampleValue(m, "job_exhausted_total", { job_type: "stock_refresh", queue: "high" }), 1);
    assert.equal(sampleValue(m, "job_queue_backlog_total", { queue: "high" }), 2);
    assert.equal(sampleValue(m, "job_queue_backlog_total", { queue: "default" }), 0, "the retrying job is not due yet");
    assert.equal(sampleValue(m, "screenshot_concurrency_utilization"), 1);
    assert.equal(sampleValue(m, "job_budget_consumed_dollars", { job_type: "ai_tagging" }), 12.34);
    assert.equal(sampleValue(m, "job_dead_letters_total", { queue: "default" }), 1);
    assert.equal(sampleValue(m, "job_schedule_missed_runs_total", { schedule: "rss_feed_refresh" }), 2);
    for (const name of ["job_retry_total", "job_budget_consumed_dollars", "job_dead_letters_total", "job_schedule_missed_runs_total"]) {
      assert.equal(m.get(name).type, "counter", name);
    }
    assert.equal(m.get("job_queue_backlog_total").type, "gauge");

    // More work only adds to the counters.
    await enqueueAndDeliver(p, "jobs-default", { type: "noop", payload: {} }, 2);
    await rollUp();
    const again = parsePrometheusText(await (await p.mf.dispatchFetch("http://jobs.local/metrics", { headers: { authorization: "Bearer scrape-token" } })).text());
    assert.equal(sampleValue(again, "job_execution_duration_seconds_count", noop), 5);
  });

  test("needs an admin or metrics token; documented in the OpenAPI document", async () => {
    const get = (token) => p.request("GET", "/metrics", { token });
    assert.equal((await get("scrape-token")).status, 200);
    assert.equal((await get(null)).status, 401);
    assert.equal((await get(TOKENS.enqueue)).status, 403);
    assert.equal((await get("scrape-token-wrong")).status, 401);
    // A scraper's token is known everywhere, and good only here: elsewhere 403, not 401.
    for (const [method, path] of [["GET", "/v1/admin/stats"], ["GET", "/v1/jobs/01JNOPE"], ["POST", "/v1/jobs"]]) {
      const res = await p.request(method, path, { token: "scrape-token", json: method === "POST" ? { type: "noop" } : undefined });
      assert.deepEqual([res.status, res.body.error?.code], [403, "forbidden"], `${method} ${path}`);
    }
    const doc = (await p.request("GET", "/openapi.json", { token: null })).body;
    assert.ok(doc.paths["/metrics"].get.responses["200"]);
  });
});

describe("escalation and alerts", () => {
  let p;
  let hooks;
  const DASHBOARD = "https://jobs.example";
  before(async () => {
    hooks = await startAppServer();
    p = await startPlatform({
      manualDelivery: true,
      producerBindings: {
        PAGERDUTY_EVENTS_URL: hooks.url("/pagerduty"),
        PAGERDUTY_ROUTING_KEY: "routing-key-1",
        SLACK_WEBHOOK_URL: hooks.url("/slack"),
        DIGEST_WEBHOOK_URL: hooks.url("/digest"),
        DASHBOARD_URL: DASHBOARD,
        ALERT_BACKLOG_THRESHOLD: "2",
        ALERT_FAILURE_MIN_RUNS: "2",
      },
    });
  });
  after(async () => {
    await p.dispose();
    await hooks.close();
  });

  const bodies = (path) => hooks.requests(path).map((r) => JSON.parse(r.body));
  const slackTexts = (pattern) => bodies("/slack").map((b) => b.text).filter((t) => pattern.test(t));

  test("healthz shows which channels are configured", async () => {
    const res = await p.request("GET", "/healthz", { token: null });
    assert.deepEqual(res.body.escalation, { pagerduty: true, slack: true, digest: true, dashboard_links: true });
  });

  test("dead jobs page (high), post to chat (default), and wait for one daily digest (low, bulk)", async () => {
    // No endpoints are configured, so each of these goes dead at once (not_configured).
    const [stock] = await enqueueAndDeliver(p, "jobs-high", { type: "stock_refresh", payload: {} });
    const weather = await enqueueAndDeliver(p, "jobs-default", { type: "weather_refresh", payload: { kind: "alerts" } }, 2);
    await enqueueAndDeliver(p, "jobs-low", { type: "social_refresh", payload: {} }, 2);
    await enqueueAndDeliver(p, "jobs-bulk", { type: "image_processing", payload: { image_key: "img-1" } });
    const now = Date.now();
    await tick(p, now);

    const pages = bodies("/pagerduty").filter((b) => b.dedup_key.startsWith("job-dead:"));
    assert.equal(pages.length, 1);
    assert.equal(pages[0].event_action, "trigger");
    assert.equal(pages[0].routing_key, "routing-key-1");
    assert.equal(pages[0].dedup_key, `job-dead:${stock}:1`);
    assert.match(pages[0].payload.summary, /not_configured/);
    assert.equal(pages[0].payload.severity, "critical");
    assert.equal(pages[0].links[0].href, `${DASHBOARD}/dashboard/#job=${stock}`);

    const chats = slackTexts(/is dead/);
    assert.equal(chats.length, 2);
    for (const id of weather) {
      const text = chats.find((t) => t.includes(id));
      assert.ok(text, `a chat message for ${id}`);
      assert.match(text, /weather_refresh/);
      assert.match(text, /not_configured/);
      assert.ok(text.includes(`<${DASHBOARD}/dashboard/#job=${id}|`), text);
    }
    assert.equal(hooks.requests("/digest").length, 0, "the digest waits for the day to end");

    await tick(p, now + MINUTE);
    assert.equal(bodies("/pagerduty").filter((b) => b.dedup_key.startsWith("job-dead:")).length, 1, "sent once");
    assert.equal(slackTexts(/is dead/).length, 2, "sent once");

    await tick(p, now + DAY);
    await tick(p, now + DAY + MINUTE);
    const digests = bodies("/digest");
    assert.equal(digests.length, 1, "one digest a day");
    assert.match(digests[0].text, new RegExp(`Dead jobs digest for ${new Date(now).toISOString().slice(0, 10)}`));
    assert.match(digests[0].text, /3 job\(s\)/);
    assert.match(digests[0].text, /2 x social_refresh \(low\) not_configured/);
    assert.match(digests[0].text, /1 x image_processing \(bulk\) not_configured/);
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE status = 'dead' AND escalated_at IS NULL"), 0);
  });

  test("alerts open once, stay quiet while firing, and resolve when the condition clears", async () => {
    const start = Date.now() + 3 * DAY; // past the previous test's windows
    const relay = await enqueueBatch(p, { type: "message_relay", payload: { message_id: "m-1" } }, 3);
    const weather = await enqueueAndDeliver(p, "jobs-default", { type: "weather_refresh", payload: { kind: "alerts" } }, 2);
    // Their run records are "now": move them to the evaluation time, as if they had just failed.
    await p.db.prepare("UPDATE job_runs SET finished_at = ? WHERE job_id IN (?, ?)").bind(start - MINUTE, ...weather).run();
    const backlogEvents = () => bodies("/pagerduty").filter((b) => b.dedup_key === "alert:backlog:high");
    // Only this test's messages (the previous one's failures opened and resolved one too).
    const before = bodies("/slack").length;
    const failureTexts = () => bodies("/slack").slice(before).map((b) => b.text).filter((t) => /alert failure_rate\/default/.test(t));

    await tick(p, start);
    assert.deepEqual(backlogEvents().map((b) => b.event_action), ["trigger"]);
    assert.match(backlogEvents()[0].payload.summary, /high backlog is 3 jobs \(threshold 2\)/);
    assert.equal(failureTexts().length, 1);
    assert.match(failureTexts()[0], /firing: default failure rate is 100\.0 %/);
    const open = "SELECT COUNT(*) FROM alerts WHERE status = 'open' AND rule || '/' || key IN ('backlog/high', 'failure_rate/default')";
    assert.equal(await p.count(open), 2);

    for (let i = 1; i <= 3; i++) await tick(p, start + i * MINUTE);
    assert.equal(backlogEvents().length, 1, "no storm while it fires");
    assert.equal(failureTexts().length, 1);

    const metrics = parsePrometheusText((await p.request("GET", "/metrics", { token: TOKENS.admin })).body);
    const openBacklog = await p.count("SELECT COUNT(*) FROM alerts WHERE status = 'open' AND rule = 'backlog'");
    assert.ok(openBacklog >= 1);
    assert.equal(sampleValue(metrics, "job_alerts_open", { rule: "backlog" }), openBacklog);

    await p.request("POST", "/v1/admin/jobs/cancel", { json: { ids: relay }, token: TOKENS.admin });
    await tick(p, start + 4 * MINUTE);
    assert.deepEqual(backlogEvents().map((b) => b.event_action), ["trigger", "resolve"]);
    assert.equal(backlogEvents()[1].routing_key, "routing-key-1");

    await tick(p, start + 2 * 60 * MINUTE); // the failures left the one-hour window
    assert.equal(failureTexts().length, 2);
    assert.match(failureTexts()[1], /alert failure_rate\/default resolved/);
    await tick(p, start + 2 * 60 * MINUTE + MINUTE);
    assert.equal(failureTexts().length, 2);
    assert.equal(backlogEvents().length, 2);
    assert.equal(await p.count(open), 0);
  });

  test("a budget threshold the budget module recorded becomes an alert, resolved next month", async () => {
    const month = new Date().toISOString().slice(0, 7);
    await p.db.prepare("INSERT INTO budget_alerts (job_type, month, threshold, spent_cents, limit_cents, created_at) VALUES ('ai_tagging', ?, 90, 45000, 50000, 0)").bind(month).run();
    await tick(p, Date.now());
    const texts = slackTexts(/alert budget\/ai_tagging:90/);
    assert.equal(texts.length, 1);
    assert.match(texts[0], /\[warning\].*ai_tagging reached 90 % of this month's budget \(\$450\.00 of \$500\.00\)/);
    assert.equal(await p.count("SELECT COUNT(*) FROM budget_alerts WHERE notified_at IS NULL"), 0);
    await tick(p, Date.now() + 40 * DAY);
    assert.equal(slackTexts(/alert budget\/ai_tagging:90/).length, 2);
    assert.match(slackTexts(/alert budget\/ai_tagging:90/)[1], /resolved/);
  });
});
