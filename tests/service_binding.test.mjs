// Enqueue from another Worker through a service binding (docs/app-guide.md "Enqueue from another
// Worker (service binding)"):
// examples/service-binding, run from its own wrangler config beside the built platform on local
// workerd, calls the producer over the binding; the job is recorded with the calling token's
// name and runs on the real local queues.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { ROOT, startPlatform, TOKENS, workerFromConfig } from "./support/platform.mjs";

const APP_TOKEN = "signup-token";
let p;
before(async () => {
  const app = workerFromConfig(join(ROOT, "examples", "service-binding", "wrangler.toml"), {
    bindings: { JOBS_TOKEN: APP_TOKEN },
  });
  p = await startPlatform({
    producerBindings: { ENQUEUE_TOKENS: `${TOKENS.enqueue},signup-worker:${APP_TOKEN}` },
    extraWorkers: [app],
  });
});
after(() => p?.dispose());

const viaBinding = (json) => p.request("POST", "/enqueue", { json, token: null, worker: "signup-worker" });

test("a Worker enqueues through its service binding: the job is recorded with its token's name and runs", async () => {
  const res = await viaBinding({ type: "noop", payload: {} });
  assert.equal(res.status, 202, JSON.stringify(res.body));
  const job = await p.waitForStatus(res.body.id, "succeeded");
  assert.equal(job.enqueued_by, "signup-worker");

  const batch = await viaBinding({ jobs: [{ type: "noop" }, { type: "noop", priority: 60 }] });
  assert.equal(batch.status, 202);
  assert.equal(batch.body.jobs.length, 2);
});

test("over the binding, the API's checks hold as over the internet", async () => {
  const unknown = await viaBinding({ type: "no_such_type" });
  assert.equal(unknown.status, 422);
  assert.equal(unknown.body.error.field, "type");
  assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE type = 'no_such_type'"), 0);

  // The example forwards what it cannot parse, so the producer answers it as it would any caller.
  for (const body of ["{bad", "null"]) {
    const res = await p.request("POST", "/enqueue", { body, token: null, worker: "signup-worker", headers: { "content-type": "application/json" } });
    assert.equal(res.status, 400, `${body}: ${JSON.stringify(res.body)}`);
    assert.match(res.body.error.code, /^(malformed_json|invalid_body)$/, body);
  }
});
