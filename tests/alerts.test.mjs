// The alert rules on a family's last hour of attempts (docs/operating.md "Alerts"): SLA breach,
// processing time, rate limiting and latency spike. Real jobs run on the built consumer against a
// real local endpoint; their attempts' records are then moved, whole, to the evaluation time (as if
// they had just run), and the real sweep evaluates them and tells the real local chat webhook.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { enqueueBatch, jobMessage, startPlatform } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";
import { tick, DAY, HOUR, MINUTE } from "./support/sweep.mjs";

describe("alert rules on the hour's attempts", () => {
  let p, hooks;
  before(async () => {
    hooks = await startAppServer();
    p = await startPlatform({
      manualDelivery: true,
      producerBindings: {
        SLACK_WEBHOOK_URL: hooks.url("/slack"),
        ALERT_FAILURE_MIN_RUNS: "4",
        ALERT_AVG_PROCESSING_SECS: "1",
        ALERT_SPIKE_MIN_MS: "500",
      },
    });
  });
  after(async () => {
    await p.dispose();
    await hooks.close();
  });

  /** The chat messages about `rule` on the default family. */
  const texts = (rule) =>
    hooks.requests("/slack").map((r) => JSON.parse(r.body).text).filter((t) => t.includes(`alert ${rule}/default`));

  /** `n` http jobs to `path`, due `dueAgo` ms before they run, run in one batch; returns their ids. */
  async function run(path, n, dueAgo = 0) {
    const job = { type: "http", payload: { url: hooks.url(path) } };
    const ids = await enqueueBatch(p, job, n);
    await p.db.prepare("UPDATE jobs SET run_at = run_at - ?1 WHERE id IN (SELECT value FROM json_each(?2))").bind(dueAgo, JSON.stringify(ids)).run();
    await p.deliver("jobs-default", ids.map((id) => jobMessage(id, job.type)));
    return ids;
  }

  /** Moves the jobs' attempts (failed runs, their batch's successes) and due times by the same
   * amount, so they ended `endedAgo` before `at`. */
  async function endedAt(ids, at, endedAgo = MINUTE) {
    const shift = at - endedAgo - Date.now();
    const list = JSON.stringify(ids);
    await p.db.batch([
      p.db.prepare("UPDATE job_runs SET started_at = started_at + ?1, finished_at = finished_at + ?1 WHERE job_id IN (SELECT value FROM json_each(?2))").bind(shift, list),
      p.db.prepare("UPDATE success_batches SET finished_at = finished_at + ?1 WHERE first_job_id IN (SELECT value FROM json_each(?2))").bind(shift, list),
      p.db.prepare("UPDATE jobs SET run_at = run_at + ?1 WHERE id IN (SELECT value FROM json_each(?2))").bind(shift, list),
    ]);
  }

  /** Ticks at `at`: the rule opens once; two hours later, with the runs out of the window, it resolves. */
  async function opensThenResolves(rule, at, summary) {
    await tick(p, at);
    assert.equal(texts(rule).length, 1, `${rule} opened`);
    assert.match(texts(rule)[0], summary);
    await tick(p, at + MINUTE);
    assert.equal(texts(rule).length, 1, "quiet while it fires");
    await tick(p, at + 2 * HOUR);
    assert.equal(texts(rule).length, 2);
    assert.match(texts(rule)[1], new RegExp(`alert ${rule}/default resolved`));
  }

  test("sla_breach: the p95 from due time to end over the family's SLA (default: 300 s)", async () => {
    const at = Date.now() + 1 * DAY;
    const ids = await run("/sla", 4);
    await endedAt(ids, at);
    await tick(p, at);
    assert.equal(texts("sla_breach").length, 0, "run at once: inside the SLA");
    await endedAt(await run("/sla", 4, 10 * MINUTE), at);
    await opensThenResolves("sla_breach", at + MINUTE, /firing: default p95 latency is 60\d\.\d s over the last hour \(8 jobs ended; SLA 300 s\)/);
  });

  test("processing_time: attempts averaging over ALERT_AVG_PROCESSING_SECS", async () => {
    const at = Date.now() + 4 * DAY;
    hooks.script("/slow", [{ status: 200, delayMs: 1200 }]);
    await endedAt(await run("/slow", 4), at);
    await opensThenResolves("processing_time", at, /firing: default attempts take 1\.\d s on average over the last hour \(threshold 1 s\)/);
  });

  test("rate_limited: 429 answers over ALERT_RATE_LIMITED_PCT (5 %) of the attempts", async () => {
    const at = Date.now() + 7 * DAY;
    const busy = { status: 429, headers: { "retry-after": "3600" } };
    hooks.script("/busy", [busy, busy, { status: 200 }]);
    await endedAt(await run("/busy", 20), at);
    await opensThenResolves("rate_limited", at, /firing: default rate-limit answers are 10\.0 % of the last hour's attempts \(2 of 20; threshold 5 %\)/);
  });

  test("latency_spike: the last 5 minutes' p95 over 3x the rest of the hour's", async () => {
    const at = Date.now() + 10 * DAY;
    await endedAt(await run("/fast", 4), at, 30 * MINUTE);
    hooks.script("/spiking", [{ status: 200, delayMs: 1200 }]);
    await endedAt(await run("/spiking", 4), at);
    await opensThenResolves("latency_spike", at, /firing: default p95 attempt time is 1\d{3} ms over the last 300 s, \d+\.\dx the rest of the hour's \d+ ms/);
  });
});
