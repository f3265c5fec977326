// The hand-written producer the benchmark sets beside the project, in its black-box run and
// in-process (docs/performance.md "Benchmark"): what a developer might write for the same routes in
// an afternoon. One INSERT ... SELECT FROM json_each(?) and one sendBatch per request; no auth, no
// validation, no logs. Its stats answer only what the benchmark reads (succeeded jobs).
const INSERT = `INSERT INTO jobs (id, type, payload, status, created_at)
  SELECT value ->> 0, value ->> 1, value ->> 2, 'queued', ?1 FROM json_each(?2)`;
const COUNTS = "SELECT status, COUNT(*) AS n FROM jobs GROUP BY status";

export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (pathname === "/v1/admin/stats") {
      const { results } = await env.DB.prepare(COUNTS).all();
      const counts = Object.fromEntries(results.map(({ status, n }) => [status, n]));
      return Response.json({ families: { default: { counts } } });
    }
    if (request.method !== "POST") return new Response("not found", { status: 404 });
    const body = await request.json();
    const jobs = (pathname === "/v1/jobs/batch" ? body.jobs : [body]).map((job) => [
      crypto.randomUUID(),
      job.type,
      JSON.stringify(job.payload ?? {}),
    ]);
    await env.DB.prepare(INSERT).bind(Date.now(), JSON.stringify(jobs)).run();
    await env.QUEUE.sendBatch(jobs.map(([id, type]) => ({ body: { id, type } })));
    return Response.json({ jobs: jobs.map(([id]) => ({ id, status: "queued" })) }, { status: 202 });
  },
};
