// A small run of the benchmark (npm run bench) inside npm test, so it cannot rot: it runs every
// phase on the built workers and the floors, prices every job kind, and runs the black box
// (`npm run dev` and the hand-written pair over HTTP) once on a few jobs; the targets named below
// hold. Throughput ratios are reported, not asserted: a shared CI machine is too noisy for them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { runBenchmark, formatTable } from "../bench/benchmark.mjs";

/** The targets this smoke run holds the code to, by name (bench/benchmark.mjs TARGETS). */
const ASSERTED_TARGETS = [
  "enqueue: D1 round trips per request (1 job)",
  "enqueue: D1 round trips per request (100 jobs)",
  "consumer: D1 round trips per message batch (max)",
  "D1 rows written per succeeded job, indexes included, less the batch's 3 rows",
  "as the table grows: rows read per job, largest over smallest",
  "as the table grows: the slowest admin read at the largest",
  "producer WASM gzip",
  "consumer WASM gzip",
];

test("benchmark smoke run: every phase measures, every job kind is priced, and the asserted targets are met", { timeout: 600_000 }, async () => {
  const result = await runBenchmark({
    jobs: 300,
    repeats: 1,
    blackBoxJobs: 200,
    rounds: 1,
    scale: [1_000, 20_000],
    scaleJobs: 300,
    workflow: { chains: 20, steps: 3, branches: 50 },
    build: false,
    log: () => {},
  });
  console.log(formatTable(result));
  for (const phase of ["enqueue_single", "enqueue_batch", "e2e_noop", "e2e_http"]) {
    assert.ok(result[phase].jobs_per_second > 0, `${phase} measured`);
    assert.ok(result[phase].ratio_to_floor > 0, `${phase} compared with the floor`);
  }
  assert.equal(result.e2e_noop.jobs, 300);
  assert.ok(result.floor.e2e.jobs_per_second > 0);
  assert.ok(result.e2e_noop.ratio_to_d1_floor > 0, "the D1 floor measured");
  assert.ok(result.e2e_noop.ratio_to_handwritten > 0 && result.handwritten_pair_e2e.ratio_to_d1_floor > 0, "the hand-written pair measured in-process");
  assert.ok(result.enqueue_single.ratio_to_d1_floor > 0 && result.handwritten_producer_single.jobs_per_second > 0, "single enqueue's yardsticks measured");
  assert.ok(result.e2e_http.ratio_to_http_floor > 0, "the http floor measured");
  assert.ok(result.e2e_noop.cold_start_ms > 0 && result.floor.e2e.cold_start_ms > 0, "cold starts measured");

  assert.equal(result.black_box.jobs, 200);
  for (const phase of ["e2e_noop", "enqueue_batch", "enqueue_single"]) {
    assert.ok(result.black_box.ratio[phase] > 0, `black box: ${phase} of both sides measured`);
  }

  for (const [kind, cost] of Object.entries(result.cost).filter(([key]) => key !== "prices_checked")) {
    assert.ok(cost.usd_per_million_jobs.total > 0, `${kind} priced`);
    assert.ok(cost.log_events_per_job > 0 && cost.requests_per_job > 0, `${kind}: log events and requests counted`);
    assert.ok(cost.queue_operations_per_job >= 3, `${kind}: a write, a read and a delete per job at least`);
  }
  assert.ok(result.cost.retried_once.queue_operations_per_job > result.cost.noop.queue_operations_per_job, "a retry is one more read");
  assert.equal(result.cost.noop.do_requests_per_job, 0, "a job without flow control calls no limiter");
  const flowed = result.cost.flow_controlled;
  assert.ok(flowed.do_requests_per_job > 0 && flowed.do_requests_per_job <= 2, `flow control: ${flowed.do_requests_per_job} limiter calls per job`);
  assert.ok(flowed.usd_per_million_jobs.total > result.cost.noop.usd_per_million_jobs.total, "flow control is priced");
  const join = result.workflow_join;
  assert.equal(join.jobs, 53, "a join's list step, its group, 50 branches and the step after");
  assert.ok(join.d1_round_trips_max_per_batch <= 2 && join.d1_rows_written > 0 && join.usd_per_workflow > 0, "a join is counted and priced");

  assert.deepEqual(result.scale.map((s) => s.preexisting), [1_000, 20_000]);
  assert.ok(result.scale.every((s) => s.bytes_per_new_job > 0 && s.consumer_sql_ms_per_batch >= 0), "storage and D1 time measured");

  const targets = Object.fromEntries(result.targets.map((t) => [t.name, t]));
  for (const name of ASSERTED_TARGETS) {
    assert.ok(targets[name], `a target named ${name}`);
    assert.ok(targets[name].met, `${name}: ${targets[name].value} (target ${targets[name].target})`);
  }
});
