// The code's dependencies point one way (ARCHITECTURE.md "Crates and the way dependencies
// point"): no Rust file reaches, through the modules it names, a module that reaches it back, in
// any crate; and the shared crate's concept folders form a stack, each naming only the folders
// below it (the order of the `stack:` line of `shared/src/lib.rs`'s doc). Read from the sources: every
// `crate::`, `super::` and `self::` path, and a child module's name used as a path, in code (not
// in comments or strings).
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { ROOT } from "./support/platform.mjs";

const CRATES = ["shared", "store", "producer", "consumer"];

function rustFiles(dir) {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return rustFiles(path);
    return name.endsWith(".rs") ? [path] : [];
  });
}

/** The source without comments, string and char literals (their text is not a path). */
function code(text) {
  return text
    .replace(/\/\*[\s\S]*?\*\//g, " ")
    .replace(/r(#*)"[\s\S]*?"\1/g, '""')
    .replace(/"(?:\\[\s\S]|[^"\\])*"/g, '""')
    .replace(/'(?:\\.|[^'\\\n])'/g, "' '")
    .replace(/\/\/[^\n]*/g, " ");
}

/** The module path of `file` in its crate's `src` (`[]` for lib.rs). */
function modulePath(src, file) {
  const parts = relative(src, file).replace(/\.rs$/, "").split("/");
  if (parts.at(-1) === "mod" || (parts.length === 1 && parts[0] === "lib")) parts.pop();
  return parts;
}

/** The file of the longest prefix of `path` that is a module, or undefined. */
function moduleFile(src, path) {
  for (let n = path.length; n >= 0; n--) {
    const base = join(src, ...path.slice(0, n));
    if (n === 0) return join(src, "lib.rs");
    for (const file of [`${base}.rs`, join(base, "mod.rs")]) if (existsSync(file)) return file;
  }
}

/** The inline `mod name { ... }` blocks of `text`: their names and extents. */
function inlineModules(text) {
  return [...text.matchAll(/\bmod\s+(\w+)\s*\{/g)].map((m) => {
    let depth = 0;
    let end = m.index + m[0].length - 1;
    for (; end < text.length; end++) {
      if (text[end] === "{") depth++;
      if (text[end] === "}" && --depth === 0) break;
    }
    return { name: m[1], start: m.index, end };
  });
}

/** Each file of the crate and the files its paths name. */
function graph(crate) {
  const src = join(ROOT, crate, "src");
  const edges = new Map();
  for (const file of rustFiles(src)) {
    const text = code(readFileSync(file, "utf8"));
    const file_module = modulePath(src, file);
    const blocks = inlineModules(text);
    // The module a path at `at` is written in: the file's, or an inline module's inside it.
    const moduleAt = (at) => [...file_module, ...blocks.filter((b) => b.start < at && at < b.end).map((b) => b.name)];
    const here = file_module;
    const children = [...text.matchAll(/\bmod\s+(\w+)\s*;/g)].map((m) => m[1]);
    const targets = new Set();
    const add = (path) => {
      const target = moduleFile(src, path);
      if (target && target !== file) targets.add(target);
    };
    // `use a::{b, c::d}` trees are read as their leading path: the modules they start from.
    for (const m of text.matchAll(/\b(crate|super|self)((?:::\w+)+)/g)) {
      const at = moduleAt(m.index);
      let base = m[1] === "crate" ? [] : m[1] === "self" ? at : at.slice(0, -1);
      const rest = m[2].split("::").filter(Boolean);
      while (rest[0] === "super") {
        base = base.slice(0, -1);
        rest.shift();
      }
      add([...base, ...rest]);
    }
    for (const m of text.matchAll(/(?<![\w:])(\w+)::(\w+)/g)) {
      if (children.includes(m[1])) add([...here, m[1], m[2]]);
    }
    for (const m of text.matchAll(/\buse\s+(?:crate|super|self)?(?:::)?((?:\w+::)*)\{([^;]*)\}/g)) {
      // Each entry of a group: `use super::{fate::Fate, heartbeat}`.
      const prefix = m[0].match(/\buse\s+(crate|super|self)/)?.[1];
      if (!prefix) continue;
      const at = moduleAt(m.index);
      const base = prefix === "crate" ? [] : prefix === "self" ? at : at.slice(0, -1);
      const lead = m[1].split("::").filter(Boolean);
      for (const entry of m[2].split(",")) {
        const path = entry.trim().split(/\s+as\s+/)[0].split("::").filter((p) => p && !p.includes("{") && p !== "self");
        if (path.length) add([...base, ...lead, ...path]);
      }
    }
    edges.set(file, targets);
  }
  return { src, edges };
}

/** The strongly connected components of more than one file (Tarjan). */
function cycles(edges) {
  let index = 0;
  const state = new Map();
  const stack = [];
  const found = [];
  const visit = (v) => {
    state.set(v, { index, low: index, on: true });
    index++;
    stack.push(v);
    for (const w of edges.get(v) ?? []) {
      if (!state.has(w)) {
        visit(w);
        state.get(v).low = Math.min(state.get(v).low, state.get(w).low);
      } else if (state.get(w).on) state.get(v).low = Math.min(state.get(v).low, state.get(w).index);
    }
    if (state.get(v).low === state.get(v).index) {
      const component = [];
      let w;
      do {
        w = stack.pop();
        state.get(w).on = false;
        component.push(w);
      } while (w !== v);
      if (component.length > 1) found.push(component);
    }
  };
  for (const v of edges.keys()) if (!state.has(v)) visit(v);
  return found;
}

for (const crate of CRATES) {
  test(`${crate}: no module reaches, through what it imports, a module that imports it`, () => {
    const { edges } = graph(crate);
    const loops = cycles(edges).map((component) => {
      const inside = new Set(component);
      const name = (f) => relative(join(ROOT, crate, "src"), f);
      const links = component.flatMap((f) => [...edges.get(f)].filter((t) => inside.has(t)).map((t) => `${name(f)} -> ${name(t)}`));
      return links.sort().join(", ");
    });
    assert.deepEqual(loops, [], `import circles in ${crate}:\n${loops.join("\n")}`);
  });
}

test("shared's concept folders form a stack: each imports only the folders below it", () => {
  const { src, edges } = graph("shared");
  const lib = readFileSync(join(src, "lib.rs"), "utf8");
  const order = lib.match(/^\/\/! stack: (.*)$/m)?.[1].split(" < ") ?? [];
  const folders = [...lib.matchAll(/^pub mod (\w+);/gm)].map((m) => m[1]);
  assert.deepEqual([...order].sort(), [...folders].sort(), "the stack names every folder of lib.rs once");
  const folderOf = (file) => relative(src, file).split("/")[0].replace(/\.rs$/, "");
  const upward = [];
  for (const [file, targets] of edges) {
    const from = order.indexOf(folderOf(file));
    for (const target of targets) {
      const to = order.indexOf(folderOf(target));
      if (from >= 0 && to > from) upward.push(`${relative(ROOT, file)} -> ${relative(ROOT, target)}`);
    }
  }
  assert.deepEqual(upward, [], `imports that run up the stack (${order.join(" < ")}):\n${upward.join("\n")}`);
});
