// The dashboard's charts: each family's last hour, minute by minute, from GET /v1/admin/history,
// drawn as inline SVG sparklines (no library). A minute with no value (no attempt ended, no
// sweep tick read the backlog) is a gap in its line. Each chart's <title> states its figures, so
// a screen reader (and the browser test) reads what the line shows.
"use strict";

const SVG = "http://www.w3.org/2000/svg";
const CHART = { width: 180, height: 36, pad: 2 };

/** What each chart draws: its column, a label, and how its title sums the series up. */
const SERIES = [
  { key: "succeeded", label: "succeeded / min", sum: true },
  { key: "failed", label: "failed / min", sum: true },
  { key: "avg_ms", label: "avg duration (ms)", sum: false },
  { key: "backlog", label: "backlog", sum: false },
];

function svg(tag, attrs = {}) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  return node;
}

/** The line's runs of consecutive known values, as SVG point lists scaled to `max`. */
function segments(values, max) {
  const { width, height, pad } = CHART;
  const x = (i) => pad + (i * (width - 2 * pad)) / Math.max(values.length - 1, 1);
  const y = (v) => height - pad - (max > 0 ? (v * (height - 2 * pad)) / max : 0);
  const runs = [];
  let run = [];
  values.forEach((v, i) => {
    if (v === null || v === undefined) {
      if (run.length) runs.push(run);
      run = [];
    } else {
      run.push(`${x(i).toFixed(1)},${y(v).toFixed(1)}`);
    }
  });
  if (run.length) runs.push(run);
  return runs;
}

function title(series, family, values) {
  const known = values.filter((v) => v !== null && v !== undefined);
  const max = known.length ? Math.max(...known) : 0;
  if (series.sum) return `${family} ${series.label}: ${known.reduce((a, b) => a + b, 0)} in all, at most ${max} a minute`;
  if (!known.length) return `${family} ${series.label}: no data`;
  return `${family} ${series.label}: latest ${known.at(-1)}, at most ${max}`;
}

function sparkline(series, family, points) {
  const values = points.map((p) => p[series.key]);
  const max = Math.max(0, ...values.filter((v) => v !== null && v !== undefined));
  const chart = svg("svg", {
    width: CHART.width, height: CHART.height, viewBox: `0 0 ${CHART.width} ${CHART.height}`,
    role: "img", "data-family": family, "data-series": series.key, class: `chart ${series.key}`,
  });
  const label = svg("title");
  label.textContent = title(series, family, values);
  chart.append(label);
  for (const run of segments(values, max)) {
    const shape = run.length === 1 ? svg("circle", { r: 1.5, cx: run[0].split(",")[0], cy: run[0].split(",")[1] })
      : svg("polyline", { points: run.join(" "), fill: "none" });
    chart.append(shape);
  }
  return chart;
}

/** Fills `table` (a <table> with a <tbody>) with a row of charts per family. */
function renderHistory(table, history) {
  const head = table.querySelector("thead tr");
  if (!head.children.length) {
    for (const text of ["family", ...SERIES.map((s) => s.label)]) {
      const th = document.createElement("th");
      th.textContent = text;
      head.append(th);
    }
  }
  const rows = Object.entries(history.families).map(([family, points]) => {
    const tr = document.createElement("tr");
    tr.dataset.family = family;
    const name = document.createElement("td");
    name.textContent = family;
    tr.append(name);
    for (const series of SERIES) {
      const td = document.createElement("td");
      td.append(sparkline(series, family, points));
      tr.append(td);
    }
    return tr;
  });
  table.querySelector("tbody").replaceChildren(...rows);
}
