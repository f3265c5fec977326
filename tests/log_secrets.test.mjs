// Credentials never reach the logs: a webhook URL is its own secret (a Slack webhook's path is
// the key) and so is a PagerDuty routing key. Escalations and alerts are driven through the real
// sweep with every channel failing (an error status, a closed port), which is when URLs used
// to be logged; every line either Worker logs is checked, and is JSON. The built WASM on local workerd, real
// D1; the webhooks are a real local HTTP server.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { jobMessage, startPlatform } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";
import { tick, DAY, MINUTE } from "./support/sweep.mjs";

const SECRETS = ["SlackPathSecret", "slack-query-secret", "DigestPathSecret", "digest-query-secret", "pd-routing-key-secret", "pd-query-secret"];
const SLACK_PATH = "/services/T0/B0/SlackPathSecret?token=slack-query-secret";
const DIGEST_PATH = "/digest/DigestPathSecret?key=digest-query-secret";
const PAGERDUTY_PATH = "/v2/enqueue?auth=pd-query-secret";

let hooks;
let p;
const lines = [];
before(async () => {
  hooks = await startAppServer();
  for (const path of [DIGEST_PATH, PAGERDUTY_PATH]) hooks.script(path, [{ status: 500, body: { error: "down" } }]);
  p = await startPlatform({
    manualDelivery: true,
    onLog: ({ message }) => {
      lines.push(message);
    },
    producerBindings: {
      PAGERDUTY_EVENTS_URL: hooks.url(PAGERDUTY_PATH),
      PAGERDUTY_ROUTING_KEY: "pd-routing-key-secret",
      // Nothing listens on port 9: the request itself fails.
      SLACK_WEBHOOK_URL: `http://127.0.0.1:9${SLACK_PATH}`,
      DIGEST_WEBHOOK_URL: hooks.url(DIGEST_PATH),
      ALERT_BACKLOG_THRESHOLD: "1",
    },
  });
});
after(async () => {
  await p.dispose();
  await hooks.close();
});

/** Enqueues one job of `type` and delivers it; with no endpoint set it goes dead at once. */
async function deadJob(queue, type, payload) {
  const enq = await p.enqueue({ type, payload });
  assert.equal(enq.status, 202, JSON.stringify(enq.body));
  await p.deliver(queue, [jobMessage(enq.body.id, type)]);
  return enq.body.id;
}

test("failing page, chat and digest webhooks are logged by channel and host, never with a secret", async () => {
  const paged = await deadJob("jobs-high", "stock_refresh", {});
  const chatted = await deadJob("jobs-default", "weather_refresh", { kind: "alerts" });
  await deadJob("jobs-low", "social_refresh", {});
  await p.enqueue({ type: "message_relay", payload: { message_id: "m-1" } });
  await p.enqueue({ type: "message_relay", payload: { message_id: "m-2" } });
  const now = Date.now();
  await tick(p, now);
  await tick(p, now + DAY + MINUTE);

  // Every channel was tried, with its secret URL and key, and failed.
  assert.ok(hooks.requests(PAGERDUTY_PATH).some((r) => JSON.parse(r.body).routing_key === "pd-routing-key-secret"));
  assert.ok(hooks.requests(DIGEST_PATH).length >= 1, "the digest was posted");
  const still = await p.count("SELECT COUNT(*) FROM jobs WHERE id IN (?, ?) AND escalated_at IS NULL", paged, chatted);
  assert.equal(still, 2, "both escalations failed and wait for the next tick");

  for (const line of lines) {
    for (const secret of SECRETS) assert.ok(!line.includes(secret), `a log line holds ${secret}: ${line}`);
  }
  // What the failures do say: the channel and the host.
  const failures = lines.filter((l) => /failed, retried next tick/.test(l));
  const said = (pattern) => failures.some((l) => pattern.test(l));
  assert.ok(said(new RegExp(`dead job ${paged} failed.*pagerduty \\(127\\.0\\.0\\.1\\) answered 500`)), failures.join("\n"));
  assert.ok(said(new RegExp(`dead job ${chatted} failed.*slack \\(127\\.0\\.0\\.1\\): the request failed`)), failures.join("\n"));
  assert.ok(said(/digest for .* failed.*digest \(127\.0\.0\.1\) answered 500/), failures.join("\n"));
  assert.ok(said(/alert backlog\/high notification failed.*pagerduty \(127\.0\.0\.1\) answered 500/), failures.join("\n"));

  // Every line either Worker wrote is one JSON object with its event and level (docs/operating.md
  // "Log schema"); a failure is a worker.error saying where.
  for (const line of lines) {
    const parsed = JSON.parse(line);
    assert.ok(typeof parsed.event === "string" && typeof parsed.level === "string", line);
  }
  const sources = new Set(failures.map((l) => JSON.parse(l)).map((l) => `${l.event} ${l.level} ${l.source}`));
  assert.deepEqual([...sources].sort(), ["worker.error error alert_evaluator", "worker.error error dead_job_escalator"]);

});
