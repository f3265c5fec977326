// The operator dashboard in real headless Chromium (Debian's, started as for the
// browser stand-in and driven by playwright-core over CDP) against the built workers on local
// workerd: the numbers match the API, and replaying a dead job by clicking takes it off the dead list.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { chromium as playwright } from "playwright-core";
import { jobMessage, startPlatform, TOKENS } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";
import { startChromium } from "../dev/browser-standin/chromium.mjs";
import { tick } from "./support/sweep.mjs";

let app, p, chromium, browser, base;
before(async () => {
  app = await startAppServer();
  app.script("/gone", [{ status: 400 }]);
  p = await startPlatform({ manualDelivery: true });
  base = String(await p.mf.ready);
  chromium = await startChromium();
  browser = await playwright.connectOverCDP(chromium.url);
});
after(async () => {
  await browser?.close();
  await chromium?.close();
  await p?.dispose();
  await app?.close();
});

const admin = async (path) => (await p.request("GET", path, { token: TOKENS.admin })).body;

/** A new tab on the dashboard, signed in with the admin token; `errors` collects page errors. */
async function signedIn() {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(new URL("/dashboard/", base).href);
  await page.fill("#token", TOKENS.admin);
  await page.click("#login button[type=submit]");
  return { page, errors };
}

test("the page is served from static assets with a strict CSP and no data", async () => {
  const res = await fetch(new URL("/dashboard/", base));
  assert.equal(res.status, 200);
  assert.match(res.headers.get("content-type"), /text\/html/);
  assert.match(res.headers.get("content-security-policy"), /frame-ancestors 'none'/);
  assert.equal((await fetch(new URL("/dashboard/app.js", base))).status, 200);
  assert.equal((await fetch(new URL("/dashboard/charts.js", base))).status, 200);
  assert.equal((await fetch(new URL("/dashboard/secrets.txt", base))).status, 404);
});

test("load the dashboard, see the API's numbers, replay a dead job by clicking", async () => {
  const dead = [];
  for (let i = 0; i < 2; i++) {
    const enq = await p.enqueue({ type: "http", payload: { url: app.url("/gone") } });
    await p.deliver("jobs-default", [jobMessage(enq.body.id, "http")]);
    dead.push(enq.body.id);
  }
  await p.enqueue({ type: "noop", payload: {} }); // one waiting in the backlog
  const stats = await admin("/v1/admin/stats");

  const { page, errors } = await signedIn();

  const familyCell = (family, field) => page.locator(`#families tr[data-family="${family}"] td[data-field="${field}"]`);
  await familyCell("default", "backlog").waitFor();
  assert.equal(await familyCell("default", "backlog").textContent(), String(stats.families.default.backlog));
  assert.equal(await familyCell("default", "dead").textContent(), String(stats.families.default.counts.dead));
  assert.equal(await familyCell("all", "dead").textContent(), String(stats.totals.counts.dead));
  assert.equal(await familyCell("default", "failure_rate").textContent(), `${(stats.families.default.last_hour.failure_rate * 100).toFixed(1)} %`);

  const deadRow = (id) => page.locator(`#dead-letters tr[data-job-id="${id}"]`);
  for (const id of dead) await deadRow(id).waitFor();
  await page.locator(`#failures tr[data-job-id="${dead[0]}"]`).first().waitFor();

  await page.click(`button[data-replay="${dead[0]}"]`);
  await deadRow(dead[0]).waitFor({ state: "detached" });
  assert.equal(await deadRow(dead[1]).count(), 1, "the other dead job is still listed");
  assert.equal((await p.getJob(dead[0])).body.status, "queued");
  const audit = await admin("/v1/admin/audit");
  assert.equal(audit.entries[0].action, "dead_letter.replay");

  // Search and a job's detail with its runs.
  await page.selectOption("#search select[name=status]", "dead");
  await page.click("#search button[type=submit]");
  // The filtered result replaces the first, unfiltered one: the replayed job leaves it.
  await page.locator(`#jobs tr[data-job-id="${dead[0]}"]`).waitFor({ state: "detached" });
  await page.locator(`#jobs tr[data-job-id="${dead[1]}"]`).waitFor();
  assert.ok((await page.locator("#jobs td[data-field=status]").allTextContents()).every((s) => s === "dead"));
  await page.click(`#jobs tr[data-job-id="${dead[1]}"] a`);
  await page.locator("#runs tbody tr").first().waitFor();
  assert.equal(await page.locator("#detail-id").textContent(), dead[1]);
  assert.equal(await page.locator("#runs tbody tr").count(), 1);
  assert.deepEqual(errors, []);
});

