// The platform's HTTP API, typed by the producer's own OpenAPI document (`openapi.ts` is
// generated from it: `npm run types`; a test fails when they differ). `fetch` only, so it runs
// in Workers, Node 20+, Deno and browsers; a Worker may pass its service binding's `fetch`.
import type { components } from "./openapi.js";

type Schemas = components["schemas"];
export type EnqueueRequest = Schemas["EnqueueRequest"];
export type EnqueueResult = Schemas["EnqueueResult"];
export type Job = Schemas["Job"];
export type JobSummary = Schemas["JobSummary"];
export type Artifact = Schemas["Artifact"];
export type JobStatus = Schemas["Status"];
export type JobPage = Schemas["JobPage"];
export type Filter = Schemas["Filter"];
export type BulkResult = Schemas["BulkResult"];
export type Stats = Schemas["Stats"];
export type History = Schemas["History"];
export type DeadLetterPage = Schemas["DeadLetterPage"];
export type Failure = Schemas["Failure"];
export type JobTypeDefinition = Schemas["JobTypeDefinition"];
export type JobTypeView = Schemas["JobTypeView"];
export type FlowView = Schemas["FlowView"];

/** A bulk action's jobs: ids, or a filter (as the job search takes). */
export type Selection = { ids: string[] } | { filter: Filter };

/** An error answer of the API: its status, code and, where it names one, the offending field. */
export class JobsApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly field?: string;

  constructor(status: number, code: string, message: string, field?: string) {
    super(field ? `${code} (${field}): ${message}` : `${code}: ${message}`);
    this.name = "JobsApiError";
    this.status = status;
    this.code = code;
    this.field = field;
  }
}

export interface ClientOptions {
  /** The producer's URL (`https://jobs.example.com`); with a service binding, any URL. */
  baseUrl: string;
  /** An enqueue token, or an admin token for the admin calls. */
  token: string;
  /** `fetch` to use: the global one by default, or a service binding's (`env.JOBS.fetch.bind(env.JOBS)`). */
  fetch?: (input: string, init?: RequestInit) => Promise<Response>;
}

export interface WaitOptions {
  /** Stop at one of these (default: any finished state). */
  until?: JobStatus[];
  timeoutMs?: number;
  intervalMs?: number;
}

const FINISHED: JobStatus[] = ["succeeded", "dead", "cancelled", "skipped"];

/** `?key=value&...` for the non-empty `query`, else nothing. */
function queryString(query: Record<string, string | number>): string {
  const params = new URLSearchParams(Object.entries(query).map(([k, v]) => [k, String(v)]));
  return params.size ? `?${params}` : "";
}

export class JobsClient {
  readonly #base: string;
  readonly #token: string;
  readonly #fetch: (input: string, init?: RequestInit) => Promise<Response>;

  constructor(options: ClientOptions) {
    this.#base = options.baseUrl.replace(/\/+$/, "");
    this.#token = options.token;
    this.#fetch = options.fetch ?? ((input, init) => fetch(input, init));
  }

  /** One request; a non-2xx answer throws a `JobsApiError`. */
  async request<T>(method: string, path: string, body?: unknown): Promise<T> {
    const text = await (await this.#send(method, path, body)).text();
    return (text ? JSON.parse(text) : undefined) as T;
  }

  /** The answer to one request, when 2xx; else its error as a `JobsApiError`. */
  async #send(method: string, path: string, body?: unknown): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.#token}` };
    if (body !== undefined) headers["content-type"] = "application/json";
    const res = await this.#fetch(`${this.#base}${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (res.ok) return res;
    const text = await res.text();
    let error: { code?: string; message?: string; field?: string } = {};
    try {
      error = JSON.parse(text)?.error ?? {};
    } catch {
      // Not the API's JSON (a proxy's page): the status and the text say what happened.
    }
    throw new JobsApiError(res.status, error.code ?? `http_${res.status}`, error.message ?? text, error.field);
  }

  /** POST /v1/jobs: 202 for a new job, 200 with `deduplicated: true` for a live duplicate key. */
  enqueue(job: EnqueueRequest): Promise<EnqueueResult> {
    return this.request("POST", "/v1/jobs", job);
  }

  /** POST /v1/jobs/batch: up to 100 jobs, all or none; one result per job, in order. */
  async enqueueBatch(jobs: EnqueueRequest[]): Promise<EnqueueResult[]> {
    const answer = await this.request<{ jobs: EnqueueResult[] }>("POST", "/v1/jobs/batch", { jobs });
    return answer.jobs;
  }

  /** GET /v1/jobs/{id}: the job and its run records. */
  getJob(id: string): Promise<Job> {
    return this.request("GET", `/v1/jobs/${encodeURIComponent(id)}`);
  }

  /**
   * POST /v1/jobs/{id}/cancel: cancels a job this client's token enqueued (a running one ends
   * `skipped`), or with `chain` its chain's live step, ending the whole chain.
   */
  async cancel(id: string, options: { chain?: boolean } = {}): Promise<JobSummary> {
    const body = options.chain ? { chain: true } : undefined;
    const answer = await this.request<{ job: JobSummary }>("POST", `/v1/jobs/${encodeURIComponent(id)}/cancel`, body);
    return answer.job;
  }

