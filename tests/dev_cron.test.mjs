// `npm run dev` runs the maintenance sweep on the cron's cadence (scripts/dev-cron.mjs), so a
// local run recovers as a deployed one does. The real dev script (scripts/dev.sh, as a user runs
// it, on a free port with its own state), and a real fault: local Miniflare's queue refuses sends
// once 10,000 timers are pending, so a flood of delayed jobs leaves the last ones unsent. Those
// jobs are run after the next tick, which nothing here asks for.
import { test } from "node:test";
import assert from "node:assert/strict";
import { startDevServer } from "./support/dev_server.mjs";
import { waitFor, ROOT } from "./support/platform.mjs";
import { devTokens } from "../scripts/dev-tokens.mjs";

const FLOOD = 104; // requests of 100 jobs: past the 10,000 timers the local queue allows
const DELAY_SECS = 10; // each held message is one timer, until it is due

test("under npm run dev, jobs whose send failed are run after the next cron tick", { timeout: 6 * 60_000 }, async () => {
  // A grace of 1 s (the sweep re-sends an unsent job once it is that far past due; 5 min by
  // default) so the test waits for one tick, not six.
  const dev = await startDevServer("scripts/dev.sh", { cwd: ROOT, args: ["--var", "OUTBOX_GRACE_SECS:1"] });
  try {
    const { enqueue, admin } = devTokens();
    const call = (path, token, json) =>
      fetch(dev.url + path, {
        method: json ? "POST" : "GET",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: json && JSON.stringify(json),
      });
    const batch = { jobs: Array.from({ length: 100 }, () => ({ type: "noop", delay_seconds: DELAY_SECS })) };
    for (let sent = 0; sent < FLOOD; sent += 4) {
      const answers = await Promise.all([0, 1, 2, 3].map(() => call("/v1/jobs/batch", enqueue, batch)));
      assert.deepEqual(answers.map((r) => r.status), [202, 202, 202, 202], "every request is accepted: its jobs are in D1");
    }
    const unsent = await waitFor(
      () => {
        const failed = [...dev.output().matchAll(/send of \d+ message\(s\) to QUEUE_DEFAULT failed: [^;]*; jobs ([0-9A-Z, ]+)/g)];
        return failed.length > 0 && failed.flatMap((m) => m[1].split(", "));
      },
      { what: "a send the local queue refused (the fault this test needs)", timeoutMs: 10_000 },
    );
    const job = async (id) => (await call(`/v1/jobs/${id}`, enqueue)).json();
    assert.equal((await job(unsent[0])).status, "queued");

    // The next tick's outbox re-send (in the tick after, should the queue still be full then).
    const total = FLOOD * 100;
    await waitFor(
      async () => (await (await call("/v1/admin/stats", admin)).json()).families.default.counts.succeeded === total,
      { what: `all ${total} jobs to succeed`, timeoutMs: 3 * 60_000, everyMs: 1_000 },
    );
    for (const id of [unsent[0], unsent.at(-1)]) assert.equal((await job(id)).status, "succeeded", id);
    const ticks = [...dev.output().matchAll(/"event":"sweep\.completed".*?"outbox_resender":(\{[^}]*\}|\d+)/g)];
    // The sweep's own log lines: its outbox re-send sent them (no one ran a tick by hand).
    const resent = [...dev.output().matchAll(/"event":"sweep\.completed".*"resent":\{[^}]*"sent":(\d+)/g)];
    const sum = resent.reduce((n, m) => n + Number(m[1]), 0);
    assert.ok(sum >= unsent.length, `the ticks re-sent ${sum} of the ${unsent.length} unsent jobs`);

    // The tick recorded the minute's backlog, which the dashboard's backlog chart plots.
    const history = await (await call("/v1/admin/history?minutes=5", admin)).json();
    assert.ok(history.families.default.some((m) => m.backlog !== null), JSON.stringify(history.families.default));
  } finally {
    await dev.stop();
  }
});
