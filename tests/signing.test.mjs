// Signed delivery (docs/app-guide.md "Signed delivery"): the signature binds the body to the
// method, the URL, the job's type and id and the attempt, so a delivery seen at one endpoint (e.g.
// an `http` job aimed at a server its enqueuer owns) cannot be replayed to another endpoint, as
// another job or attempt, or with another method; a redirect is not followed. Key rotation: the consumer signs with the
// first of SIGNING_SECRETS; an app verifies against every secret it holds. The built WASM on
// local workerd, real D1 and real local queues; the apps are a real local HTTP server.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startPlatform, SIGNING_SECRET, TOKENS } from "./support/platform.mjs";
import { signedParts, startAppServer, verifySignature } from "./support/app_server.mjs";

const [NEW, OLD] = ["rotated-in-secret", "rotated-out-secret"];

let app;
let p;
before(async () => {
  app = await startAppServer();
  // SIGNING_SECRET (the single-secret fallback) is set too: SIGNING_SECRETS wins.
  p = await startPlatform({
    consumerBindings: {
      SIGNING_SECRETS: ` ${NEW} , ${OLD}`,
      ENDPOINT_WEATHER_REFRESH: app.url("/apps/weather?team=7#ignored"),
    },
  });
});
after(async () => {
  await p.dispose();
  await app.close();
});

/** Runs an http job to `path` until it succeeds; returns its requests at the app. */
async function deliver(path, payload = {}) {
  const enq = await p.enqueue({ type: "http", payload: { url: app.url(path), ...payload } });
  assert.equal(enq.status, 202, JSON.stringify(enq.body));
  await p.waitForStatus(enq.body.id, "succeeded");
  return app.requests(path).filter((r) => r.headers["x-jobs-id"] === enq.body.id);
}

const header = (req) => req.headers["x-jobs-signature"];