  /**
   * POST /v1/events: resumes the workflow waits (steps of type `wait`) this client's token
   * enqueued that wait for `event` with `key`, each given `data`; answers the ids it resumed.
   */
  sendEvent(event: string, key: string, data?: unknown): Promise<{ resumed: number; jobs: string[] }> {
    return this.request("POST", "/v1/events", data === undefined ? { event, key } : { event, key, data });
  }

  /**
   * GET /v1/jobs/{id}/artifacts/{run}/{kind}: the body of an artifact the job's `artifacts` list
   * names (a screenshot's image, a run's LLM responses), typed by its content type.
   */
  async artifact(id: string, run: number, kind: Artifact["kind"]): Promise<Blob> {
    const path = `/v1/jobs/${encodeURIComponent(id)}/artifacts/${run}/${encodeURIComponent(kind)}`;
    return (await this.#send("GET", path)).blob();
  }

  /** Polls the job until it reaches one of `until` (default: finished); throws on the timeout. */
  async waitFor(id: string, options: WaitOptions = {}): Promise<Job> {
    const until = options.until ?? FINISHED;
    const deadline = Date.now() + (options.timeoutMs ?? 60_000);
    for (;;) {
      const job = await this.getJob(id);
      if (until.includes(job.status)) return job;
      if (Date.now() > deadline) throw new Error(`job ${id} is still ${job.status} after the timeout`);
      await new Promise((r) => setTimeout(r, options.intervalMs ?? 500));
    }
  }

  // Admin calls (an admin token).

  stats(): Promise<Stats> {
    return this.request("GET", "/v1/admin/stats");
  }

  history(minutes = 60): Promise<History> {
    return this.request("GET", `/v1/admin/history?minutes=${minutes}`);
  }

  /** GET /v1/admin/failures: the latest failed attempts (retried or dead), newest first. */
  async failures(limit = 50): Promise<Failure[]> {
    const answer = await this.request<{ failures: Failure[] }>("GET", `/v1/admin/failures?limit=${limit}`);
    return answer.failures;
  }

  /** GET /v1/admin/jobs: `query` keys as the search takes them (status, type, family, ...). */
  listJobs(query: Record<string, string | number> = {}): Promise<JobPage> {
    return this.request("GET", `/v1/admin/jobs${queryString(query)}`);
  }

  retryJobs(selection: Selection, dryRun = false): Promise<BulkResult> {
    return this.request("POST", "/v1/admin/jobs/retry", { ...selection, dry_run: dryRun });
  }

  cancelJobs(selection: Selection, dryRun = false): Promise<BulkResult> {
    return this.request("POST", "/v1/admin/jobs/cancel", { ...selection, dry_run: dryRun });
  }

  setJobsStatus(status: "queued" | "cancelled" | "skipped", selection: Selection, dryRun = false): Promise<BulkResult> {
    return this.request("POST", "/v1/admin/jobs/status", { status, ...selection, dry_run: dryRun });
  }

  deadLetters(query: Record<string, string | number> = {}): Promise<DeadLetterPage> {
    return this.request("GET", `/v1/admin/dead-letters${queryString(query)}`);
  }

  replayDeadLetters(selection: Selection, dryRun = false): Promise<BulkResult> {
    return this.request("POST", "/v1/admin/dead-letters/replay", { ...selection, dry_run: dryRun });
  }

  /** GET /v1/admin/types: the built-in job types, then the ones teams defined. */
  async listTypes(): Promise<JobTypeView[]> {
    return (await this.request<{ types: JobTypeView[] }>("GET", "/v1/admin/types")).types;
  }

  /** GET /v1/admin/types/{name}: a type; a defined one with its versions. */
  getType(name: string): Promise<JobTypeView> {
    return this.request("GET", `/v1/admin/types/${encodeURIComponent(name)}`);
  }

  /** PUT /v1/admin/types/{name}: defines the type or changes it (a new version). */
  putType(name: string, definition: JobTypeDefinition): Promise<JobTypeView> {
    return this.request("PUT", `/v1/admin/types/${encodeURIComponent(name)}`, definition);
  }

  /**
   * Puts every type of `types` (name -> definition, as a committed job-types.json holds them),
   * in order, each a new version only where it changed; stops at the first refused, throwing
   * its error with the type's name in front of the message. Types defined elsewhere are left as
   * they are.
   */
  async applyTypes(types: Record<string, JobTypeDefinition>): Promise<JobTypeView[]> {
    const applied: JobTypeView[] = [];
    for (const [name, definition] of Object.entries(types)) {
      try {
        applied.push(await this.putType(name, definition));
      } catch (e) {
        if (e instanceof JobsApiError) e.message = `${name}: ${e.message}`;
        throw e;
      }
    }
    return applied;
  }

  /**
   * GET /v1/admin/types/{name}/flow: the type's flow control and its keys, most recently seen
   * first, with what the limits did and the jobs running and waiting now; `key` for one.
   */
  typeFlow(name: string, query: { key?: string; limit?: number } = {}): Promise<FlowView> {
    const given: Record<string, string | number> = {};
    if (query.key !== undefined) given.key = query.key;
    if (query.limit !== undefined) given.limit = query.limit;
    return this.request("GET", `/v1/admin/types/${encodeURIComponent(name)}/flow${queryString(given)}`);
  }

  /** DELETE /v1/admin/types/{name}: enqueue refuses it; its enqueued jobs still run. */
  deleteType(name: string): Promise<JobTypeView> {
    return this.request("DELETE", `/v1/admin/types/${encodeURIComponent(name)}`);
  }
}
