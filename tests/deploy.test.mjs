// `npm run deploy -- --env <env>` (scripts/deploy.mjs), as far as it runs offline: the dry run
// prints the plan, writes the environment's configs and has wrangler validate and bundle every
// Worker with them; the plan names every resource with its environment, and a second run over
// an account that has them creates nothing; its last step puts a committed job-types.json
// through a producer's admin API (a local one here).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { unstable_getMiniflareWorkerOptions } from "wrangler";
import { ROOT, startPlatform, TOKENS } from "./support/platform.mjs";
import { applyJobTypes, envConfig, expiryRule, generateSecret, healthProblems, plan, resources, secretProblem, workersDevUrl } from "../scripts/deploy.mjs";

const CONFIGS = {
  static: "producer/static/wrangler.staging.toml",
  producer: "wrangler.staging.toml",
  consumer: "consumer/wrangler.staging.toml",
};
const deploy = (...args) => spawnSync("node", ["scripts/deploy.mjs", ...args], { cwd: ROOT, encoding: "utf8" });

test("the dry run plans every resource of the environment and wrangler accepts the configs it writes", () => {
  const run = deploy("--env", "staging", "--dry-run");
  assert.equal(run.status, 0, run.stderr + run.stdout);
  const need = resources("staging");
  for (const name of [need.database, ...need.buckets, ...need.queues, "jobs-static-staging", "jobs-producer-staging", "jobs-consumer-staging"]) {
    assert.match(run.stdout, new RegExp(`\\b${name}\\b`), name);
  }
  assert.equal(need.queues.length, 14, "5 families and their DLQs, 4 express lanes");
  assert.equal(run.stdout.match(/--dry-run: exiting now/g)?.length, 3, "every Worker validated and bundled");
  const deploys = run.stdout.match(/^ {2}deploy +(\S+)/gm).map((line) => line.trim().split(/ +/)[1]);
  assert.deepEqual(deploys, ["jobs-static-staging", "jobs-consumer-staging", "jobs-producer-staging"], "the static files first, the producer, which binds both, last");
  const producer = readFileSync(join(ROOT, CONFIGS.producer), "utf8");
  assert.match(producer, /^service = "jobs-static-staging"$/m, "the producer's STATIC binding names the environment's static Worker");
  const files = readFileSync(join(ROOT, CONFIGS.static), "utf8");
  assert.match(files, /^workers_dev = false$/m, "the static files' Worker has no URL of its own");
  assert.doesNotMatch(files, /^routes?\s*=/m);
  const consumer = readFileSync(join(ROOT, CONFIGS.consumer), "utf8");
  assert.match(consumer, /^name = "jobs-consumer-staging"$/m);
  assert.match(consumer, /^queue = "jobs-staging-default-express"$/m);
  assert.match(consumer, /^dead_letter_queue = "jobs-staging-default-dlq"$/m);
  assert.doesNotMatch(consumer, /"jobs-(high|default|low|bulk|screenshot)(-|")/, "no resource of the default names left");
});

test("environments never share a resource, and a second run creates nothing", () => {
  const staging = resources("staging");
  const production = resources("production");
  const all = (r) => [r.database, ...r.buckets, ...r.queues];
  assert.deepEqual(all(staging).filter((n) => all(production).includes(n)), []);

  const first = plan("staging", null, CONFIGS);
  const creates = (steps) => steps.filter((s) => s.args.includes("create") && !s.done).map((s) => s.name);
  assert.deepEqual(creates(first).sort(), all(staging).sort());
  const account = {
    databases: new Set([staging.database]),
    queues: new Set(staging.queues),
    buckets: new Set(staging.buckets),
    lifecycleRules: Object.fromEntries(staging.buckets.map((b) => [b, new Set([expiryRule(b)])])),
    secrets: { producer: new Set(["ENQUEUE_TOKENS", "ADMIN_TOKENS"]), consumer: new Set(["SIGNING_SECRETS"]) },
  };
  const again = plan("staging", account, CONFIGS);
  assert.deepEqual(creates(again), []);
  assert.deepEqual(
    again.filter((s) => !s.done).map((s) => s.what),
    ["migrations", "deploy", "deploy", "deploy"],
    "only what keeps a deployment current: migrations, the Workers",
  );
  // wrangler adds an expiry rule beside the bucket's, even one of the same name: it is added
  // only to a bucket that lacks it.
  const ruleless = plan("staging", { ...account, lifecycleRules: { [staging.buckets[0]]: new Set(["someone-elses"]) } }, CONFIGS);
  const added = ruleless.filter((s) => s.what === "R2 expiry" && !s.done);
  assert.deepEqual(added.map((s) => s.name), staging.buckets);
  assert.deepEqual(added.map((s) => s.args[5]), staging.buckets.map(expiryRule), "the rule's name as the plan adds it");
  assert.deepEqual(staging.buckets.map(expiryRule).sort(), ["expire-artifacts", "expire-screenshots"]);
});

/** The committed config each role's environment config is written from. */
const COMMITTED = { static: "producer/static/wrangler.toml", producer: "wrangler.toml", consumer: "consumer/wrangler.toml" };

test("vars set on a deployed Worker outlive a deploy, and the example app binds each environment's producer", () => {
  for (const [role, committed] of Object.entries(COMMITTED)) {
    const text = envConfig(readFileSync(join(ROOT, committed), "utf8"), "staging", "1");
    assert.match(text, /^keep_vars = true$/m, role);
    assert.ok(text.indexOf("keep_vars") < text.indexOf("["), `${role}: a top-level key, before any table`);
  }
  for (const env of ["staging", "production"]) {
    const { workerOptions } = unstable_getMiniflareWorkerOptions(join(ROOT, "examples", "service-binding", "wrangler.toml"), env);
    const bound = workerOptions.serviceBindings.JOBS;
    assert.equal(bound?.name ?? bound, `jobs-producer-${env}`, env);
  }
});

