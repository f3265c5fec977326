// A real local HTTP server playing the app endpoints that jobs are delivered to. Each path has
// a script of responses (the last one repeats); every request is recorded with its raw body.
import { createServer } from "node:http";
import { createHmac, timingSafeEqual } from "node:crypto";

export async function startAppServer() {
  const scripts = new Map();
  const received = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = Buffer.concat(chunks).toString("utf8");
      received.push({ method: req.method, path: req.url, headers: req.headers, body, at: Date.now() });
      const script = scripts.get(req.url) ?? [{ status: 200, body: { ok: true } }];
      const step = script.length > 1 ? script.shift() : script[0];
      const respond = () => {
        res.writeHead(step.status, { "content-type": "application/json", ...(step.headers ?? {}) });
        // `raw` is sent as is (a feed, a page); `body` as JSON; `echo` answers the request's
        // JSON body back as `{"echo": ...}`.
        const echoed = step.echo ? { echo: body ? JSON.parse(body) : null } : undefined;
        res.end(step.raw ?? JSON.stringify(echoed ?? step.body ?? {}));
      };
      step.delayMs ? setTimeout(respond, step.delayMs) : respond();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    base,
    url: (path) => base + path,
    /** Responses for `path`, in order; the last repeats. */
    script: (path, steps) => scripts.set(path, [...steps]),
    /** Requests received on `path`, or all of them. */
    requests: (path) => (path === undefined ? [...received] : received.filter((r) => r.path === path)),
    close: () => new Promise((r) => server.close(r)),
  };
}

/**
 * Checks an X-Jobs-Signature header `t=<secs>,v2=<hex>` against any of `secrets`, as an app
 * would (docs/app-guide.md "Signed delivery"): the HMAC-SHA256 of
 * "<t>\n<METHOD>\n<url>\n<job type>\n<job id>\n<attempt>\n<body>". `parts` are what the app
 * holds: its own URL, and the request's method, X-Jobs-* headers and raw body (signedParts).
 */
export function verifySignature(secrets, header, { method, url, jobType, jobId, attempt, body }) {
  const entries = String(header).split(",").map((p) => p.trim().split("="));
  const t = entries.find(([k]) => k === "t")?.[1];
  const given = entries.filter(([k]) => k === "v2").map(([, v]) => Buffer.from(v, "hex"));
  if (!t || given.length === 0) return false;
  const signed = [t, method, url, jobType, jobId, attempt, body].join("\n");
  return [].concat(secrets).some((secret) => {
    const expected = createHmac("sha256", secret).update(signed).digest();
    return given.some((g) => g.length === expected.length && timingSafeEqual(g, expected));
  });
}

/** What a recorded request's signature covers, as the app serving `url` sees it. */
export function signedParts(req, url) {
  return {
    method: req.method,
    url,
    jobType: req.headers["x-jobs-type"],
    jobId: req.headers["x-jobs-id"],
    attempt: req.headers["x-jobs-attempt"],
    body: req.body,
  };
}
