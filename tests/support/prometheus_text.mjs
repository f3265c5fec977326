// A strict parser of the Prometheus text exposition format (0.0.4), for tests: every line must
// be a HELP/TYPE comment or a sample of a declared metric family; label values unescaped;
// histograms checked (cumulative buckets, +Inf bucket equal to _count, _sum present). The npm
// parse-prometheus-text-format package drops the labels of labelled histograms, so it cannot
// check this one.
const NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const TYPES = new Set(["counter", "gauge", "histogram", "summary", "untyped"]);

function parseValue(text, line) {
  if (text === "+Inf") return Infinity;
  if (text === "-Inf") return -Infinity;
  if (text === "NaN") return NaN;
  if (!/^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$/.test(text)) throw new Error(`bad value ${JSON.stringify(text)} in: ${line}`);
  return Number(text);
}

function parseLabels(text, line) {
  const labels = {};
  let i = 0;
  while (i < text.length) {
    const m = /^([a-zA-Z_][a-zA-Z0-9_]*)="/.exec(text.slice(i));
    if (!m) throw new Error(`bad label at ${JSON.stringify(text.slice(i))} in: ${line}`);
    i += m[0].length;
    let value = "";
    for (;;) {
      if (i >= text.length) throw new Error(`unterminated label value in: ${line}`);
      const c = text[i++];
      if (c === '"') break;
      if (c === "\\") {
        const e = text[i++];
        if (e === "n") value += "\n";
        else if (e === "\\" || e === '"') value += e;
        else throw new Error(`bad escape \\${e} in: ${line}`);
      } else value += c;
    }
    if (m[1] in labels) throw new Error(`repeated label ${m[1]} in: ${line}`);
    labels[m[1]] = value;
    if (text[i] === ",") i++;
    else if (i !== text.length) throw new Error(`expected , in: ${line}`);
  }
  return labels;
}

/** Map of family name -> {type, help, samples: [{name, labels, value}]}; throws on any fault. */
export function parsePrometheusText(text) {
  const families = new Map();
  const familyOf = (sample) => {
    if (families.has(sample)) return families.get(sample);
    for (const suffix of ["_bucket", "_sum", "_count"]) {
      const base = sample.endsWith(suffix) ? sample.slice(0, -suffix.length) : null;
      if (base && ["histogram", "summary"].includes(families.get(base)?.type)) return families.get(base);
    }
    return null;
  };
  for (const line of text.split("\n")) {
    if (line === "") continue;
    if (line.startsWith("#")) {
      const m = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
      if (!m) continue; // other comments are allowed
      const [, kind, name, rest] = m;
      if (!NAME.test(name)) throw new Error(`bad metric name in: ${line}`);
      const family = families.get(name) ?? { name, type: "untyped", help: "", samples: [] };
      if (kind === "TYPE") {
        if (!TYPES.has(rest)) throw new Error(`bad type in: ${line}`);
        if (family.samples.length) throw new Error(`TYPE after samples in: ${line}`);
        family.type = rest;
      } else family.help = rest;
      families.set(name, family);
      continue;
    }
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?$/.exec(line);
    if (!m) throw new Error(`bad sample line: ${line}`);
    const family = familyOf(m[1]);
    if (!family) throw new Error(`sample of an undeclared metric: ${line}`);
    family.samples.push({ name: m[1], labels: parseLabels(m[2] ?? "", line), value: parseValue(m[3], line) });
  }
  for (const family of families.values()) if (family.type === "histogram") checkHistogram(family);
  return families;
}

function checkHistogram(family) {
  const key = (labels) => JSON.stringify(Object.entries(labels).filter(([k]) => k !== "le").sort());
  const series = new Map();
  for (const s of family.samples) {
    const entry = series.get(key(s.labels)) ?? { buckets: [], sum: undefined, count: undefined };
    if (s.name.endsWith("_bucket")) entry.buckets.push([parseValue(s.labels.le, "le"), s.value]);
    else if (s.name.endsWith("_sum")) entry.sum = s.value;
    else if (s.name.endsWith("_count")) entry.count = s.value;
    series.set(key(s.labels), entry);
  }
  for (const [labels, { buckets, sum, count }] of series) {
    if (sum === undefined || count === undefined) throw new Error(`${family.name}${labels}: no _sum or _count`);
    for (let i = 1; i < buckets.length; i++) {
      if (!(buckets[i][0] > buckets[i - 1][0]) || buckets[i][1] < buckets[i - 1][1]) {
        throw new Error(`${family.name}${labels}: buckets not cumulative`);
      }
    }
    const inf = buckets.at(-1);
    if (!inf || inf[0] !== Infinity || inf[1] !== count) throw new Error(`${family.name}${labels}: +Inf bucket is not _count`);
  }
}

/** The value of `name` with exactly these labels (a subset match on `labels`), or undefined. */
export function sampleValue(families, name, labels = {}) {
  for (const family of families.values()) {
    for (const s of family.samples) {
      if (s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v) && Object.keys(s.labels).length === Object.keys(labels).length) return s.value;
    }
  }
  return undefined;
}
