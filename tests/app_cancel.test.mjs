// Cancel from the app (docs/app-guide.md "Cancel from the app"), on the built workers on local
// workerd with real D1 and queues: the token that enqueued a job cancels it, or its whole
// chain; another token cannot (it is told no such job exists); a running job is skipped at once
// and what its attempt does after changes nothing; a chain's later steps never run.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startPlatform, TOKENS } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";

const WEB = "tok-web-2c9d";
const OTHER = "tok-other-8e1f";

let app, p;
before(async () => {
  app = await startAppServer();
  // TOKENS.enqueue, which enqueued none of these (the helpers read jobs with the admin token).
  p = await startPlatform({ producerBindings: { ENQUEUE_TOKENS: `webapp:${WEB},other:${OTHER},${TOKENS.enqueue}` } });
});
after(async () => {
  await p?.dispose();
  await app?.close();
});

const enqueue = async (json, token = WEB) => {
  const res = await p.request("POST", "/v1/jobs", { json, token });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  return res.body.id;
};
const cancel = (id, token = WEB, json) => p.request("POST", `/v1/jobs/${id}/cancel`, { token, json });
const http = (path, extra = {}) => ({ type: "http", payload: { url: app.url(path) }, ...extra });

test("the token that enqueued a waiting job reads and cancels it; another token is told no such job exists", async () => {
  const id = await enqueue(http("/later", { delay_seconds: 600 }));
  const read = (token) => p.request("GET", `/v1/jobs/${id}`, { token });
  assert.deepEqual([(await read(WEB)).status, (await read(OTHER)).status], [200, 404]);
  const stranger = await cancel(id, OTHER);
  assert.deepEqual([stranger.status, stranger.body.error.code, stranger.body.error.field], [404, "not_found", "id"]);
  assert.equal((await p.getJob(id)).body.status, "queued", "another token's cancel changed nothing");

  const own = await cancel(id);
  assert.deepEqual([own.status, own.body.job.status, own.body.chain], [200, "cancelled", false], JSON.stringify(own.body));
  const again = await cancel(id);
  assert.deepEqual([again.status, again.body.error.code], [409, "not_live"]);
  const audit = await p.db.prepare("SELECT actor, action FROM audit_log WHERE target LIKE ? ORDER BY id").bind(`%${id}%`).all();
  assert.deepEqual(audit.results.map((a) => [a.actor, a.action]), [["webapp", "job.cancel_by_app"]]);

  // An admin token may cancel any job; a bad body names its field and moves nothing.
  const other = await enqueue(http("/later", { delay_seconds: 600 }), OTHER);
  const bad = await cancel(other, OTHER, { chain: "yes" });
  assert.deepEqual([bad.status, bad.body.error.field], [422, "chain"]);
  const stray = await cancel(other, OTHER, { dry_run: true });
  assert.deepEqual([stray.status, stray.body.error.field], [422, "dry_run"]);
  const notChain = await cancel(other, OTHER, { chain: true });
  assert.deepEqual([notChain.status, notChain.body.error.field], [422, "chain"]);
  assert.equal((await cancel(other, TOKENS.admin)).body.job.status, "cancelled");
});

test("a running job is skipped at once; its attempt's late answer changes nothing", async () => {
  app.script("/slow", [{ status: 200, body: { ok: true }, delayMs: 3_000 }]);
  const id = await enqueue(http("/slow"));
  await p.waitForStatus(id, "running");
  const res = await cancel(id);
  assert.deepEqual([res.status, res.body.job.status], [200, "skipped"], JSON.stringify(res.body));
  await p.waitFor(async () => app.requests("/slow").length === 1, { what: "the delivery" });
  await new Promise((r) => setTimeout(r, 4_000)); // the answer arrives and its batch records
  const job = (await p.getJob(id)).body;
  assert.equal(job.status, "skipped", "the late success did not overwrite the cancel");
  assert.deepEqual([job.runs.length, job.runs[0].outcome, job.runs[0].error.message], [1, "skipped", "its app cancelled the job while this attempt ran; what it did after is not recorded"]);
});

test("cancelling a chain by any of its jobs ends its live step: the chain fails naming it, and no later step runs", async () => {
  const id = await enqueue({ ...http("/first"), steps: [http("/second", { delay_seconds: 600 }), http("/third")] });
  await p.waitFor(async () => (await p.getJob(id)).body.chain?.steps?.[1]?.status === "queued", { what: "step 1 waiting" });
  // Through the finished first step, cancel the chain: its live step is the second.
  const res = await cancel(id, WEB, { chain: true });
  assert.equal(res.status, 200, JSON.stringify(res.body));
  assert.deepEqual([res.body.job.status, res.body.chain], ["cancelled", true]);
  const chain = (await p.getJob(id)).body.chain;
  assert.deepEqual([chain.status, chain.error], ["failed", "step 1 (http) was cancelled by its app"]);
  assert.deepEqual(chain.steps.map((s) => s.status), ["succeeded", "cancelled", "pending"]);
  assert.equal(app.requests("/third").length, 0);
  const ended = await cancel(id, WEB, { chain: true });
  assert.deepEqual([ended.status, ended.body.error.code], [409, "not_live"]);
});
