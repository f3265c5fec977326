// Workflows (docs/app-guide.md "Workflows") on the real local workers and queues, with a real
// local HTTP server as the app: named steps whose results later steps take as `inputs`; groups
// that fan out to parallel branches and join them once, under faults too; waits for an event the
// app posts; callbacks of a job's or a chain's end; and the guide's example as written.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { jobMessage, ROOT, SIGNING_SECRET, startPlatform, TOKENS } from "./support/platform.mjs";
import { signedParts, startAppServer, verifySignature } from "./support/app_server.mjs";
import { MINUTE, tick } from "./support/sweep.mjs";
import { JobsClient } from "../clients/js/dist/index.js";
import { readFileSync } from "node:fs";
import { join } from "node:path";

const OTHER = "tok-other-5a1c";

let app;
let p;
before(async () => {
  app = await startAppServer();
  // A bundled forwarded type, delivered to the app server; a second app's token.
  p = await startPlatform({
    consumerBindings: { ENDPOINT_RANK_RECALCULATION: app.url("/w2/rank") },
    producerBindings: { ENQUEUE_TOKENS: `other:${OTHER},${TOKENS.enqueue}` },
  });
});
after(async () => {
  await p?.dispose();
  await app?.close();
});

const http = (path, extra = {}, body) => ({
  type: "http",
  payload: { url: app.url(path), ...(body === undefined ? {} : { body }) },
  ...extra,
});

/** Waits until the parent's chain has left `running`. */
const waitForChain = (id) => p.waitForChain(id);

const bodyOf = (path) => JSON.parse(app.requests(path).at(-1).body);

describe("results between steps", () => {
  test("a step receives the named earlier steps' results as its inputs", async () => {
    app.script("/w1/fetch", [{ status: 200, body: { items: ["a", "b", "c"] } }]);
    app.script("/w1/count", [{ status: 200, body: { count: 3 } }]);
    const enq = await p.enqueue({
      ...http("/w1/fetch"),
      name: "fetch",
      steps: [
        http("/w1/count", { name: "count", inputs: ["fetch"] }, { label: "kept" }),
        http("/w1/report", { inputs: ["count", "fetch"] }),
      ],
    });
    assert.equal(enq.status, 202, JSON.stringify(enq.body));
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "succeeded", JSON.stringify(parent.chain));
    assert.deepEqual(
      parent.chain.steps.map((s) => [s.step, s.name]),
      [
        [0, "fetch"],
        [1, "count"],
        [2, null],
      ],
    );
    const fetched = { status: 200, body: { items: ["a", "b", "c"] } };
    // An object body keeps its fields and gains `inputs`; a step with no body is sent them alone.
    assert.deepEqual(bodyOf("/w1/count"), { label: "kept", inputs: { fetch: fetched } });
    assert.deepEqual(bodyOf("/w1/report"), { inputs: { fetch: fetched, count: { status: 200, body: { count: 3 } } } });
    const count = await p.getJob(parent.chain.steps[1].id);
    assert.equal(count.body.name, "count");
    assert.deepEqual(count.body.inputs, { fetch: fetched });
    assert.equal(parent.name, "fetch");
    assert.equal(parent.inputs, undefined);
  });

  test("a forwarded type's step gets its inputs beside its payload", async () => {
    app.script("/w2/list", [{ status: 200, body: { ids: [7, 8] } }]);
    const enq = await p.enqueue({
      ...http("/w2/list"),
      name: "list",
      steps: [{ type: "rank_recalculation", payload: {}, inputs: ["list"] }],
    });
    assert.equal(enq.status, 202, JSON.stringify(enq.body));
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "succeeded", JSON.stringify(parent.chain));
    const body = bodyOf("/w2/rank");
    assert.equal(body.type, "rank_recalculation");
    assert.deepEqual(body.payload, {});
    assert.deepEqual(body.inputs, { list: { status: 200, body: { ids: [7, 8] } } });
  });

  test("a name a follow-up takes again names its newest step", async () => {
    app.script("/w4/first", [{ status: 200, body: { v: 1, follow_up: [http("/w4/again", { name: "a" })] } }]);
    app.script("/w4/again", [{ status: 200, body: { v: 2 } }]);
    const enq = await p.enqueue({
      type: "http",
      name: "a",
      payload: { url: app.url("/w4/first"), allow_follow_ups: true },
      steps: [http("/w4/last", { inputs: ["a"] })],
    });
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "succeeded", JSON.stringify(parent.chain));
    assert.deepEqual(bodyOf("/w4/last").inputs, { a: { status: 200, body: { v: 2 } } });
  });

  test("inputs that name no earlier step are refused at enqueue, naming the field; nothing is written", async () => {
    const before = await p.count("SELECT COUNT(*) FROM jobs");
    const cases = [
      [{ ...http("/w3/a"), steps: [http("/w3/b", { inputs: ["later"] }), http("/w3/c", { name: "later" })] }, "unknown_step", "steps[0].inputs[0]"],
      [{ ...http("/w3/a"), inputs: ["x"] }, "invalid_field", "inputs"],
      [{ ...http("/w3/a"), name: "a", steps: [http("/w3/b", { name: "a" })] }, "duplicate_name", "steps[0].name"],
      [{ ...http("/w3/a"), name: "" }, "invalid_field", "name"],
      [{ ...http("/w3/a"), name: "a", steps: [http("/w3/b", { inputs: ["a"] }, "text")] }, "invalid_payload", "steps[0].payload.body"],
      [{ ...http("/w3/a"), name: "a", steps: [http("/w3/b", { inputs: "a" })] }, "invalid_field", "steps[0].inputs"],
    ];
    for (const [job, code, field] of cases) {
      const res = await p.enqueue(job);
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.deepEqual([res.body.error.code, res.body.error.field], [code, field], JSON.stringify(res.body));
    }
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs"), before);
  });
});

