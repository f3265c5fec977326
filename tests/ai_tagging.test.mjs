// ai_tagging under a monthly budget (docs/app-guide.md "AI tagging and budgets"): the built-in
// handler against a real local server speaking the Anthropic Messages API shape and reporting token
// usage. Each test lays out this month's budget and the untagged feed items, delivers one job to
// the consumer and reads what D1, the job and the LLM server saw. Every reply costs 6 cents.
import { after, before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { jobMessage, logCollector, startPlatform, TOKENS } from "./support/platform.mjs";
import { adminApi } from "./support/admin_api.mjs";
import { startLlmServer, LLM_KEY, USAGE, CENTS_PER_CALL } from "./support/llm_server.mjs";
import { parsePrometheusText, sampleValue } from "./support/prometheus_text.mjs";

const monthOf = (d) => d.toISOString().slice(0, 7);
const thisMonth = () => monthOf(new Date());
function monthsAgo(n) {
  const d = new Date();
  d.setUTCDate(1);
  d.setUTCMonth(d.getUTCMonth() - n);
  return monthOf(d);
}
function nextMonthStart() {
  const d = new Date();
  return new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)).toISOString();
}

let llm;
let p;
let api;
const logs = logCollector();
before(async () => {
  llm = await startLlmServer();
  p = await startPlatform({
    manualDelivery: true,
    // SPAN_EVENTS_MAX below the NORMAL test's 45 items shows the bound on per-item lines.
    consumerBindings: { LLM_BASE_URL: llm.base, LLM_API_KEY: LLM_KEY, LLM_MODEL: "claude-test", SPAN_EVENTS_MAX: "30" },
    onLog: logs.onLog,
  });
  api = await adminApi(p);
  await p.db
    .prepare("INSERT INTO rss_sources (id, name, url, created_at, updated_at) VALUES ('src', 'News', 'https://n.io/feed', 0, 0)")
    .run();
});
after(async () => {
  await p.dispose();
  await llm.close();
});

/** Log lines of one event since the last reset, parsed. */
const { events } = logs;

let guid = 0;
/** This month's budget (none when `limit` is null) and untagged items with these titles. */
async function reset({ limit = 10_000, spent = 0, titles = [] } = {}) {
  await p.db.batch(["feed_items", "budgets", "budget_alerts"].map((t) => p.db.prepare(`DELETE FROM ${t}`)));
  const statements = titles.map((title, i) =>
    p.db
      .prepare(
        "INSERT INTO feed_items (source_id, item_guid, title, url, description, content_hash, created_at) " +
          "VALUES ('src', ?, ?, ?, 'About things.', 'h', 0)",
      )
      .bind(`g-${++guid}`, title, `https://n.io/${i}`),
  );
  if (limit !== null) {
    statements.push(
      p.db
        .prepare("INSERT INTO budgets (job_type, month, limit_cents, spent_cents, updated_at) VALUES ('ai_tagging', ?, ?, ?, 0)")
        .bind(thisMonth(), limit, spent),
    );
  }
  if (statements.length) await p.db.batch(statements);
  llm.clear();
  logs.lines.length = 0;
}

const titles = (n, prefix = "Story") => Array.from({ length: n }, (_, i) => `${prefix} ${i + 1}`);

/** Enqueues an ai_tagging job, delivers its message, and returns the job and the queue decisions. */
async function runJob() {
  const enq = await p.enqueue({ type: "ai_tagging", payload: { trigger: "manual" } });
  assert.equal(enq.status, 202, JSON.stringify(enq.body));
  const id = enq.body.id;
  const decisions = await p.deliver("jobs-bulk", [{ id: `m-${id}-${Date.now()}`, ...jobMessage(id, "ai_tagging") }]);
  return { job: (await p.getJob(id)).body, decisions };
}

const items = async () =>
  (await p.db.prepare("SELECT id, title, ai_tagged, ai_tags, ai_lease_until FROM feed_items ORDER BY id").all()).results;
const budgetRow = (month = thisMonth()) =>
  p.db.prepare("SELECT * FROM budgets WHERE job_type = 'ai_tagging' AND month = ?").bind(month).first();
const alertRows = async (month = thisMonth()) =>
  (await p.db.prepare("SELECT threshold, notified_at FROM budget_alerts WHERE month = ? ORDER BY threshold").bind(month).all()).results;

