// The payload schemas' `pattern`s (shared/src/runtime/js_pattern.rs), with the runtime's own
// ECMA-262 RegExp, as JSON Schema specifies: each compiled once per isolate and kept by its source.
const compiled = new Map();

function regex(pattern) {
  let re = compiled.get(pattern);
  if (!re) {
    re = new RegExp(pattern, "u");
    if (compiled.size < 1000) compiled.set(pattern, re);
  }
  return re;
}

export function patternError(pattern) {
  try {
    regex(pattern);
    return "";
  } catch (e) {
    return String(e?.message || e) || "invalid";
  }
}

export function patternMatches(pattern, text) {
  try {
    return regex(pattern).test(text);
  } catch {
    return false;
  }
}
