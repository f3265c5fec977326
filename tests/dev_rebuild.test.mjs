// `npm run dev` builds both Workers, then `wrangler dev` runs scripts/build.mjs again for each
// (their [build] command): that second run must find them up to date. What configuring or
// running a Worker writes beside its sources (the consumer's generated local config, wrangler's
// `.wrangler/` folder, `.dev.vars`) used to count as a source, so every start rebuilt the
// consumer (about half a minute on 2 cores).
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { upToDate } from "../scripts/build.mjs";
import { localConsumerConfig } from "../scripts/local-config.mjs";
import { ROOT } from "./support/platform.mjs";

test("what a local run writes beside the consumer leaves its WASM up to date; a source change does not", () => {
  assert.ok(upToDate("consumer"), "npm test builds the consumer before the tests run");
  const config = localConsumerConfig();
  const written = statSync(config).mtimeMs;
  assert.equal(statSync(localConsumerConfig()).mtimeMs, written, "the local config is not rewritten when unchanged");

  const scratch = join(ROOT, "consumer", ".wrangler", "tmp", `dev-rebuild-test-${process.pid}`);
  mkdirSync(scratch, { recursive: true });
  const later = new Date(Date.now() + 60_000);
  try {
    writeFileSync(join(scratch, "index.js"), "// what wrangler dev bundles at a start\n");
    utimesSync(config, later, later);
    assert.ok(upToDate("consumer"), "a start's .wrangler/ and a fresh local config are not sources");
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }

  // The control: a source newer than the WASM is seen (its time put back after).
  const manifest = join(ROOT, "consumer", "Cargo.toml");
  const { atime, mtime } = statSync(manifest);
  utimesSync(manifest, later, later);
  try {
    assert.equal(upToDate("consumer"), false, "a changed Cargo.toml means a rebuild");
  } finally {
    utimesSync(manifest, atime, mtime);
  }
  assert.ok(upToDate("consumer"));
});
