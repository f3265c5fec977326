// The producer's one route table (producer/src/routes.rs), seen from outside: every path it
// routes answers a method it lacks with 405, the path's methods in `Allow` and the JSON error;
// an unknown path is a 404. The paths and their methods are read from /openapi.json, which a
// test in producer/src/routes.rs holds equal to the table.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { startPlatform, TOKENS } from "./support/platform.mjs";

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]; // the order `Allow` lists them in
const PARAMS = { id: "01JNOPE", kind: "family", name: "low", type: "ai_tagging", file: "app.js" };

let p, doc;
before(async () => {
  p = await startPlatform({ manualDelivery: true });
  doc = (await p.request("GET", "/openapi.json", { token: null })).body;
});
after(() => p?.dispose());

const concrete = (template) => template.replace(/\{(\w+)\}/g, (_, k) => PARAMS[k]);

test("every routed path answers a method it lacks with 405, its methods in Allow", async () => {
  const paths = Object.entries(doc.paths);
  assert.ok(paths.length > 20, "the document lists the routes");
  for (const [template, operations] of paths) {
    const allowed = METHODS.filter((m) => m.toLowerCase() in operations);
    const path = concrete(template);
    for (const method of METHODS.filter((m) => !allowed.includes(m))) {
      const res = await p.request(method, path, { token: TOKENS.admin });
      assert.equal(res.status, 405, `${method} ${path}: ${JSON.stringify(res.body)}`);
      assert.equal(res.headers.get("allow"), allowed.join(", "), `${method} ${path}`);
      assert.deepEqual(Object.keys(res.body), ["error"], `${method} ${path}`);
      assert.equal(res.body.error.code, "method_not_allowed", `${method} ${path}`);
      assert.equal(typeof res.body.error.message, "string");
    }
  }
});

test("a literal segment owns its path: /v1/jobs/batch is not a job id", async () => {
  for (const path of ["/v1/jobs/batch", "/v1/admin/jobs/retry", "/v1/admin/jobs/cancel", "/v1/admin/dead-letters/replay"]) {
    const res = await p.request("GET", path, { token: TOKENS.admin });
    assert.deepEqual([res.status, res.headers.get("allow")], [405, "POST"], path);
  }
});

test("an unknown path is a 404 JSON error, whatever the method", async () => {
  const unknown = ["/v1/nothing", "/v1/jobs/01JNOPE/runs", "/v1/admin/nothing", "/v1/admin/jobs/01JNOPE/delete",
    "/v1/admin/dead-letters/01JNOPE", "/v1/admin/pauses/family", "/v1/admin/schedules/1/runs",
    "/v1/admin/budgets/ai_tagging/history/2025", "/v1/admin/rss-sources/1/items", "/dashboard/a/b", "/"];
  for (const path of unknown) {
    for (const method of ["GET", "POST", "DELETE"]) {
      const res = await p.request(method, path, { token: TOKENS.admin });
      assert.equal(res.status, 404, `${method} ${path}`);
      assert.equal(res.body.error.code, "not_found", `${method} ${path}`);
      assert.equal(res.headers.get("allow"), null, `${method} ${path}`);
    }
  }
});

test("under /v1/admin the admin token comes first, even for a wrong method or an unknown path", async () => {
  for (const [method, path] of [["DELETE", "/v1/admin/stats"], ["PUT", "/v1/admin/budgets/ai_tagging"], ["GET", "/v1/admin/nothing"]]) {
    const anonymous = await p.request(method, path, { token: null });
    assert.deepEqual([anonymous.status, anonymous.body.error.code], [401, "unauthorized"], `${method} ${path}`);
    const enqueuer = await p.request(method, path, { token: TOKENS.enqueue });
    assert.deepEqual([enqueuer.status, enqueuer.body.error.code], [403, "forbidden"], `${method} ${path}`);
  }
  // The public API tells anyone its methods, as it always did.
  const res = await p.request("DELETE", "/v1/jobs", { token: null });
  assert.deepEqual([res.status, res.headers.get("allow")], [405, "POST"]);
});

test("a method no route uses is a 405, never answered as another method", async () => {
  // WebDAV's PROPFIND and MKCOL are methods of their own: neither may reach the GET handler.
  for (const method of ["PROPFIND", "MKCOL"]) {
    const res = await p.request(method, "/healthz", { token: null });
    assert.deepEqual([res.status, res.headers.get("allow"), res.body.error?.code], [405, "GET", "method_not_allowed"], method);
  }
});
