// `npm run dev`'s cron: wrangler dev fires no cron trigger locally, so without this the
// maintenance sweep never ran and a job whose send failed stayed queued for ever. Fires each of
// the producer's `[triggers] crons` (wrangler.toml) on its own cadence, in UTC as Cloudflare does,
// through wrangler's own /cdn-cgi/handler/scheduled with the minute it was due as the event's
// scheduled time. Exits with the dev script (the pid given), quiet but for ticks that failed.
// Usage: node scripts/dev-cron.mjs <producer url> <pid to outlive>
import { Cron } from "croner";
import { unstable_readConfig } from "wrangler";
import { join, resolve } from "node:path";

const [base, parent] = process.argv.slice(2);
const { crons = [] } = unstable_readConfig({ config: join(resolve(import.meta.dirname, ".."), "wrangler.toml") }).triggers ?? {};

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

const alive = (pid) => {
  try {
    process.kill(Number(pid), 0);
    return true;
  } catch {
    return false;
  }
};

for (const cron of crons) {
  new Cron(cron, { timezone: "UTC", protect: true }, (self) => fire(cron, self.currentRun() ?? new Date()));
}
setInterval(() => alive(parent) || process.exit(0), 1_000);
