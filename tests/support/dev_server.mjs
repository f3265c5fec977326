// A dev script (scripts/dev.sh, bench/handwritten/dev.sh) run as a user runs it, for the
// benchmark's black-box run and the tests of `npm run dev` itself: on a free port, with local D1 and queues in a fresh temporary state dir (never
// the user's .wrangler/state), in its own process group so that stopping it stops wrangler,
// workerd and whatever else the script started, even when the benchmark itself dies. wrangler's
// debug log goes to the state dir too (WRANGLER_LOG_PATH), which says which Worker wrangler's
// inspector is attached to.
import { spawn } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { waitFor } from "./platform.mjs";

/** How long a start may take: dev.sh builds what changed first (about 45 s on 2 cores when nothing did). */
const START_PATIENCE_MS = 5 * 60_000;

/** Process groups still running and their state dirs, removed at the latest when node exits. */
const running = new Map();
process.once("exit", () =>
  running.forEach((state, pgid) => {
    signalGroup(pgid, "SIGKILL");
    rmSync(state, { recursive: true, force: true });
  }),
);
for (const signal of ["SIGINT", "SIGTERM"]) process.once(signal, () => process.exit(130));

function signalGroup(pgid, signal) {
  try {
    process.kill(-pgid, signal);
    return true;
  } catch {
    return false; // no process left in the group
  }
}

async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * Starts `script` (bash, from the repository root `cwd`, with `args`) and resolves once it answers HTTP:
 * `{url, stop(), tail(), output()}`. Its output goes to a log in the state dir, whose last lines
 * `tail()` reads (a failure to start shows them) and `output()` reads whole.
 */
export async function startDevServer(script, { cwd, args = [] }) {
  const state = mkdtempSync(join(tmpdir(), "bench-dev-"));
  const log = join(state, "dev.log");
  const port = await freePort();
  const out = openSync(log, "w");
  const child = spawn("bash", [script, ...args], {
    cwd,
    detached: true, // its own process group
    stdio: ["ignore", out, out],
    env: {
      ...process.env,
      PORT: String(port),
      STATE_DIR: join(state, "wrangler"),
      WRANGLER_LOG_PATH: join(state, "logs"),
      WRANGLER_SEND_METRICS: "false",
    },
  });
  closeSync(out); // the child holds its own copy
  running.set(child.pid, state);
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const output = () => readFileSync(log, "utf8");
  const tail = () => output().split("\n").slice(-30).join("\n");
  const url = `http://127.0.0.1:${port}`;

  const stop = async () => {
    signalGroup(child.pid, "SIGTERM");
    await waitFor(() => !signalGroup(child.pid, 0), { what: `${script} to stop`, timeoutMs: 15_000 }).catch(() =>
      signalGroup(child.pid, "SIGKILL"),
    );
    running.delete(child.pid);
    rmSync(state, { recursive: true, force: true });
  };

  let ended = false;
  exited.then(() => (ended = true));
  try {
    // Any answer will do: the server is up (the first one may wait on wrangler's start).
    await waitFor(
      async () => {
        if (ended) throw new Error(`${script} exited before it answered`);
        return fetch(url).then(() => true, () => false);
      },
      { what: `${script} on port ${port}`, everyMs: 500, timeoutMs: START_PATIENCE_MS },
    );
  } catch (e) {
    const last = tail();
    await stop();
    throw new Error(`${e.message}\n--- its output, last lines ---\n${last}`);
  }
  return { url, stop, tail, output, inspected: () => inspectedWorker(join(state, "logs")) };
}

/**
 * The Worker wrangler's inspector is attached to, from its debug log in `dir`. `wrangler dev`
 * attaches it to one Worker of several: whichever finished its build step last. That Worker pays
 * an inspector event for each fetch it makes (a local D1 call is one) and each line it logs.
 */
async function inspectedWorker(dir) {
  const named = () =>
    readdirSync(dir)
      .map((file) => /NEW RUNTIME WEBSOCKET \S*\/core:user:([\w-]+)/.exec(readFileSync(join(dir, file), "utf8"))?.[1])
      .find(Boolean);
  return waitFor(() => existsSync(dir) && named(), { what: `wrangler's inspector in ${dir}`, everyMs: 200, timeoutMs: 30_000 });
}
