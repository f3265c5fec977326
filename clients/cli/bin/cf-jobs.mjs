#!/usr/bin/env node
// cf-jobs: the operator's command line (the platform's docs/operating.md "Operating it: admin
// API and dashboard"). Every command goes through @cf-jobs/client with an admin token; tables and
// colours on a terminal, `--json` for scripts, a progress bar for bulk actions that take several
// calls.
import { readFileSync, writeFileSync } from "node:fs";
import { parseArgs } from "node:util";
import cliProgress from "cli-progress";
import Table from "cli-table3";
import pc from "picocolors";
import { JobsApiError, JobsClient } from "@cf-jobs/client";

const USAGE = `usage: cf-jobs [--url URL] [--token TOKEN] [--json] <command>

  stats [--watch [--every SECS]]          per-family counts, backlog, failure rate, p95
  jobs list [--status S] [--type T] [--family F] [--enqueued-by N] [--limit N]
  jobs get <id>                           a job and its runs
  jobs artifact <id> <run> <kind> [--out FILE]  an artifact's body (a screenshot...), to FILE or stdout
  retry | cancel [selection] [--dry-run]  bulk, every page of the selection, with progress
  set-status <queued|cancelled|skipped> [selection] [--dry-run]
  replay [selection] [--dry-run]          dead jobs back to the queue, with progress
  tail [--every SECS]                     failed attempts as they happen
  types list                              the built-in job types and the ones you defined
  types get <name>                        a type, with its versions
  types put <name> <JSON | @FILE>         define a type, or change it (a new version)
  types delete <name>                     enqueue refuses it; its enqueued jobs still run
  types apply <FILE>                      put every type of a job-types.json (name -> definition)
  types flow <name> [--key K]             per key: started, waited, handed back, running and waiting now

  selection: --ids ID,ID... or filters --status, --type, --family, --error-class, --enqueued-by
  URL and TOKEN default to CF_JOBS_URL and CF_JOBS_TOKEN (an admin token).`;

const OPTIONS = {
  url: { type: "string" },
  token: { type: "string" },
  json: { type: "boolean", default: false },
  watch: { type: "boolean", default: false },
  every: { type: "string" },
  "dry-run": { type: "boolean", default: false },
  ids: { type: "string" },
  status: { type: "string" },
  type: { type: "string" },
  family: { type: "string" },
  "error-class": { type: "string" },
  "enqueued-by": { type: "string" },
  limit: { type: "string" },
  out: { type: "string" },
  key: { type: "string" },
  help: { type: "boolean", short: "h", default: false },
};

/** The bulk selection the flags name: ids, or a filter of the search's keys. */
function selection(values) {
  if (values.ids) return { ids: values.ids.split(",").filter(Boolean) };
  const filter = {};
  for (const [flag, key] of [["status", "status"], ["type", "type"], ["family", "family"], ["error-class", "error_class"], ["enqueued-by", "enqueued_by"]]) {
    if (values[flag]) filter[key] = values[flag];
  }
  if (Object.keys(filter).length === 0) throw new Error("name the jobs: --ids, or at least one filter (--type, --status...)");
  return { filter };
}

function table(head, rows) {
  const t = new Table({ head: head.map((h) => pc.bold(h)), style: { head: [], border: [], compact: true } });
  t.push(...rows.map((r) => r.map((c) => (c === null || c === undefined ? "" : String(c)))));
  return t.toString();
}

/**
 * A job's place in a workflow (docs/app-guide.md "Workflows") as lines: its name, inputs, group,
 * callback, and for a chain's first job the chain as an indented tree of its steps, each with its
 * state, a group's branches and a wait's event.
 */
function workflowLines(job) {
  const lines = [];
  if (job.name) lines.push(`name ${job.name}`);
  if (job.inputs) lines.push(`inputs ${Object.keys(job.inputs).join(", ")}`);
  if (job.group_id) lines.push(`branch ${job.branch} of group ${job.group_id}`);
  if (job.parent_id) lines.push(`step ${job.chain_step} of chain ${job.parent_id}`);
  if (job.callback) lines.push(`callback ${job.callback.delivery ? `${job.callback.delivery.status} after ${job.callback.delivery.attempts} attempt(s)` : "not yet called"}`);
  if (job.chain) {
    const c = job.chain;
    lines.push(`chain ${c.status} (${c.outcome})${c.error ? `: ${c.error}` : ""}`);
    c.steps.forEach((s, i) => {
      const branches = s.branches ? `  ${Object.entries(s.branches).map(([k, n]) => `${n} ${k}`).join(", ")}` : "";
      const waits = s.waits_for && ["scheduled", "queued"].includes(s.status) ? `  waits for ${s.waits_for.join(" ")} until ${s.run_at}` : "";
      const sleeps = !s.waits_for && s.status === "scheduled" ? `  due ${s.run_at}` : "";
      const head = [s.step, s.name, s.type ?? "?", s.status].filter((x) => x != null).join(" ");
      lines.push(`${i === c.steps.length - 1 ? "└" : "├"} ${head}${branches}${waits}${sleeps}`);
    });
  }
  return lines.length ? `${lines.join("\n")}\n` : "";
}