test("the last hour's charts draw each family's minutes from the history the API serves", async () => {
  for (let i = 0; i < 3; i++) {
    const enq = await p.enqueue({ type: "noop", payload: {} });
    await p.deliver("jobs-default", [jobMessage(enq.body.id, "noop")]);
  }
  const failed = await p.enqueue({ type: "http", payload: { url: app.url("/gone") } });
  await p.deliver("jobs-default", [jobMessage(failed.body.id, "http")]);
  await tick(p, Date.now());
  const history = await admin("/v1/admin/history?minutes=60");
  const total = (key) => history.families.default.reduce((n, point) => n + point[key], 0);
  assert.ok(total("succeeded") >= 3 && total("failed") >= 1);

  const { page, errors } = await signedIn();
  const chart = (family, series) => page.locator(`#history svg[data-family="${family}"][data-series="${series}"]`);
  await chart("default", "succeeded").waitFor();
  assert.equal(await page.locator("#history tbody tr").count(), 5, "a row per family");
  assert.match(await chart("default", "succeeded").locator("title").textContent(), new RegExp(`^default succeeded / min: ${total("succeeded")} in all`));
  assert.match(await chart("default", "failed").locator("title").textContent(), new RegExp(`^default failed / min: ${total("failed")} in all`));
  assert.ok((await chart("default", "succeeded").locator("polyline, circle").count()) >= 1, "a line is drawn");
  const backlog = history.families.default.filter((point) => point.backlog !== null).at(-1).backlog;
  assert.match(await chart("default", "backlog").locator("title").textContent(), new RegExp(`latest ${backlog},`));
  assert.match(await chart("high", "avg_ms").locator("title").textContent(), /high avg duration \(ms\): no data/);
  assert.deepEqual(errors, []);
});

test("a wrong token is refused and the page asks again", async () => {
  const page = await browser.newPage();
  await page.goto(new URL("/dashboard/", base).href);
  await page.fill("#token", TOKENS.enqueue);
  await page.click("#login button[type=submit]");
  await page.locator("#login").waitFor({ state: "visible" });
  assert.match(await page.locator("#status").textContent(), /cannot use the admin API/);
  assert.equal(await page.evaluate(() => sessionStorage.getItem("cf-jobs-admin-token")), null);
});

test("a job's view lists what each run produced: its artifacts", async () => {
  // A refresh of every due source (none here) keeps its feed summary, inline, as its artifact.
  const enq = await p.enqueue({ type: "rss_feed_refresh", payload: {} });
  await p.deliver(`jobs-${enq.body.family}`, [jobMessage(enq.body.id, "rss_feed_refresh")]);
  const job = (await p.getJob(enq.body.id)).body;
  assert.equal(job.status, "succeeded", JSON.stringify(job.error));
  const [artifact] = job.artifacts;
  assert.equal(artifact.kind, "feed_summary");

  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  // A link to the job opens its view once signed in.
  await page.goto(new URL(`/dashboard/#job=${job.id}`, base).href);
  await page.fill("#token", TOKENS.admin);
  await page.click("#login button[type=submit]");
  const listed = page.locator('#artifacts tr[data-run="1"]');
  await listed.waitFor();
  assert.equal(await listed.locator("td[data-field=kind]").textContent(), "feed_summary");
  assert.equal(await listed.locator("td[data-field=kept]").textContent(), JSON.stringify(artifact.inline));
  assert.equal(await page.locator("#runs tbody tr td").nth(6).textContent(), "rss_refresh");
  assert.deepEqual(errors, []);
});
