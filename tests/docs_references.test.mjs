// The documentation's references hold (docs/development.md "Tests"): every markdown link names a
// file of the repository and, after a `#`, a heading of it (GitHub's anchors); every comment or
// string that cites a heading of the README, ARCHITECTURE.md or a page of docs/ names one that
// file has; every repository path the documentation names in code exists; and the README stays
// short, the rest being in docs/. A heading renamed or moved
// fails here, naming each file:line that still points at the old one.
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, relative, resolve, sep } from "node:path";

const ROOT = resolve(import.meta.dirname, "..");
const README_MAX_LINES = 320;

// Not sources: dependencies, build outputs, local state, the benchmark's results, and what the
// scripts generate beside the committed configs (git-ignored).
const SKIP_DIR_NAMES = new Set(["node_modules", "target", ".git", ".wrangler"]);
const SKIP_DIRS = new Set(["producer/build", "consumer/build", "bench/floor/build", "clients/js/dist", "bench/results"]);
const GENERATED_CONFIG_DIRS = new Set(["", "consumer", "producer/static"]); // wrangler.<env>.toml, wrangler.local.toml
const skipFile = (rel, name) =>
  name === ".dev.vars" || name.endsWith(".log") ||
  (GENERATED_CONFIG_DIRS.has(dirname(rel) === "." ? "" : dirname(rel)) && /^wrangler\..+\.toml$/.test(name));

const posix = (p) => p.split(sep).join("/");

/** Every text file of the repository's sources, as paths relative to the root. */
function sourceFiles(dir = ROOT, out = []) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const abs = join(dir, entry.name);
    const rel = posix(relative(ROOT, abs));
    if (entry.isDirectory()) {
      if (!SKIP_DIR_NAMES.has(entry.name) && !SKIP_DIRS.has(rel)) sourceFiles(abs, out);
    } else if (entry.isFile() && !skipFile(rel, entry.name)) {
      const bytes = readFileSync(abs);
      if (!bytes.subarray(0, 8000).includes(0)) out.push(rel);
    }
  }
  return out;
}

const FILES = sourceFiles();
const text = new Map(FILES.map((f) => [f, readFileSync(join(ROOT, f), "utf8")]));
const read = (rel) => text.get(rel) ?? readFileSync(join(ROOT, rel), "utf8");

/** A markdown file with its fenced code blocks and inline code spans blanked (line breaks kept). */
function prose(md) {
  let fence = null;
  const unfenced = md.split("\n").map((line) => {
    const open = /^\s*(`{3,}|~{3,})/.exec(line);
    if (fence) {
      if (open && open[1][0] === fence[0] && open[1].length >= fence.length) fence = null;
      return "";
    }
    if (open) {
      fence = open[1];
      return "";
    }
    return line;
  }).join("\n");
  // A code span may wrap onto the next line of its paragraph, never past a blank line.
  return unfenced.replace(/(`+)(?:(?!\n\s*\n)[\s\S])*?\1/g, (m) => m.replace(/[^\n]/g, " "));
}

/** GitHub's anchor of a heading: lower case, punctuation but `-` and `_` dropped, spaces to `-`. */
const slug = (heading) => heading.toLowerCase().replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, "").replace(/ /g, "-");

const HEADING = /^ {0,3}#{1,6}\s+(.*?)(?:\s+#+)?\s*$/;
const headingCache = new Map();
/** The headings of a markdown file: their texts, and their anchors (a repeated one gets -1, -2...). */
function headings(rel) {
  if (headingCache.has(rel)) return headingCache.get(rel);
  const raw = read(rel).split("\n");
  const texts = new Set();
  const anchors = new Set();
  const seen = new Map();
  prose(read(rel)).split("\n").forEach((line, i) => {
    if (!HEADING.test(line)) return;
    const heading = HEADING.exec(raw[i])[1];
    const plain = heading.replace(/`/g, "");
    texts.add(heading).add(plain);
    const base = slug(plain);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  });
  const result = { texts, anchors };
  headingCache.set(rel, result);
  return result;
}

const lineOf = (s, offset) => s.slice(0, offset).split("\n").length;

const MARKDOWN = FILES.filter((f) => f.endsWith(".md"));

test("the markdown files this test reads are the documentation's", () => {
  for (const f of ["README.md", "ARCHITECTURE.md", "docs/README.md", "clients/js/README.md", "clients/cli/README.md"]) {
    assert.ok(MARKDOWN.includes(f), `${f} is read`);
  }
});

test("every markdown link names a file that exists and, after #, a heading of it", () => {
  const bad = [];
  for (const file of MARKDOWN) {
    const body = prose(read(file));
    const targets = [];
    // [text](target "title"), ![alt](target), and [label]: target definitions
    for (const m of body.matchAll(/!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+"[^"]*")?\s*\)/g)) {
      targets.push([m.index, m[1]]);
    }
    for (const m of body.matchAll(/^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)/gm)) targets.push([m.index, m[1]]);
    for (const [offset, target] of targets) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      const where = `${file}:${lineOf(body, offset)}`;
      const [pathPart, anchor] = target.split(/#(.*)/s);
      const path = decodeURIComponent(pathPart);
      const abs = path === "" ? join(ROOT, file) : path.startsWith("/") ? join(ROOT, path) : resolve(ROOT, dirname(file), path);
      const rel = posix(relative(ROOT, abs));
      if (rel.startsWith("..")) {
        bad.push(`${where}: (${target}) leaves the repository`);
        continue;
      }
      if (!existsSync(abs)) {
        bad.push(`${where}: (${target}) names ${rel}, which does not exist`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!rel.endsWith(".md") || !statSync(abs).isFile()) {
        if (!/^L\d+(-L\d+)?$/.test(anchor)) bad.push(`${where}: (${target}) has an anchor, but ${rel} is no markdown file`);
        continue;
      }
      if (!headings(rel).anchors.has(decodeURIComponent(anchor))) {
        bad.push(`${where}: (${target}): #${anchor} is no heading of ${rel}`);
      }
    }
  }
  assert.deepEqual(bad, [], `broken markdown links:\n  ${bad.join("\n  ")}`);
});