const percent = (x) => (x === null || x === undefined ? "-" : `${(x * 100).toFixed(1)} %`);

function statsTable(stats) {
  const rows = Object.entries(stats.families).map(([name, f]) => {
    const rate = f.last_hour.failure_rate;
    return [name, f.backlog, f.counts.running ?? 0, f.counts.dead ?? 0, f.last_hour.finished,
      rate > 0.1 ? pc.red(percent(rate)) : percent(rate), f.last_hour.p95_ms ?? "-", f.paused ? pc.yellow("paused") : ""];
  });
  return table(["family", "backlog", "running", "dead", "attempts (1 h)", "failure rate", "p95 ms", ""], rows);
}

/**
 * Runs a bulk action page by page (the API moves at most 1000 jobs a call and says how many
 * remain): first a dry run for the total, then calls until nothing remains, with a bar on a
 * terminal and a line per call otherwise.
 */
async function bulk(verb, call, values, out) {
  const target = selection(values);
  const planned = await call(target, true);
  if (values["dry-run"]) {
    out.result({ dry_run: true, count: planned.count }, `${planned.count} job(s) would be ${verb}`);
    return;
  }
  // Nothing matches: nothing to call for, and nothing was done.
  if (planned.count === 0) {
    out.result({ count: 0, conflicts: 0 }, `${verb} 0 job(s)`);
    return;
  }
  const total = planned.count + (planned.remaining ?? 0);
  const bar = out.tty && !out.json ? new cliProgress.SingleBar({ format: `${verb} {bar} {value}/{total} jobs | {conflicts} conflicts` }, cliProgress.Presets.shades_classic) : null;
  bar?.start(total, 0, { conflicts: 0 });
  let done = 0;
  let conflicts = 0;
  for (;;) {
    const page = await call(target, false);
    done += page.count;
    conflicts += page.conflicts?.length ?? 0;
    if (bar) bar.update(Math.min(done, total), { conflicts });
    else if (!out.json) console.log(`${verb} ${done}/${total}`);
    // By ids it is one call; by filter, until nothing movable remains (or a page moved nothing).
    if (target.ids || !page.remaining || page.count === 0) break;
  }
  bar?.stop();
  out.result({ count: done, conflicts }, `${verb} ${done} job(s)${conflicts ? `, ${conflicts} conflict(s) left where they are` : ""}`);
}

/** Where a defined type delivers: its URL, or `service APP /path`. */
function target(definition) {
  const to = definition?.target;
  if (!to) return "";
  if (to.url_var) return `the URL in the consumer's ${to.url_var}`;
  return to.url ?? `service ${to.service} ${to.path ?? "/"}`;
}

