// What every part of the benchmark measures with: medians and percentiles, a bounded pool of
// requests, an enqueue phase timed request by request, the warm-up before anything is timed (a
// cold-start request, then each timed pass once untimed), and sides run side by side with
// their passes alternating.
// Shared by the in-process runs (benchmark.mjs) and the black-box run over HTTP (black_box.mjs).
import { d1Stats, waitFor } from "../tests/support/platform.mjs";

export const WARM_UP_JOBS = 100;
/** How long a warm-up or a drain may take: a slow machine's, not a test's, patience. */
export const PATIENCE_MS = 15 * 60_000;

export const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? (s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2) : NaN;
};
export const percentile = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
};
export const round = (x, digits = 2) => Math.round(x * 10 ** digits) / 10 ** digits;

/**
 * Each key of `pick(run)` over `runs`: a number's median, every run's items of a list (each
 * round's throughput, say) in one list, anything else as the first run has it.
 */
export function medianOf(runs, pick) {
  const first = pick(runs[0]);
  const over = (k) => {
    if (typeof first[k] === "number") return round(median(runs.map((r) => pick(r)[k])), 3);
    return Array.isArray(first[k]) ? runs.flatMap((r) => pick(r)[k]) : first[k];
  };
  return Object.fromEntries(Object.keys(first).map((k) => [k, over(k)]));
}

/** Runs `count` tasks with at most `concurrency` in flight. */
export async function pool(count, concurrency, task) {
  let next = 0;
  const workers = Array.from({ length: Math.min(concurrency, count) }, async () => {
    while (next < count) await task(next++);
  });
  await Promise.all(workers);
}

/** The body of a batch enqueue: `count` jobs like `job` ({type, payload, ...options}). */
export const jobsBody = (job, count) => JSON.stringify({ jobs: Array.from({ length: count }, () => job) });

/** Throws unless `res` is the 202 of an accepted enqueue, then drains its body. */
export async function accepted(res, what = "enqueue") {
  if (res.status !== 202) throw new Error(`${what} answered ${res.status}: ${await res.text()}`);
  await res.arrayBuffer();
  return res;
}

/**
 * Enqueue throughput and latency: `requests` requests of `perRequest` jobs each, `concurrency`
 * at a time. Where the answers carry the producer's Server-Timing, the D1 work it counted too.
 */
export async function enqueuePhase(send, { requests, perRequest, concurrency }) {
  const latencies = [];
  const stats = [];
  const started = performance.now();
  await pool(requests, concurrency, async () => {
    const t = performance.now();
    const res = await send(perRequest);
    latencies.push(performance.now() - t);
    stats.push(d1Stats(res.headers));
    await accepted(res);
  });
  const seconds = (performance.now() - started) / 1000;
  const counted = stats.filter((s) => s.round_trips !== undefined);
  return {
    jobs_per_second: round((requests * perRequest) / seconds, 1),
    latency_ms_p50: round(percentile(latencies, 50)),
    latency_ms_p99: round(percentile(latencies, 99)),
    ...(counted.length && {
      d1_round_trips_per_request: Math.max(...counted.map((s) => s.round_trips)),
      // How many requests the D1 write that carried a request carried, on average
      // (docs/app-guide.md "Enqueue, grouped": requests that arrive while a write is in flight
      // share the next one).
      requests_per_write: round(counted.reduce((a, s) => a + (s.write?.requests ?? 1), 0) / counted.length),
      d1_rows_written_per_job: round(counted.reduce((a, s) => a + s.own_rows_written, 0) / (requests * perRequest)),
    }),
  };
}

/**
 * One end-to-end pass: `requests` requests of 100 jobs each (`send()` sends one), `concurrency`
 * at a time, timed until `processed()` (polled every `everyMs`) has counted all of them.
 */
export async function endToEndPass(send, processed, { requests, concurrency, everyMs }) {
  const total = requests * 100;
  const before = await processed();
  const started = performance.now();
  await pool(requests, concurrency, async () => accepted(await send()));
  await waitFor(async () => (await processed()) >= before + total, { what: `${total} jobs`, everyMs, timeoutMs: PATIENCE_MS });
  const seconds = (performance.now() - started) / 1000;
  return { jobs: total, seconds: round(seconds), jobs_per_second: round(total / seconds, 1) };
}

/**
 * One request of WARM_UP_JOBS jobs through the whole path before anything is timed; its
 * latency is reported as the cold start. `processed` says how many jobs have gone through.
 */
export async function warmUp(send, processed) {
  const started = performance.now();
  const res = await send();
  const latency = performance.now() - started;
  await accepted(res, "warm-up");
  await waitFor(async () => (await processed()) >= WARM_UP_JOBS, { what: "the warm-up jobs", everyMs: 20, timeoutMs: PATIENCE_MS });
  return round(latency);
}

/**
 * Each phase's passes of several sides started at once (`sides`: name -> {phase: () =>
 * figures}, a side that lacks a phase sits it out): every side runs the phase once untimed (V8
 * runs a WASM function's baseline code until it has run enough, then optimizes it in the
 * background: one warm-up request left the project's Workers there for most of a 10,000-job
 * pass), then `rounds` rounds in which each runs it once, the first side rotating each round. A
 * pass of one side and the next of another are seconds apart, so they see the same machine,
 * where runs minutes apart did not (docs/performance.md "Benchmark"). Returns, per side and phase,
 * the figures' medians, the untimed pass's throughput (`first_pass_jobs_per_second`) and each
 * round's.
 */
export async function alternate(sides, phases, rounds, log = () => {}) {
  const result = Object.fromEntries(Object.keys(sides).map((name) => [name, {}]));
  for (const phase of phases) {
    const takers = Object.keys(sides).filter((name) => sides[name][phase]);
    const first = {};
    for (const name of takers) first[name] = await sides[name][phase]();
    const runs = Object.fromEntries(takers.map((name) => [name, []]));
    for (let i = 0; i < rounds; i++) {
      log(`${phase}: round ${i + 1}/${rounds} of ${takers.join(", ")}`);
      for (let k = 0; k < takers.length; k++) {
        const name = takers[(k + i) % takers.length];
        runs[name].push(await sides[name][phase]());
      }
    }
    for (const name of takers) {
      result[name][phase] = {
        ...medianOf(runs[name], (r) => r),
        first_pass_jobs_per_second: first[name].jobs_per_second,
        rounds_jobs_per_second: runs[name].map((r) => r.jobs_per_second),
      };
    }
  }
  return result;
}

/**
 * How `a`'s throughput compares with `b`'s, two sides' figures from the same `alternate` runs:
 * the median of their rounds' ratios, each round's two passes seconds apart (the ratio of two
 * medians would set passes from different rounds against each other).
 */
export function pairedRatio(a, b) {
  return round(median(a.rounds_jobs_per_second.map((x, i) => x / b.rounds_jobs_per_second[i])), 3);
}

/** D1's size in bytes now, as D1 reports it (the meta of any statement carries it). */
export async function dbBytes(db) {
  return (await db.prepare("SELECT 1").run()).meta.size_after;
}
