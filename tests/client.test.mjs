// The TypeScript client (clients/js, built by scripts/test.sh) against the built workers on local
// workerd: enqueue, read, wait and operate jobs, typed errors carrying the server's code and
// field; verifyDelivery on deliveries the real consumer signed; and its types equal to what
// openapi-typescript generates from the producer's OpenAPI document today.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHmac } from "node:crypto";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ROOT, SIGNING_SECRET, startPlatform, TOKENS } from "./support/platform.mjs";
import { startAppServer, verifySignature } from "./support/app_server.mjs";
import { JobsApiError, JobsClient, signTestDelivery, verifyDelivery } from "../clients/js/dist/index.js";

let app, p, jobs, admin;
before(async () => {
  app = await startAppServer();
  p = await startPlatform();
  const fetch = (url, init) => p.mf.dispatchFetch(url, init);
  jobs = new JobsClient({ baseUrl: "http://jobs.local", token: TOKENS.enqueue, fetch });
  admin = new JobsClient({ baseUrl: "http://jobs.local/", token: TOKENS.admin, fetch });
});
after(async () => {
  await p?.dispose();
  await app?.close();
});

test("enqueue, enqueueBatch, getJob and waitFor", async () => {
  const one = await jobs.enqueue({ type: "noop", payload: {} });
  assert.equal(one.status, "queued");
  const done = await jobs.waitFor(one.id, { timeoutMs: 20_000, intervalMs: 100 });
  assert.equal(done.status, "succeeded");
  assert.equal(done.runs.length, 1);
  const batch = await jobs.enqueueBatch([{ type: "noop" }, { type: "noop", priority: 70 }]);
  assert.equal(batch.length, 2);
  assert.equal((await jobs.getJob(batch[1].id)).priority, 70);
});

test("errors carry the server's status, code and field", async () => {
  await assert.rejects(jobs.enqueue({ type: "http", payload: { url: "not a url" } }), (e) => {
    assert.ok(e instanceof JobsApiError);
    assert.deepEqual([e.status, e.code, e.field], [422, "invalid_payload", "payload.url"]);
    return true;
  });
  await assert.rejects(jobs.getJob("01JNOPE"), (e) => e.status === 404 && e.code === "not_found" && e.field === "id");
  await assert.rejects(jobs.stats(), (e) => e.status === 403 && e.code === "forbidden", "an enqueue token on an admin call");
});

test("artifact: the body a run produced, typed; one the job lacks is a 404 naming the field", async () => {
  // A refresh of every due source (none here) keeps its feed summary, inline, as its artifact.
  const enq = await jobs.enqueue({ type: "rss_feed_refresh", payload: {} });
  const job = await jobs.waitFor(enq.id, { timeoutMs: 20_000, intervalMs: 100 });
  assert.equal(job.status, "succeeded", JSON.stringify(job.error));
  const blob = await jobs.artifact(job.id, 1, "feed_summary");
  assert.equal(blob.type, "application/json");
  assert.deepEqual(JSON.parse(await blob.text()), job.artifacts[0].inline);
  await assert.rejects(jobs.artifact(job.id, 2, "feed_summary"), (e) => e.status === 404 && e.field === "run");
  await assert.rejects(jobs.artifact(job.id, 1, "screenshot"), (e) => e.status === 404 && e.field === "kind");
});

test("an error answer that is not the API's JSON (a proxy's page) is a JobsApiError with its status and text", async () => {
  app.script("/proxy/v1/jobs/01JPROXIED", [{ status: 502, raw: "<html>Bad gateway</html>", headers: { "content-type": "text/html" } }]);
  const behindProxy = new JobsClient({ baseUrl: app.url("/proxy"), token: TOKENS.enqueue });
  await assert.rejects(behindProxy.getJob("01JPROXIED"), (e) => {
    assert.ok(e instanceof JobsApiError, String(e));
    assert.deepEqual([e.status, e.code, e.message], [502, "http_502", "http_502: <html>Bad gateway</html>"]);
    return true;
  });
});