/** A group step named `name` over `payload` (docs/app-guide.md "Workflows"). */
const group = (name, payload, extra = {}) => ({ type: "group", name, payload, ...extra });

/** The chain's steps by name, each as GET /v1/jobs/{id} shows it. */
async function stepsOf(parent) {
  const steps = await Promise.all(parent.chain.steps.filter((s) => s.id).map((s) => p.getJob(s.id)));
  return Object.fromEntries(steps.map(({ body }) => [body.name ?? body.type, body]));
}

/** The branches of group `id`, in order, as their rows hold them. */
async function branchesOf(id) {
  const { results } = await p.db
    .prepare("SELECT id, status, error_class, inputs, runs FROM jobs WHERE group_id = ? ORDER BY branch")
    .bind(id)
    .all();
  return results;
}

describe("fan-out and fan-in", () => {
  test("list -> 200 parallel branches -> join -> sleep -> callback: each branch gets its element, the join runs once with 200 results, the callback arrives once and verifies", async () => {
    const items = Array.from({ length: 200 }, (_, i) => `item-${i}`);
    app.script("/g1/list", [{ status: 200, body: { items } }]);
    app.script("/g1/each", [{ status: 200, echo: true }]);
    app.script("/g1/join", [{ status: 200, body: { digest: "200 items" } }]);
    const enq = await p.enqueue({
      ...http("/g1/list"),
      name: "list",
      callback: { url: app.url("/g1/done") },
      steps: [
        group("each", { for_each: "body.items", job: http("/g1/each") }),
        http("/g1/join", { name: "join", inputs: ["each"] }),
        { type: "noop", name: "sleep", delay_seconds: 2 },
        http("/g1/notify", { inputs: ["join"] }),
      ],
    });
    assert.equal(enq.status, 202, JSON.stringify(enq.body));
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "succeeded", JSON.stringify(parent.chain));
    assert.deepEqual(
      parent.chain.steps.map((s) => [s.type, s.name, s.status]),
      [
        ["http", "list", "succeeded"],
        ["group", "each", "succeeded"],
        ["http", "join", "succeeded"],
        ["noop", "sleep", "succeeded"],
        ["http", null, "succeeded"],
      ],
    );
    // Each branch got its own element of the list step's result.
    const branchRequests = app.requests("/g1/each").map((r) => JSON.parse(r.body).inputs);
    assert.equal(branchRequests.length, 200);
    for (const inputs of branchRequests) {
      assert.deepEqual(Object.keys(inputs).sort(), ["index", "item"]);
      assert.equal(inputs.item, items[inputs.index]);
    }
    // The join ran exactly once, with the 200 results in branch order.
    assert.equal(app.requests("/g1/join").length, 1);
    const joined = bodyOf("/g1/join").inputs.each;
    assert.deepEqual([joined.branches, joined.succeeded, joined.failed, joined.results_cut], [200, 200, 0, false]);
    assert.deepEqual(
      joined.results.map((r) => r.result.body.echo.inputs.item),
      items,
    );
    // The parent's view counts the group's branches; a branch names its group and place.
    assert.deepEqual(parent.chain.steps[1].branches, { succeeded: 200 });
    const steps = await stepsOf(parent);
    assert.equal(steps.each.runs.length, 1, "the group ran once");
    const branches = await branchesOf(steps.each.id);
    assert.equal(branches.length, 200);
    assert.ok(branches.every((b) => b.status === "succeeded" && b.runs === 1));
    const branch = (await p.getJob(branches[7].id)).body;
    assert.deepEqual([branch.group_id, branch.branch, branch.inputs], [steps.each.id, 7, { item: "item-7", index: 7 }]);
    // The CLI shows the workflow as a tree of its steps.
    const shown = await p.cli("jobs", "get", parent.id);
    assert.equal(shown.code, 0, shown.stderr);
    assert.match(shown.stdout, /├ 1 each group succeeded {2}200 succeeded\n├ 2 join http succeeded/);
    // The sleep held the last step back; it got the join's result.
    assert.ok(Date.parse(steps.sleep.started_at) - Date.parse(steps.join.finished_at) >= 1_900);
    assert.deepEqual(bodyOf("/g1/notify").inputs, { join: { status: 200, body: { digest: "200 items" } } });
    // The chain's end reached its callback once, signed as a delivery of the callback job.
    const done = await p.waitFor(() => app.requests("/g1/done")[0], { what: "the callback" });
    const body = JSON.parse(done.body);
    assert.deepEqual(body.chain, { status: "succeeded", outcome: "succeeded", error: null });
    assert.deepEqual([body.event, body.job.id], ["chain.ended", parent.id]);
    assert.equal(done.headers["x-jobs-id"], `${parent.id}.callback`);
    assert.ok(verifySignature(SIGNING_SECRET, done.headers["x-jobs-signature"], signedParts(done, app.url("/g1/done"))));
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(app.requests("/g1/done").length, 1, "called back once");
  });

  test("failing fast: a dead branch fails the group and its chain; a branch not yet started is skipped, never run", async () => {
    app.script("/g2/bad", [{ status: 400, body: { error: "no" } }]);
    const enq = await p.enqueue({
      ...http("/g2/first"),
      steps: [
        group("both", { jobs: [http("/g2/bad"), http("/g2/late", { delay_seconds: 10 })] }),
        http("/g2/join", { inputs: ["both"] }),
      ],
    });
    assert.equal(enq.status, 202, JSON.stringify(enq.body));
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "failed");
    assert.match(parent.chain.error, /step 1 \(group\) went dead: branch_failed: branch 0 \(http, \w+\) ended dead: HTTP 400/);
    const { both } = await stepsOf(parent);
    assert.equal(both.error.class, "branch_failed");
    const late = () => branchesOf(both.id).then((b) => b[1]);
    const skipped = await p.waitFor(async () => ((await late()).status === "skipped" ? late() : null), { what: "the late branch to be skipped" }).catch(async (e) => { console.log("DEBUG", JSON.stringify(await branchesOf(both.id)), JSON.stringify(both)); throw e; });
    assert.equal(skipped.error_class, "group_ended");
    assert.equal(app.requests("/g2/late").length, 0, "the late branch never ran");
    assert.equal(app.requests("/g2/join").length, 0);
  });

  test("continuing on failure: the join runs after every branch and sees each one's end", async () => {
    app.script("/g3/bad", [{ status: 422, body: {} }]);
    app.script("/g3/first", [{ status: 200, body: { config: 7 } }]);
    app.script("/g3/good", [{ status: 200, echo: true }]);
    const enq = await p.enqueue({
      ...http("/g3/first"),
      name: "first",
      steps: [
        group("both", { jobs: [http("/g3/bad"), http("/g3/good")], on_failure: "continue" }, { inputs: ["first"] }),
        http("/g3/join", { inputs: ["both"] }),
      ],
    });
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "succeeded", JSON.stringify(parent.chain));
    const { both } = bodyOf("/g3/join").inputs;
    assert.deepEqual([both.branches, both.succeeded, both.failed], [2, 1, 1]);
    assert.deepEqual(both.results.map((r) => r.status), ["dead", "succeeded"]);
    assert.match(both.results[0].error, /HTTP 422/);
    // The group's inputs went to each of its branches.
    assert.deepEqual(both.results[1].result.body.echo.inputs, { first: { status: 200, body: { config: 7 } } });
  });

  test("the branches' results reach the join while they fit; past the bound a branch is reported by id and status", async () => {
    app.script("/g6/list", [{ status: 200, body: { items: Array.from({ length: 60 }, (_, i) => i) } }]);
    app.script("/g6/each", [{ status: 200, body: { pad: "x".repeat(4000) } }]);
    const enq = await p.enqueue({
      ...http("/g6/list"),
      steps: [group("each", { for_each: "body.items", job: http("/g6/each") }), http("/g6/join", { inputs: ["each"] })],
    });
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "succeeded", JSON.stringify(parent.chain));
    const { each } = bodyOf("/g6/join").inputs;
    assert.deepEqual([each.branches, each.succeeded, each.results_cut, each.results.length], [60, 60, true, 60]);
    const kept = each.results.filter((r) => r.result !== undefined).length;
    // 192 KiB of whole branch ends (workflow_group::MAX_REPORTED_RESULTS_BYTES): about 4 KB each.
    assert.ok(kept >= 45 && kept <= 48, `${kept} results kept`);
    assert.ok(each.results.slice(0, kept).every((r) => r.result.body.pad.length === 4000));
    for (const r of each.results.slice(kept)) {
      assert.deepEqual(Object.keys(r).sort(), ["id", "status"]);
      assert.equal((await p.getJob(r.id)).body.result.body.pad.length, 4000, "a cut result is read by its id");
    }
  });


  test("cancelling the chain from the app while its group waits: nothing after the cancel runs, and a late branch outcome changes nothing", async () => {
    app.script("/g4/slow", [{ status: 200, body: { late: true }, delayMs: 2_000 }]);
    const enq = await p.enqueue({
      ...http("/g4/first"),
      steps: [
        group("slow", { jobs: [http("/g4/slow"), http("/g4/branch", { delay_seconds: 4 }), http("/g4/branch", { delay_seconds: 4 })] }),
        http("/g4/join"),
      ],
    });
    const groupStep = await p.waitFor(async () => {
      const { body } = await p.getJob(enq.body.id);
      return body.chain.steps[1]?.id ? body.chain.steps[1] : null;
    });
    // The first branch is running, its endpoint answering late, when the app cancels the chain.
    await p.waitFor(async () => (await branchesOf(groupStep.id))[0]?.status === "running", { what: "the slow branch running" });
    const cancel = await p.request("POST", `/v1/jobs/${enq.body.id}/cancel`, { json: { chain: true } });
    assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "failed");
    await p.waitFor(async () => {
      const branches = await branchesOf(groupStep.id);
      return branches[0].status === "succeeded" && branches.slice(1).every((b) => b.status === "skipped");
    }, { what: "the late branch ended and the others skipped" });
    assert.equal((await p.getJob(groupStep.id)).body.status, "cancelled", "the late outcome joined nothing");
    assert.equal((await p.getJob(enq.body.id)).body.chain.status, "failed");
    assert.equal(app.requests("/g4/branch").length, 0);
    assert.equal(app.requests("/g4/join").length, 0);
  });

  test("a join of 1,000 branches reports every one within its bound; an empty list joins at once", async () => {
    app.script("/g7/list", [{ status: 200, body: { items: Array.from({ length: 1000 }, (_, i) => i) } }]);
    app.script("/g7/none", [{ status: 200, body: { items: [] } }]);
    const [many, none] = await Promise.all(
      ["/g7/list", "/g7/none"].map((path) =>
        p.enqueue({ ...http(path), steps: [group("each", { for_each: "body.items", job: { type: "noop" } }), { type: "noop", name: "after", inputs: ["each"] }] }),
      ),
    );
    for (const [enq, n] of [[many, 1000], [none, 0]]) {
      const parent = await waitForChain(enq.body.id);
      assert.equal(parent.chain.status, "succeeded", JSON.stringify(parent.chain));
      const after = (await p.getJob(parent.chain.steps[2].id)).body.inputs.each;
      assert.deepEqual([after.branches, after.succeeded, after.failed, after.results_cut, after.results.length], [n, n, 0, false, n]);
    }
  });

  test("a for_each list past 1,000 elements fails the group's step, saying so", async () => {
    app.script("/g5/list", [{ status: 200, body: { items: Array(1001).fill(0) } }]);
    const enq = await p.enqueue({ ...http("/g5/list"), steps: [group("each", { for_each: "body.items", job: http("/g5/each") })] });
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "failed");
    assert.match(parent.chain.error, /1001 elements; a group runs at most 1000 branches/);
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE type = 'group' AND parent_id = ?", parent.id), 0);
  });
});

