// Migrations over data already in D1 (every other test file starts from an empty database):
// 0010 rebuilds job_runs to let a run end `skipped`, and must keep every row, column and index.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { Miniflare } from "miniflare";
import { unstable_splitSqlQuery } from "wrangler";
import { ROOT } from "./support/platform.mjs";

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
