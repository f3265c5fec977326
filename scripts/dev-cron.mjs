// `npm run dev`'s cron: wrangler dev fires no cron trigger locally, so without this the
// maintenance sweep never ran and a job whose send failed stayed queued for ever. Fires each of
// the producer's `[triggers] crons` (wrangler.toml) on its own cadence, in UTC as Cloudflare does,
// through wrangler's own /cdn-cgi/handler/scheduled with the minute it was due as the event's
// scheduled time. Exits with the dev script (the pid given), quiet but for ticks that failed.
// It waits for the dev server to answer before it loads anything: loading wrangler's config
// reader takes a second of CPU, which at the start would slow the Workers' build steps (the
// benchmark's black box reads which of them wrangler's inspector lands on).
// Usage: node scripts/dev-cron.mjs <producer url> <pid to outlive>
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

const [base, parent] = process.argv.slice(2);

const alive = (pid) => {
  try {
    process.kill(Number(pid), 0);
    return true;
  } catch {
    return false;
  }
};
setInterval(() => alive(parent) || process.exit(0), 1_000);

/** Asks the producer to run its `scheduled` handler for `cron`, as due at `at`. */
async function fire(cron, at) {
  const url = `${base}/cdn-cgi/handler/scheduled?${new URLSearchParams({ cron, time: String(at.getTime()) })}`;
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(120_000) });
    if (!res.ok) console.error(`dev-cron: the tick of ${at.toISOString()} (${cron}) answered ${res.status}: ${(await res.text()).slice(0, 300)}`);
  } catch (e) {
    console.error(`dev-cron: the tick of ${at.toISOString()} (${cron}) did not reach ${base}: ${e.cause?.message ?? e.message}`);
  }
}

while (!(await fetch(base).then(() => true, () => false))) await sleep(1_000);
const { Cron } = await import("croner");
const { unstable_readConfig } = await import("wrangler");
const config = unstable_readConfig({ config: join(resolve(import.meta.dirname, ".."), "wrangler.toml") });
for (const cron of config.triggers?.crons ?? []) {
  new Cron(cron, { timezone: "UTC", protect: true }, (self) => fire(cron, self.currentRun() ?? new Date()));
}