test("admin calls: stats, history, the job search and a bulk action's dry run", async () => {
  const waiting = await admin.enqueue({ type: "noop", delay_seconds: 3600 });
  const stats = await admin.stats();
  assert.ok(stats.families.default.counts.succeeded >= 1);
  const history = await admin.history(5);
  assert.equal(history.families.default.length, 5);
  const page = await admin.listJobs({ status: "scheduled,queued", type: "noop" });
  assert.ok(page.jobs.some((j) => j.id === waiting.id));
  const dry = await admin.cancelJobs({ ids: [waiting.id] }, true);
  assert.equal(dry.count, 1);
  assert.equal((await admin.getJob(waiting.id)).status, waiting.status, "a dry run moves nothing");
  const cancelled = await admin.setJobsStatus("cancelled", { ids: [waiting.id] });
  assert.equal(cancelled.count, 1);
});

test("verifyDelivery accepts what the consumer signed, and says why it refuses the rest", async () => {
  const url = app.url("/client/hook");
  const enq = await jobs.enqueue({ type: "http", payload: { url, method: "POST", body: { hello: "app" } } });
  await jobs.waitFor(enq.id, { timeoutMs: 20_000, intervalMs: 100 });
  const [sent] = app.requests("/client/hook");
  const received = (headers = sent.headers, body = sent.body) =>
    new Request(url, { method: sent.method, headers, body });

  const ok = await verifyDelivery(received(), { secrets: ["old-secret", SIGNING_SECRET], url });
  assert.equal(ok.valid, true, JSON.stringify(ok));
  assert.deepEqual(ok.job, { id: enq.id, type: "http", attempt: 1 });
  assert.equal(ok.body, sent.body);

  const refused = async (request, options) => (await verifyDelivery(request, { secrets: SIGNING_SECRET, url, ...options })).reason;
  assert.equal(await refused(received(sent.headers, sent.body.replace("app", "APP"))), "no_matching_signature");
  assert.equal(await refused(received(), { url: app.url("/elsewhere") }), "no_matching_signature");
  assert.equal(await refused(received(), { secrets: "wrong" }), "no_matching_signature");
  assert.equal(await refused(received(), { now: Date.now() + 3_600_000 }), "stale_timestamp");
  const { "x-jobs-signature": _, ...unsigned } = sent.headers;
  assert.equal(await refused(received(unsigned)), "missing_signature");
  assert.equal(await refused(received({ ...sent.headers, "x-jobs-signature": "t=1" })), "invalid_signature_header");
});

test("signTestDelivery signs as the platform does: the platform's check accepts it", async () => {
  const url = "https://app.example.com/jobs?x=1";
  const request = await signTestDelivery({ url, secret: "s3cret", body: '{"a":1}', jobType: "message_relay", jobId: "01JOB", attempt: 2 });
  assert.equal((await verifyDelivery(request, { secrets: "s3cret" })).valid, true);
  const headers = Object.fromEntries(request.headers);
  const parts = { method: "POST", url, jobType: "message_relay", jobId: "01JOB", attempt: "2", body: await request.text() };
  assert.equal(verifySignature("s3cret", headers["x-jobs-signature"], parts), true, "the tests' own implementation agrees");
});