describe("ai_tagging under a monthly budget", () => {
  test("NORMAL (< 75 %): batches of 20, each item tagged by one Messages API call, spend and run cost recorded", async () => {
    await reset({ limit: 10_000, titles: titles(45) });
    const { job, decisions } = await runJob();
    assert.equal(job.status, "succeeded", JSON.stringify(job));
    assert.equal(decisions.explicitAcks.length, 1);
    assert.deepEqual(
      job.result.batches.map((b) => [b.action, b.size, b.tagged]),
      [["normal", 20, 20], ["normal", 20, 20], ["normal", 5, 5]],
    );
    assert.deepEqual([job.result.tagged, job.result.invalid, job.result.failed, job.result.deferred], [45, 0, 0, false]);

    const calls = llm.requests();
    assert.equal(calls.length, 45);
    for (const call of calls) {
      assert.equal(call.headers["x-api-key"], LLM_KEY);
      assert.equal(call.headers["anthropic-version"], "2023-06-01");
      assert.equal(call.body.model, "claude-test");
      assert.equal(call.body.messages[0].role, "user");
    }
    assert.deepEqual(new Set(calls.map((c) => c.title)).size, 45, "one call per item");

    const rows = await items();
    assert.ok(rows.every((r) => r.ai_tagged === 1 && r.ai_lease_until === null));
    assert.deepEqual(JSON.parse(rows[0].ai_tags), {
      topics: ["AI", "Machine Learning", "Technology"],
      sentiment: "positive",
      categories: ["Technology", "Science"],
      confidence: 0.85,
    });

    const budget = await budgetRow();
    const cost = 45 * CENTS_PER_CALL;
    assert.deepEqual(
      [budget.spent_cents, budget.requests, budget.tokens_input, budget.tokens_output],
      [cost, 45, 45 * USAGE.input_tokens, 45 * USAGE.output_tokens],
    );
    assert.equal(job.result.cost_cents, cost);
    assert.equal(job.runs[0].cost_cents, cost, "the run record carries the attempt's cost");
    // The run record says what ran: the model, and calls and tokens equal to the budget's
    // counters; its LLM responses, too large to keep inline, are one R2 object per run.
    const run = job.runs[0];
    assert.equal(run.handler, "ai_tagging");
    assert.deepEqual(run.llm, {
      model: "claude-test",
      calls: budget.requests,
      input_tokens: budget.tokens_input,
      output_tokens: budget.tokens_output,
    });
    assert.ok(run.bytes.out > 0 && run.bytes.in > 0, JSON.stringify(run.bytes));
    assert.equal(run.artifacts.length, 1);
    const [artifact] = run.artifacts;
    assert.deepEqual(
      [artifact.kind, artifact.key, artifact.content_type, artifact.inline],
      ["llm_responses", `artifacts/${job.id}/1/llm_responses.jsonl`, "application/x-ndjson", undefined],
    );
    const stored = await (await p.mf.getR2Bucket("ARTIFACTS", p.consumerName)).get(artifact.key);
    const text = await stored.text();
    assert.equal(artifact.size, Buffer.byteLength(text));
    const responses = text.trim().split("\n").map((line) => JSON.parse(line));
    assert.equal(responses.length, 45, "one line per call");
    assert.equal(new Set(responses.map((r) => r.item_id)).size, 45);
    for (const r of responses) {
      assert.equal(r.status, "tagged");
      assert.deepEqual([r.input_tokens, r.output_tokens], [USAGE.input_tokens, USAGE.output_tokens]);
      assert.equal(JSON.parse(r.reply).sentiment, "positive");
    }
    assert.deepEqual(job.artifacts, [{ ...artifact, run: 1 }]);
    // The API serves the same lines from R2.
    const served = await p.mf.dispatchFetch(`http://jobs.local/v1/jobs/${job.id}/artifacts/1/llm_responses`, {
      headers: { authorization: `Bearer ${TOKENS.enqueue}` },
    });
    assert.deepEqual([served.status, served.headers.get("content-type"), await served.text()], [200, "application/x-ndjson", text]);
    assert.deepEqual(await alertRows(), [], "2.7 % raises nothing");
    const [check] = events("budget.check");
    assert.equal(check.budget_action, "normal");
    // A per-job event with the span's fields, so one job's or request's story has it.
    assert.deepEqual([check.level, check["job.type"], check["job.attempt"], typeof check.correlation_id], ["info", "ai_tagging", 1, "string"]);

    // item.tagged per stored item, up to SPAN_EVENTS_MAX (30); the other 15 are counted once.
    const tagged = events("item.tagged");
    assert.equal(tagged.length, 30);
    const ids = new Set(rows.map((r) => r.id));
    for (const line of tagged) {
      assert.deepEqual(
        [line["job.id"], line["job.type"], line.correlation_id, line.level],
        [job.id, "ai_tagging", job.correlation_id, "info"],
      );
      assert.ok(ids.has(line.item_id), `item ${line.item_id}`);
      assert.deepEqual(
        [line.topics, line.sentiment, line.categories],
        [["AI", "Machine Learning", "Technology"], "positive", ["Technology", "Science"]],
      );
    }
    assert.equal(new Set(tagged.map((l) => l.item_id)).size, 30, "one line per item");
    const [summary, ...more] = events("events.suppressed");
    assert.deepEqual([summary["job.id"], summary.suppressed, summary["span_events.max"], more.length], [job.id, { "item.tagged": 15 }, 30, 0]);
  });

  test("REDUCE (75-90 %): batches of 10; the 90 % alert is raised when a batch reaches it", async () => {
    await reset({ limit: 1000, spent: 760, titles: titles(25) });
    const { job } = await runJob();
    assert.equal(job.status, "succeeded");
    // 760 -> 820 -> 880 -> 910 cents.
    assert.deepEqual(
      job.result.batches.map((b) => [b.action, b.size]),
      [["reduce", 10], ["reduce", 10], ["reduce", 5]],
    );
    assert.equal(job.result.tagged, 25);
    assert.deepEqual(job.result.budget, { action: "queue", spent_cents: 910, limit_cents: 1000, percent_used: 91 });
    assert.deepEqual((await alertRows()).map((a) => a.threshold), [75, 90]);
    assert.deepEqual(
      events("budget.alert").map((e) => [e.threshold, e.level, e.month]),
      [[75, "info", thisMonth()], [90, "warning", thisMonth()]],
    );
  });

  test("the batch size follows the budget within one job (NORMAL then REDUCE), for at most 12 batches", async () => {
    await reset({ limit: 10_000, spent: 7000, titles: titles(241) });
    const { job } = await runJob();
    // 7000 + 5 x 120 = 7600 cents (76 %): then batches of 10 until the 12th.
    const sizes = job.result.batches.map((b) => `${b.action}:${b.size}`);
    assert.deepEqual(sizes, [...Array(5).fill("normal:20"), ...Array(7).fill("reduce:10")]);
    assert.deepEqual(
      [job.result.taken, job.result.tagged, job.result.not_reached, job.result.stopped],
      [240, 170, 70, "max_batches"],
    );
    assert.equal(job.result.budget.spent_cents, 8020);
    const rows = await items();
    assert.equal(rows.filter((r) => r.ai_tagged === 1).length, 170);
    assert.ok(rows.every((r) => r.ai_lease_until === null), "what the job did not reach is free again");
  });

  test("QUEUE (90-100 %): the job succeeds as deferred, with no call and no item touched", async () => {
    await reset({ limit: 1000, spent: 920, titles: titles(5) });
    const { job, decisions } = await runJob();
    assert.equal(job.status, "succeeded");
    assert.equal(job.attempts, 1);
    assert.deepEqual(decisions.retryMessages, []);
    assert.equal(job.result.deferred, true);
    assert.equal(job.result.budget.action, "queue");
    assert.equal("resumes_at" in job.result, false, "the next run checks again (only a hard stop, now skipped, had a resume time)");
    assert.match(job.result.reason, /92 %: deferred to the next run/);
    assert.equal(llm.requests().length, 0);
    assert.ok((await items()).every((r) => r.ai_tagged === 0 && r.ai_lease_until === null));
    assert.equal(job.runs[0].cost_cents, 0);
    assert.equal(events("budget.throttle")[0].budget_action, "queue");
  });

  test("HARD_STOP (>= 100 %): the job is skipped, saying why and until when, with no call and no item touched", async () => {
    await reset({ limit: 1000, spent: 1000, titles: titles(5) });
    const { job, decisions } = await runJob();
    assert.equal(job.status, "skipped", JSON.stringify(job));
    assert.equal(job.result, null);
    assert.equal(job.error.class, "budget_hard_stop");
    const resumes = nextMonthStart().replace(/\.\d+Z$/, ".000Z");
    assert.match(job.error.message, /budget is at 100 % \(1000 of 1000 cents\): skipped until the month rolls over/);
    assert.ok(job.error.message.includes(`(${resumes})`), job.error.message);
    assert.ok(job.finished_at, "a skip ends the job");
    assert.deepEqual(job.runs.map((r) => [r.outcome, r.error?.class, r.cost_cents]), [["skipped", "budget_hard_stop", 0]]);
    assert.deepEqual([decisions.explicitAcks.length, decisions.retryMessages.length], [1, 0], "acked: nothing retries it");
    const [skipped] = events("job.skipped");
    assert.deepEqual([skipped["job.id"], skipped.reason, skipped["job.attempt"]], [job.id, "budget_hard_stop", 1]);
    assert.equal(events("job.completed").length + events("job.failed").length, 0);
    assert.equal(llm.requests().length, 0);
    assert.ok((await items()).every((r) => r.ai_tagged === 0 && r.ai_lease_until === null));
  });

  test("mid-batch stop: a batch that crosses the limit ends the job; alerts fire once each; raising the limit resumes and re-arms them", async () => {
    await reset({ limit: 200, spent: 140, titles: titles(30) });
    const first = (await runJob()).job;
    assert.equal(first.status, "succeeded");
    // 140 + 20 x 6 = 260 cents: 130 %, so the second batch never starts.
    assert.deepEqual(first.result.batches.map((b) => [b.action, b.size]), [["normal", 20]]);
    assert.deepEqual([first.result.stopped, first.result.tagged, first.result.not_reached], ["hard_stop", 20, 10]);
    assert.equal(llm.requests().length, 20);
    const rows = await items();
    assert.equal(rows.filter((r) => r.ai_tagged === 1).length, 20);
    assert.ok(rows.every((r) => r.ai_lease_until === null), "the 10 not reached are given back at once");
    assert.deepEqual(await alertRows(), [75, 90, 100].map((threshold) => ({ threshold, notified_at: null })));
    assert.deepEqual(events("budget.alert").map((e) => [e.threshold, e.level]), [[75, "info"], [90, "warning"], [100, "critical"]]);
    assert.equal(events("budget.exhausted_mid_batch")[0].tagged_count, 20);

    const again = (await runJob()).job;
    assert.deepEqual([again.status, again.error.class], ["skipped", "budget_hard_stop"]);
    assert.equal(llm.requests().length, 20, "no call under a hard stop");
    assert.equal((await alertRows()).length, 3, "each alert once a month");
    assert.equal(events("budget.alert").length, 3);

    const raised = await api.call("PATCH", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" }, json: { limit_cents: 10_000 } });
    assert.deepEqual([raised.status, raised.body.action, raised.body.alerts.length], [200, "normal", 0], "re-armed: the spend is under every threshold now");
    const resumed = (await runJob()).job;
    assert.deepEqual([resumed.result.tagged, resumed.result.budget.spent_cents], [10, 320]);
    assert.ok((await items()).every((r) => r.ai_tagged === 1));
    assert.equal((await alertRows()).length, 0);
  });

  test("a limit of 0 stops work without alerting; only spend reaches a threshold, and a raised limit re-arms it", async () => {
    await reset({ limit: 200, spent: 0 });
    const patch = (limit_cents) => api.call("PATCH", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" }, json: { limit_cents } });
    const stopped = await patch(0);
    assert.deepEqual([stopped.body.action, stopped.body.alerts], ["hard_stop", []]);
    assert.equal(events("budget.alert").length, 0, "nothing was spent: nothing to alert on");
    await patch(200);
    await p.db.prepare("UPDATE budgets SET spent_cents = 160 WHERE job_type = 'ai_tagging'").run();
    const lowered = await patch(200);
    assert.deepEqual(lowered.body.alerts.map((a) => a.threshold), [75], "the stop used up no threshold");
    assert.deepEqual((await patch(1_000)).body.alerts, [], "16 %: the 75 % alert is re-armed");
    assert.deepEqual((await patch(200)).body.alerts.map((a) => a.threshold), [75]);
    assert.equal(events("budget.alert").length, 2, "once per crossing");
  });

  test("invalid replies are skipped and counted, stay untagged and are still billed; a fenced reply is fine", async () => {
    const layout = ["Plain", "Fence [fenced]", "Prose [prose]", "Few [two-topics]", "Mood [angry]", "Sure [overconfident]", "Wide [many-categories]", "Down [500]"];
    await reset({ titles: layout });
    const { job } = await runJob();
    assert.equal(job.status, "succeeded", "per-item failures do not fail the job");
    assert.deepEqual([job.result.tagged, job.result.invalid, job.result.failed], [2, 5, 1]);
    const rows = await items();
    const tagged = rows.filter((r) => r.ai_tagged === 1).map((r) => r.title);
    assert.deepEqual(tagged, ["Plain", "Fence [fenced]"]);
    assert.equal(JSON.parse(rows[1].ai_tags).sentiment, "mixed");
    assert.ok(rows.every((r) => r.ai_lease_until === null), "skipped items are free for the next run");
    // Seven replies reported usage (the 500 did not): they were billed, valid or not.
    assert.equal(job.result.cost_cents, 7 * CENTS_PER_CALL);
    assert.deepEqual([(await budgetRow()).spent_cents, (await budgetRow()).requests], [7 * CENTS_PER_CALL, 8]);
    const failed = events("item.failed");
    assert.equal(failed.length, 6);
    assert.ok(failed.some((e) => e.kind === "invalid_reply" && /topics must have 3 to 5/.test(e.error)));
    assert.ok(failed.some((e) => e.kind === "call_failed" && /HTTP 500/.test(e.error)));
  });

  test("usage no budget can read is billed as the most the call could use; a claim past any call's is cut", async () => {
    await reset({ limit: 10_000, titles: ["Odd [bad-usage]", "Plain"] });
    const { job } = await runJob();
    assert.deepEqual([job.result.tagged, job.result.invalid], [1, 1]);
    // Claude Sonnet 4 prices: the request's bytes as input tokens at $3, max_tokens 400 at $15.
    const odd = llm.requests().find((r) => r.title.includes("[bad-usage]"));
    const most = ((odd.bytes * 3 + 400 * 15) / 1e6) * 100;
    assert.ok(most > 0.5, `a tagging request is over a kilobyte: ${odd.bytes}`);
    const budget = await budgetRow();
    assert.ok(Math.abs(budget.spent_cents - (most + CENTS_PER_CALL)) < 0.001, `${budget.spent_cents} ~ ${most} + 6`);
    assert.equal(budget.tokens_input, odd.bytes + USAGE.input_tokens);
    assert.ok(events("item.failed").some((e) => /billed as the most the call could use/.test(e.error)));

    // A reply claiming 2^64 - 1 tokens: billed as 1e9 (3,000 dollars, past the whole limit), and
    // the month's counters stay integers the budget routes read.
    await reset({ limit: 10_000, titles: ["Greedy [huge-usage]", "Next"] });
    const greedy = await runJob();
    assert.equal(greedy.job.status, "succeeded", JSON.stringify(greedy.job.error));
    assert.equal(greedy.job.result.tagged, 2, "one batch: both calls were made before the spend was known");
    const row = await budgetRow();
    assert.equal(row.tokens_input, 1e9 + USAGE.input_tokens);
    const status = await api.call("GET", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" } });
    assert.equal(status.status, 200, JSON.stringify(status.body));
    assert.equal(status.body.tokens.input, 1e9 + USAGE.input_tokens);
    assert.equal(status.body.action, "hard_stop");
  });

  test("a 429 from the LLM keeps what was tagged and retries the job after its Retry-After", async () => {
    await reset({ titles: ["One", "Two", "Three", "Busy [429]"] });
    const { job, decisions } = await runJob();
    assert.equal(job.status, "retrying");
    assert.equal(job.error.class, "rate_limited");
    assert.deepEqual(decisions.retryMessages.map((m) => m.delaySeconds), [120]);
    const rows = await items();
    assert.deepEqual(rows.map((r) => r.ai_tagged), [1, 1, 1, 0]);
    assert.equal(rows[3].ai_lease_until, null);
    assert.equal(job.runs[0].cost_cents, 3 * CENTS_PER_CALL, "a failed run still records what it spent");
    assert.equal((await budgetRow()).spent_cents, 3 * CENTS_PER_CALL);
  });

  test("a key the LLM refuses makes the job dead (not_configured) at once", async () => {
    await reset({ titles: ["Revoked [401]", "Other"] });
    const { job } = await runJob();
    assert.equal(job.status, "dead");
    assert.equal(job.error.class, "not_configured");
    assert.equal((await items()).filter((r) => r.ai_tagged === 1).length, 1);
  });

  test("D1 refusing the tags write still records the spend: the money is gone either way", async () => {
    await reset({ limit: 10_000, titles: titles(3) });
    // A real D1 fault: storing tags aborts; everything else (the budget) still writes.
    await p.db.prepare("CREATE TRIGGER tags_down BEFORE UPDATE OF ai_tags ON feed_items BEGIN SELECT RAISE(ABORT, 'tags down'); END").run();
    try {
      const { job } = await runJob();
      assert.equal(llm.requests().length, 3, "the calls were made");
      assert.equal(job.status, "retrying", JSON.stringify(job));
      const budget = await budgetRow();
      assert.deepEqual([budget.spent_cents, budget.requests], [3 * CENTS_PER_CALL, 3], "the spend is counted");
      assert.equal(job.runs[0].error.class, "internal");
      assert.match(job.runs[0].error.message, /tags down[\s\S]*spend is recorded/);
      assert.equal(job.runs[0].cost_cents, 3 * CENTS_PER_CALL);
      assert.ok((await items()).every((r) => r.ai_tagged === 0), "no tag was stored");
      assert.equal(events("item.tagged").length, 0, "item.tagged only for a stored tag");
    } finally {
      await p.db.prepare("DROP TRIGGER tags_down").run();
    }
  });

  test("GET /metrics: ai_tagging_* summed over the budget rows, throttles counted, ai_budget_percent_used as the budget API says", async () => {
    // 2 tagged, 2 not (an invalid reply, a 500).
    await reset({ limit: 1000, titles: ["Plain", "Fence [fenced]", "Few [two-topics]", "Down [500]"] });
    const { job } = await runJob();
    assert.deepEqual([job.result.tagged, job.result.invalid + job.result.failed], [2, 2]);
    assert.deepEqual(events("item.tagged").map((l) => l.sentiment).sort(), ["mixed", "positive"]);
    // Each run the budget holds back (QUEUE, then HARD_STOP) is a throttle.
    const spend = (cents) =>
      p.db.prepare("UPDATE budgets SET spent_cents = ? WHERE job_type = 'ai_tagging' AND month = ?").bind(cents, thisMonth()).run();
    await spend(920);
    assert.equal((await runJob()).job.result.deferred, true);
    await spend(1000);
    assert.equal((await runJob()).job.status, "skipped");
    await spend(457.25);
    await p.db
      .prepare(
        "INSERT INTO budgets (job_type, month, limit_cents, spent_cents, tokens_input, tokens_output, items_tagged, items_failed, throttles, updated_at) " +
          "VALUES ('ai_tagging', ?, 500, 100, 10, 5, 3, 1, 2, 0)",
      )
      .bind(monthsAgo(1))
      .run();

    const row = await budgetRow();
    assert.deepEqual([row.items_tagged, row.items_failed, row.throttles], [2, 2, 2]);
    const m = parsePrometheusText((await p.request("GET", "/metrics", { token: TOKENS.admin })).body);
    assert.equal(m.get("ai_tagging_items_total").type, "counter");
    assert.equal(sampleValue(m, "ai_tagging_items_total", { status: "success" }), 2 + 3);
    assert.equal(sampleValue(m, "ai_tagging_items_total", { status: "failure" }), 2 + 1);
    assert.equal(sampleValue(m, "ai_tagging_tokens_total", { type: "input" }), row.tokens_input + 10);
    assert.equal(sampleValue(m, "ai_tagging_tokens_total", { type: "output" }), row.tokens_output + 5);
    assert.equal(row.tokens_input, 3 * USAGE.input_tokens, "three replies reported usage");
    assert.equal(sampleValue(m, "ai_tagging_cost_cents_total"), 457.25 + 100);
    assert.equal(sampleValue(m, "ai_tagging_budget_throttles_total"), 2 + 2);
    assert.equal(m.get("ai_budget_percent_used").type, "gauge");
    const status = await api.call("GET", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" } });
    assert.equal(status.body.percent_used, 45.73);
    assert.equal(sampleValue(m, "ai_budget_percent_used"), status.body.percent_used);

    // A month with no row yet: 0 % of the limit it would start with, as the budget API says.
    await p.db.prepare("DELETE FROM budgets WHERE month = ?").bind(thisMonth()).run();
    const fresh = parsePrometheusText((await p.request("GET", "/metrics", { token: TOKENS.admin })).body);
    const freshStatus = await api.call("GET", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" } });
    assert.deepEqual([freshStatus.body.limit_cents, freshStatus.body.percent_used], [500, 0]);
    assert.equal(sampleValue(fresh, "ai_budget_percent_used"), 0);
  });

  test("month rollover: last month's hard stop does not carry over; its limit does; alerts start afresh", async () => {
    await reset({ limit: null, titles: titles(5) });
    const last = monthsAgo(1);
    await p.db.batch([
      p.db
        .prepare("INSERT INTO budgets (job_type, month, limit_cents, spent_cents, requests, updated_at) VALUES ('ai_tagging', ?, 500, 600, 100, 0)")
        .bind(last),
      ...[75, 90, 100].map((t) =>
        p.db
          .prepare("INSERT INTO budget_alerts (job_type, month, threshold, spent_cents, limit_cents, created_at) VALUES ('ai_tagging', ?, ?, 600, 500, 0)")
          .bind(last, t),
      ),
    ]);
    const { job } = await runJob();
    assert.equal(job.result.month, thisMonth());
    assert.deepEqual([job.result.deferred, job.result.tagged], [false, 5]);
    const row = await budgetRow();
    assert.deepEqual([row.limit_cents, row.spent_cents], [500, 30], "the new month starts from last month's limit");
    assert.deepEqual(await alertRows(), []);

    const status = await api.call("GET", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" } });
    assert.deepEqual([status.body.month, status.body.action, status.body.percent_used, status.body.alerts], [thisMonth(), "normal", 6, []]);
    const history = await api.call("GET", "/v1/admin/budgets/{type}/history", { params: { type: "ai_tagging" }, query: "?months=2" });
    assert.deepEqual(
      history.body.months.map((m) => [m.month, m.action, m.percent_used, m.alerts]),
      [[thisMonth(), "normal", 6, []], [last, "hard_stop", 120, [75, 90, 100]]],
    );
    const one = await api.call("GET", "/v1/admin/budgets/{type}/history", { params: { type: "ai_tagging" }, query: "?months=1" });
    assert.deepEqual(one.body.months.map((m) => m.month), [thisMonth()]);
  });
});

describe("budget admin routes", () => {
  beforeEach(() => reset({ limit: null }));

  test("status of a month with no row yet shows the limit it would start with", async () => {
    const res = await api.call("GET", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" } });
    assert.deepEqual(
      [res.body.limit_cents, res.body.spent_cents, res.body.action, res.body.batch_size, res.body.resets_at],
      [50_000, 0, "normal", 20, nextMonthStart().replace(/\.\d+Z$/, ".000Z")],
    );
    const list = await api.call("GET", "/v1/admin/budgets");
    assert.deepEqual(list.body.budgets.map((b) => b.job_type), ["ai_tagging"]);
  });

  test("PATCH sets this month's limit, audited; a lower limit raises the alerts it crosses", async () => {
    await reset({ limit: 50_000, spent: 400 });
    const res = await api.call("PATCH", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" }, json: { limit_cents: 500 } });
    assert.deepEqual([res.status, res.body.limit_cents, res.body.percent_used, res.body.action, res.body.batch_size], [200, 500, 80, "reduce", 10]);
    assert.deepEqual(res.body.alerts.map((a) => [a.threshold, a.level, a.notified_at]), [[75, "info", null]]);
    assert.equal(events("budget.alert").length, 1);
    const audit = (await api.call("GET", "/v1/admin/audit")).body.entries.find((e) => e.action === "budget.limit");
    assert.deepEqual(audit.target, { job_type: "ai_tagging", month: thisMonth(), limit_cents: 500 });
    assert.equal(audit.affected, 1);
    // Again: no second alert.
    await api.call("PATCH", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" }, json: { limit_cents: 510 } });
    assert.equal((await alertRows()).length, 1);
  });

  test("bad input names the field and writes nothing", async () => {
    const audited = await p.count("SELECT COUNT(*) FROM audit_log");
    const patch = (json, extra = {}) => api.call("PATCH", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" }, json, ...extra });
    for (const [body, code, field] of [
      [{ limit_cents: -1 }, "out_of_range", "limit_cents"],
      [{ limit_cents: 100_000_001 }, "out_of_range", "limit_cents"],
      [{ limit_cents: 12.5 }, "invalid_field", "limit_cents"],
      [{ limit_cents: "500" }, "invalid_field", "limit_cents"],
      [{}, "invalid_field", "limit_cents"],
      [{ limit_cents: 500, budgetLimitCents: 500 }, "unknown_field", "budgetLimitCents"],
    ]) {
      const res = await patch(body);
      assert.deepEqual([res.status, res.body.error.code, res.body.error.field], [422, code, field], JSON.stringify(body));
    }
    assert.equal((await patch([500])).status, 400);
    const raw = await api.call("PATCH", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" }, body: "{nope", headers: { "content-type": "application/json" } });
    assert.equal(raw.body.error.code, "malformed_json");
    const text = await api.call("PATCH", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" }, body: "limit=5", headers: { "content-type": "text/plain" } });
    assert.equal(text.status, 415);
    const none = await api.call("PATCH", "/v1/admin/budgets/{type}", { params: { type: "http" }, json: { limit_cents: 5 } });
    assert.deepEqual([none.status, none.body.error.field], [404, "type"]);
    assert.equal((await api.call("GET", "/v1/admin/budgets/{type}", { params: { type: "nope" } })).status, 404);
    assert.equal((await api.call("GET", "/v1/admin/budgets/{type}/history", { params: { type: "http" } })).status, 404);
    for (const query of ["?months=0", "?months=25", "?months=x"]) {
      const res = await api.call("GET", "/v1/admin/budgets/{type}/history", { params: { type: "ai_tagging" }, query });
      assert.deepEqual([res.status, res.body.error.field], [422, "months"], query);
    }
    const unknown = await api.call("GET", "/v1/admin/budgets/{type}/history", { params: { type: "ai_tagging" }, query: "?month=1" });
    assert.deepEqual([unknown.status, unknown.body.error.code], [422, "unknown_field"]);
    assert.equal((await api.call("GET", "/v1/admin/budgets", { query: "?type=x" })).status, 422);
    const del = await p.request("DELETE", "/v1/admin/budgets/ai_tagging", { token: TOKENS.admin });
    assert.deepEqual([del.status, del.body.error.code], [405, "method_not_allowed"]);
    assert.equal(await p.count("SELECT COUNT(*) FROM budgets"), 0);
    assert.equal(await p.count("SELECT COUNT(*) FROM audit_log"), audited);
  });

  test("admin scope only", async () => {
    const enqueue = await api.call("GET", "/v1/admin/budgets", { token: TOKENS.enqueue });
    assert.deepEqual([enqueue.status, enqueue.body.error.code], [403, "forbidden"]);
    const patch = await api.call("PATCH", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" }, json: { limit_cents: 1 }, token: TOKENS.enqueue });
    assert.equal(patch.status, 403);
    assert.equal((await api.call("GET", "/v1/admin/budgets/{type}/history", { params: { type: "ai_tagging" }, token: null })).status, 401);
    assert.equal((await api.call("GET", "/v1/admin/budgets/{type}", { params: { type: "ai_tagging" }, token: "wrong" })).status, 401);
    assert.equal(await p.count("SELECT COUNT(*) FROM budgets"), 0);
  });

  test("every documented budgets operation was exercised against the OpenAPI document", () => {
    const { documented, missing } = api.coverage("/v1/admin/budgets");
    assert.equal(documented.length, 4);
    assert.deepEqual(missing, []);
  });
});