describe("fan-in under faults", () => {
  /** A chain whose group of `n` noop branches waits an hour (their messages wait in the queue). */
  async function waitingGroup(n, extra = {}) {
    const enq = await p.enqueue({
      type: "noop",
      steps: [group("g", { jobs: Array.from({ length: n }, () => ({ type: "noop", delay_seconds: 3600 })), ...extra }), { type: "noop", name: "after", inputs: ["g"] }],
    });
    const groupStep = await p.waitFor(async () => {
      const { body } = await p.getJob(enq.body.id);
      return body.chain.steps[1]?.id ? body.chain.steps[1] : null;
    });
    const branches = await p.waitFor(async () => {
      const rows = await branchesOf(groupStep.id);
      return rows.length === n ? rows : null;
    });
    return { parentId: enq.body.id, groupId: groupStep.id, branches };
  }

  test("the last two branches ending in two batches at once join the group once", async () => {
    const { parentId, groupId, branches } = await waitingGroup(2);
    await p.db.prepare("UPDATE jobs SET run_at = ? WHERE group_id = ?").bind(Date.now(), groupId).run();
    // Two consumer invocations, each recording one of the last two branches, concurrently.
    await Promise.all(branches.map((b) => p.deliver("jobs-default", [jobMessage(b.id, "noop")])));
    const parent = await waitForChain(parentId);
    assert.equal(parent.chain.status, "succeeded", JSON.stringify(parent.chain));
    assert.equal((await p.getJob(groupId)).body.runs.length, 1, "the group ran once");
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE parent_id = ? AND step_name = 'after'", parentId), 1);
    const after = await p.getJob(parent.chain.steps[2].id);
    assert.equal(after.body.inputs.g.succeeded, 2);
  });

  test("a branch whose send was lost is sent by the sweep's outbox, and the group joins", async () => {
    const { parentId, groupId } = await waitingGroup(1);
    // As if the branch's message had never been sent: due now, no send recorded.
    await p.db.prepare("UPDATE jobs SET run_at = ?, sent_at = NULL, updated_at = ? WHERE group_id = ?").bind(Date.now(), Date.now(), groupId).run();
    await tick(p, Date.now() + 10 * MINUTE);
    const parent = await waitForChain(parentId);
    assert.equal(parent.chain.status, "succeeded", JSON.stringify(parent.chain));
  });

  test("branches ended by an operator leave no group waiting: the sweep joins it", async () => {
    const { parentId, groupId, branches } = await waitingGroup(2, { on_failure: "continue" });
    for (const b of branches) {
      const res = await p.request("POST", `/v1/admin/jobs/${b.id}/cancel`, { token: TOKENS.admin });
      assert.equal(res.status, 200, JSON.stringify(res.body));
    }
    assert.equal((await p.getJob(groupId)).body.status, "scheduled", "an operator's move does not join");
    await tick(p, Date.now());
    const parent = await waitForChain(parentId);
    assert.equal(parent.chain.status, "succeeded", JSON.stringify(parent.chain));
    const after = await p.getJob(parent.chain.steps[2].id);
    assert.deepEqual([after.body.inputs.g.succeeded, after.body.inputs.g.failed], [0, 2]);
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE type = 'group' AND status = 'scheduled' AND id = ?", groupId), 0);
  });
});

