// The admin API as tests use it: every call is checked against the producer's own
// /openapi.json (path, method, status and body schema, with ajv), so the document cannot drift
// from what the code answers. `covered` lists each documented operation a test exercised.
import assert from "node:assert/strict";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { TOKENS } from "./platform.mjs";

const pointer = (s) => s.replaceAll("~", "~0").replaceAll("/", "~1");

export async function adminApi(p) {
  const doc = (await p.request("GET", "/openapi.json", { token: null })).body;
  const ajv = new Ajv2020({ strict: false, allErrors: true });
  addFormats(ajv);
  ajv.addSchema(doc, "api");
  const covered = new Set();

  /** Checks `res` against the documented response of `method template`. */
  function check(method, template, res) {
    const m = method.toLowerCase();
    const op = doc.paths[template]?.[m];
    assert.ok(op, `${method} ${template} is documented`);
    assert.ok(op.responses[res.status], `${method} ${template} documents status ${res.status}: ${JSON.stringify(res.body)}`);
    covered.add(`${m} ${template}`);
    if (!op.responses[res.status].content) {
      assert.equal(res.body, "", `${method} ${template} ${res.status} documents no body`);
      return res;
    }
    const validate = ajv.getSchema(
      `api#/paths/${pointer(template)}/${m}/responses/${res.status}/content/${pointer("application/json")}/schema`,
    );
    assert.ok(validate, `${method} ${template} ${res.status} has a JSON schema`);
    assert.ok(validate(res.body), `${method} ${template} ${res.status}: ${ajv.errorsText(validate.errors)} in ${JSON.stringify(res.body)}`);
    return res;
  }

  /** `template` like /v1/admin/jobs/{id}/retry with `params` {id}; `query` appended as is. */
  async function call(method, template, { params = {}, query = "", json, token = TOKENS.admin, body, headers } = {}) {
    const path = template.replace(/\{(\w+)\}/g, (_, k) => encodeURIComponent(params[k])) + query;
    const res = await p.request(method, path, { json, token, body, headers });
    return check(method, template, res);
  }

  /** The documented operations under `prefix` (`method path`), and those no call checked yet. */
  function coverage(prefix) {
    const documented = Object.entries(doc.paths)
      .filter(([path]) => path.startsWith(prefix))
      .flatMap(([path, ops]) => Object.keys(ops).map((m) => `${m} ${path}`));
    return { documented, missing: documented.filter((op) => !covered.has(op)) };
  }

  return { doc, call, check, covered, coverage };
}
