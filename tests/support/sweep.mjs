// Drives the producer's maintenance sweep: its `scheduled` handler at a chosen time, as the
// cron trigger would call it.
import { join } from "node:path";
import { PRODUCER_SECRETS, ROOT, workerFromConfig } from "./platform.mjs";

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
    bindings: PRODUCER_SECRETS,
  });
  delete options.queueProducers;
  return { ...options, name };
}
