// Job chains: a scrape -> generate -> test flow (docs/app-guide.md "Job chains") as one chain of
// jobs on the real local queues, with a real local HTTP server as the three phases' endpoints.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { TOKENS, withPlatformAndApp } from "./support/platform.mjs";

let app;
let p;
withPlatformAndApp((started) => ({ app, p } = started));

const step = (path, extra = {}) => ({ type: "http", payload: { url: app.url(path) }, ...extra });
/** A step whose target the enqueuer trusts to answer follow-up jobs. */
const trusting = (path) => ({ type: "http", payload: { url: app.url(path), allow_follow_ups: true } });

/** Waits until the parent's chain has left `running`. */
const waitForChain = (id) => p.waitForChain(id);

describe("job chains", () => {
  test("scrape -> generate -> test runs in order; the parent shows each step", async () => {
    const enq = await p.enqueue({
      ...step("/s1/scrape"),
      steps: [step("/s1/generate"), step("/s1/test", { priority: 7 })],
    });
    assert.equal(enq.status, 202);
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "succeeded");
    assert.equal(parent.chain.outcome, "succeeded");
    assert.deepEqual(parent.chain.phases, { succeeded: [0, 1, 2], failed: [], not_run: [], in_progress: [] });
    assert.equal(parent.chain.error, null);
    assert.deepEqual(
      parent.chain.steps.map((s) => [s.step, s.type, s.status]),
      [
        [0, "http", "succeeded"],
        [1, "http", "succeeded"],
        [2, "http", "succeeded"],
      ],
    );
    assert.equal(parent.chain.steps[0].id, parent.id);
    assert.deepEqual(
      app.requests().filter((r) => r.path.startsWith("/s1/")).map((r) => r.path),
      ["/s1/scrape", "/s1/generate", "/s1/test"],
    );
    const last = await p.getJob(parent.chain.steps[2].id);
    assert.equal(last.body.parent_id, parent.id);
    assert.equal(last.body.chain_step, 2);
    assert.equal(last.body.priority, 7);
    // Each step started only after the one before it had finished.
    const [a, b, c] = await Promise.all(parent.chain.steps.map((s) => p.getJob(s.id)));
    assert.ok(Date.parse(b.body.started_at) >= Date.parse(a.body.finished_at));
    assert.ok(Date.parse(c.body.started_at) >= Date.parse(b.body.finished_at));
  });

  test("a step that goes dead stops the chain and fails the parent, naming the step", async () => {
    app.script("/s2/generate", [{ status: 404 }]);
    const enq = await p.enqueue({ ...step("/s2/scrape"), steps: [step("/s2/generate"), step("/s2/test")] });
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "failed");
    assert.match(parent.chain.error, /^step 1 \(http\) went dead: client_error: HTTP 404/);
    assert.deepEqual(
      parent.chain.steps.map((s) => s.status),
      ["succeeded", "dead", "pending"],
    );
    assert.equal(parent.chain.steps[2].id, null);
    assert.equal(parent.chain.outcome, "partial", "it failed after a phase succeeded");
    assert.deepEqual(parent.chain.phases, { succeeded: [0], failed: [1], not_run: [2], in_progress: [] });
    assert.equal(app.requests("/s2/test").length, 0, "the step after the dead one never ran");
    assert.equal(await p.count("SELECT count(*) FROM jobs WHERE parent_id = ?", parent.id), 1);
  });

  test("a retried step keeps the chain running until it succeeds", async () => {
    app.script("/s3/generate", [{ status: 503, headers: { "retry-after": "1" } }, { status: 200 }]);
    const enq = await p.enqueue({ ...step("/s3/scrape"), steps: [step("/s3/generate")] });
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "succeeded");
    const generate = await p.getJob(parent.chain.steps[1].id);
    assert.deepEqual(generate.body.runs.map((r) => r.outcome), ["retrying", "succeeded"]);
  });

  test("a handler's follow-up jobs run next, before the steps the job carried", async () => {
    // The app's scrape phase answers with the job to run next, as an orchestrator would.
    app.script("/s4/scrape", [{ status: 200, body: { follow_up: [step("/s4/generate")] } }]);
    const enq = await p.enqueue({ ...trusting("/s4/scrape"), steps: [step("/s4/test")] });
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "succeeded");
    assert.deepEqual(
      app.requests().filter((r) => r.path.startsWith("/s4/")).map((r) => r.path),
      ["/s4/scrape", "/s4/generate", "/s4/test"],
    );
    // A lone job whose handler returns follow-ups becomes the parent of a new chain.
    app.script("/s5/one", [{ status: 200, body: { follow_up: [step("/s5/two")] } }]);
    const lone = await p.enqueue(trusting("/s5/one"));
    const started = await waitForChain(lone.body.id);
    assert.equal(started.chain.status, "succeeded");
    assert.equal(started.chain.steps.length, 2);
  });

  test("an operator cancelling or skipping a waiting step fails its chain, naming the step", async () => {
    const admin = { token: TOKENS.admin };
    const later = await p.enqueue({ ...step("/s5/scrape"), delay_seconds: 3600, steps: [step("/s5/generate")] });
    const cancel = await p.request("POST", `/v1/admin/jobs/${later.body.id}/cancel`, admin);
    assert.equal(cancel.status, 200);
    let parent = (await p.getJob(later.body.id)).body;
    assert.equal(parent.chain.status, "failed");
    assert.equal(parent.chain.error, "step 0 (http) was cancelled by an operator");

    const held = await p.enqueue({ ...step("/s6/scrape"), steps: [step("/s6/generate", { delay_seconds: 3600 })] });
    const waiting = await p.waitFor(async () => (await p.getJob(held.body.id)).body.chain.steps[1].id, { what: "step 1 enqueued" });
    const skip = await p.request("POST", "/v1/admin/jobs/status", { json: { status: "skipped", ids: [waiting] }, ...admin });
    assert.deepEqual([skip.status, skip.body.count], [200, 1]);
    parent = (await p.getJob(held.body.id)).body;
    assert.equal(parent.chain.status, "failed");
    assert.equal(parent.chain.error, "step 1 (http) was skipped by an operator");
    assert.equal(parent.chain.outcome, "partial");
  });

  test("an invalid follow-up fails the step (not retried) and the chain", async () => {
    app.script("/s6/scrape", [{ status: 200, body: { follow_up: [{ type: "http", payload: {} }] } }]);
    const enq = await p.enqueue({ ...trusting("/s6/scrape"), steps: [step("/s6/test")] });
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.status, "dead");
    assert.equal(parent.error.class, "invalid_payload");
    assert.match(parent.error.message, /follow_up\[0\]\.payload\.url/);
    assert.equal(parent.chain.status, "failed");
    assert.equal(parent.chain.outcome, "failed", "no phase succeeded: not partial");
    assert.deepEqual([parent.chain.phases.failed, parent.chain.phases.not_run], [[0], [1]]);
    assert.match(parent.chain.error, /^step 0 \(http\) went dead/);
  });

  test("steps are validated at enqueue like jobs; a bad one writes nothing", async () => {
    const before = await p.count("SELECT count(*) FROM jobs");
    const bad = await p.enqueue({ ...step("/x"), steps: [step("/y"), { type: "http", payload: { url: "ftp://x" } }] });
    assert.equal(bad.status, 422);
    assert.equal(bad.body.error.field, "steps[1].payload.url");
    const nested = await p.enqueue({ ...step("/x"), steps: [{ ...step("/y"), steps: [step("/z")] }] });
    assert.equal(nested.status, 422);
    assert.equal(nested.body.error.field, "steps[0].steps");
    const empty = await p.enqueue({ ...step("/x"), steps: [] });
    assert.equal(empty.body.error.field, "steps");
    assert.equal(await p.count("SELECT count(*) FROM jobs"), before);
  });
});
