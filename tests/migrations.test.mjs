// Migrations over data already in D1 (every other test file starts from an empty database):
// 0010 rebuilds job_runs to let a run end `skipped`, and must keep every row, column and index;
// 0016 carries the successes still read by the windows and the roll-up into success_batches;
// 0017-0019 add columns and a table the built Workers must read old rows without.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { unstable_splitSqlQuery } from "wrangler";
import { ROOT, startPlatform, TOKENS } from "./support/platform.mjs";
import { tick, DAY } from "./support/sweep.mjs";

let mf, db;
before(async () => {
  mf = new Miniflare({ modules: true, script: "export default {}", d1Databases: ["DB"] });
  db = await mf.getD1Database("DB");
});
after(() => mf.dispose());

/** Applies the migrations whose file names pass `pick`, in name order, as the tests and wrangler do. */
async function migrate(pick) {
  const files = readdirSync(join(ROOT, "migrations")).filter((f) => f.endsWith(".sql") && pick(f)).sort();
  for (const file of files) {
    const sql = readFileSync(join(ROOT, "migrations", file), "utf8");
    await db.batch(unstable_splitSqlQuery(sql).map((statement) => db.prepare(statement)));
  }
  return files;
}

const columns = async () => (await db.prepare("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info('job_runs')").all()).results;

test("0010 rebuilds job_runs keeping its rows, columns and index, and lets a run end skipped", async () => {
  const before = await migrate((f) => f < "0010");
  assert.ok(before.length > 0);
  await db.batch([
    db.prepare(
      "INSERT INTO jobs (id, type, family, status, payload, max_attempts, run_at, created_at, updated_at) " +
        "VALUES ('01JOLD', 'noop', 'default', 'dead', '{}', 5, 0, 0, 0)",
    ),
    db.prepare(
      "INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, outcome, error_class, error_message, duration_ms, cost_cents) " +
        "VALUES ('01JOLD', 1, 1, 10, 20, 'retrying', 'server_error', 'HTTP 503', 10, 1.5), " +
        "('01JOLD', 2, 2, 30, 45, 'dead', 'timeout', 'slow', 15, 0)",
    ),
  ]);
  const skipped = "INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, outcome, duration_ms) VALUES ('01JOLD', 3, 1, 50, 51, 'skipped', 1)";
  await assert.rejects(db.prepare(skipped).run(), /CHECK constraint failed/, "before 0010 a run cannot be skipped");
  const rowsBefore = (await db.prepare("SELECT * FROM job_runs ORDER BY run").all()).results;
  const columnsBefore = await columns();

  await migrate((f) => f.startsWith("0010"));
  assert.deepEqual((await db.prepare("SELECT * FROM job_runs ORDER BY run").all()).results, rowsBefore);
  assert.deepEqual(await columns(), columnsBefore);
  const indexes = (await db.prepare("SELECT name FROM pragma_index_list('job_runs') WHERE origin = 'c'").all()).results;
  assert.deepEqual(indexes.map((i) => i.name), ["job_runs_finished"]);
  await db.prepare(skipped).run();
  await assert.rejects(
    db.prepare("INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, outcome, duration_ms) VALUES ('01JOLD', 4, 1, 0, 0, 'lost', 0)").run(),
    /CHECK constraint failed/,
  );
  // Deleting the job still takes its runs with it.
  await db.prepare("PRAGMA foreign_keys = ON").run();
  await db.prepare("DELETE FROM jobs WHERE id = '01JOLD'").run();
  assert.equal((await db.prepare("SELECT COUNT(*) AS n FROM job_runs").first()).n, 0);
});

