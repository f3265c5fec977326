// `npm run dev` builds both Workers, then `wrangler dev` runs scripts/build.mjs again for each
// (their [build] command): that second run must find them up to date. What configuring or
// running a Worker writes beside its sources (the consumer's generated local config, wrangler's
// `.wrangler/` folder, `.dev.vars`) used to count as a source, so every start rebuilt the
// consumer (about half a minute on 2 cores); a run of the static files' Worker (a dry-run
// deploy) rebuilt the producer the same way.
import { test } from "node:test";
import assert from "node:assert/strict";
import { mkdirSync, rmSync, statSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { upToDate } from "../scripts/build.mjs";
import { localConsumerConfig } from "../scripts/local-config.mjs";
import { ROOT } from "./support/platform.mjs";

/** Runs `check` while `path` was last changed a minute from now, then puts its times back. */
function whileNewer(path, check) {
  const { atime, mtime } = statSync(path);
  const later = new Date(Date.now() + 60_000);
  utimesSync(path, later, later);
  try {
    check();
  } finally {
    utimesSync(path, atime, mtime);
  }
}

/** Runs `check` while `folder` holds what a wrangler run bundles into its `.wrangler/`. */
function whileWranglerRanIn(folder, check) {
  const scratch = join(folder, ".wrangler", "tmp", `dev-rebuild-test-${process.pid}`);
  mkdirSync(scratch, { recursive: true });
  try {
    writeFileSync(join(scratch, "index.js"), "// what a wrangler run bundles\n");
    check();
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

test("what a local run writes beside the consumer leaves its WASM up to date; a source change does not", () => {
  assert.ok(upToDate("consumer"), "npm test builds the consumer before the tests run");
  const config = localConsumerConfig();
  const written = statSync(config).mtimeMs;
  assert.equal(statSync(localConsumerConfig()).mtimeMs, written, "the local config is not rewritten when unchanged");
  whileWranglerRanIn(join(ROOT, "consumer"), () =>
    whileNewer(config, () => assert.ok(upToDate("consumer"), "a start's .wrangler/ and a fresh local config are not sources")),
  );
  // The control: a source newer than the WASM is seen.
  whileNewer(join(ROOT, "consumer", "Cargo.toml"), () => assert.equal(upToDate("consumer"), false, "a changed Cargo.toml means a rebuild"));
  assert.ok(upToDate("consumer"));
});

test("a run of the static files' Worker, which writes beside them, leaves the producer's WASM up to date", () => {
  assert.ok(upToDate("producer"), "npm test builds the producer before the tests run");
  const files = join(ROOT, "producer", "static");
  whileNewer(files, () =>
    whileWranglerRanIn(files, () => assert.ok(upToDate("producer"), "producer/static is the jobs-static Worker's, not a source of the producer")),
  );
  // The control: a producer source newer than the WASM is seen.
  whileNewer(join(ROOT, "producer", "src", "lib.rs"), () => assert.equal(upToDate("producer"), false, "a changed source means a rebuild"));
  assert.ok(upToDate("producer"));
});
