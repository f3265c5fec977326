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

/** A new tab on the dashboard (at `path`), signed in with the admin token; `errors` collects
 * page errors. */
async function signedIn(path = "/dashboard/") {
  const page = await browser.newPage();
  const errors = [];
  page.on("pageerror", (e) => errors.push(e.message));
  await page.goto(new URL(path, base).href);
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
  // More dead jobs than the list shows, older than the two the test follows.
  const older = await Promise.all(Array.from({ length: 50 }, () => p.enqueue({ type: "http", payload: { url: app.url("/gone") } })));
  const refused = older.find((enq) => enq.status !== 202);
  assert.equal(refused, undefined, `every enqueue is accepted: ${JSON.stringify(refused)}`);
  await p.deliver("jobs-default", older.map((enq) => jobMessage(enq.body.id, "http")));
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
  assert.equal(stats.totals.counts.dead, 52);
  assert.equal(await page.locator("#dead-count").textContent(), "52 (the newest 50 listed)");
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

test("a job's detail offers only what its status allows, keeps what an action answered, and shows its chain", async () => {
  const parent = (await p.enqueue({ type: "http", payload: { url: app.url("/gone") }, steps: [{ type: "noop" }] })).body.id;
  await p.deliver("jobs-default", [jobMessage(parent, "http")]);
  assert.equal((await p.getJob(parent)).body.status, "dead");

  const { page, errors } = await signedIn();
  await page.locator("#families tbody tr").first().waitFor();
  await page.locator(`#jobs tr[data-job-id="${parent}"] a`).click();
  await page.locator("#detail-fields dd[data-field=chain]").waitFor();
  const buttons = () => page.locator("#detail-actions button").evaluateAll((bs) => bs.map((b) => b.dataset.action));
  assert.deepEqual(await buttons(), ["retry"], "a dead job can only be retried");
  assert.match(await page.locator("#detail-fields dd[data-field=chain]").textContent(), /^failed \(failed\): step 0 \(http\) went dead/);
  assert.match(await page.locator("#detail-fields dd[data-field=steps]").textContent(), /├ 0 http dead└ 1 noop pending/);

  // The answer of an action outlives the refresh after it; the job now offers its new moves.
  await page.click("#detail-actions button[data-action=retry]");
  await page.waitForFunction(() => document.querySelector("#action-status").textContent.endsWith("/retry: done"));
  await page.waitForFunction(() => document.querySelector("#status").textContent.startsWith("updated"));
  assert.match(await page.locator("#action-status").textContent(), new RegExp(`POST /v1/admin/jobs/${parent}/retry: done`));
  await page.waitForFunction(() => document.querySelector("#detail-actions button[data-action=cancel]"));
  assert.deepEqual(await buttons(), ["cancel", "skip", "boost"]);
  const priority = (await p.getJob(parent)).body.priority;
  await page.click("#detail-actions button[data-action=boost]");
  await page.waitForFunction(() => document.querySelector("#action-status").textContent.endsWith("/boost: done"));
  assert.equal((await p.getJob(parent)).body.priority, Math.min(priority + 10, 100));

  // A refused search lists nothing and says why; the next one clears the message.
  await page.fill("#search input[name=type]", "frobnicate");
  await page.click("#search button[type=submit]");
  await page.waitForFunction(() => document.querySelector("#search-status").textContent !== "");
  assert.match(await page.locator("#search-status").textContent(), /^search: .*type/);
  assert.equal(await page.locator("#jobs tbody tr").count(), 0);
  await page.fill("#search input[name=type]", "");
  await page.click("#search button[type=submit]");
  await page.locator(`#jobs tr[data-job-id="${parent}"]`).waitFor();
  assert.equal(await page.locator("#search-status").textContent(), "");
  assert.deepEqual(errors, []);
});

test("a pause by type shows the jobs it holds, and its resume releases them", async () => {
  await p.request("POST", "/v1/admin/pauses", { token: TOKENS.admin, json: { kind: "type", name: "noop", reason: "vendor down" } });
  const held = (await p.enqueue({ type: "noop", payload: {} })).body;
  await p.deliver("jobs-default", [jobMessage(held.id, "noop")]);
  const heldAt = () => p.db.prepare("SELECT held_at AS t FROM jobs WHERE id = ?").bind(held.id).first("t");
  assert.notEqual(await heldAt(), null);

  const { page, errors } = await signedIn();
  const pause = page.locator('#pauses tr[data-pause="type/noop"]');
  await pause.waitFor();
  assert.equal(await pause.locator("td[data-field=held]").textContent(), "1");
  assert.match(await pause.textContent(), /vendor down/);
  await page.click('#pauses button[data-resume="type/noop"]');
  await page.locator("#pauses-section").waitFor({ state: "hidden" });
  assert.deepEqual((await admin("/v1/admin/pauses")).pauses, []);
  assert.equal(await heldAt(), null, "the resume released the held job");
  assert.deepEqual(errors, []);
});

test("flow control shows, per type and key, what its limits did and what runs and waits now", async () => {
  const flow = { key: "tenant", concurrency: 1 };
  const put = await p.request("PUT", "/v1/admin/types/tenant_sync", { token: TOKENS.admin, json: { family: "default", target: { url: app.url("/ok") }, flow } });
  assert.equal(put.status, 201, JSON.stringify(put.body));
  const ids = [];
  for (let i = 0; i < 3; i++) ids.push((await p.enqueue({ type: "tenant_sync", payload: { tenant: "acme" } })).body.id);
  // One batch: one job at a time for acme, the other two wait their turn in it.
  await p.deliver("jobs-default", ids.map((id) => jobMessage(id, "tenant_sync")));
  const { page, errors } = await signedIn();
  const key = page.locator('#flow tr[data-flow="tenant_sync/acme"]');
  await key.waitFor();
  const field = (name) => key.locator(`td[data-field=${name}]`).textContent();
  assert.deepEqual([await field("started"), await field("waited"), await field("handed_back")], ["3", "2", "0"]);
  assert.deepEqual([await field("running"), await field("waiting")], ["0", "0"]);
  assert.deepEqual(errors, []);
});

test("a link to a job that does not exist says so on the page", async () => {
  const { page, errors } = await signedIn("/dashboard/#job=NOPE");
  await page.waitForFunction(() => document.querySelector("#action-status").textContent.includes("no job NOPE"));
  assert.ok(await page.locator("#detail").isHidden());
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

  // A link to the job opens its view once signed in.
  const { page, errors } = await signedIn(`/dashboard/#job=${job.id}`);
  const listed = page.locator('#artifacts tr[data-run="1"]');
  await listed.waitFor();
  assert.equal(await listed.locator("td[data-field=kind]").textContent(), "feed_summary");
  assert.equal(await listed.locator("td[data-field=kept]").textContent(), JSON.stringify(artifact.inline));
  assert.equal(await page.locator("#runs tbody tr td").nth(6).textContent(), "rss_refresh");
  // Saved through the API with the token: the file is the artifact's body.
  const [download] = await Promise.all([page.waitForEvent("download"), listed.locator("button[data-action=save]").click()]);
  assert.equal(download.suggestedFilename(), `${job.id}-1-feed_summary.json`);
  const chunks = [];
  for await (const chunk of await download.createReadStream()) chunks.push(chunk);
  assert.deepEqual(JSON.parse(Buffer.concat(chunks).toString("utf8")), artifact.inline);
  assert.match(await page.locator("#action-status").textContent(), /feed_summary of run 1: \d+ bytes saved/);
  assert.deepEqual(errors, []);
});