test("verifyDelivery checks the body's bytes as signed: a leading BOM, a NUL and invalid UTF-8", async () => {
  const url = "https://app.example.com/jobs";
  const bodies = {
    "a leading byte-order mark": "\ufeffBOM first",
    "a NUL": "before\u0000after",
    "invalid UTF-8": new Uint8Array([0x7b, 0xff, 0xfe, 0xc3, 0x28, 0x7d]),
  };
  for (const [what, body] of Object.entries(bodies)) {
    const sent = typeof body === "string" ? new TextEncoder().encode(body) : body;
    const check = await verifyDelivery(await signTestDelivery({ url, secret: "s3cret", body }), { secrets: "s3cret" });
    assert.equal(check.valid, true, `${what}: ${JSON.stringify(check)}`);
    assert.deepEqual(check.bytes, sent, `${what}: the bytes as signed`);
    if (typeof body === "string") assert.equal(check.body, body, `${what}: its text, whole`);
    // The same bytes signed by the tests' own implementation (Node's HMAC over the raw bytes).
    const signed = await signTestDelivery({ url, secret: "s3cret", body });
    const headers = Object.fromEntries(signed.headers);
    const [, t] = headers["x-jobs-signature"].match(/^t=(\d+),/);
    const head = [t, "POST", url, headers["x-jobs-type"], headers["x-jobs-id"], headers["x-jobs-attempt"], ""].join("\n");
    const mac = createHmac("sha256", "s3cret").update(head).update(sent).digest("hex");
    assert.equal(headers["x-jobs-signature"], `t=${t},v2=${mac}`, `${what}: the signature covers the raw bytes`);
    // One byte changed is refused.
    const tampered = new Uint8Array(sent);
    tampered[tampered.length - 1] ^= 1;
    const forged = new Request(url, { method: "POST", headers, body: tampered });
    assert.equal((await verifyDelivery(forged, { secrets: "s3cret" })).reason, "no_matching_signature", what);
  }
});

test("the client's types are what openapi-typescript generates from the OpenAPI document now", () => {
  const dir = mkdtempSync(join(tmpdir(), "openapi-"));
  const out = join(dir, "openapi.ts");
  const bin = join(ROOT, "node_modules", ".bin", "openapi-typescript");
  const run = spawnSync(bin, [join(ROOT, "producer", "static", "openapi.json"), "-o", out], { encoding: "utf8" });
  const generated = run.status === 0 ? readFileSync(out, "utf8") : undefined;
  rmSync(dir, { recursive: true, force: true });
  assert.equal(run.status, 0, run.stderr);
  const committed = readFileSync(join(ROOT, "clients", "js", "src", "openapi.ts"), "utf8");
  assert.equal(generated, committed, "run `npm run types -w clients/js` and commit src/openapi.ts");
});

// The client's examples in the docs (docs/app-guide.md "TypeScript client", README "A first job"),
// each the first ts block under its heading.
for (const [file, heading] of [["docs/app-guide.md", "## TypeScript client"], ["README.md", "## A first job"]]) {
  test(`${file}'s client example under "${heading.replace(/^#+ /, "")}" type-checks under strict against the client's types`, () => {
    const doc = readFileSync(join(ROOT, file), "utf8");
    assert.ok(doc.includes(`\n${heading}\n`), `${file} has the heading ${heading}`);
    const section = doc.slice(doc.indexOf(`\n${heading}\n`));
    const example = /```ts\n([\s\S]*?)```/.exec(section)?.[1];
    assert.ok(example, "the section has a ts example");
    const dir = mkdtempSync(join(tmpdir(), "client-example-"));
    // What the example takes from its surroundings: a Worker's env and the incoming request.
    const declared = "declare const env: { JOBS_TOKEN: string; SIGNING_SECRET: string };\n" +
      "declare const request: Request;\ndeclare const MY_ENDPOINT_URL: string;\nexport {};\n";
    writeFileSync(join(dir, "example.ts"), declared + example);
    writeFileSync(join(dir, "tsconfig.json"), JSON.stringify({
      compilerOptions: {
        target: "ES2022", module: "ES2022", moduleResolution: "bundler", lib: ["ES2022", "DOM"],
        strict: true, noEmit: true, types: [],
        paths: { "@cf-jobs/client": [join(ROOT, "clients", "js", "src", "index.ts")] },
      },
      files: ["example.ts"],
    }));
    const run = spawnSync(join(ROOT, "node_modules", ".bin", "tsc"), ["-p", dir], { encoding: "utf8" });
    rmSync(dir, { recursive: true, force: true });
    assert.equal(run.status, 0, run.stdout + run.stderr);
  });
}
