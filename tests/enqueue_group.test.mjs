// Enqueue's group commit (docs/app-guide.md "Enqueue, grouped"): requests that arrive while a write
// is in flight share the next one. Each keeps its own answer, correlation id, caller and acceptance
// time; duplicates across requests are settled in arrival order; a write that fails fails every
// request it carried, and writes none of their jobs. The built producer on local workerd, real D1.
import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { d1Stats, refuseWrites, startPlatform, TOKENS } from "./support/platform.mjs";

/** `n` requests at once, request `i` made by `make(i)`. */
const together = (n, make) => Promise.all(Array.from({ length: n }, (_, i) => make(i)));

describe("concurrent enqueues share D1 writes", () => {
  let p;
  before(async () => {
    p = await startPlatform();
  });
  after(() => p.dispose());

  test("each request keeps its own jobs, answer, correlation id, caller and time; the jobs all run", async () => {
    // Sharing depends on when the requests arrive: nearly certain in one burst, the more so in
    // three; every check below is on the last burst.
    let answers;
    let burst = 0;
    const rid = (i) => `group-req-${burst}-${i}`;
    for (; burst < 3; burst++) {
      answers = await together(40, (i) =>
        i % 4 === 3
          ? p.request("POST", "/v1/jobs/batch", {
              json: { jobs: [{ type: "noop", payload: {} }, { type: "noop", payload: {} }] },
              headers: { "x-request-id": rid(i) },
              token: TOKENS.admin,
            })
          : p.enqueue({ type: "noop", payload: {} }, { headers: { "x-request-id": rid(i) } }),
      );
      if (answers.some((a) => d1Stats(a.headers).write?.requests > 1)) break;
    }
    const shared = answers.map((a) => d1Stats(a.headers).write);
    assert.ok(
      shared.some((w) => w.requests > 1),
      `some write carried more than one request: ${JSON.stringify(shared.map((w) => w.requests))}`,
    );
    for (const [i, a] of answers.entries()) {
      assert.equal(a.status, 202, JSON.stringify(a.body));
      assert.equal(a.headers.get("x-request-id"), rid(i));
      const write = d1Stats(a.headers).write;
      assert.equal(write.own_jobs, i % 4 === 3 ? 2 : 1);
      assert.ok(write.jobs >= write.own_jobs && write.requests >= 1, JSON.stringify(write));
    }
    const ids = answers.flatMap((a, i) => (i % 4 === 3 ? a.body.jobs.map((j) => [i, j.id]) : [[i, a.body.id]]));
    assert.equal(new Set(ids.map(([, id]) => id)).size, 50, "50 distinct jobs");
    const { enqueuedBy } = await callerNames(p);
    for (const [i, id] of ids) {
      const job = await p.waitForStatus(id, "succeeded");
      assert.equal(job.correlation_id, rid(i));
      assert.equal(job.enqueued_by, i % 4 === 3 ? enqueuedBy.admin : enqueuedBy.enqueue);
      assert.equal(Date.parse(job.run_at), Date.parse(job.created_at), "due when accepted");
    }
  });

  test("of concurrent requests with one dedup key, one writes its job and the rest are answered with it", async () => {
    const answers = await together(12, () => p.enqueue({ type: "noop", payload: {}, dedup_key: "group-dedup" }));
    const written = answers.filter((a) => a.status === 202);
    assert.equal(written.length, 1, JSON.stringify(answers.map((a) => a.status)));
    for (const a of answers.filter((a) => a.status !== 202)) {
      assert.equal(a.status, 200);
      assert.equal(a.body.deduplicated, true);
      assert.equal(a.body.id, written[0].body.id);
    }
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE dedup_key = 'group-dedup'"), 1);
  });

  test("a request refused before its write (413) neither joins a write nor disturbs the others", async () => {
    const big = { type: "http", payload: { url: "https://app.example/x", body: "x".repeat(200_000) } };
    const answers = await together(10, (i) =>
      p.enqueue(i === 4 ? big : { type: "noop", payload: {} }, { headers: { "x-request-id": `group-mixed-${i}` } }),
    );
    assert.equal(answers[4].status, 413, JSON.stringify(answers[4].body));
    assert.equal(answers[4].body.error.field, "payload");
    for (const a of answers.filter((_, i) => i !== 4)) assert.equal(a.status, 202, JSON.stringify(a.body));
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE correlation_id LIKE 'group-mixed-%'"), 9);
    assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE correlation_id = 'group-mixed-4'"), 0);
  });

  test("a write D1 refuses fails every request it carried with a 503, and writes none of their jobs", async () => {
    const undo = await refuseWrites(p, "refuse_group", "INSERT ON jobs", "NEW.correlation_id = 'group-fault-7'");
    try {
      const answers = await together(16, (i) =>
        p.enqueue({ type: "noop", payload: {} }, { headers: { "x-request-id": `group-fault-${i}` } }),
      );
      const refused = answers.filter((a) => a.status === 503);
      assert.ok(answers[7].status === 503, JSON.stringify(answers[7].body));
      for (const a of refused) assert.equal(a.body.error.code, "unavailable");
      const ok = answers.filter((a) => a.status === 202);
      assert.equal(ok.length + refused.length, 16, JSON.stringify(answers.map((a) => a.status)));
      // Nothing of a refused request's write is kept; every accepted job is there.
      assert.equal(await p.count("SELECT COUNT(*) FROM jobs WHERE correlation_id LIKE 'group-fault-%'"), ok.length);
      for (const a of ok) assert.equal((await p.getJob(a.body.id)).status, 200);
    } finally {
      await undo();
    }
  });
});

/** The names the producer records for the test's enqueue and admin tokens (one job each). */
async function callerNames(p) {
  const name = async (token) => {
    const a = await p.request("POST", "/v1/jobs", { json: { type: "noop", payload: {} }, token });
    return (await p.getJob(a.body.id)).body.enqueued_by;
  };
  return { enqueuedBy: { enqueue: await name(TOKENS.enqueue), admin: await name(TOKENS.admin) } };
}
