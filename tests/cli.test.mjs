// The operator CLI (`npx cf-jobs`, clients/cli) against the built workers on local workerd, over
// real HTTP: stats, the job search, and a replay of 1,200 dead jobs, which takes two API calls
// (1,000 a call) and shows its progress.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { join } from "node:path";
import { enqueueAndDeliver, ROOT, startPlatform, TOKENS } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";

let app, p, base;
before(async () => {
  app = await startAppServer();
  app.script("/gone", [{ status: 400 }]);
  p = await startPlatform({ manualDelivery: true });
  base = String(await p.mf.ready).replace(/\/$/, "");
});
after(async () => {
  await p?.dispose();
  await app?.close();
});

/** Runs `cf-jobs args...` as an operator would (no terminal: plain lines, no bar). */
function cli(...args) {
  const bin = join(ROOT, "node_modules", ".bin", "cf-jobs");
  const child = spawn(bin, args, { env: { ...process.env, CF_JOBS_URL: base, CF_JOBS_TOKEN: TOKENS.admin, NO_COLOR: "1" } });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (d) => (stdout += d));
  child.stderr.on("data", (d) => (stderr += d));
  return new Promise((resolve) => child.on("close", (code) => resolve({ code, stdout, stderr })));
}

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