async function main(argv) {
  const { values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true });
  const [command, ...rest] = positionals;
  if (values.help || !command) {
    console.log(USAGE);
    return command || values.help ? 0 : 2;
  }
  const baseUrl = values.url ?? process.env.CF_JOBS_URL;
  const token = values.token ?? process.env.CF_JOBS_TOKEN;
  if (!baseUrl || !token) throw new Error("set --url and --token (or CF_JOBS_URL and CF_JOBS_TOKEN)");
  const jobs = new JobsClient({ baseUrl, token });
  const out = {
    json: values.json,
    tty: Boolean(process.stdout.isTTY),
    result: (data, text) => console.log(values.json ? JSON.stringify(data) : text),
  };
  const every = Number(values.every ?? 5) * 1000;

  const grouped = (command === "jobs" || command === "types") && rest[0];
  switch (`${command}${grouped ? ` ${rest[0]}` : ""}`) {
    case "stats": {
      for (;;) {
        const stats = await jobs.stats();
        if (values.json) console.log(JSON.stringify(stats));
        else {
          if (values.watch && out.tty) process.stdout.write("\x1b[2J\x1b[H");
          console.log(`${pc.dim(stats.generated_at)}\n${statsTable(stats)}`);
        }
        if (!values.watch) return 0;
        await new Promise((r) => setTimeout(r, every));
      }
    }
    case "jobs list": {
      const query = {};
      for (const [flag, key] of [["status", "status"], ["type", "type"], ["family", "family"], ["enqueued-by", "enqueued_by"], ["limit", "limit"]]) {
        if (values[flag]) query[key] = values[flag];
      }
      const page = await jobs.listJobs(query);
      out.result(page, table(["id", "type", "family", "status", "priority", "attempts", "error"],
        page.jobs.map((j) => [j.id, j.type, j.family, j.status, j.priority, `${j.attempts}/${j.max_attempts}`, j.error?.class])));
      return 0;
    }
    case "jobs get": {
      const job = await jobs.getJob(rest[1] ?? "");
      out.result(job, `${pc.bold(job.id)} ${job.type} (${job.family}) ${job.status}\n` + workflowLines(job) +
        table(["run", "attempt", "outcome", "duration ms", "error"], job.runs.map((r) => [r.run, r.attempt, r.outcome, r.duration_ms, r.error?.message])));
      return 0;
    }
    case "jobs artifact": {
      const [, id, run, kind] = rest;
      if (!id || !run || !kind) throw new Error("name the artifact: jobs artifact <id> <run> <kind>");
      const body = Buffer.from(await (await jobs.artifact(id, Number(run), kind)).arrayBuffer());
      if (values.out) {
        writeFileSync(values.out, body);
        console.error(`${body.length} bytes written to ${values.out}`);
      } else process.stdout.write(body);
      return 0;
    }
    case "retry":
      await bulk("retried", (s, dry) => jobs.retryJobs(s, dry), values, out);
      return 0;
    case "cancel":
      await bulk("cancelled", (s, dry) => jobs.cancelJobs(s, dry), values, out);
      return 0;
    case "set-status": {
      const status = rest[0];
      await bulk(`set ${status}`, (s, dry) => jobs.setJobsStatus(status, s, dry), values, out);
      return 0;
    }
    case "replay":
      await bulk("replayed", (s, dry) => jobs.replayDeadLetters(s, dry), values, out);
      return 0;
    case "tail": {
      const seen = new Set();
      for (;;) {
        const failures = await jobs.failures(50);
        for (const f of failures.reverse().filter((f) => !seen.has(`${f.job_id}:${f.run}`))) {
          seen.add(`${f.job_id}:${f.run}`);
          const line = values.json ? JSON.stringify(f) : `${f.finished_at} ${f.job_id} ${f.type} run ${f.run} ${pc.red(f.outcome)} ${f.error?.class ?? ""}: ${f.error?.message ?? ""}`;
          console.log(line);
        }
        await new Promise((r) => setTimeout(r, every));
      }
    }
    case "types list": {
      const types = await jobs.listTypes();
      out.result(types, table(["name", "kind", "family", "version", "target", ""], types.map((t) => [t.name, t.built_in ? "built-in" : "defined",
        t.family ?? t.definition?.family, t.version, target(t.definition), t.deleted_at ? pc.yellow("deleted") : ""])));
      return 0;
    }
    case "types get": {
      const t = await jobs.getType(rest[1] ?? "");
      out.result(t, values.json ? "" : JSON.stringify(t, null, 2));
      return 0;
    }
    case "types put": {
      const [, name, source] = rest;
      if (!name || !source) throw new Error("name the type and its definition: types put <name> <JSON | @FILE>");
      const definition = JSON.parse(source.startsWith("@") ? readFileSync(source.slice(1), "utf8") : source);
      const t = await jobs.putType(name, definition);
      out.result(t, `${t.name}: ${t.changed ? `version ${t.version}` : `unchanged (version ${t.version})`}, delivered to ${target(t.definition)}`);
      return 0;
    }
    case "types apply": {
      if (!rest[1]) throw new Error("name the file: types apply <job-types.json>");
      const applied = await jobs.applyTypes(JSON.parse(readFileSync(rest[1], "utf8")));
      out.result(applied, applied.map((t) => `${t.name}: ${t.changed ? `version ${t.version}` : "unchanged"}`).join("\n"));
      return 0;
    }
    case "types flow": {
      const view = await jobs.typeFlow(rest[1] ?? "", values.key ? { key: values.key } : {});
      out.result(view, table(["key", "running", "waiting", "started", "waited", "handed back", "last seen"],
        view.keys.map((k) => [k.key === "" ? "(none)" : k.key, k.running ?? "?", k.waiting ?? "?", k.started, k.waited, k.handed_back, k.last_at])));
      return 0;
    }
    case "types delete": {
      const t = await jobs.deleteType(rest[1] ?? "");
      out.result(t, `${t.name}: deleted (version ${t.version}); its enqueued jobs still run`);
      return 0;
    }
    default:
      console.error(`unknown command: ${positionals.join(" ")}\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (e) => {
    console.error(pc.red(e instanceof JobsApiError ? `${e.status} ${e.message}` : e.message));
    process.exitCode = 1;
  },
);
