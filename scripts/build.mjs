// Builds the Rust workers to WASM with worker-build, using the tools scripts/bootstrap.sh
// installed (worker-build would otherwise try to download them from GitHub).
// Usage: node scripts/build.mjs [producer|consumer|bench/floor ...]   (default: the two workers)
import { spawnSync } from "node:child_process";
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

for (const crate of crates.length ? crates : ["producer", "consumer"]) {
  const run = spawnSync("worker-build", ["--release"], { cwd: join(root, crate), env, stdio: "inherit" });
  if (run.status !== 0) {
    console.error(`build of ${crate} failed`);
    process.exit(run.status ?? 1);
  }
}