describe("a signature is bound to its request", () => {
  test("it verifies only for the method, URL, type, job id and body it was sent with", async () => {
    const body = { transfer: 100 };
    const [a] = await deliver("/a", { body });
    const [other] = await deliver("/a", { body });
    assert.match(header(a), /^t=\d+,v2=[0-9a-f]{64}$/, "one v2 entry, no v1");
    assert.equal(a.body, other.body, "two jobs, the same body");
    const parts = signedParts(a, app.url("/a"));
    assert.ok(verifySignature(NEW, header(a), parts));

    // Replayed elsewhere: the signature an enqueuer saw at its own endpoint is worth nothing.
    const refused = {
      "another URL": { ...parts, url: app.url("/b") },
      "another query": { ...parts, url: app.url("/a?x=1") },
      "another job id": { ...parts, jobId: other.headers["x-jobs-id"] },
      "another attempt": { ...parts, attempt: "2" },
      "another method": { ...parts, method: "PUT" },
      "another job type": { ...parts, jobType: "weather_refresh" },
      "another body": { ...parts, body: JSON.stringify({ transfer: 1_000_000 }) },
    };
    for (const [what, replayed] of Object.entries(refused)) {
      assert.ok(!verifySignature(NEW, header(a), replayed), what);
    }
    // The other job's own signature verifies only with its own id.
    assert.ok(verifySignature(NEW, header(other), signedParts(other, app.url("/a"))));
    assert.ok(!verifySignature(NEW, header(other), { ...signedParts(other, app.url("/a")), jobId: a.headers["x-jobs-id"] }));
  });

  test("the method is the one sent: a PUT is signed as PUT, a GET over an empty body", async () => {
    const [put] = await deliver("/put", { method: "PUT", body: "raw text" });
    assert.equal(put.method, "PUT");
    const parts = signedParts(put, app.url("/put"));
    assert.ok(verifySignature(NEW, header(put), parts));
    assert.ok(!verifySignature(NEW, header(put), { ...parts, method: "POST" }));
    const [get] = await deliver("/get?page=2", { method: "GET" });
    assert.equal(get.body, "");
    assert.ok(verifySignature(NEW, header(get), signedParts(get, app.url("/get?page=2"))));
  });

  test("each attempt is signed anew: attempt 1's signature does not verify as attempt 2", async () => {
    app.script("/flaky", [{ status: 503, headers: { "retry-after": "1" } }, { status: 200 }]);
    const [first, second] = await deliver("/flaky", { body: { same: true } });
    assert.deepEqual([first.headers["x-jobs-attempt"], second.headers["x-jobs-attempt"]], ["1", "2"]);
    assert.equal(first.body, second.body);
    const url = app.url("/flaky");
    assert.ok(verifySignature(NEW, header(first), signedParts(first, url)));
    assert.ok(verifySignature(NEW, header(second), signedParts(second, url)));
    assert.ok(!verifySignature(NEW, header(first), { ...signedParts(first, url), attempt: "2" }));
  });

  test("an operator's replay or retry of a dead job is a new delivery to an app that drops what it has seen by (X-Jobs-Id, X-Jobs-Attempt)", async () => {
    // The app docs/app-guide.md "Signed delivery" describes: it processes a delivery once,
    // dropping a pair it has seen.
    const seen = new Set();
    const processed = (req) => {
      const pair = `${req.headers["x-jobs-id"]}/${req.headers["x-jobs-attempt"]}`;
      const fresh = !seen.has(pair);
      seen.add(pair);
      return fresh;
    };
    const admin = { token: TOKENS.admin };
    const runs = async (path, revive) => {
      app.script(path, [{ status: 500 }, { status: 200 }]);
      const enq = await p.enqueue({ type: "http", max_attempts: 1, payload: { url: app.url(path), body: { n: 1 } } });
      await p.waitForStatus(enq.body.id, "dead");
      assert.equal((await p.request("POST", revive(enq.body.id), admin)).status, 200);
      const job = await p.waitForStatus(enq.body.id, "succeeded");
      return { job, requests: app.requests(path) };
    };
    for (const [what, revive] of Object.entries({
      replay: (id) => `/v1/admin/dead-letters/${id}/replay`,
      retry: (id) => `/v1/admin/jobs/${id}/retry`,
    })) {
      const { job, requests } = await runs(`/revived-by-${what}`, revive);
      assert.deepEqual(requests.map((r) => r.headers["x-jobs-attempt"]), ["1", "2"], `${what}: the attempt header never repeats`);
      assert.deepEqual(requests.map(processed), [true, true], `${what}: the app processes the operator's delivery`);
      assert.deepEqual(job.runs.map((r) => [r.run, r.attempt, r.outcome]), [[1, 1, "dead"], [2, 1, "succeeded"]], `${what}: max_attempts counts from the revival`);
      for (const req of requests) assert.ok(verifySignature(NEW, header(req), signedParts(req, app.url(`/revived-by-${what}`))), what);
    }
  });

  test("a forwarded job is signed for its endpoint's URL without the fragment, and its own type", async () => {
    const enq = await p.enqueue({ type: "weather_refresh", payload: { kind: "alerts" } });
    await p.waitForStatus(enq.body.id, "succeeded");
    const [req] = app.requests("/apps/weather?team=7");
    assert.equal(req.headers["x-jobs-type"], "weather_refresh");
    const parts = signedParts(req, app.url("/apps/weather?team=7"));
    assert.ok(verifySignature(NEW, header(req), parts));
    assert.ok(!verifySignature(NEW, header(req), { ...parts, url: app.url("/apps/weather?team=7#ignored") }));
    assert.ok(!verifySignature(NEW, header(req), { ...parts, jobType: "http" }));
  });
});

describe("redirects", () => {
  test("a delivery answered with a redirect is not followed: the job dies naming where it pointed, nothing reaches the target", async () => {
    const target = app.url("/moved-here");
    app.script("/moved", [{ status: 301, headers: { location: target } }]);
    const enq = await p.enqueue({ type: "http", payload: { url: app.url("/moved"), headers: { cookie: "session=s3cret" } } });
    const job = await p.waitForStatus(enq.body.id, "dead");
    assert.equal(job.error.class, "client_error");
    assert.match(job.error.message, /^HTTP 301: a redirect to http:\/\/127\.0\.0\.1:\d+\/moved-here; /);
    assert.equal(job.attempts, 1, "final: every retry would be answered the same");
    assert.equal(app.requests("/moved").length, 1);
    assert.equal(app.requests("/moved-here").length, 0, "the signature and the job's headers stay with the configured URL");
  });
});

describe("key rotation", () => {
  test('with SIGNING_SECRETS="new,old" the consumer signs with new: an app holding only old refuses it', async () => {
    const [req] = await deliver("/rotating", { body: { n: 1 } });
    const parts = signedParts(req, app.url("/rotating"));
    assert.ok(verifySignature([NEW], header(req), parts), "an app that has the new secret");
    assert.ok(verifySignature([OLD, NEW], header(req), parts), "an app holding both during the rotation");
    assert.ok(!verifySignature([OLD], header(req), parts), "an app that only has the old secret");
    assert.ok(!verifySignature([SIGNING_SECRET], header(req), parts), "SIGNING_SECRET is only the fallback");
  });
});