test("the database id is filled in, and a wrong environment is refused", () => {
  const text = envConfig(readFileSync(join(ROOT, "wrangler.toml"), "utf8"), "production", "1234");
  assert.match(text, /^database_id = "1234"$/m);
  assert.match(text, /^database_name = "jobs-production"$/m);
  const wrong = deploy("--env", "prod");
  assert.equal(wrong.status, 2);
  assert.match(wrong.stderr, /--env staging\|production/);
});

test("a secret deploy sets is at least 24 characters an entry: a placeholder never reaches an account", () => {
  const example = readFileSync(join(ROOT, ".dev.vars.example"), "utf8");
  const placeholder = /^ADMIN_TOKENS=(.*)$/m.exec(example)[1];
  assert.match(secretProblem("ADMIN_TOKENS", placeholder), /at least 24 characters/);
  assert.match(secretProblem("ENQUEUE_TOKENS", `webapp:${generateSecret()},cron:short`), /\(1 shorter\)/);
  assert.match(secretProblem("SIGNING_SECRETS", `${generateSecret()},`), /empty entry/);
  // A name is not part of the secret: `ops:` and 20 characters is too short.
  assert.match(secretProblem("ADMIN_TOKENS", `ops:${"x".repeat(20)}`), /at least 24/);
  assert.equal(secretProblem("ADMIN_TOKENS", `ops:${generateSecret()},${generateSecret()}`), null);
  assert.equal(secretProblem("SIGNING_SECRETS", `${generateSecret()},${generateSecret()}`), null);
  assert.equal(generateSecret().length, 32);
  assert.notEqual(generateSecret(), generateSecret());
});

test("after deploying, the producer's /healthz says what the deployment lacks", () => {
  // As wrangler 4 writes a deploy to WRANGLER_OUTPUT_FILE_PATH (one JSON object a line).
  const out = [
    JSON.stringify({ version: 1, type: "wrangler-session", wrangler_version: "4.86.0", command_line_args: ["deploy"] }),
    JSON.stringify({
      version: 1, type: "deploy", worker_name: "jobs-producer-staging", version_id: "0b5c1c7e-0000-4000-8000-000000000000",
      targets: ["https://jobs-producer-staging.acme.workers.dev", "schedule: * * * * *"],
    }),
  ].join("\n");
  assert.equal(workersDevUrl(out), "https://jobs-producer-staging.acme.workers.dev");
  assert.equal(workersDevUrl(JSON.stringify({ type: "deploy", targets: ["jobs.example.com/*"] })), null, "a route only");
  const healthy = { status: "ok", d1: true, queues: true, auth: { enqueue_tokens: true, admin_tokens: true, metrics_tokens: false, enqueue_token_types: "ok" } };
  assert.deepEqual(healthProblems(healthy), [], "an unset METRICS_TOKENS is optional");
  const sick = { ...healthy, d1: false, auth: { ...healthy.auth, admin_tokens: false, enqueue_token_types: "refused" } };
  const problems = healthProblems(sick);
  assert.equal(problems.length, 3);
  assert.match(problems.join("\n"), /D1 does not answer[^]*ADMIN_TOKENS is not set[^]*ENQUEUE_TOKEN_TYPES is refused/);
  assert.ok(healthProblems({ error: { code: "not_found" } }).length > 0, "an answer that is not the health report is no all-clear");
});

test("the deploy puts job-types.json's types through the producer: again, nothing changes; a refused one is named with its field", async () => {
  const p = await startPlatform();
  try {
    const url = String(await p.mf.ready).replace(/\/$/, "");
    const dir = mkdtempSync(join(tmpdir(), "job-types-"));
    const file = join(dir, "job-types.json");
    const types = {
      send_invoice: { family: "high", target: { service: "APP", path: "/jobs" } },
      nightly_report: { family: "bulk", target: { url: "https://app.example.com/jobs/report" }, timeout_ms: 60000 },
    };
    writeFileSync(file, JSON.stringify(types));
    // The file's types, beside the bundled catalog's (migrations/0026_bundled_catalog.sql).
    const versions = () => p.db.prepare("SELECT name, version FROM job_types WHERE updated_by != 'migration' ORDER BY name").all().then((r) => r.results.map((t) => `${t.name}@${t.version}`));
    assert.equal(await applyJobTypes(url, TOKENS.admin, file), 0);
    assert.deepEqual(await versions(), ["nightly_report@1", "send_invoice@1"]);
    assert.equal(await applyJobTypes(url, TOKENS.admin, file), 0);
    assert.deepEqual(await versions(), ["nightly_report@1", "send_invoice@1"], "an unchanged file writes no version");

    writeFileSync(file, JSON.stringify({ ...types, nightly_report: { ...types.nightly_report, timeout_ms: 60001 }, broken: { family: "urgent", target: { url: "https://a.io" } } }));
    const errors = [];
    const error = console.error;
    console.error = (line) => errors.push(line);
    try {
      assert.equal(await applyJobTypes(url, TOKENS.admin, file), 1);
    } finally {
      console.error = error;
    }
    assert.match(errors.join("\n"), /broken: invalid_field \(family\)/);
    assert.deepEqual(await versions(), ["nightly_report@2", "send_invoice@1"]);
    assert.equal(await applyJobTypes(url, "", file), 1, "no admin token: said, not skipped");
    assert.equal(await applyJobTypes(url, TOKENS.admin, join(dir, "none.json")), 0, "no file: nothing to do");
  } finally {
    await p.dispose();
  }
});