test("0016 carries the successes the windows and the roll-up still read into success_batches", async () => {
  await migrate((f) => f >= "0011" && f < "0016");
  const now = Date.now();
  // The histogram's watermark is "now" (0006 starts it at its migration time): the windows' hour
  // reaches further back than it.
  const job = (id, status) =>
    db.prepare(
      "INSERT INTO jobs (id, type, family, status, payload, max_attempts, run_at, created_at, updated_at) " +
        "VALUES (?1, 'noop', 'low', ?2, '{}', 5, ?3, ?3, ?3)",
    ).bind(id, status, now - 3 * 3600_000);
  const run = (id, run, outcome, finished) =>
    db.prepare(
      "INSERT INTO job_runs (job_id, run, attempt, started_at, finished_at, outcome, duration_ms) VALUES (?1, ?2, 1, ?3 - 7, ?3, ?4, 7)",
    ).bind(id, run, finished, outcome);
  await db.batch([
    job("01JRECENT", "succeeded"), run("01JRECENT", 1, "succeeded", now - 600_000),
    job("01JOLDER", "succeeded"), run("01JOLDER", 1, "succeeded", now - 2 * 3600_000),
    job("01JFAILED", "dead"), run("01JFAILED", 1, "dead", now - 600_000),
  ]);
  await migrate((f) => f.startsWith("0016"));
  const batches = (await db.prepare("SELECT first_job_id, family, successes FROM success_batches").all()).results;
  assert.deepEqual(batches, [{ first_job_id: "01JRECENT", family: "low", successes: JSON.stringify([["noop", 7, 3 * 3600_000 - 600_007, 3 * 3600_000 - 600_000]]) }]);
  const indexes = (await db.prepare("SELECT name FROM pragma_index_list('job_runs') WHERE origin = 'c'").all()).results;
  assert.deepEqual(indexes.map((i) => i.name), ["job_runs_failed"], "job_runs_finished is gone");
  assert.equal((await db.prepare("SELECT COUNT(*) AS n FROM job_runs").first()).n, 3, "run records stay");
});

test("0017-0019 over data: a job that succeeded before them shows its run, stats count its minute, and retention deletes it", async () => {
  const now = Date.now();
  const minute = now - (now % 60_000) - 5 * 60_000;
  const p = await startPlatform({
    manualDelivery: true,
    migrateOver: {
      before: "0017",
      // As 0016's consumer wrote them: the success's details whole on its row (no invocation row),
      // and a minute's tally with no duration buckets.
      seed: (db) =>
        db.batch([
          db.prepare(
            "INSERT INTO jobs (id, type, family, status, payload, max_attempts, attempts, runs, run_at, created_at, " +
              "updated_at, started_at, finished_at, run_cost_cents, run_details) VALUES ('01JBEFORE0017', 'noop', 'default', " +
              "'succeeded', '{}', 5, 1, 1, ?1, ?1, ?2, ?1, ?2, 0, ?3)",
          ).bind(minute, minute + 7, JSON.stringify({ version: "v-before", invocation: "01JINVBEFORE", handler: "noop", lease_until: minute + 60_000 })),
          db.prepare("INSERT INTO job_minutes (family, minute, succeeded, sum_ms, max_ms) VALUES ('default', ?1, 1, 7, 7)").bind(minute),
        ]),
    },
  });
  try {
    const job = await p.getJob("01JBEFORE0017");
    assert.equal(job.status, 200, JSON.stringify(job.body));
    assert.deepEqual(job.body.runs.map((r) => [r.outcome, r.duration_ms, r.version, r.invocation, r.handler]), [["succeeded", 7, "v-before", "01JINVBEFORE", "noop"]]);
    const stats = await p.request("GET", "/v1/admin/stats", { token: TOKENS.admin });
    assert.equal(stats.status, 200, JSON.stringify(stats.body));
    assert.equal(stats.body.families.default.last_hour.succeeded, 1, "the minute from before 0017 counts");
    await tick(p, now + 91 * DAY);
    assert.equal(await p.count("SELECT COUNT(*) AS n FROM jobs"), 0, "retention deletes a success with no invocation row");
  } finally {
    await p.dispose();
  }
});
