// Enqueue bodies an untrusted client can shape: a chunked body without Content-Length that
// runs past the 1 MiB cap (and never ends), and a batch whose JSON is small but whose stored
// rows are large. Each is refused with a 413 naming the limit, and nothing is written.
import { describe, test } from "node:test";
import assert from "node:assert/strict";
import { request } from "node:http";
import { withPlatformAndApp, TOKENS } from "./support/platform.mjs";

let p;
withPlatformAndApp((started) => ({ p } = started));

const MAX_BODY_BYTES = 1024 * 1024;
const jobCount = () => p.count("SELECT count(*) FROM jobs");

/**
 * POSTs `path` with a chunked body (no Content-Length): `head`, then 64 KiB chunks of JSON
 * whitespace up to `bytes`, and never the end. Resolves with the response once one arrives
 * (the body still open), or rejects after `waitMs`.
 */
async function endlessChunkedPost(path, { head, bytes, waitMs = 15_000 }) {
  const url = new URL(path, await p.mf.ready);
  return new Promise((resolve, reject) => {
    const req = request(url, {
      method: "POST",
      headers: {
        authorization: `Bearer ${TOKENS.enqueue}`,
        "content-type": "application/json",
        "transfer-encoding": "chunked",
      },
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`no response within ${waitMs} ms: the body was not read with a cap`));
    }, waitMs);
    req.on("response", (res) => {
      const chunks = [];
      res.on("data", (c) => chunks.push(c));
      res.on("end", () => {
        clearTimeout(timer);
        req.destroy();
        resolve({ status: res.statusCode, headers: res.headers, body: JSON.parse(Buffer.concat(chunks).toString("utf8")) });
      });
    });
    req.on("error", () => {}); // the server may close the upload once it has answered
    req.write(head);
    const chunk = " ".repeat(64 * 1024);
    for (let sent = head.length; sent < bytes; sent += chunk.length) req.write(chunk);
    // Deliberately no req.end(): a reader that waits for the end never answers.
  });
}

describe("enqueue bodies past the limits", () => {
  test("a chunked body with no Content-Length is cut at 1 MiB: 413 naming the limit, nothing written", async () => {
    const before = await jobCount();
    const res = await endlessChunkedPost("/v1/jobs/batch", {
      head: '{"jobs": [{"type": "noop"}]',
      bytes: 2 * MAX_BODY_BYTES,
    });
    assert.equal(res.status, 413);
    assert.equal(res.body.error.code, "body_too_large");
    assert.match(res.body.error.message, new RegExp(String(MAX_BODY_BYTES)));
    assert.equal(await jobCount(), before);
  });

  test("a batch whose JSON is small but whose stored rows are large is a 413 naming the limit, not a 503", async () => {
    // 1e15 is 4 bytes in the request and 18 once stored (1000000000000000.0): 25 jobs of
    // about 32 KB each are 0.8 MB of JSON and 3 MB of rows, past D1's limit on one value.
    const numbers = `[${Array(6500).fill("1e15").join(",")}]`;
    const job = `{"type":"http","payload":{"url":"https://app.example/x","body":${numbers}}}`;
    const body = `{"jobs":[${Array(25).fill(job).join(",")}]}`;
    assert.ok(body.length < MAX_BODY_BYTES);
    const before = await jobCount();
    const res = await p.request("POST", "/v1/jobs/batch", { body, headers: { "content-type": "application/json" } });
    assert.equal(res.status, 413, JSON.stringify(res.body));
    assert.deepEqual([res.body.error.code, res.body.error.field], ["stored_too_large", "jobs"]);
    assert.match(res.body.error.message, /1900000/);
    assert.equal(await jobCount(), before, "no partial write");

    // The same for one job: its largest part is named.
    const one = `{"type":"http","payload":{"url":"https://app.example/x","body":"x"},"steps":[${Array(20)
      .fill(`{"type":"http","payload":{"url":"https://app.example/y","body":${numbers}}}`)
      .join(",")}]}`;
    const single = await p.request("POST", "/v1/jobs", { body: one, headers: { "content-type": "application/json" } });
    assert.equal(single.status, 413, JSON.stringify(single.body));
    assert.deepEqual([single.body.error.code, single.body.error.field], ["stored_too_large", "steps"]);
    assert.equal(await jobCount(), before);

    // Within the bound, the same shape is accepted.
    const fits = `{"jobs":[${Array(3).fill(job).join(",")}]}`;
    const ok = await p.request("POST", "/v1/jobs/batch", { body: fits, headers: { "content-type": "application/json" } });
    assert.equal(ok.status, 202, JSON.stringify(ok.body));
    assert.equal(await jobCount(), before + 3);
  });
});