describe("callbacks", () => {
  /** Waits for the callback of job `id` to have been delivered as its view says. */
  const delivered = (id) =>
    p.waitFor(async () => {
      const { body } = await p.getJob(id);
      return body.callback?.delivery?.status === "succeeded" ? body : null;
    }, { what: `job ${id}'s callback`, timeoutMs: 60_000 });

  test("a job's end is delivered once to its callback, signed, with its result; the view shows the delivery", async () => {
    app.script("/c1/work", [{ status: 200, body: { made: 1 } }]);
    const enq = await p.enqueue({ ...http("/c1/work"), callback: { url: app.url("/c1/done") } });
    assert.equal(enq.status, 202, JSON.stringify(enq.body));
    const job = await delivered(enq.body.id);
    assert.equal(job.status, "succeeded");
    assert.deepEqual(job.callback, {
      target: { url: app.url("/c1/done") },
      delivery: { id: `${job.id}.callback`, status: "succeeded", attempts: 1, error: null },
    });
    const [done] = app.requests("/c1/done");
    const body = JSON.parse(done.body);
    assert.deepEqual(body, {
      event: "job.ended",
      job: { id: job.id, type: "http", status: "succeeded", result: { status: 200, body: { made: 1 } }, error: null, finished_at: Date.parse(job.finished_at) },
    });
    assert.equal(done.headers["x-jobs-type"], "callback");
    assert.ok(verifySignature(SIGNING_SECRET, done.headers["x-jobs-signature"], signedParts(done, app.url("/c1/done"))));
    // The callback is a job the app may read with its own token.
    const own = await p.request("GET", `/v1/jobs/${job.id}.callback`, { token: TOKENS.enqueue });
    assert.deepEqual([own.status, own.body.type, own.body.enqueued_by], [200, "callback", job.enqueued_by]);
  });

  test("a callback the app fails is retried under its own policy, and never changes the job's outcome", async () => {
    app.script("/c2/work", [{ status: 400, body: {} }]);
    app.script("/c2/done", [{ status: 503, body: {} }, { status: 200, body: {} }]);
    const enq = await p.enqueue({ ...http("/c2/work"), callback: { url: app.url("/c2/done") } });
    const job = await delivered(enq.body.id);
    assert.equal(job.status, "dead");
    assert.deepEqual([job.callback.delivery.status, job.callback.delivery.attempts], ["succeeded", 2]);
    const calls = app.requests("/c2/done");
    assert.equal(calls.length, 2);
    // The same delivery both times; 10 s (less a quarter) between them, the callback type's first wait.
    assert.equal(calls[0].body, calls[1].body);
    assert.ok(calls[1].at - calls[0].at >= 7_000, `${calls[1].at - calls[0].at} ms apart`);
    const body = JSON.parse(calls[0].body);
    assert.deepEqual([body.job.status, body.job.error.class], ["dead", "client_error"]);
  });

  test("a chain's first job calls back when its chain ends, with the chain's outcome", async () => {
    app.script("/c3/bad", [{ status: 404, body: {} }]);
    const enq = await p.enqueue({ ...http("/c3/first"), callback: { url: app.url("/c3/done") }, steps: [http("/c3/bad"), http("/c3/never")] });
    const parent = await delivered(enq.body.id);
    assert.equal(parent.chain.status, "failed");
    const body = JSON.parse(app.requests("/c3/done")[0].body);
    assert.equal(body.event, "chain.ended");
    assert.deepEqual([body.chain.status, body.chain.outcome], ["failed", parent.chain.outcome]);
    assert.equal(body.chain.outcome, "partial", "its first step succeeded");
    assert.match(body.chain.error, /step 1 \(http\) went dead: client_error: HTTP 404/);
    assert.equal(app.requests("/c3/done").length, 1, "the first job's own end did not call back");
  });

  test("a job the app cancels calls back too, through the outbox, within its grace and a tick", async () => {
    const enq = await p.enqueue({ type: "noop", delay_seconds: 3600, callback: { url: app.url("/c4/done") } });
    const cancel = await p.request("POST", `/v1/jobs/${enq.body.id}/cancel`);
    assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
    await tick(p, Date.now() + 6 * MINUTE);
    const job = await delivered(enq.body.id);
    assert.equal(job.status, "cancelled");
    assert.equal(JSON.parse(app.requests("/c4/done")[0].body).job.status, "cancelled");
  });

  test("a lone job whose handler starts a chain calls back once, at the chain's end", async () => {
    app.script("/c5/first", [{ status: 200, body: { follow_up: [http("/c5/next")] } }]);
    const enq = await p.enqueue({
      type: "http",
      payload: { url: app.url("/c5/first"), allow_follow_ups: true },
      callback: { url: app.url("/c5/done") },
    });
    const job = await delivered(enq.body.id);
    assert.equal(job.chain.status, "succeeded");
    assert.equal(app.requests("/c5/next").length, 1);
    const calls = app.requests("/c5/done");
    assert.deepEqual([calls.length, JSON.parse(calls[0].body).event], [1, "chain.ended"]);
  });

  test("a callback that is not a target is refused at enqueue, naming the field; a step takes none", async () => {
    const before = await p.count("SELECT COUNT(*) FROM jobs");
    for (const [job, field] of [
      [{ type: "noop", callback: { url: "ftp://x" } }, "callback.url"],
      [{ type: "noop", callback: "https://x" }, "callback"],
      [{ type: "noop", callback: { service: "app" } }, "callback.service"],
      [{ type: "noop", steps: [{ type: "noop", callback: { url: "https://a.io" } }] }, "steps[0].callback"],
    ]) {
      const res = await p.enqueue(job);
      assert.equal(res.status, 422, JSON.stringify(res.body));
      assert.equal(res.body.error.field, field);
    }
    assert.equal((await p.enqueue({ type: "callback", payload: {} })).body.error.code, "unknown_type");
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs"), before);
  });
});

