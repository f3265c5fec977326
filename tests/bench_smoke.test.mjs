// A small run of the benchmark (npm run bench) inside npm test, so it cannot rot: it runs every
// phase on the built workers and the floor, and the design's structural targets hold. Throughput
// ratios are reported, not asserted: a shared CI machine is too noisy for them.
import { test } from "node:test";
import assert from "node:assert/strict";
import { runBenchmark, formatTable } from "../bench/benchmark.mjs";

test("benchmark smoke run: every phase measures, and the D1 and size targets are met", { timeout: 300_000 }, async () => {
  const result = await runBenchmark({ jobs: 300, repeats: 1, build: false, log: () => {} });
  console.log(formatTable(result));
  for (const phase of ["enqueue_single", "enqueue_batch", "e2e_noop", "e2e_http"]) {
    assert.ok(result[phase].jobs_per_second > 0, `${phase} measured`);
    assert.ok(result[phase].ratio_to_floor > 0, `${phase} compared with the floor`);
  }
  assert.equal(result.e2e_noop.jobs, 300);
  assert.ok(result.floor.e2e.jobs_per_second > 0);
  assert.ok(result.floor.e2e_with_d1_round_trips.jobs_per_second > 0, "the D1 floor measured");
  assert.ok(result.e2e_noop.ratio_to_d1_floor > 0);
  assert.ok(result.e2e_noop.cold_start_ms > 0 && result.floor.e2e.cold_start_ms > 0, "cold starts measured");
  const met = Object.fromEntries(result.targets.map((t) => [t.name, t]));
  for (const name of [
    "enqueue: D1 round trips per request (1 job)",
    "enqueue: D1 round trips per request (100 jobs)",
    "consumer: D1 round trips per message batch (max)",
    "D1 rows written per succeeded job, before indexes and the history's row per batch",
    "producer WASM gzip",
    "consumer WASM gzip",
  ]) {
    assert.ok(met[name].met, `${name}: ${met[name].value} (target ${met[name].target})`);
  }
});
