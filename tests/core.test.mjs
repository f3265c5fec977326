// The core path end to end: the built producer and consumer WASM on local workerd, real D1 and real
// local queues, and a real local HTTP server as the app endpoint.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { d1Stats, jobMessage, logCollector, startPlatform, TOKENS, SIGNING_SECRET } from "./support/platform.mjs";
import { signedParts, startAppServer, verifySignature } from "./support/app_server.mjs";

let app;
before(async () => {
  app = await startAppServer();
});
after(() => app.close());

describe("jobs flow through the real local queues", () => {
  let p;
  const logs = logCollector();
  before(async () => {
    p = await startPlatform({
      consumerBindings: { ENDPOINT_WEATHER_REFRESH: app.url("/apps/weather") },
      onLog: logs.onLog,
    });
  });
  after(() => p.dispose());

  test("an http job is delivered signed, succeeds, and leaves a run record", async () => {
    const enq = await p.enqueue({ type: "http", payload: { url: app.url("/ok"), body: { hello: "world" } } });
    assert.equal(enq.status, 202);
    assert.equal(enq.body.status, "queued");
    assert.equal(enq.body.family, "default");
    assert.equal(enq.body.deduplicated, false);
    assert.equal(d1Stats(enq.headers).round_trips, 1);

    const job = await p.waitForStatus(enq.body.id, "succeeded");
    assert.equal(job.attempts, 1);
    assert.equal(job.result.status, 200);
    assert.equal(job.runs.length, 1);
    assert.equal(job.runs[0].attempt, 1);
    assert.equal(job.runs[0].outcome, "succeeded");
    assert.equal(job.runs[0].error, null);
    // What ran it: the handler, the consumer's version and invocation (the id its
    // batch.completed line carries), the body bytes sent and read, the lease it held.
    const run = job.runs[0];
    assert.equal(run.handler, "http");
    assert.equal(typeof run.version, "string");
    assert.ok(run.version.length > 0, "a version id, or local");
    assert.match(run.invocation, /^[0-9A-HJKMNP-TV-Z]{26}$/);
    assert.deepEqual(run.bytes, { out: JSON.stringify({ hello: "world" }).length, in: JSON.stringify({ ok: true }).length });
    assert.ok(Date.parse(run.lease_until) > Date.parse(run.started_at), "the lease it held");
    assert.deepEqual(run.artifacts, []);
    assert.deepEqual(job.artifacts, []);
    const completed = await p.waitFor(() => logs.events("batch.completed").find((l) => l.invocation === run.invocation), {
      what: "the invocation's batch.completed line",
    });
    assert.match(completed.queue, /^jobs-default/);

    const [req] = app.requests("/ok");
    assert.equal(req.method, "POST");
    assert.deepEqual(JSON.parse(req.body), { hello: "world" });
    assert.equal(req.headers["x-jobs-id"], enq.body.id);
    assert.equal(req.headers["x-jobs-attempt"], "1");
    const signed = signedParts(req, app.url("/ok"));
    assert.ok(verifySignature(SIGNING_SECRET, req.headers["x-jobs-signature"], signed), "signature verifies");
    assert.ok(!verifySignature("another-secret", req.headers["x-jobs-signature"], signed));
  });

  test("credential headers go out with the request and are never shown again: the job's views redact them", async () => {
    const headers = { Authorization: "Bearer partner-secret", "X-Api-Key": "k-123", "X-Trace": "t1" };
    const enq = await p.enqueue({ type: "http", payload: { url: app.url("/with-credentials"), method: "GET", headers } });
    assert.equal(enq.status, 202);
    await p.waitForStatus(enq.body.id, "succeeded");
    const [req] = app.requests("/with-credentials");
    assert.deepEqual([req.headers.authorization, req.headers["x-api-key"], req.headers["x-trace"]], ["Bearer partner-secret", "k-123", "t1"]);
    const shown = { Authorization: "[redacted]", "X-Api-Key": "[redacted]", "X-Trace": "t1" };
    for (const [path, token] of [[`/v1/jobs/${enq.body.id}`, TOKENS.enqueue], [`/v1/admin/jobs/${enq.body.id}`, TOKENS.admin]]) {
      const view = await p.request("GET", path, { token });
      assert.equal(view.status, 200);
      assert.deepEqual(view.body.payload.headers, shown, path);
      assert.doesNotMatch(JSON.stringify(view.body), /partner-secret|k-123/, path);
      assert.equal(view.headers.get("x-content-type-options"), "nosniff");
    }
  });

  test("a success recorded before migration 0018 (its details whole on its row, no invocation row) shows as recorded", async () => {
    const enq = await p.enqueue({ type: "noop" });
    await p.waitForStatus(enq.body.id, "succeeded");
    const old = { handler: "noop", version: "v-before-0018", invocation: "01JOLDINVOCATION0000000000", lease_until: 1_700_000_000_000 };
    await p.db.prepare("UPDATE jobs SET run_invocation = NULL, run_details = ? WHERE id = ?").bind(JSON.stringify(old), enq.body.id).run();
    const [run] = (await p.getJob(enq.body.id)).body.runs;
    assert.deepEqual(
      [run.outcome, run.handler, run.version, run.invocation, run.lease_until],
      ["succeeded", "noop", old.version, old.invocation, new Date(old.lease_until).toISOString()],
    );
  });

  test("a type without a built-in handler is forwarded, signed, to its app endpoint", async () => {
    const enq = await p.enqueue({ type: "weather_refresh", payload: { kind: "alerts" } });
    assert.equal(enq.status, 202);
    const job = await p.waitForStatus(enq.body.id, "succeeded");
    const [req] = app.requests("/apps/weather");
    const delivered = JSON.parse(req.body);
    assert.deepEqual(delivered, { id: job.id, type: "weather_refresh", attempt: 1, payload: { kind: "alerts" } });
    assert.ok(verifySignature(SIGNING_SECRET, req.headers["x-jobs-signature"], signedParts(req, app.url("/apps/weather"))));
  });

  test("fail then succeed: Retry-After decides the wait, and both attempts are recorded", async () => {
    app.script("/flaky", [{ status: 503, headers: { "retry-after": "1" } }, { status: 200 }]);
    const enq = await p.enqueue({ type: "http", payload: { url: app.url("/flaky") } });
    const job = await p.waitForStatus(enq.body.id, "succeeded");
    assert.equal(job.attempts, 2);
    assert.deepEqual(job.runs.map((r) => r.outcome), ["retrying", "succeeded"]);
    assert.equal(job.runs[0].error.class, "server_error");
    const [first, second] = app.requests("/flaky");
    assert.ok(second.at - first.at >= 1000, `second attempt ${second.at - first.at} ms after the first`);
  });

  test("a retryable failure waits within the default policy's bounds for attempt 1 (22.5 s to 37.5 s)", async () => {
    app.script("/down", [{ status: 500 }]);
    const enq = await p.enqueue({ type: "http", payload: { url: app.url("/down") } });
    const job = await p.waitForStatus(enq.body.id, "retrying");
    const delayMs = Date.parse(job.run_at) - Date.parse(job.runs[0].finished_at);
    assert.ok(delayMs >= 22_500 && delayMs <= 37_500, `retry delay ${delayMs} ms`);
    assert.deepEqual(job.error, { class: "server_error", message: job.error.message });
    assert.equal(job.runs[0].outcome, "retrying");
  });

  test("attempts exhausted: dead, with its class, and listed as arrived in the DLQ", async () => {
    app.script("/always-503", [{ status: 503, headers: { "retry-after": "1" } }]);
    const enq = await p.enqueue({ type: "http", payload: { url: app.url("/always-503") }, max_attempts: 2 });
    const job = await p.waitForStatus(enq.body.id, "dead");
    assert.equal(job.attempts, 2);
    assert.equal(job.error.class, "server_error");
    assert.deepEqual(job.runs.map((r) => r.outcome), ["retrying", "dead"]);
    await p.waitFor(() => p.count("SELECT count(*) FROM dead_letters WHERE job_id = ?", job.id), {
      what: "the DLQ arrival",
    });
    assert.equal(await p.count("SELECT family FROM dead_letters WHERE job_id = ?", job.id), "default");
  });

  test("a 4xx is final: dead on the first attempt", async () => {
    app.script("/missing", [{ status: 404 }]);
    const enq = await p.enqueue({ type: "http", payload: { url: app.url("/missing") } });
    const job = await p.waitForStatus(enq.body.id, "dead");
    assert.equal(job.attempts, 1);
    assert.equal(job.error.class, "client_error");
    assert.equal(app.requests("/missing").length, 1);
  });

  test("a forwarded type with no endpoint configured is dead: not_configured", async () => {
    const enq = await p.enqueue({ type: "listing_expiration", payload: {} });
    const job = await p.waitForStatus(enq.body.id, "dead");
    assert.equal(job.error.class, "not_configured");
    assert.match(job.error.message, /ENDPOINT_LISTING_EXPIRATION/);
    assert.equal(job.attempts, 1);
  });

  test("dedup: a second job with a live dedup key returns the first one's id", async () => {
    const spec = { type: "http", payload: { url: app.url("/dedup") }, dedup_key: "nightly-report", delay_seconds: 600 };
    const first = await p.enqueue(spec);
    assert.equal(first.status, 202);
    const second = await p.enqueue(spec);
    assert.equal(second.status, 200);
    assert.equal(second.body.id, first.body.id);
    assert.equal(second.body.deduplicated, true);
    assert.equal(await p.count("SELECT count(*) FROM jobs WHERE dedup_key = 'nightly-report'"), 1);
    const other = await p.enqueue({ ...spec, dedup_key: "another-report" });
    assert.notEqual(other.body.id, first.body.id);
  });

  test("a batch of 100 in one request: one D1 round trip, 100 results in order, all delivered", async () => {
    const jobs = Array.from({ length: 100 }, (_, i) => ({ type: "http", payload: { url: app.url(`/batch?i=${i}`) } }));
    const res = await p.request("POST", "/v1/jobs/batch", { json: { jobs } });
    assert.equal(res.status, 202);
    assert.equal(res.body.jobs.length, 100);
    assert.equal(d1Stats(res.headers).round_trips, 1);
    const ids = res.body.jobs.map((j) => j.id);
    assert.deepEqual([...ids].sort(), ids, "ids are time-ordered ULIDs, in request order");
    await p.waitFor(
      async () => (await p.count("SELECT count(*) FROM jobs WHERE status = 'succeeded' AND id IN (SELECT value FROM json_each(?))", JSON.stringify(ids))) === 100,
      { what: "all 100 jobs to succeed", timeoutMs: 60_000 },
    );
    const paths = new Set(app.requests().map((r) => r.path).filter((path) => path.startsWith("/batch")));
    assert.equal(paths.size, 100);
  });

  test("a job delayed beyond the queue's 12 h limit is kept in D1 as scheduled, not sent", async () => {
    const enq = await p.enqueue({ type: "http", payload: { url: app.url("/later") }, delay_seconds: 86_400 });
    assert.equal(enq.status, 202);
    assert.equal(enq.body.status, "scheduled");
    const job = (await p.getJob(enq.body.id)).body;
    const due = Date.parse(job.run_at) - Date.parse(job.created_at);
    assert.equal(due, 86_400_000);
  });
});