describe("waiting for an event", () => {
  const event = (json, token) => p.request("POST", "/v1/events", { json, token });
  const wait = (name, payload) => ({ type: "wait", name, payload });

  /** The chain's step `n` once it is written, as its view shows it. */
  const stepOnceWritten = (parentId, n) =>
    p.waitFor(async () => {
      const { body } = await p.getJob(parentId);
      const id = body.chain.steps[n]?.id;
      return id ? (await p.getJob(id)).body : null;
    }, { what: `step ${n} of ${parentId}` });

  test("a wait resumes on its event, for the token that enqueued it only; the step after takes the event", async () => {
    const enq = await p.enqueue({
      ...http("/e1/ask"),
      steps: [wait("approval", { event: "approved", key: "order-1", timeout_seconds: 3600 }), http("/e1/ship", { inputs: ["approval"] })],
    });
    const waiting = await stepOnceWritten(enq.body.id, 1);
    assert.deepEqual([waiting.type, waiting.name], ["wait", "approval"]);
    const listed = (await p.getJob(enq.body.id)).body.chain.steps[1];
    assert.deepEqual([listed.waits_for, listed.run_at], [["approved", "order-1"], waiting.run_at]);
    assert.ok(["scheduled", "queued"].includes(waiting.status), waiting.status);
    assert.ok(Date.parse(waiting.run_at) - Date.now() > 3_500_000, "due at its timeout");
    const stranger = await event({ event: "approved", key: "order-1", data: { by: "mallory" } }, OTHER);
    assert.deepEqual(stranger.body, { resumed: 0, jobs: [] });
    const wrongKey = await event({ event: "approved", key: "order-2" });
    assert.deepEqual(wrongKey.body, { resumed: 0, jobs: [] });
    // The app posts it with the TypeScript client.
    const jobs = new JobsClient({ baseUrl: "http://jobs.local", token: TOKENS.enqueue, fetch: (u, i) => p.mf.dispatchFetch(u, i) });
    assert.deepEqual(await jobs.sendEvent("approved", "order-1", { by: "ann" }), { resumed: 1, jobs: [waiting.id] });
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "succeeded", JSON.stringify(parent.chain));
    assert.deepEqual(bodyOf("/e1/ship").inputs, { approval: { event: "approved", key: "order-1", data: { by: "ann" } } });
    const again = await event({ event: "approved", key: "order-1", data: { by: "bob" } });
    assert.deepEqual(again.body, { resumed: 0, jobs: [] }, "a wait resumes once");
  });

  test("a wait past its timeout fails its chain, or with on_timeout continue lets it go on", async () => {
    const failing = await p.enqueue({
      type: "noop",
      steps: [wait("approval", { event: "approved", key: "late-1", timeout_seconds: 1 }), http("/e2/never")],
    });
    const going = await p.enqueue({
      type: "noop",
      steps: [wait("approval", { event: "approved", key: "late-2", timeout_seconds: 1, on_timeout: "continue" }), http("/e2/after", { inputs: ["approval"] })],
    });
    const failed = await waitForChain(failing.body.id);
    assert.equal(failed.chain.status, "failed");
    assert.match(failed.chain.error, /step 1 \(wait\) went dead: wait_timed_out: no approved event for key late-1 came within 1 s/);
    assert.equal(app.requests("/e2/never").length, 0);
    const went = await waitForChain(going.body.id);
    assert.equal(went.chain.status, "succeeded", JSON.stringify(went.chain));
    assert.deepEqual(bodyOf("/e2/after").inputs.approval, { event: "approved", key: "late-2", timed_out: true });
  });

  test("a cancelled chain's wait resumes on no event", async () => {
    const enq = await p.enqueue({ type: "noop", steps: [wait("approval", { event: "approved", key: "gone-1" }), http("/e3/never")] });
    await stepOnceWritten(enq.body.id, 1);
    const cancel = await p.request("POST", `/v1/jobs/${enq.body.id}/cancel`, { json: { chain: true } });
    assert.equal(cancel.status, 200, JSON.stringify(cancel.body));
    assert.deepEqual((await event({ event: "approved", key: "gone-1" })).body, { resumed: 0, jobs: [] });
    assert.equal((await waitForChain(enq.body.id)).chain.status, "failed");
  });

  test("an event that is not one is refused, naming the field", async () => {
    for (const [json, status, field] of [
      [{ event: "approved" }, 422, "key"],
      [{ event: "", key: "k" }, 422, "event"],
      [{ event: "approved", key: "k", extra: 1 }, 422, "extra"],
      [{ event: "approved", key: "k", data: "x".repeat(70_000) }, 413, "data"],
    ]) {
      const res = await event(json);
      assert.equal(res.status, status, JSON.stringify(res.body));
      assert.equal(res.body.error.field, field);
    }
    const notJson = await p.request("POST", "/v1/events", { body: "{", headers: { "content-type": "application/json" } });
    assert.equal(notJson.status, 400);
    assert.equal((await p.request("POST", "/v1/events", { json: { event: "a", key: "k" }, token: "nope" })).status, 401);
  });
});

