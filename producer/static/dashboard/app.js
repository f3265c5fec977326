// The operator dashboard: plain DOM, no framework. Every number comes from the admin API with
// the token kept in this tab's sessionStorage; text is always set with textContent.
"use strict";

const TOKEN_KEY = "cf-jobs-admin-token";
const STATUSES = ["scheduled", "queued", "running", "retrying", "succeeded", "dead", "cancelled", "skipped"];
const $ = (sel) => document.querySelector(sel);
/** The job detail's buttons, by the job view's `actions`: label, route under the job, body. */
const JOB_ACTIONS = {
  retry: ["retry", "retry"],
  cancel: ["cancel", "cancel"],
  skip: ["skip", "status", { status: "skipped" }],
  boost: ["boost +10", "boost", { by: 10 }],
};
let timer = null;
let searchCursor = null;
let searchSeq = 0; // a slower, older search must not overwrite a newer one
let jobSeq = 0; // nor a slower, older job view a newer one

class ApiError extends Error {
  constructor(status, body) {
    super(body?.error?.message ?? `HTTP ${status}`);
    this.status = status;
  }
}

async function api(method, path, body) {
  return (await send(method, path, body)).json().catch(() => null);
}

/** The answer to one call with the token, when 2xx; else its error as an ApiError. */
async function send(method, path, body) {
  const headers = { authorization: `Bearer ${sessionStorage.getItem(TOKEN_KEY)}` };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await fetch(path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  if (res.status === 401 || res.status === 403) signOut("That token cannot use the admin API.");
  if (!res.ok) throw new ApiError(res.status, await res.json().catch(() => null));
  return res;
}

/** A <td> (or `tag`) holding `text`, with optional class and data-field. */
function cell(text, { cls, field, tag = "td" } = {}) {
  const el = document.createElement(tag);
  el.textContent = text ?? "—";
  if (cls) el.className = cls;
  if (field) el.dataset.field = field;
  return el;
}

function row(cells, data = {}) {
  const tr = document.createElement("tr");
  Object.assign(tr.dataset, data);
  tr.append(...cells);
  return tr;
}

/** A link that opens job `id`'s detail, reading `text` (the id unless given). */
function jobAnchor(id, text = id) {
  const a = document.createElement("a");
  a.className = "id";
  a.textContent = text;
  a.addEventListener("click", () => showJob(id));
  return a;
}

function jobLink(id) {
  const td = document.createElement("td");
  td.append(jobAnchor(id));
  return td;
}

function button(label, onClick, data = {}) {
  const b = document.createElement("button");
  b.type = "button";
  b.textContent = label;
  Object.assign(b.dataset, data);
  b.addEventListener("click", onClick);
  return b;
}

const pct = (x) => (x == null ? "—" : `${(x * 100).toFixed(1)} %`);
const ms = (x) => (x == null ? "—" : x < 1000 ? `${x} ms` : `${(x / 1000).toFixed(1)} s`);
const secs = (s) => (s == null ? "—" : s < 120 ? `${s} s` : s < 7200 ? `${Math.round(s / 60)} min` : `${(s / 3600).toFixed(1)} h`);
const when = (t) => (t ? new Date(t).toLocaleString() : "—");
const errorText = (e) => (e ? `${e.class}: ${e.message ?? ""}` : "");

/** Shows a failed call on `el`, unless it was the token's fault (the sign-in form says so
 * already). What the operator asked for (an action, a job) answers on #action-status, which
 * the periodic refresh leaves alone. */
function report(prefix, e, el = $("#status")) {
  if (e.status !== 401 && e.status !== 403) setStatus(`${prefix}: ${e.message}`, true, el);
}

function setStatus(text, failed = false, el = $("#status")) {
  el.textContent = text;
  el.classList.toggle("failed", failed);
}

async function refresh() {
  try {
    const [stats, failures, dead, history, pauses] = await Promise.all([
      api("GET", "/v1/admin/stats"),
      api("GET", "/v1/admin/failures?limit=15"),
      api("GET", "/v1/admin/dead-letters?limit=50"),
      api("GET", "/v1/admin/history?minutes=60"),
      api("GET", "/v1/admin/pauses"),
    ]);
    renderStats(stats);
    renderHistory($("#history"), history); // charts.js
    renderFailures(failures.failures);
    renderDead(dead, stats.totals.counts.dead);
    renderPauses(pauses.pauses);
    await renderFlow();
    await renderSchedules();
    setStatus(`updated ${new Date().toLocaleTimeString()}`);
  } catch (e) {
    report("refresh failed", e);
  }
}

function familyCells(name, f, paused) {
  const h = f.last_hour;
  const failure = h.failure_rate;
  return [
    cell(name, { field: "family", cls: paused ? "paused" : "" }),
    cell(String(f.backlog), { field: "backlog", cls: "num" }),
    cell(secs(f.oldest_waiting_secs), { field: "oldest", cls: "num" }),
    cell(String(f.counts.running), { field: "running", cls: "num" }),
    cell(h.throughput_per_min.toFixed(1), { field: "throughput", cls: "num" }),
    cell(pct(failure), { field: "failure_rate", cls: failure > 0.1 ? "num bad" : "num" }),
    cell(`${ms(h.p50_ms)} / ${ms(h.p95_ms)}`, { field: "latency", cls: "num" }),
    cell(ms(h.avg_wait_ms), { field: "avg_wait", cls: "num" }),
    cell(String(f.counts.dead), { field: "dead", cls: "num" }),
  ];
}

function renderStats(stats) {
  $("#generated-at").textContent = `as of ${when(stats.generated_at)}`;
  const body = $("#families tbody");
  body.replaceChildren(
    ...Object.entries(stats.families).map(([name, f]) => {
      const action = document.createElement("td");
      action.append(
        f.paused
          ? button("resume", () => act("DELETE", `/v1/admin/pauses/family/${name}`), { resume: name })
          : button("pause", () => act("POST", "/v1/admin/pauses", { kind: "family", name }), { pause: name }),
      );
      return row([...familyCells(name, f, f.paused), action], { family: name });
    }),
  );
  const totals = familyCells("all", stats.totals, false);
  $("#families tfoot").replaceChildren(row([...totals, cell("")], { family: "all" }));
}

function renderFailures(failures) {
  $("#failures tbody").replaceChildren(
    ...failures.map((f) =>
      row(
        [cell(when(f.finished_at)), jobLink(f.job_id), cell(f.type), cell(String(f.run)), cell(f.outcome),
          cell(errorText(f.error), { cls: "error" })],
        { jobId: f.job_id },
      ),
    ),
  );
}

/** The newest dead jobs (one page), under the count of all of them. */
function renderDead(dead, total) {
  const shown = dead.dead_letters.length;
  // The two answers were read apart: a job may have died between them.
  const all = Math.max(total, shown);
  $("#dead-count").textContent = shown < all ? `${all} (the newest ${shown} listed)` : String(all);
  $("#dead-letters tbody").replaceChildren(
    ...dead.dead_letters.map((j) => {
      const action = document.createElement("td");
      action.append(button("replay", () => act("POST", `/v1/admin/dead-letters/${j.id}/replay`), { replay: j.id }));
      return row(
        [jobLink(j.id), cell(j.type), cell(j.family), cell(String(j.runs)), cell(errorText(j.error), { cls: "error" }),
          cell(when(j.finished_at)), action],
        { jobId: j.id },
      );
    }),
  );
}

/** Every pause, a family's or a type's, with the jobs it holds and its resume. */
function renderPauses(pauses) {
  $("#pauses-section").hidden = pauses.length === 0;
  $("#pauses tbody").replaceChildren(
    ...pauses.map((p) => {
      const action = document.createElement("td");
      const path = `/v1/admin/pauses/${p.kind}/${encodeURIComponent(p.name)}`;
      action.append(button("resume", () => act("DELETE", path), { resume: `${p.kind}/${p.name}` }));
      return row(
        [cell(p.kind), cell(p.name), cell(String(p.held), { field: "held", cls: "num" }), cell(when(p.paused_at)),
          cell(p.paused_by, { cls: "id" }), cell(p.reason), action],
        { pause: `${p.kind}/${p.name}` },
      );
    }),
  );
}

/** The keys of every type with flow control, the most recently seen first: what the limits did
 * and what runs and waits now. Hidden while no type has flow control. */
async function renderFlow() {
  const types = (await api("GET", "/v1/admin/types")).types.filter((t) => t.definition?.flow && !t.deleted_at);
  const views = await Promise.all(types.map((t) => api("GET", `/v1/admin/types/${encodeURIComponent(t.name)}/flow?limit=10`)));
  const count = (n, field) => cell(n === null || n === undefined ? "?" : String(n), { cls: "num", field });
  const rows = views.flatMap((v) =>
    v.keys.map((k) =>
      row(
        [cell(v.type), cell(k.key === "" ? "(none)" : k.key, { cls: "id" }), count(k.running, "running"),
          count(k.waiting, "waiting"), count(k.started, "started"), count(k.waited, "waited"),
          count(k.handed_back, "handed_back"), cell(when(k.last_at))],
        { flow: `${v.type}/${k.key}` },
      ),
    ),
  );
  $("#flow-section").hidden = types.length === 0;
  $("#flow tbody").replaceChildren(...rows);
}

/** Schedules exist once the schedules API answers; until then the section stays hidden. */
async function renderSchedules() {
  let list;
  try {
    list = (await api("GET", "/v1/admin/schedules")).schedules;
  } catch (e) {
    if (e.status === 404 || e.status === 405) return;
    throw e;
  }
  $("#schedules-section").hidden = false;
  $("#schedules tbody").replaceChildren(
    ...list.map((s) => {
      const toggle = document.createElement("input");
      toggle.type = "checkbox";
      toggle.checked = s.enabled;
      toggle.dataset.schedule = s.id;
      toggle.addEventListener("change", () => act("POST", `/v1/admin/schedules/${s.id}/toggle`));
      const td = document.createElement("td");
      td.append(toggle);
      return row([cell(s.name), cell(s.type), cell(s.cron_expression, { cls: "id" }), cell(when(s.next_run_at)), td]);
    }),
  );
}

/** An action, then a refresh so the page shows its effect; what it answered stays on
 * #action-status. */
async function act(method, path, body) {
  const line = $("#action-status");
  delete line.dataset.job;
  try {
    await api(method, path, body);
    setStatus(`${method} ${path}: done`, false, line);
  } catch (e) {
    report(`${method} ${path}`, e, line);
  }
  await refresh();
  if (!$("#detail").hidden) await showJob($("#detail-id").textContent);
}

async function search(append) {
  const form = new FormData($("#search"));
  const params = new URLSearchParams([...form].filter(([, v]) => v !== ""));
  params.set("limit", "50");
  if (append && searchCursor) params.set("cursor", searchCursor);
  const seq = ++searchSeq;
  const line = $("#search-status");
  try {
    const page = await api("GET", `/v1/admin/jobs?${params}`);
    if (seq !== searchSeq) return;
    setStatus("", false, line);
    const rows = page.jobs.map((j) =>
      row(
        [jobLink(j.id), cell(j.type), cell(j.family), cell(j.status, { field: "status" }), cell(String(j.priority), { cls: "num" }),
          cell(`${j.attempts}/${j.max_attempts}`, { cls: "num" }), cell(when(j.created_at)), cell(errorText(j.error), { cls: "error" })],
        { jobId: j.id },
      ),
    );
    if (append) $("#jobs tbody").append(...rows);
    else $("#jobs tbody").replaceChildren(...rows);
    searchCursor = page.next_cursor;
    $("#more").hidden = !searchCursor;
  } catch (e) {
    if (seq !== searchSeq) return;
    // A refused search lists nothing, rather than the rows of the one before it.
    if (!append) $("#jobs tbody").replaceChildren();
    searchCursor = null;
    $("#more").hidden = true;
    report("search", e, line);
  }
}

/** A job's detail; a job that cannot be read (a stale link) says why on #action-status until a
 * job opens. */
async function showJob(id) {
  const seq = ++jobSeq;
  const line = $("#action-status");
  let job;
  try {
    job = await api("GET", `/v1/admin/jobs/${encodeURIComponent(id)}`);
  } catch (e) {
    if (seq !== jobSeq) return;
    report(`job ${id}`, e, line);
    line.dataset.job = "failed";
    return;
  }
  if (seq !== jobSeq) return;
  if (line.dataset.job === "failed") setStatus("", false, line);
  delete line.dataset.job;
  $("#detail").hidden = false;
  $("#detail-id").textContent = job.id;
  const fields = [
    ["status", job.held ? `${job.status}, held by a pause` : job.status], ["type", job.type], ["family", job.family], ["priority", job.priority],
    ["attempts", `${job.attempts}/${job.max_attempts}`], ["run at", when(job.run_at)], ["created", when(job.created_at)],
    ["finished", when(job.finished_at)], ["error", errorText(job.error)], ["payload", JSON.stringify(job.payload)],
    ["result", job.result == null ? "—" : JSON.stringify(job.result)],
  ];
  $("#detail-fields").replaceChildren(
    ...fields.flatMap(([k, v]) => [cell(k, { tag: "dt" }), cell(String(v), { tag: "dd", field: k })]),
    ...chainFields(job),
  );
  // Only the actions the job's status allows (the API lists them).
  const path = `/v1/admin/jobs/${job.id}`;
  $("#detail-actions").replaceChildren(
    ...job.actions.filter((a) => JOB_ACTIONS[a]).map((a) => {
      const [label, route, body] = JOB_ACTIONS[a];
      return button(label, () => act("POST", `${path}/${route}`, body), { action: a });
    }),
  );
  $("#runs tbody").replaceChildren(
    ...job.runs.map((r) =>
      row([cell(String(r.run)), cell(String(r.attempt)), cell(when(r.started_at)), cell(ms(r.duration_ms), { cls: "num" }),
        cell(r.outcome), cell(errorText(r.error), { cls: "error" }), cell(r.handler ?? r.found_by),
        cell(r.invocation, { cls: "id" }), cell(String((r.artifacts ?? []).length), { cls: "num" })]),
    ),
  );
  // Each run's artifacts, newest run first: an R2 key, or the body kept inline; each saved as a
  // file through the API (a plain link would not carry the token).
  $("#artifacts tbody").replaceChildren(
    ...job.artifacts.map((a) => {
      const save = cell("");
      save.append(button("save", () => saveArtifact(job.id, a), { action: "save" }));
      return row([cell(String(a.run)), cell(a.kind, { field: "kind" }), cell(`${a.size} B`, { cls: "num" }),
        cell(a.key ?? JSON.stringify(a.inline), { field: "kept" }), save], { run: a.run });
    }),
  );
  $("#detail").scrollIntoView({ block: "nearest" });
}

/** Downloads artifact `a` of job `id` as a file, saying on #action-status what came. */
async function saveArtifact(id, a) {
  const path = `/v1/jobs/${encodeURIComponent(id)}/artifacts/${a.run}/${encodeURIComponent(a.kind)}`;
  const line = $("#action-status");
  try {
    const blob = await (await send("GET", path)).blob();
    const link = document.createElement("a");
    link.href = URL.createObjectURL(blob);
    const extension = a.key?.split(".").pop() ?? (a.content_type === "application/x-ndjson" ? "jsonl" : "json");
    link.download = `${id}-${a.run}-${a.kind}.${extension}`;
    link.click();
    setTimeout(() => URL.revokeObjectURL(link.href), 60_000);
    setStatus(`${a.kind} of run ${a.run}: ${blob.size} bytes saved`, false, line);
  } catch (e) {
    report(`GET ${path}`, e, line);
  }
}

/** A chain step names its parent; a chain's parent lists its steps (docs/app-guide.md "Job chains"). */
function chainFields(job) {
  const out = [];
  // A workflow's parts (docs/app-guide.md "Workflows"): its name and inputs, its group, its callback.
  if (job.name) out.push(cell("name", { tag: "dt" }), cell(job.name, { tag: "dd", field: "name" }));
  if (job.inputs) out.push(cell("inputs", { tag: "dt" }), cell(JSON.stringify(job.inputs), { tag: "dd", field: "inputs" }));
  if (job.group_id) {
    const dd = cell("", { tag: "dd", field: "group" });
    dd.replaceChildren(`branch ${job.branch} of `, jobAnchor(job.group_id));
    out.push(cell("group", { tag: "dt" }), dd);
  }
  if (job.callback) {
    const d = job.callback.delivery;
    const text = d ? `${d.status} after ${d.attempts} attempt(s)${d.error ? `: ${d.error}` : ""}` : "not yet called";
    out.push(cell("callback", { tag: "dt" }), cell(text, { tag: "dd", field: "callback" }));
  }
  if (job.parent_id) {
    const dd = cell("", { tag: "dd", field: "parent" });
    dd.replaceChildren(`step ${job.chain_step} of `, jobAnchor(job.parent_id));
    out.push(cell("chain", { tag: "dt" }), dd);
  }
  if (job.chain) {
    const c = job.chain;
    const summary = `${c.status} (${c.outcome})${c.error ? `: ${c.error}` : ""}`;
    out.push(cell("chain", { tag: "dt" }), cell(summary, { tag: "dd", field: "chain" }));
    const steps = cell("", { tag: "dd", field: "steps" });
    // One line per step, as a tree: its name, state, a group's branches by status, a wait's event.
    steps.replaceChildren(
      ...c.steps.map((s, i) => {
        const line = document.createElement("div");
        const branches = s.branches ? ` (${Object.entries(s.branches).map(([k, n]) => `${n} ${k}`).join(", ")})` : "";
        const waits = s.waits_for && ["scheduled", "queued"].includes(s.status) ? ` waits for ${s.waits_for.join(" ")} until ${when(s.run_at)}` : "";
        line.append(`${i === c.steps.length - 1 ? "└" : "├"} ${s.step} ${s.name ? `${s.name} ` : ""}${s.type} `,
          s.id ? jobAnchor(s.id, s.status) : s.status, branches + waits);
        return line;
      }),
    );
    out.push(cell("steps", { tag: "dt" }), steps);
  }
  return out;
}

function schedule() {
  clearInterval(timer);
  const every = Number($("#refresh-every").value);
  if (every > 0) timer = setInterval(refresh, every);
}

function signOut(message) {
  sessionStorage.removeItem(TOKEN_KEY);
  clearInterval(timer);
  $("#app").hidden = true;
  $("#sign-out").hidden = true;
  $("#login").hidden = false;
  setStatus(message ?? "", Boolean(message));
}

function start() {
  $("#login").hidden = true;
  $("#app").hidden = false;
  $("#sign-out").hidden = false;
  refresh();
  search(false);
  schedule();
  // Escalation messages link to one job: /dashboard/#job=<id>.
  const linked = /^#job=([0-9A-Za-z]+)$/.exec(location.hash);
  if (linked) showJob(linked[1]);
}

document.addEventListener("DOMContentLoaded", () => {
  const statusSelect = $("#search select[name=status]");
  statusSelect.append(...STATUSES.map((s) => Object.assign(document.createElement("option"), { value: s, textContent: s })));
  const familySelect = $("#search select[name=family]");
  familySelect.append(...["high", "default", "screenshot", "low", "bulk"].map((f) => Object.assign(document.createElement("option"), { value: f, textContent: f })));
  $("#login").addEventListener("submit", (e) => {
    e.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, $("#token").value.trim());
    $("#token").value = "";
    start();
  });
  $("#sign-out").addEventListener("click", () => signOut());
  $("#search").addEventListener("submit", (e) => {
    e.preventDefault();
    search(false);
  });
  $("#more").addEventListener("click", () => search(true));
  $("#refresh-every").addEventListener("change", schedule);
  if (sessionStorage.getItem(TOKEN_KEY)) start();
  else signOut();
});
