// Starts Debian's headless Chromium (installed by scripts/install-chromium.sh) for the
// Browser Rendering stand-in, on loopback with a fresh profile. Used by the tests
// (startChromium) and by scripts/dev.sh (`node dev/browser-standin/chromium.mjs <port>`, which
// runs until it is stopped).
import { spawn } from "node:child_process";
import { mkdtempSync, readlinkSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { basename, dirname, join } from "node:path";

const CHROMIUM = "/usr/bin/chromium";

/** Resolves once Chromium listens: `{url: "http://127.0.0.1:<port>", close()}`. Port 0 picks a free one. */
export async function startChromium({ port = 0 } = {}) {
  const profile = mkdtempSync(join(tmpdir(), "browser-standin-"));
  const child = spawn(CHROMIUM, [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
    `--user-data-dir=${profile}`, "--remote-debugging-address=127.0.0.1", `--remote-debugging-port=${port}`,
    "about:blank",
  ], { stdio: ["ignore", "ignore", "pipe"] });
  const exited = new Promise((resolve) => child.once("exit", resolve));
  const listening = await new Promise((resolve, reject) => {
    let log = "";
    child.stderr.on("data", (chunk) => {
      log += chunk;
      const found = /DevTools listening on ws:\/\/([\d.]+:\d+)\//.exec(log);
      if (found) resolve(found[1]);
    });
    child.once("error", reject);
    exited.then((code) => reject(new Error(`chromium exited (${code}) before listening:\n${log}`)));
  });
  return {
    url: `http://${listening}`,
    async close() {
      // Chromium keeps its singleton socket in a directory of its own beside the profile,
      // which it leaves behind when it is stopped: found through the profile's link to it.
      const socketDir = singletonSocketDir(profile);
      child.kill();
      await exited;
      if (socketDir) rmSync(socketDir, { recursive: true, force: true });
      // Its helper processes may still be writing the profile for a while after it exits; a
      // profile that outlives the retries is only a temporary directory left behind.
      try {
        rmSync(profile, { recursive: true, force: true, maxRetries: 30, retryDelay: 200 });
      } catch (e) {
        console.warn(`left the Chromium profile ${profile}: ${e.message}`);
      }
    },
  };
}

/** The temporary directory of the profile's singleton socket, if it has one. */
function singletonSocketDir(profile) {
  try {
    const dir = dirname(readlinkSync(join(profile, "SingletonSocket")));
    return dirname(dir) === tmpdir() && basename(dir).startsWith("org.chromium.Chromium.") ? dir : undefined;
  } catch {
    return undefined;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const chromium = await startChromium({ port: Number(process.argv[2] ?? 9222) });
  console.log(`Chromium for the browser stand-in: ${chromium.url}`);
  for (const signal of ["SIGINT", "SIGTERM"]) {
    process.on(signal, () => chromium.close().then(() => process.exit(0)));
  }
}
