// link_health_check: the built-in handler against a real local server: HEAD with a GET
// fallback, redirects followed by hand, dead after N consecutive failures, bounded concurrency.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startPlatform, withPlatformAndApp } from "./support/platform.mjs";
import { startHostileServer } from "./support/hostile_server.mjs";

let app;
let p;
withPlatformAndApp((started) => ({ app, p } = started));

async function check(payload) {
  const enq = await p.enqueue({ type: "link_health_check", payload });
  assert.equal(enq.status, 202, JSON.stringify(enq.body));
  const job = await p.waitForStatus(enq.body.id, ["succeeded", "dead"]);
  assert.equal(job.status, "succeeded", JSON.stringify(job.error));
  return job.result;
}

const link = (url) => p.db.prepare("SELECT * FROM links WHERE url = ?").bind(url).first();
const byUrl = (result) => Object.fromEntries(result.links.map((l) => [l.url, l]));

describe("link_health_check", () => {
  test("HEAD, GET when HEAD is refused, redirects to the final URL, and failures", async () => {
    app.script("/l/ok", [{ status: 200 }]);
    app.script("/l/nohead", [{ status: 405 }, { status: 200 }]);
    app.script("/l/moved", [{ status: 301, headers: { location: "/l/ok" } }]);
    app.script("/l/loop", [{ status: 302, headers: { location: "/l/loop" } }]);
    app.script("/l/broken", [{ status: 500 }]);
    const urls = ["/l/ok", "/l/nohead", "/l/moved", "/l/loop", "/l/broken"].map(app.url);
    const result = await check({ urls, dead_after: 3 });
    assert.deepEqual([result.checked, result.ok, result.failing, result.dead], [5, 3, 2, 0]);
    const r = byUrl(result);
    assert.equal(r[app.url("/l/ok")].status_code, 200);
    assert.deepEqual(
      app.requests("/l/nohead").map((q) => q.method),
      ["HEAD", "GET"],
    );
    assert.equal(r[app.url("/l/nohead")].status, "ok");
    assert.equal(r[app.url("/l/moved")].final_url, app.url("/l/ok"));
    assert.equal(r[app.url("/l/moved")].status_code, 200);
    assert.match(r[app.url("/l/loop")].error, /more than 5 redirects/);
    assert.equal(app.requests("/l/loop").length, 6);
    assert.equal(r[app.url("/l/broken")].status_code, 500);
    assert.ok(r[app.url("/l/ok")].latency_ms >= 0);

    const broken = await link(app.url("/l/broken"));
    assert.equal(broken.status, "failing");
    assert.equal(broken.consecutive_failures, 1);
    assert.equal(broken.last_status_code, 500);
    assert.ok(broken.first_failure_at > 0);
    const moved = await link(app.url("/l/moved"));
    assert.equal(moved.final_url, app.url("/l/ok"));
    assert.equal(moved.first_failure_at, null);
  });

  test("dead after N consecutive failures; the streak keeps its first-failure time; a success resets", async () => {
    const url = app.url("/l/broken");
    const first = (await link(url)).first_failure_at;
    // Without urls, the job checks every link in the table.
    const second = await check({ dead_after: 3 });
    assert.equal(second.checked, 5);
    assert.equal(byUrl(second)[url].status, "failing");
    const third = await check({ urls: [url], dead_after: 3 });
    assert.equal(third.links[0].status, "dead");
    const dead = await link(url);
    assert.equal(dead.status, "dead");
    assert.equal(dead.consecutive_failures, 3);
    assert.equal(dead.first_failure_at, first);

    app.script("/l/broken", [{ status: 204 }]);
    const fixed = await check({ urls: [url] });
    assert.equal(fixed.links[0].status, "ok");
    const healthy = await link(url);
    assert.equal(healthy.consecutive_failures, 0);
    assert.equal(healthy.first_failure_at, null);
  });

  test("concurrency is bounded per job", async () => {
    const paths = Array.from({ length: 6 }, (_, i) => `/l/slow-${i}`);
    for (const path of paths) app.script(path, [{ status: 200, delayMs: 300 }]);
    const result = await check({ urls: paths.map(app.url), concurrency: 2 });
    assert.equal(result.ok, 6);
    const arrivals = paths.map((path) => app.requests(path)[0].at).sort((a, b) => a - b);
    for (let i = 0; i + 2 < arrivals.length; i++) {
      assert.ok(arrivals[i + 2] - arrivals[i] >= 250, `at most 2 in flight: ${arrivals.map((a) => a - arrivals[0])}`);
    }
  });

  test("more links refusing HEAD than the batch has connections: each GET gets one", async () => {
    // 10 probes at once over 6 connections: a probe that kept its HEAD's connection while it
    // waited for its GET's would hold every one, and the job would stop at its deadline with
    // most links unchecked.
    const paths = Array.from({ length: 10 }, (_, i) => `/l/nohead-${i}`);
    for (const path of paths) app.script(path, [{ status: 405 }, { status: 200 }]);
    const started = Date.now();
    const result = await check({ urls: paths.map(app.url), concurrency: 10 });
    assert.deepEqual([result.checked, result.ok, result.unchecked], [10, 10, 0]);
    for (const path of paths) {
      assert.deepEqual(app.requests(path).map((q) => q.method), ["HEAD", "GET"]);
    }
    assert.ok(Date.now() - started < 30_000, "the probes did not wait out the job's deadline");
  });

  test("a link's latency counts its requests, not its wait for a connection", async () => {
    // 12 probes at once over the batch's 6 connections: the second six wait a second for
    // one, which is no part of their links' latency. A redirect's two requests add up.
    const paths = Array.from({ length: 12 }, (_, i) => `/l/lat-${i}`);
    for (const path of paths) app.script(path, [{ status: 200, delayMs: 1_000 }]);
    app.script("/l/lat-moved", [{ status: 302, delayMs: 500, headers: { location: "/l/lat-0" } }]);
    const result = await check({ urls: [...paths, "/l/lat-moved"].map(app.url), concurrency: 13 });
    assert.equal(result.ok, 13);
    const r = byUrl(result);
    for (const path of paths) {
      const { latency_ms } = r[app.url(path)];
      assert.ok(latency_ms >= 950 && latency_ms < 1_800, `${path}: ${latency_ms} ms`);
    }
    const moved = r[app.url("/l/lat-moved")].latency_ms;
    assert.ok(moved >= 1_450 && moved < 2_500, `the redirect and its target: ${moved} ms`);
  });

  test("a page's anchors are one request, each kept under its own URL", async () => {
    app.script("/l/anchored", [{ status: 200 }]);
    const page = app.url("/l/anchored");
    const urls = [`${page}#intro`, `${page}#usage`, page, page.replace(/^http:/, "HTTP:")];
    const result = await check({ urls });
    assert.deepEqual([result.checked, result.ok], [4, 4]);
    assert.deepEqual(app.requests("/l/anchored").map((q) => q.method), ["HEAD"]);
    assert.deepEqual(result.links.map((l) => l.final_url), urls, "not redirected: each as listed");
    for (const url of urls) assert.equal((await link(url)).status, "ok");
  });

  test("a bad payload is refused at enqueue", async () => {
    const res = await p.enqueue({ type: "link_health_check", payload: { urls: ["nope"], concurrency: 2 } });
    assert.equal(res.status, 422);
    assert.equal(res.body.error.field, "payload.urls[0]");
    const res2 = await p.enqueue({ type: "link_health_check", payload: { concurrency: 50 } });
    assert.equal(res2.body.error.field, "payload.concurrency");
  });
});

