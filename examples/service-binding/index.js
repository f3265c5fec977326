// An app Worker that enqueues through its service binding `JOBS` to the producer Worker: the
// same HTTP API, called with `env.JOBS.fetch` instead of over the internet. POST /enqueue with a
// job (or {jobs: [...]}) answers the producer's own answer.
export default {
  async fetch(request, env) {
    const { pathname } = new URL(request.url);
    if (request.method !== "POST" || pathname !== "/enqueue") {
      return Response.json({ error: "POST /enqueue only" }, { status: 404 });
    }
    const body = await request.text();
    let batch = false;
    try {
      batch = JSON.parse(body)?.jobs !== undefined;
    } catch {
      // Not JSON: the producer answers it (400 malformed_json), as it would over the internet.
    }
    // The host is ignored by a service binding: the producer sees only the path.
    return env.JOBS.fetch(`https://jobs.internal/v1/jobs${batch ? "/batch" : ""}`, {
      method: "POST",
      headers: { authorization: `Bearer ${env.JOBS_TOKEN}`, "content-type": "application/json" },
      body,
    });
  },
};
