// screenshot_capture (docs/app-guide.md "Screenshots"): the built consumer drives a real headless
// Chromium over CDP through the BROWSER binding - here the stand-in worker dev/browser-standin,
// bound by the consumer's local config - captures pages served by the test's own HTTP server, and
// stores the image in local R2. Failures are classified (target 404, navigation timeout, DNS), the
// binding's 429 (every browser busy) makes the job wait for a slot without spending an attempt, the screenshot family's browser slots show in the admin stats, and the REST
// mode posts to a local stand-in of the API.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { join } from "node:path";
import { inflateSync } from "node:zlib";
import { chromium as playwright } from "playwright-core";
import { unstable_readConfig } from "wrangler";
import { jobMessage, logCollector, refuseSuccess, ROOT, startPlatform, TOKENS } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";
import { startChromium } from "../dev/browser-standin/chromium.mjs";

const QUEUE = "jobs-screenshot";
const html = (body, head = "") => ({
  status: 200,
  headers: { "content-type": "text/html" },
  raw: `<!doctype html><html><head>${head}<style>html,body{margin:0}</style></head><body>${body}</body></html>`,
});

/** Width and height from the image's own header, read here independently of the Rust code. */
function dimensions(bytes) {
  const b = Buffer.from(bytes);
  if (b.subarray(1, 4).toString() === "PNG") {
    assert.equal(b.subarray(12, 16).toString(), "IHDR");
    return { format: "png", width: b.readUInt32BE(16), height: b.readUInt32BE(20) };
  }
  assert.deepEqual([...b.subarray(0, 2)], [0xff, 0xd8], "a PNG or a JPEG");
  for (let at = 2; at < b.length; ) {
    const marker = b[at + 1];
    if (marker >= 0xc0 && marker <= 0xc3) {
      return { format: "jpeg", height: b.readUInt16BE(at + 5), width: b.readUInt16BE(at + 7) };
    }
    at += 2 + b.readUInt16BE(at + 2);
  }
  assert.fail("no JPEG frame header");
}

/** The top-left pixel of a PNG as `#rrggbb`: the first row's first pixel is stored as is,
 * whatever the row's filter. */
function firstPixel(bytes) {
  const b = Buffer.from(bytes);
  const idat = [];
  for (let at = 8; at < b.length; at += 12 + b.readUInt32BE(at)) {
    if (b.subarray(at + 4, at + 8).toString() === "IDAT") idat.push(b.subarray(at + 8, at + 8 + b.readUInt32BE(at)));
  }
  const rows = inflateSync(Buffer.concat(idat));
  return `#${rows.subarray(1, 4).toString("hex")}`;
}

/** Enqueues a screenshot job on `p` and runs its message once; returns the job and the decisions. */
async function capture(p, payload) {
  const enq = await p.enqueue({ type: "screenshot_capture", payload });
  assert.equal(enq.status, 202, JSON.stringify(enq.body));
  return deliverAgain(p, enq.body.id);
}

/** Delivers a message of job `id` once more; returns the job and the decisions. */
async function deliverAgain(p, id) {
  const decisions = await p.deliver(QUEUE, [jobMessage(id, "screenshot_capture")]);
  return { job: (await p.getJob(id)).body, decisions };
}

/** A job the browser service turned away: still queued, no attempt, no run, no error. */
function waitingForSlot(job) {
  assert.deepEqual(
    [job.status, job.attempts, job.runs, job.error, job.finished_at],
    ["queued", 0, [], null, null],
    JSON.stringify(job),
  );
}

let chromium, app;
before(async () => {
  chromium = await startChromium();
  app = await startAppServer();
});
after(async () => {
  // Chromium first: its idle (pre)connections would hold the app server's close for a minute.
  await chromium?.close();
  await app?.close();
});