// A citation: the README (README, README.md), ARCHITECTURE.md or docs/<page>.md, then one quoted
// heading or a list of them (`, "Other"`), quotes escaped or not (JSON, Rust strings); `'s` or a
// comma may come between. A citation may wrap onto the next comment line.
const CITED = /(?<![\w/.-])(README(?:\.md)?|ARCHITECTURE\.md|docs\/[\w./-]+?\.md)(?:'s|,)?\s+\\?"([^"\\]+)\\?"((?:\s*,\s*\\?"[^"\\]+\\?")*)/g;
const MENTIONED = /(?<![\w/.-])docs\/[\w./-]+?\.md\b/g;
// What starts a comment line, dropped when a citation's lines are joined.
const COMMENT_LEAD = /^\s*(?:\/\/[\/!]?|\/\*+|\*(?!\/)|#+|--|<!--)?\s*/;

/** The file's lines joined with one space, comment leads dropped, and each offset's line. */
function joined(body) {
  const lines = body.split("\n");
  let flat = "";
  const starts = [];
  for (const line of lines) {
    const lead = COMMENT_LEAD.exec(line)[0].length;
    starts.push([flat.length, lead]);
    flat += line.slice(lead).trimEnd() + " ";
  }
  const lineAt = (offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid][0] <= offset) lo = mid;
      else hi = mid - 1;
    }
    return lo + 1;
  };
  return { flat, lineAt };
}

const citedFile = (name) => (name.startsWith("README") ? "README.md" : name);

test("every citation of a heading in a comment or string names a heading its file has", () => {
  const bad = [];
  let count = 0;
  for (const file of FILES) {
    const body = read(file);
    if (!/README|ARCHITECTURE\.md|docs\//.test(body)) continue;
    const { flat, lineAt } = joined(body);
    for (const m of flat.matchAll(MENTIONED)) {
      if (!existsSync(join(ROOT, m[0]))) bad.push(`${file}:${lineAt(m.index)}: ${m[0]} does not exist`);
    }
    for (const m of flat.matchAll(CITED)) {
      const target = citedFile(m[1]);
      const where = `${file}:${lineAt(m.index)}`;
      if (!existsSync(join(ROOT, target))) continue; // reported above as a page that does not exist
      const cited = [m[2], ...[...m[3].matchAll(/\\?"([^"\\]+)\\?"/g)].map((x) => x[1])];
      for (const heading of cited) {
        count++;
        if (!headings(target).texts.has(heading.trim())) {
          bad.push(`${where}: ${m[1]} "${heading}" is no heading of ${target}`);
        }
      }
    }
  }
  assert.ok(count > 100, `found the citations (${count})`);
  assert.deepEqual(bad, [], `citations of headings that do not exist:\n  ${bad.join("\n  ")}`);
});

test(`README.md is at most ${README_MAX_LINES} lines: the rest lives in docs/`, () => {
  const lines = read("README.md").replace(/\n$/, "").split("\n").length;
  assert.ok(lines <= README_MAX_LINES, `README.md is ${lines} lines, over ${README_MAX_LINES}: move a section to a page of docs/`);
});

const TOP_FOLDERS = readdirSync(ROOT, { withFileTypes: true })
  .filter((e) => e.isDirectory() && !SKIP_DIR_NAMES.has(e.name) && !e.name.startsWith("."))
  .map((e) => e.name);

test("every path of the repository the documentation names in code exists", () => {
  const bad = [];
  let count = 0;
  // `store/src/jobs/claim.rs`, `tests/core.test.mjs`, `consumer/src/batch/`: a code span that is
  // one path from a top folder (a glob, a placeholder or an example of a generated name is not).
  const PATH = new RegExp(`^(?:${TOP_FOLDERS.join("|")})/[\\w./-]*$`);
  for (const file of MARKDOWN) {
    const body = read(file).replace(/^\s*(`{3,}|~{3,})[\s\S]*?^\s*\1/gm, (m) => m.replace(/[^\n]/g, " "));
    for (const m of body.matchAll(/`([^`\n]+)`/g)) {
      const span = m[1].trim();
      if (!PATH.test(span) || /\.\.\.|\bNN\b|<|\*/.test(span)) continue;
      count++;
      if (!existsSync(join(ROOT, span.replace(/\/$/, "")))) bad.push(`${file}:${lineOf(body, m.index)}: \`${span}\` does not exist`);
    }
  }
  assert.ok(count > 50, `found the paths (${count})`);
  assert.deepEqual(bad, [], `paths the documentation names that do not exist:\n  ${bad.join("\n  ")}`);
});
