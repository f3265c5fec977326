// The local tokens `npm run dev` writes to .dev.vars, as a user copies them into a request: the
// first of each list, a `name:` in front of it being the token's name, not the token
// (docs/configuration.md "Configuration"). scripts/dev.sh prints them in its curls; the benchmark's
// black box sends them.
// Usage: node scripts/dev-tokens.mjs ENQUEUE_TOKENS|ADMIN_TOKENS
import { readFileSync } from "node:fs";
import { join, resolve } from "node:path";

const root = resolve(import.meta.dirname, "..");

/** `{enqueue, admin}`: the first token of ENQUEUE_TOKENS and of ADMIN_TOKENS in .dev.vars. */
export function devTokens() {
  const vars = Object.fromEntries(
    readFileSync(join(root, ".dev.vars"), "utf8")
      .split("\n")
      .map((line) => /^([A-Z_]+)=(.*)$/.exec(line.trim()))
      .filter(Boolean)
      .map(([, name, value]) => [name, value]),
  );
  const first = (list = "") =>
    (list.split(",").map((t) => t.trim()).find(Boolean) ?? "").replace(/^[A-Za-z0-9_.-]{1,32}:(?=.*\S)/, "").trim();
  return { enqueue: first(vars.ENQUEUE_TOKENS), admin: first(vars.ADMIN_TOKENS) };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const tokens = devTokens();
  console.log(process.argv[2] === "ADMIN_TOKENS" ? tokens.admin : tokens.enqueue);
}