// One platform for both suites: neither needs a fresh database (bad input compares job counts
// before and after), and with manual delivery nothing runs that a test did not deliver.
describe("messages delivered by the test", () => {
  let p;
  const logs = logCollector();
  before(async () => {
    p = await startPlatform({ manualDelivery: true, onLog: logs.onLog });
  });
  after(() => p.dispose());

  describe("consumer decisions, one batch at a time", () => {
    const message = (job) => jobMessage(job.id, "http");

    test("a failure is retried with the default policy's delay; a redelivery before it is due waits", async () => {
      app.script("/decide-500", [{ status: 500 }]);
      const enq = await p.enqueue({ type: "http", payload: { url: app.url("/decide-500") } });
      const first = await p.deliver("jobs-default", [message(enq.body)]);
      assert.equal(first.retryMessages.length, 1);
      const delay = first.retryMessages[0].delaySeconds;
      assert.ok(delay >= 22 && delay <= 38, `delay ${delay} s`);

      const early = await p.deliver("jobs-default", [{ ...message(enq.body), attempts: 2 }]);
      assert.equal(early.retryMessages.length, 1, "not due yet: retried, not run");
      assert.ok(Math.abs(early.retryMessages[0].delaySeconds - delay) <= 2);
      assert.equal(app.requests("/decide-500").length, 1, "the endpoint was called once");
    });

    test("noop's fail_times: its first attempts fail (retried, recorded), then it succeeds", async () => {
      const enq = await p.enqueue({ type: "noop", payload: { fail_times: 1 } });
      const noop = { id: "m-noop", ...jobMessage(enq.body.id, "noop") };
      const first = await p.deliver("jobs-default", [noop]);
      assert.equal(first.retryMessages.length, 1, "attempt 1 failed and is retried");
      assert.match((await p.getJob(enq.body.id)).body.error.message, /noop: failing attempt 1/);
      await p.db.prepare("UPDATE jobs SET run_at = 0 WHERE id = ?").bind(enq.body.id).run();
      const second = await p.deliver("jobs-default", [{ ...noop, attempts: 2 }]);
      assert.deepEqual(second.explicitAcks, ["m-noop"]);
      const job = (await p.getJob(enq.body.id)).body;
      assert.deepEqual([job.status, job.attempts, job.runs.map((r) => r.outcome)], ["succeeded", 2, ["retrying", "succeeded"]]);
      // A noop sends and reads nothing: D1 keeps no bytes or artifacts for its runs, and the
      // view shows them empty.
      assert.deepEqual(job.runs.map((r) => [r.bytes, r.artifacts]), Array(2).fill([{ out: 0, in: 0 }, []]));
      // The success's row keeps its own details and its invocation's id; what the invocation's
      // runs share is kept once, and the view shows the two together.
      const stored = await p.db.prepare("SELECT run_details, run_invocation FROM jobs WHERE id = ?").bind(enq.body.id).first();
      assert.deepEqual(JSON.parse(stored.run_details), { handler: "noop" });
      const shared = await p.db.prepare("SELECT details FROM invocations WHERE id = ?").bind(stored.run_invocation).first("details");
      assert.deepEqual(Object.keys(JSON.parse(shared)).sort(), ["lease_until", "version"]);
      const success = job.runs[1];
      const { version, lease_until } = JSON.parse(shared);
      assert.deepEqual([success.handler, success.version, success.invocation], ["noop", version, stored.run_invocation]);
      assert.equal(Date.parse(success.lease_until), lease_until);
    });

    test("Retry-After on a 429 sets the retry delay exactly", async () => {
      app.script("/decide-429", [{ status: 429, headers: { "retry-after": "7" } }]);
      const enq = await p.enqueue({ type: "http", payload: { url: app.url("/decide-429") } });
      const result = await p.deliver("jobs-default", [message(enq.body)]);
      assert.deepEqual(result.retryMessages.map((m) => m.delaySeconds), [7]);
      const job = (await p.getJob(enq.body.id)).body;
      assert.equal(job.error.class, "rate_limited");
    });

    test("a redelivered message of a succeeded job is acked without calling the endpoint again", async () => {
      const enq = await p.enqueue({ type: "http", payload: { url: app.url("/once") } });
      const first = await p.deliver("jobs-default", [{ id: "m-1", ...message(enq.body) }]);
      assert.deepEqual(first.explicitAcks, ["m-1"]);
      assert.equal((await p.getJob(enq.body.id)).body.status, "succeeded");
      const again = await p.deliver("jobs-default", [{ id: "m-2", ...message(enq.body), attempts: 2 }]);
      assert.deepEqual(again.explicitAcks, ["m-2"]);
      assert.equal(again.retryMessages.length, 0);
      assert.equal(app.requests("/once").length, 1);
      assert.equal((await p.getJob(enq.body.id)).body.runs.length, 1);
    });

    test("two messages of one job in one batch run it once; the second is acked as a duplicate", async () => {
      const enq = await p.enqueue({ type: "http", payload: { url: app.url("/twice-in-batch") } });
      const result = await p.deliver("jobs-default", [
        { id: "m-a", ...message(enq.body) },
        { id: "m-b", ...message(enq.body) },
      ]);
      assert.deepEqual([...result.explicitAcks].sort(), ["m-a", "m-b"]);
      assert.equal(result.ackAll, true, "every message acked: in one ackAll");
      assert.equal(result.retryMessages.length, 0);
      assert.equal(app.requests("/twice-in-batch").length, 1);
      assert.equal((await p.getJob(enq.body.id)).body.runs.length, 1);
    });

    test("a batch whose every message claims its job takes two D1 round trips; a stale message costs one more", async () => {
      const [a, b] = [await p.enqueue({ type: "noop", payload: {} }), await p.enqueue({ type: "noop", payload: {} })];
      const roundTrips = async (messages) => {
        const before = logs.events("batch.completed").length;
        const result = await p.deliver("jobs-default", messages);
        const line = await p.waitFor(() => logs.events("batch.completed")[before], { what: "batch.completed" });
        return [result.explicitAcks, line["d1.round_trips"]];
      };
      // The claim and the record.
      assert.deepEqual(await roundTrips([{ id: "m-a", ...jobMessage(a.body.id, "noop") }]), [["m-a"], 2]);
      // The plain claim misses the succeeded job; a second one settles it, and the record
      // reads why it claimed nothing.
      const mixed = await roundTrips([
        { id: "m-a2", ...jobMessage(a.body.id, "noop"), attempts: 2 },
        { id: "m-b", ...jobMessage(b.body.id, "noop") },
      ]);
      assert.deepEqual([[...mixed[0]].sort(), mixed[1]], [["m-a2", "m-b"], 3]);
      for (const job of [a, b]) assert.equal((await p.getJob(job.body.id)).body.runs.length, 1);
      assert.equal((await p.getJob(b.body.id)).body.status, "succeeded");
    });

    test("a job that fell due while the batch's handlers ran comes back at once, neither run nor acked", async () => {
      // Why a message claimed nothing is read after the handlers: by then this job is due.
      app.script("/slow-neighbour", [{ status: 200, delayMs: 2500 }]);
      const slow = await p.enqueue({ type: "http", payload: { url: app.url("/slow-neighbour") } });
      const soon = await p.enqueue({ type: "http", payload: { url: app.url("/fell-due") }, delay_seconds: 2 });
      const result = await p.deliver("jobs-default", [
        { id: "m-slow", ...message(slow.body) },
        { id: "m-soon", ...message(soon.body) },
      ]);
      assert.deepEqual(result.explicitAcks, ["m-slow"]);
      assert.deepEqual(result.retryMessages, [{ msgId: "m-soon", delaySeconds: 1 }]);
      assert.equal(app.requests("/fell-due").length, 0);
      assert.equal((await p.getJob(soon.body.id)).body.status, "queued");
    });

    test("a stray message for a job kept in D1 (scheduled) is acked; the job waits for the sweep", async () => {
      const enq = await p.enqueue({ type: "http", payload: { url: app.url("/held-for-sweep") }, delay_seconds: 86_400 });
      assert.equal(enq.body.status, "scheduled");
      const result = await p.deliver("jobs-default", [{ id: "m-held", ...message(enq.body) }]);
      assert.deepEqual(result.explicitAcks, ["m-held"]);
      assert.equal(result.retryMessages.length, 0);
      assert.equal((await p.getJob(enq.body.id)).body.status, "scheduled");
      assert.equal(app.requests("/held-for-sweep").length, 0);
    });

    test("a message that is not a job is acked and dropped, the rest of the batch runs", async () => {
      const enq = await p.enqueue({ type: "http", payload: { url: app.url("/mixed") } });
      const result = await p.deliver("jobs-default", [
        { id: "bad", body: { hello: "there" } },
        { id: "good", ...message(enq.body) },
      ]);
      assert.deepEqual([...result.explicitAcks].sort(), ["bad", "good"]);
      assert.equal((await p.getJob(enq.body.id)).body.status, "succeeded");
    });

    test("the DLQ consumer lists an arrival and puts a job still waiting back in the outbox", async () => {
      const enq = await p.enqueue({ type: "http", payload: { url: app.url("/never") } });
      const result = await p.deliver("jobs-default-dlq", [{ id: "d-1", ...message(enq.body), attempts: 101 }]);
      assert.deepEqual(result.explicitAcks, ["d-1"]);
      const job = (await p.getJob(enq.body.id)).body;
      assert.equal(job.status, "queued", "its message is gone, not the job (tests/faults_recovery.test.mjs)");
      assert.equal(await p.count("SELECT sent_at FROM jobs WHERE id = ?", job.id), null);
      assert.equal(await p.count("SELECT delivery_attempts FROM dead_letters WHERE job_id = ?", job.id), 101);
    });
  });

  describe("bad input gets a clear error and writes nothing", () => {
    const jobCount = () => p.count("SELECT count(*) FROM jobs");
    const ok = { type: "http", payload: { url: "https://example.com/hook" } };

    const cases = [
      ["malformed JSON", { body: "{not json", headers: { "content-type": "application/json" } }, 400, "malformed_json", undefined],
      ["wrong content type", { body: JSON.stringify(ok), headers: { "content-type": "text/plain" } }, 415, "unsupported_media_type", "content-type"],
      ["body not an object", { json: [ok] }, 400, "invalid_body", undefined],
      ["unknown type", { json: { ...ok, type: "mine_bitcoin" } }, 422, "unknown_type", "type"],
      ["missing type", { json: { payload: {} } }, 422, "invalid_field", "type"],
      ["invalid payload: no url", { json: { type: "http", payload: {} } }, 422, "invalid_payload", "payload.url"],
      ["invalid payload: wrong type", { json: { type: "rss_feed_refresh", payload: { force_refresh: "yes" } } }, 422, "invalid_payload", "payload.force_refresh"],
      ["a URL over 8 KiB", { json: { type: "screenshot_capture", payload: { url: `https://example.com/?q=${"a".repeat(8192)}` } } }, 422, "invalid_payload", "payload.url"],
      ["a URL with credentials", { json: { type: "screenshot_capture", payload: { url: "https://user:secret@example.com/" } } }, 422, "invalid_payload", "payload.url"],
      ["unknown field", { json: { ...ok, colour: "red" } }, 422, "unknown_field", "colour"],
      ["priority of the wrong type", { json: { ...ok, priority: "high" } }, 422, "invalid_field", "priority"],
      ["priority out of range", { json: { ...ok, priority: 101 } }, 422, "out_of_range", "priority"],
      ["negative delay", { json: { ...ok, delay_seconds: -1 } }, 422, "out_of_range", "delay_seconds"],
      ["delay beyond a year", { json: { ...ok, delay_seconds: 40_000_000 } }, 422, "out_of_range", "delay_seconds"],
      ["both delay and run_at", { json: { ...ok, delay_seconds: 5, run_at: "2030-01-01T00:00:00Z" } }, 422, "conflicting_fields", "run_at"],
      ["run_at not a time", { json: { ...ok, run_at: "tomorrow" } }, 422, "invalid_field", "run_at"],
      ["max_attempts out of range", { json: { ...ok, max_attempts: 0 } }, 422, "out_of_range", "max_attempts"],
      ["oversize payload", { json: { type: "http", payload: { url: "https://example.com", body: "x".repeat(130 * 1024) } } }, 413, "payload_too_large", "payload"],
      ["oversize body", { body: JSON.stringify({ ...ok, pad: "x".repeat(1100 * 1024) }), headers: { "content-type": "application/json" } }, 413, "body_too_large", undefined],
    ];

    for (const [name, request, status, code, field] of cases) {
      test(`POST /v1/jobs, ${name}: ${status} ${code}`, async () => {
        const before = await jobCount();
        const res = await p.request("POST", "/v1/jobs", request);
        assert.equal(res.status, status, JSON.stringify(res.body));
        assert.equal(res.body.error.code, code);
        assert.equal(typeof res.body.error.message, "string");
        assert.equal(res.body.error.field, field);
        assert.equal(await jobCount(), before);
      });
    }

    test("a batch over 100 jobs: 422 batch_too_large, nothing written", async () => {
      const before = await jobCount();
      const res = await p.request("POST", "/v1/jobs/batch", { json: { jobs: Array(101).fill(ok) } });
      assert.equal(res.status, 422);
      assert.equal(res.body.error.code, "batch_too_large");
      assert.equal(res.body.error.field, "jobs");
      assert.equal(await jobCount(), before);
    });

    test("a batch with one bad job names it, and writes none of the good ones", async () => {
      const before = await jobCount();
      const res = await p.request("POST", "/v1/jobs/batch", { json: { jobs: [ok, { ...ok, payload: { url: "ftp://x" } }, ok] } });
      assert.equal(res.status, 422);
      assert.equal(res.body.error.field, "jobs[1].payload.url");
      assert.equal(await jobCount(), before);
    });

    const authCases = [
      ["no token", { token: null }, 401, "unauthorized"],
      ["a wrong token", { token: "nope" }, 401, "unauthorized"],
      ["a malformed header", { token: null, headers: { authorization: "Basic abc" } }, 401, "unauthorized"],
    ];
    for (const [name, opts, status, code] of authCases) {
      test(`POST /v1/jobs with ${name}: ${status}, nothing written`, async () => {
        const before = await jobCount();
        const res = await p.request("POST", "/v1/jobs", { json: ok, ...opts });
        assert.equal(res.status, status);
        assert.equal(res.body.error.code, code);
        assert.equal(await jobCount(), before);
      });
    }

    test("an enqueue token on an admin route: 403 forbidden; the admin token passes", async () => {
      const res = await p.request("GET", "/v1/admin/stats");
      assert.equal(res.status, 403);
      assert.equal(res.body.error.code, "forbidden");
      const admin = await p.request("GET", "/v1/admin/stats", { token: TOKENS.admin });
      assert.equal(admin.status, 200);
    });

    test("an admin token may also enqueue", async () => {
      const res = await p.enqueue(ok, { token: TOKENS.admin });
      assert.equal(res.status, 202);
    });

    test("unknown routes and methods answer JSON errors", async () => {
      const missing = await p.request("GET", "/v1/nothing");
      assert.equal(missing.status, 404);
      assert.equal(missing.body.error.code, "not_found");
      const method = await p.request("DELETE", "/v1/jobs");
      assert.equal(method.status, 405);
      const job = await p.getJob("01JUNKJUNKJUNKJUNKJUNKJUNK");
      assert.equal(job.status, 404);
      assert.equal(job.body.error.code, "not_found");
    });

    test("GET /healthz reports D1, queues and auth configuration", async () => {
      const res = await p.request("GET", "/healthz", { token: null });
      assert.equal(res.status, 200);
      assert.deepEqual(res.body, {
        status: "ok",
        d1: true,
        queues: true,
        auth: { enqueue_tokens: true, admin_tokens: true, metrics_tokens: false, enqueue_token_types: "ok" },
        // No channel configured: nothing is ever sent (tests/observability.test.mjs sets them).
        escalation: { pagerduty: false, slack: false, digest: false, dashboard_links: false },
      });
    });
  });
});