describe("link_health_check within an invocation's subrequests", () => {
  let limited;
  before(async () => {
    limited = await startPlatform({ consumerBindings: { SUBREQUEST_LIMIT: "3" } });
  });
  after(() => limited.dispose());

  test("links it has no subrequests left for stay unchecked, never failing", async () => {
    const urls = ["/s/1", "/s/2", "/s/3", "/s/4", "/s/5"].map(app.url);
    const enq = await limited.enqueue({ type: "link_health_check", payload: { urls, concurrency: 1 } });
    const job = await limited.waitForStatus(enq.body.id, ["succeeded", "dead"]);
    assert.equal(job.status, "succeeded", JSON.stringify(job.error));
    assert.deepEqual([job.result.checked, job.result.ok, job.result.failing, job.result.unchecked], [3, 3, 0, 2]);
    const saved = await limited.count("SELECT count(*) FROM links");
    assert.equal(saved, 3, "only checked links are written");
  });
});

describe("link_health_check against bodies that never end", () => {
  let hostile;
  before(async () => (hostile = await startHostileServer()));
  after(() => hostile.close());

  test("a GET whose body never ends gives its connection back once its status is known", async () => {
    // As many such links as the batch has connections, then quick ones: a body left open
    // would keep its connection, and the quick links would wait out their timeouts.
    const endless = Array.from({ length: 6 }, (_, i) => hostile.url(`/trickle?head=405&i=${i}`));
    const quick = Array.from({ length: 6 }, (_, i) => hostile.url(`/slow?ms=10&i=${i}`));
    const result = await check({ urls: [...endless, ...quick], concurrency: 6 });
    assert.deepEqual([result.checked, result.ok, result.unchecked], [12, 12, 0]);
    for (const l of result.links) assert.ok(l.latency_ms < 5_000, `${l.url}: ${l.latency_ms} ms`);
  });
});
