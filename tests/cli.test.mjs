// The operator CLI (`npx cf-jobs`, clients/cli) against the built workers on local workerd, over
// real HTTP: stats, the job search, and a replay of 1,200 dead jobs, which takes two API calls
// (1,000 a call) and shows its progress.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { enqueueAndDeliver, jobMessage, ROOT, startPlatform, TOKENS } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";

let app, p;
before(async () => {
  app = await startAppServer();
  app.script("/gone", [{ status: 400 }]);
  p = await startPlatform({ manualDelivery: true });
});
after(async () => {
  await p?.dispose();
  await app?.close();
});

/** Runs `cf-jobs args...` as an operator would (no terminal: plain lines, no bar). */
const cli = (...args) => p.cli(...args);

test("replay 1,200 dead jobs: a dry run counts them, the replay shows its progress page by page", async () => {
  for (let i = 0; i < 12; i++) {
    await enqueueAndDeliver(p, "jobs-default", { type: "http", payload: { url: app.url("/gone") } }, 100);
  }
  assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE status = 'dead'"), 1200);

  const dry = await cli("replay", "--type", "http", "--dry-run", "--json");
  assert.equal(dry.code, 0, dry.stderr);
  assert.deepEqual(JSON.parse(dry.stdout), { dry_run: true, count: 1200 });
  assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE status = 'dead'"), 1200, "a dry run moves nothing");

  const run = await cli("replay", "--type", "http");
  assert.equal(run.code, 0, run.stderr);
  assert.deepEqual(run.stdout.trim().split("\n"), ["replayed 1000/1200", "replayed 1200/1200", "replayed 1200 job(s)"]);
  assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE status = 'queued' AND type = 'http'"), 1200);

  // Nothing left to replay: said as done, not as a dry run.
  const again = await cli("replay", "--type", "http");
  assert.equal(again.code, 0, again.stderr);
  assert.equal(again.stdout.trim(), "replayed 0 job(s)");
  assert.deepEqual(JSON.parse((await cli("replay", "--type", "http", "--json")).stdout), { count: 0, conflicts: 0 });
});

test("jobs artifact saves a run's artifact to a file, or writes it to stdout", async () => {
  const enq = await p.enqueue({ type: "rss_feed_refresh", payload: {} });
  await p.deliver(`jobs-${enq.body.family}`, [jobMessage(enq.body.id, "rss_feed_refresh")]);
  const job = (await p.getJob(enq.body.id)).body;
  assert.equal(job.status, "succeeded", JSON.stringify(job.error));
  const dir = mkdtempSync(join(tmpdir(), "cf-jobs-artifact-"));
  try {
    const file = join(dir, "summary.json");
    const saved = await cli("jobs", "artifact", job.id, "1", "feed_summary", "--out", file);
    assert.equal(saved.code, 0, saved.stderr);
    assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), job.artifacts[0].inline);
    assert.match(saved.stderr, /bytes written to/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const printed = await cli("jobs", "artifact", job.id, "1", "feed_summary");
  assert.deepEqual(JSON.parse(printed.stdout), job.artifacts[0].inline);
  const missing = await cli("jobs", "artifact", job.id, "3", "feed_summary");
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /404 not_found \(run\): job .* has no artifact feed_summary of run 3 \(it has: feed_summary of run 1\)/);
});

test("stats and the job search, as tables or JSON; bad input says why", async () => {
  const stats = await cli("stats", "--json");
  assert.equal(stats.code, 0, stats.stderr);
  assert.equal(JSON.parse(stats.stdout).families.default.backlog, await p.count("SELECT COUNT(*) FROM jobs WHERE family = 'default' AND status IN ('queued','retrying','scheduled')"));
  const table = await cli("stats");
  assert.match(table.stdout, /│ default\s+│ \d+/);

  const list = await cli("jobs", "list", "--status", "queued", "--limit", "5");
  assert.equal(list.code, 0, list.stderr);
  const [id] = /\b01[0-9A-Z]{24}\b/.exec(list.stdout);
  const get = await cli("jobs", "get", id, "--json");
  assert.equal(JSON.parse(get.stdout).id, id);

  const bad = await cli("jobs", "list", "--status", "lost");
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /422 .*status/);
  const none = await cli("retry");
  assert.equal(none.code, 1);
  assert.match(none.stderr, /name the jobs/);
  const unknown = await cli("frobnicate");
  assert.equal(unknown.code, 2);
});