describe("the guide's example", () => {
  /** The first JSON block of docs/app-guide.md's "Workflows" section: the example as written. */
  function guideExample() {
    const guide = readFileSync(join(ROOT, "docs", "app-guide.md"), "utf8");
    const section = guide.slice(guide.indexOf("\n## Workflows\n"));
    const block = section.slice(section.indexOf("```json\n") + 8);
    return JSON.parse(block.slice(0, block.indexOf("```")));
  }

  test("the Cloudflare Workflows-style example runs as written: list, summaries, combine, approval, a day, notify, callback", async () => {
    // As written, with the app's URLs this test's server and its day a second.
    const text = JSON.stringify(guideExample()).replaceAll("https://app.example", app.url("/guide"));
    const example = JSON.parse(text);
    const day = example.steps.find((s) => s.name === "a day");
    assert.equal(day.delay_seconds, 86400);
    day.delay_seconds = 1;
    app.script("/guide/list", [{ status: 200, body: { items: ["a", "b", "c"] } }]);
    app.script("/guide/summarize", [{ status: 200, echo: true }]);
    app.script("/guide/combine", [{ status: 200, body: { digest: "a, b, c" } }]);
    const enq = await p.enqueue(example);
    assert.equal(enq.status, 202, JSON.stringify(enq.body));
    const approval = await p.waitFor(async () => {
      const { body } = await p.getJob(enq.body.id);
      const step = body.chain.steps.find((s) => s.name === "approval" && s.id);
      return step ? (await p.getJob(step.id)).body : null;
    }, { what: "the approval step" });
    assert.equal(approval.payload.key, "digest-42");
    const jobs = new JobsClient({ baseUrl: "http://jobs.local", token: TOKENS.enqueue, fetch: (u, i) => p.mf.dispatchFetch(u, i) });
    assert.equal((await jobs.sendEvent("approved", "digest-42", { by: "ann" })).resumed, 1);
    const parent = await waitForChain(enq.body.id);
    assert.equal(parent.chain.status, "succeeded", JSON.stringify(parent.chain));
    assert.deepEqual(
      app.requests("/guide/summarize").map((r) => JSON.parse(r.body).inputs.item).sort(),
      ["a", "b", "c"],
    );
    assert.equal(bodyOf("/guide/combine").inputs.summaries.succeeded, 3);
    assert.deepEqual(bodyOf("/guide/notify").inputs, {
      combine: { status: 200, body: { digest: "a, b, c" } },
      approval: { event: "approved", key: "digest-42", data: { by: "ann" } },
    });
    const done = await p.waitFor(() => app.requests("/guide/digest-done")[0], { what: "the callback" });
    assert.deepEqual(JSON.parse(done.body).chain, { status: "succeeded", outcome: "succeeded", error: null });
  });
});
