// Builds the Rust workers to WASM with worker-build, using the tools scripts/bootstrap.sh
// installed (worker-build would otherwise try to download them from GitHub).
// Usage: node scripts/build.mjs [producer|consumer|bench/floor ...]   (default: the two workers)
import { spawnSync } from "node:child_process";
import { existsSync, readdirSync, statSync } from "node:fs";
import { homedir } from "node:os";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");
const crates = process.argv.slice(2);
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

/** The newest change under `path` (ms), build outputs left out. */
function newest(path) {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.mtimeMs;
  const inside = readdirSync(path).filter((name) => !["build", "target", "node_modules"].includes(name));
  return Math.max(stat.mtimeMs, ...inside.map((name) => newest(join(path, name))));
}

/**
 * Whether `crate`'s WASM is newer than everything it is built from (its own files, the crates it
 * uses, the workspace manifests and this script). `npm run dev` builds both Workers, then
 * `wrangler dev` runs this again for each one (their `[build]` command): those runs are no-ops.
 */
function upToDate(crate) {
  const wasm = join(root, crate, "build", "index_bg.wasm");
  if (!existsSync(wasm)) return false;
  const inputs = [crate, "shared", "store", "Cargo.toml", "Cargo.lock"].map((p) => join(root, p));
  const built = statSync(wasm).mtimeMs;
  return [...inputs, import.meta.filename].every((input) => newest(input) < built);
}

for (const crate of crates.length ? crates : ["producer", "consumer"]) {
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
