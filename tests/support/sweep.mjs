// Drives the producer's maintenance sweep: its `scheduled` handler at a chosen time, as the
// cron trigger would call it.
import { join } from "node:path";
import { ROOT, TOKENS, workerFromConfig } from "./platform.mjs";

export const MINUTE = 60_000;
export const HOUR = 60 * MINUTE;
export const DAY = 24 * HOUR;

/** Runs one sweep tick at `atMs` on the producer (or on the worker named `worker`). */
export async function tick(p, atMs, worker = p.producerName) {
  const producer = await p.mf.getWorker(worker);
  return producer.scheduled({ cron: "* * * * *", scheduledTime: new Date(atMs) });
}

/**
 * The real producer (same script, D1 and tokens) without its queue bindings: every send it
 * makes fails, so what it writes stays in the outbox. Pass to startPlatform's `extraWorkers`.
 */
export function unsentProducer(name = "jobs-producer-unsent") {
  const options = workerFromConfig(join(ROOT, "wrangler.toml"), {
    bindings: { ENQUEUE_TOKENS: TOKENS.enqueue, ADMIN_TOKENS: TOKENS.admin },
  });
  delete options.queueProducers;
  delete options.assets;
  return { ...options, name };
}

/** A request to another producer worker than the first (e.g. the unsent one). */
export async function requestTo(p, worker, method, path, { json, token = TOKENS.enqueue } = {}) {
  const target = await p.mf.getWorker(worker);
  const res = await target.fetch(`http://jobs.local${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(json !== undefined && { "content-type": "application/json" }) },
    body: json !== undefined ? JSON.stringify(json) : undefined,
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}