describe("screenshot_capture through the Browser Rendering binding", () => {
  let p, bucket, standin;
  const logs = logCollector();
  before(async () => {
    p = await startPlatform({ manualDelivery: true, standinBindings: { CHROMIUM_URL: chromium.url }, onLog: logs.onLog });
    bucket = await p.mf.getR2Bucket("SCREENSHOTS", p.consumerName);
    standin = await p.mf.getWorker("browser-standin");
  });
  after(() => p?.dispose());

  test("a page served locally lands in R2 as a real PNG of the viewport's size", async () => {
    app.script("/page", [html('<h1 style="background:#c0ffee;height:100px">Hello</h1>')]);
    const { job, decisions } = await capture(p, {
      url: app.url("/page"),
      viewport: { width: 640, height: 480 },
      wait_until: "load",
    });
    assert.equal(job.status, "succeeded", JSON.stringify(job.error));
    assert.equal(decisions.retryMessages.length, 0);
    const r = job.result;
    assert.equal(r.key, `screenshots/${job.id}/1.png`);
    assert.deepEqual(
      [r.width, r.height, r.format, r.content_type, r.status, r.mode],
      [640, 480, "png", "image/png", 200, "binding"],
    );
    assert.equal(r.final_url, app.url("/page"));

    const object = await bucket.get(r.key);
    assert.ok(object, "the image is in R2");
    const bytes = new Uint8Array(await object.arrayBuffer());
    assert.equal(r.size, bytes.length);
    assert.ok(bytes.length > 1000);
    assert.deepEqual(dimensions(bytes), { format: "png", width: 640, height: 480 });
    assert.equal(object.httpMetadata.contentType, "image/png");
    assert.equal(object.customMetadata.job_id, job.id);
    // The image is the run's artifact, listed on the job.
    const artifact = { kind: "screenshot", content_type: "image/png", size: r.size, key: r.key, width: 640, height: 480 };
    assert.deepEqual(job.runs[0].artifacts, [artifact]);
    assert.deepEqual(job.artifacts, [{ ...artifact, run: 1 }]);
    assert.equal(job.runs[0].handler, "screenshot");
    assert.equal(job.runs[0].bytes.in, r.size, "the image's bytes");
  });

  test("a retry keeps each attempt's image: one R2 object and one artifact per attempt", async () => {
    app.script("/again", [html('<h1 style="background:#facade">Again</h1>')]);
    const enq = await p.enqueue({ type: "screenshot_capture", payload: { url: app.url("/again"), viewport: { width: 320, height: 240 } } });
    // D1 refuses the first attempt's success (a real fault): that attempt is retried, its
    // image already stored.
    const undo = await refuseSuccess(p, enq.body.id);
    let first;
    try {
      first = (await deliverAgain(p, enq.body.id)).job;
    } finally {
      await undo();
    }
    assert.deepEqual([first.status, first.error.class], ["retrying", "internal"]);
    // Its backoff over (the test moves its due time instead of waiting), the retry runs.
    await p.db.prepare("UPDATE jobs SET run_at = ? WHERE id = ?").bind(Date.now(), enq.body.id).run();
    const { job } = await deliverAgain(p, enq.body.id);
    assert.equal(job.status, "succeeded", JSON.stringify(job.error));

    const keys = [`screenshots/${job.id}/1.png`, `screenshots/${job.id}/2.png`];
    assert.equal(job.result.key, keys[1], "the result names the latest image");
    for (const key of keys) {
      const bytes = new Uint8Array(await (await bucket.get(key)).arrayBuffer());
      assert.deepEqual(dimensions(bytes), { format: "png", width: 320, height: 240 }, key);
    }
    assert.deepEqual(job.runs.map((r) => r.artifacts.map((a) => [a.kind, a.key])), [[["screenshot", keys[0]]], [["screenshot", keys[1]]]]);
    assert.deepEqual(job.artifacts.map((a) => [a.run, a.key]), [[2, keys[1]], [1, keys[0]]]);
  });

  test("the image is served by the API: the job's artifact, streamed from R2, and nothing else", async () => {
    app.script("/served", [html('<h1 style="background:#bada55">Served</h1>')]);
    const { job } = await capture(p, { url: app.url("/served"), viewport: { width: 300, height: 200 } });
    assert.equal(job.status, "succeeded", JSON.stringify(job.error));
    const get = (path, token = TOKENS.enqueue) =>
      p.mf.dispatchFetch(`http://jobs.local${path}`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
    const path = `/v1/jobs/${job.id}/artifacts/1/screenshot`;

    const res = await get(path);
    assert.equal(res.status, 200);
    const served = new Uint8Array(await res.arrayBuffer());
    const stored = new Uint8Array(await (await bucket.get(job.result.key)).arrayBuffer());
    assert.deepEqual(served, stored);
    assert.deepEqual(dimensions(served), { format: "png", width: 300, height: 200 });
    assert.equal(res.headers.get("content-type"), "image/png");
    assert.equal(res.headers.get("content-length"), String(job.result.size));
    assert.equal(res.headers.get("x-content-type-options"), "nosniff");
    assert.match(res.headers.get("content-security-policy"), /sandbox/);
    assert.ok(res.headers.get("etag"));
    assert.equal((await get(path, TOKENS.admin)).status, 200, "an operator reads it too");

    const refused = async (path, token, status, field) => {
      const res = await get(path, token);
      const body = await res.json();
      assert.deepEqual([res.status, body.error.field], [status, field], JSON.stringify(body));
      return body.error;
    };
    await refused(path, null, 401, "authorization");
    const noRun = await refused(`/v1/jobs/${job.id}/artifacts/2/screenshot`, TOKENS.enqueue, 404, "run");
    assert.match(noRun.message, /it has: screenshot of run 1/);
    await refused(`/v1/jobs/${job.id}/artifacts/first/screenshot`, TOKENS.enqueue, 422, "run");
    await refused(`/v1/jobs/${job.id}/artifacts/0/screenshot`, TOKENS.enqueue, 422, "run");
    await refused(`/v1/jobs/${job.id}/artifacts/1/llm_responses`, TOKENS.enqueue, 404, "kind");
    await refused(`/v1/jobs/01NOSUCHJOB/artifacts/1/screenshot`, TOKENS.enqueue, 404, "id");
    // The bucket's lifecycle rule expired the object: the run still names it, R2 has it no more.
    await bucket.delete(job.result.key);
    const gone = await refused(path, TOKENS.enqueue, 410, undefined);
    assert.equal(gone.code, "gone");
  });

  test("jpeg of the full page: the whole height, beyond the viewport", async () => {
    app.script("/tall", [html('<div style="height:2000px;background:linear-gradient(red,blue)"></div>')]);
    const { job } = await capture(p, {
      url: app.url("/tall"),
      viewport: { width: 500, height: 400 },
      full_page: true,
      format: "jpeg",
    });
    assert.equal(job.status, "succeeded", JSON.stringify(job.error));
    assert.deepEqual([job.result.width, job.result.height, job.result.format], [500, 2000, "jpeg"]);
    assert.equal(job.result.key, `screenshots/${job.id}/1.jpg`);
    const object = await bucket.get(job.result.key);
    const bytes = new Uint8Array(await object.arrayBuffer());
    assert.deepEqual(dimensions(bytes), { format: "jpeg", width: 500, height: 2000 });
    assert.equal(object.httpMetadata.contentType, "image/jpeg");
    assert.equal(job.result.size, bytes.length);
  });

  test("a page that moves on by itself (a script, a meta refresh) is captured where it lands", async () => {
    app.script("/landed", [html('<div style="background:#00ffff;height:100%">landed</div>', "<style>html,body{height:100%}</style>")]);
    app.script("/gone-by-script", [{ status: 404, headers: { "content-type": "text/html" }, raw: "<h1>gone</h1>" }]);
    const moving = {
      "/by-script": `<script>location.href = ${JSON.stringify(app.url("/landed"))}</script>`,
      "/by-refresh": `<meta http-equiv="refresh" content="0;url=${app.url("/landed")}">`,
      "/to-a-404": `<script>location.href = ${JSON.stringify(app.url("/gone-by-script"))}</script>`,
    };
    for (const [path, head] of Object.entries(moving)) app.script(path, [html("moving on", head)]);
    // Navigations that never commit leave the page where it was (here, shown before they start).
    app.script("/no-content", [{ status: 204, raw: "" }]);
    app.script("/download", [{ status: 200, headers: { "content-type": "application/octet-stream", "content-disposition": "attachment; filename=x.bin" }, raw: "x" }]);
    app.script("/to-a-204", [html(`staying<script>location.href = ${JSON.stringify(app.url("/no-content"))}</script>`)]);
    app.script("/to-a-download", [html(`staying<script>location.href = ${JSON.stringify(app.url("/download"))}</script>`)]);
    for (const path of ["/by-script", "/by-refresh"]) {
      const { job } = await capture(p, { url: app.url(path), viewport: { width: 200, height: 100 }, timeout_ms: 10_000 });
      assert.equal(job.status, "succeeded", `${path}: ${JSON.stringify(job.error)}`);
      assert.deepEqual([job.result.final_url, job.result.status], [app.url("/landed"), 200], path);
      const bytes = new Uint8Array(await (await bucket.get(job.result.key)).arrayBuffer());
      assert.equal(firstPixel(bytes), "#00ffff", `${path}: the landed page, not the one it left`);
    }
    const { job } = await capture(p, { url: app.url("/to-a-404"), timeout_ms: 10_000 });
    assert.deepEqual([job.status, job.error.class], ["dead", "client_error"]);
    assert.match(job.error.message, /gone-by-script answered HTTP 404/);
    for (const path of ["/to-a-204", "/to-a-download"]) {
      const started = Date.now();
      const { job } = await capture(p, { url: app.url(path), timeout_ms: 10_000 });
      assert.equal(job.status, "succeeded", `${path}: ${JSON.stringify(job.error)}`);
      assert.equal(job.result.final_url, app.url(path));
      assert.ok(Date.now() - started < 8_000, `${path} took ${Date.now() - started} ms, not its timeout`);
    }
  });

  test("waits for a selector the page adds late", async () => {
    const script = '<script>setTimeout(() => document.body.innerHTML = "<p id=ready>ready</p>", 400)</script>';
    app.script("/late", [html("loading", script)]);
    const { job } = await capture(p, { url: app.url("/late"), selector: "#ready", viewport: { width: 300, height: 200 } });
    assert.equal(job.status, "succeeded", JSON.stringify(job.error));
    assert.deepEqual([job.result.width, job.result.height], [300, 200]);
  });

  test("a target 404 is dead on the first attempt, without a retry", async () => {
    app.script("/missing", [{ status: 404, headers: { "content-type": "text/html" }, raw: "<h1>gone</h1>" }]);
    const { job, decisions } = await capture(p, { url: app.url("/missing") });
    assert.equal(job.status, "dead");
    assert.equal(job.attempts, 1);
    assert.equal(job.error.class, "client_error");
    assert.match(job.error.message, /answered HTTP 404/);
    assert.equal(decisions.retryMessages.length, 0);
    assert.equal(await bucket.get(`screenshots/${job.id}/1.png`), null, "nothing stored");
    // Without a body Chrome fails the navigation itself (ERR_HTTP_RESPONSE_CODE_FAILURE): the
    // status still decides.
    app.script("/missing-empty", [{ status: 410, raw: "" }]);
    const empty = await capture(p, { url: app.url("/missing-empty") });
    assert.deepEqual([empty.job.status, empty.job.error.class], ["dead", "client_error"]);
    assert.match(empty.job.error.message, /answered HTTP 410/);
  });

  test("a navigation timeout retries with backoff; a name that does not resolve is dead (dns)", async () => {
    app.script("/hang", [{ ...html("late"), delayMs: 5000 }]);
    const slow = await capture(p, { url: app.url("/hang"), timeout_ms: 1000 });
    assert.equal(slow.job.status, "retrying");
    assert.equal(slow.job.error.class, "navigation_timeout");
    assert.match(slow.job.error.message, /within 1000 ms/);
    const [retry] = slow.decisions.retryMessages;
    assert.ok(retry.delaySeconds >= 22 && retry.delaySeconds <= 38, `default backoff: ${retry.delaySeconds}`);

    const selector = await capture(p, { url: app.url("/page"), selector: "#never", timeout_ms: 1000 });
    assert.equal(selector.job.status, "retrying");
    assert.equal(selector.job.error.class, "navigation_timeout");
    assert.match(selector.job.error.message, /selector matched nothing/);

    const dns = await capture(p, { url: "http://no-such-host.invalid/" });
    assert.equal(dns.job.status, "dead");
    assert.equal(dns.job.error.class, "dns");
    assert.match(dns.job.error.message, /ERR_NAME_NOT_RESOLVED/);
  });

  test("the binding's 429 (every browser busy): the job waits for a slot after its Retry-After, spending no attempt", async () => {
    const acquire = () => standin.fetch("http://browser/v1/devtools/browser?keep_alive=60000", { method: "POST" });
    const held = [];
    for (let i = 0; i < 3; i++) held.push((await (await acquire()).json()).sessionId);
    const busy = await acquire();
    assert.equal(busy.status, 429);
    await busy.text();

    logs.lines.length = 0;
    const { job, decisions } = await capture(p, { url: app.url("/page") });
    waitingForSlot(job);
    assert.deepEqual(decisions.retryMessages.map((m) => m.delaySeconds), [30], "the stand-in's Retry-After");
    assert.deepEqual(decisions.explicitAcks, []);
    const [skipped] = logs.events("job.skipped");
    assert.deepEqual([skipped["job.id"], skipped.reason, skipped["message.retry_secs"]], [job.id, "browser_busy", 30]);
    assert.equal(logs.events("job.failed").length, 0);
    const again = await deliverAgain(p, job.id);
    waitingForSlot(again.job);

    for (const id of held) await (await standin.fetch(`http://browser/v1/devtools/browser/${id}`, { method: "DELETE" })).text();
    const freed = await deliverAgain(p, job.id);
    assert.equal(freed.job.status, "succeeded", "released sessions free their slots");
    assert.deepEqual([freed.job.attempts, freed.job.runs.length], [1, 1], "the waits spent no attempt");
  });

  test("browser slots in use show in the admin stats (running / 3)", async () => {
    // At most 3 at once: one message per batch, 3 batches in flight.
    const config = unstable_readConfig({ config: join(ROOT, "consumer", "wrangler.toml") });
    const consumer = config.queues.consumers.find((c) => c.queue === QUEUE);
    assert.deepEqual([consumer.max_batch_size, consumer.max_concurrency], [1, 3]);

    const slots = async () => (await p.request("GET", "/v1/admin/stats", { token: TOKENS.admin })).body.families.screenshot.browser_slots;
    assert.deepEqual(await slots(), { running: 0, limit: 3, utilization: 0 });
    app.script("/slow", [{ ...html("slow"), delayMs: 1500 }]);
    const running = capture(p, { url: app.url("/slow") });
    const during = await p.waitFor(async () => {
      const s = await slots();
      return s.running === 1 ? s : null;
    }, { what: "a running screenshot job" });
    assert.equal(during.limit, 3);
    assert.ok(Math.abs(during.utilization - 1 / 3) < 1e-9);
    assert.equal((await running).job.status, "succeeded");
    assert.equal((await slots()).running, 0);
  });

  test("every attempt closed its tab and released its browser session", async () => {
    const pages = (await (await fetch(`${chromium.url}/json/list`)).json()).filter((t) => t.type === "page");
    assert.deepEqual(pages.map((t) => t.url), ["about:blank"], "only Chromium's first tab is left");
    const acquired = [];
    for (let i = 0; i < 3; i++) {
      const res = await standin.fetch("http://browser/v1/devtools/browser", { method: "POST" });
      assert.equal(res.status, 200, "every slot is free again");
      acquired.push((await res.json()).sessionId);
    }
    for (const id of acquired) await (await standin.fetch(`http://browser/v1/devtools/browser/${id}`, { method: "DELETE" })).text();
  });
});

describe("screenshot_capture through the REST endpoint (SCREENSHOT_MODE=rest)", () => {
  let p;
  const endpoint = "/client/v4/accounts/acct-1/browser-rendering/screenshot?cacheTTL=0";
  before(async () => {
    p = await startPlatform({
      manualDelivery: true,
      consumerBindings: {
        SCREENSHOT_MODE: "rest",
        CF_ACCOUNT_ID: "acct-1",
        CF_API_TOKEN: "api-token",
        CF_API_BASE_URL: app.url("/client/v4"),
      },
    });
  });
  after(() => p?.dispose());

  test("posts the options with the API token and stores the image it answers", async () => {
    // The API's answer is an image: a real one, taken by Chromium for this test.
    const png = await realPng(800, 600);
    app.script(endpoint, [{ status: 200, headers: { "content-type": "image/png" }, raw: png }]);
    const { job } = await capture(p, {
      url: "https://example.com/",
      viewport: { width: 800, height: 600 },
      wait_until: "networkidle",
    });
    assert.equal(job.status, "succeeded", JSON.stringify(job.error));
    assert.deepEqual(
      [job.result.mode, job.result.width, job.result.height, job.result.size, job.result.status],
      ["rest", 800, 600, png.length, null],
    );
    const [request] = app.requests(endpoint);
    assert.equal(request.method, "POST");
    assert.equal(request.headers.authorization, "Bearer api-token");
    assert.deepEqual(JSON.parse(request.body), {
      url: "https://example.com/",
      viewport: { width: 800, height: 600 },
      screenshotOptions: { type: "png", fullPage: false },
      gotoOptions: { waitUntil: "networkidle0", timeout: 60000 },
    });
    const object = await (await p.mf.getR2Bucket("SCREENSHOTS", p.consumerName)).get(job.result.key);
    assert.equal(object.size, png.length);
  });

  test("the API's 429 waits for a slot (its Retry-After, else 10 s) spending no attempt; a 4xx is dead", async () => {
    const limit = { status: 429, body: { success: false, errors: [{ code: 2001, message: "Rate limit exceeded" }] } };
    app.script(endpoint, [
      { ...limit, headers: { "retry-after": "45" } },
      limit,
      { status: 400, body: { success: false, errors: [{ code: 5006, message: "invalid url" }] } },
    ]);
    const limited = await capture(p, { url: "https://example.com/" });
    waitingForSlot(limited.job);
    assert.deepEqual(limited.decisions.retryMessages.map((m) => m.delaySeconds), [45]);
    const unsaid = await deliverAgain(p, limited.job.id);
    waitingForSlot(unsaid.job);
    assert.deepEqual(unsaid.decisions.retryMessages.map((m) => m.delaySeconds), [10], "no Retry-After: the default wait");
    const refused = await deliverAgain(p, limited.job.id);
    assert.deepEqual([refused.job.status, refused.job.attempts], ["dead", 1]);
    assert.match(refused.job.error.message, /HTTP 400: invalid url/);
  });
});

/** A PNG screenshot straight from the test's Chromium, through playwright-core. */
async function realPng(width, height) {
  const browser = await playwright.connectOverCDP(chromium.url);
  try {
    const context = await browser.newContext({ viewport: { width, height } });
    return await (await context.newPage()).screenshot({ type: "png" });
  } finally {
    await browser.close();
  }
}
