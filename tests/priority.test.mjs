// Priority orders work inside a family (docs/app-guide.md "Families"): a job of priority 50 and up
// travels in its family's express lane, consumed beside the normal queue, so it never waits behind
// that queue's backlog; a waiting job raised across 50 is sent to the lane. On the real local
// queues.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { startPlatform, TOKENS, waitFor } from "./support/platform.mjs";
import { startAppServer } from "./support/app_server.mjs";

describe("priority orders work within a family", () => {
  let app, p;
  before(async () => {
    app = await startAppServer();
    p = await startPlatform();
  });
  after(async () => {
    await p.dispose();
    await app.close();
  });

  const succeeded = (path) => p.count("SELECT count(*) FROM jobs WHERE status = 'succeeded' AND payload LIKE ?", `%${path}%`);

  test("behind a backlog larger than the consumer holds at once, priority 90 and a boost past 50 finish before most of it", async () => {
    // 1,500 jobs: more than the default family's 10 concurrent batches of 100 hold, so a FIFO
    // queue would run the urgent job after at least 1,000 of them.
    app.script("/backlog", [{ status: 200, delayMs: 300 }]);
    const BACKLOG = 1500;
    for (let batch = 0; batch < BACKLOG / 100; batch++) {
      const jobs = Array.from({ length: 100 }, () => ({ type: "http", priority: 10, payload: { url: app.url("/backlog") } }));
      const res = await p.request("POST", "/v1/jobs/batch", { json: { jobs } });
      assert.equal(res.status, 202);
    }
    const waiting = await p.enqueue({ type: "http", priority: 10, payload: { url: app.url("/boosted") } });
    await waitFor(async () => (await succeeded("/backlog")) >= 50, { timeoutMs: 30_000, what: "the backlog to start" });

    const urgent = await p.enqueue({ type: "http", priority: 90, payload: { url: app.url("/urgent") } });
    assert.equal(urgent.body.family, "default", "priority picks the lane, not the family");
    const boost = await p.request("POST", `/v1/admin/jobs/${waiting.body.id}/boost`, { json: { by: 80 }, token: TOKENS.admin });
    assert.equal(boost.status, 200);

    const done = {};
    await waitFor(
      async () => {
        for (const [name, id] of [["urgent", urgent.body.id], ["boosted", waiting.body.id]]) {
          if (done[name] === undefined && (await p.getJob(id)).body.status === "succeeded") done[name] = await succeeded("/backlog");
        }
        return Object.keys(done).length === 2;
      },
      { timeoutMs: 30_000, what: "the urgent and the boosted job" },
    );
    assert.ok(done.urgent < BACKLOG / 2, `${done.urgent} of ${BACKLOG} backlog jobs finished before the priority-90 job`);
    assert.ok(done.boosted < BACKLOG / 2, `${done.boosted} of ${BACKLOG} backlog jobs finished before the boosted job`);
    const boosted = (await p.getJob(waiting.body.id)).body;
    assert.equal(boosted.priority, 90);
    assert.equal(app.requests("/boosted").length, 1, "its two messages ran it once");
  });
});
