// Signed deliveries, as an app endpoint receives them (the platform's docs/app-guide.md "Signed
// delivery"): `X-Jobs-Signature: t=<unix seconds>,v2=<hex HMAC-SHA256>` over
// "<t>\n<METHOD>\n<url>\n<X-Jobs-Type>\n<X-Jobs-Id>\n<X-Jobs-Attempt>\n<raw body>". WebCrypto only,
// so it runs wherever `crypto.subtle` does; the comparison is `crypto.subtle.verify`'s, in
// constant time.

export const SIGNATURE_HEADER = "x-jobs-signature";

/** Why a delivery was refused. */
export type DeliveryRefusal =
  | "missing_signature"
  | "invalid_signature_header"
  | "missing_job_headers"
  | "stale_timestamp"
  | "no_matching_signature";

/** The job a verified delivery is for. */
export interface DeliveredJob {
  id: string;
  type: string;
  attempt: number;
}

export type DeliveryCheck =
  /** `bytes` are the body exactly as signed; `body` is them as UTF-8 text, a leading BOM kept. */
  | { valid: true; job: DeliveredJob; body: string; bytes: Uint8Array }
  | { valid: false; reason: DeliveryRefusal; message: string };

export interface VerifyOptions {
  /** Every secret the app holds (the current one and, during a rotation, the next). */
  secrets: string | string[];
  /**
   * The endpoint URL the platform is configured with for this app (`ENDPOINT_<TYPE>`, or an
   * http job's `payload.url`). Defaults to the request's URL, which behind a proxy may differ:
   * pass it then.
   */
  url?: string;
  /** How far `t` may be from now, in seconds (default 300). */
  toleranceSecs?: number;
  /** Now, in ms (for tests). */
  now?: number;
}

const encoder = new TextEncoder();
// `ignoreBOM`: a leading byte-order mark is part of the body, not dropped from its text.
const decoder = new TextDecoder("utf-8", { ignoreBOM: true });

const MESSAGES: Record<DeliveryRefusal, string> = {
  missing_signature: "no X-Jobs-Signature header",
  invalid_signature_header: "X-Jobs-Signature lacks t=<secs> or v2=<hex>",
  missing_job_headers: "X-Jobs-Id, X-Jobs-Type or X-Jobs-Attempt is missing",
  stale_timestamp: "the signature's timestamp is out of tolerance (a replay, or a skewed clock)",
  no_matching_signature: "no signature matches this request under any of the secrets",
};

const refuse = (reason: DeliveryRefusal): DeliveryCheck => ({ valid: false, reason, message: MESSAGES[reason] });

/**
 * The bytes a delivery's signature covers: its fields before the body as UTF-8 text, each ending
 * in a line feed, then the body's raw bytes (never decoded, so a BOM or invalid UTF-8 in the body
 * is signed as sent).
 */
export function signedBytes(t: string, method: string, url: string, job: DeliveredJob, body: Uint8Array): Uint8Array<ArrayBuffer> {
  const href = new URL(url);
  href.hash = "";
  const head = encoder.encode([t, method.toUpperCase(), href.href, job.type, job.id, String(job.attempt), ""].join("\n"));
  const signed = new Uint8Array(head.length + body.length);
  signed.set(head);
  signed.set(body, head.length);
  return signed;
}

function hmacKey(secret: string, usage: "sign" | "verify"): Promise<CryptoKey> {
  return crypto.subtle.importKey("raw", encoder.encode(secret), { name: "HMAC", hash: "SHA-256" }, false, [usage]);
}

function hexBytes(hex: string): Uint8Array<ArrayBuffer> | null {
  if (!/^(?:[0-9a-f]{2})+$/i.test(hex)) return null;
  const bytes = new Uint8Array(hex.length / 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = parseInt(hex.slice(2 * i, 2 * i + 2), 16);
  return bytes;
}

/**
 * Checks a delivery: reads the raw body's bytes (from a clone, so the request stays readable),
 * the header's timestamp against the tolerance, and every `v2` entry against every secret.
 */
export async function verifyDelivery(request: Request, options: VerifyOptions): Promise<DeliveryCheck> {
  const header = request.headers.get(SIGNATURE_HEADER);
  if (!header) return refuse("missing_signature");
  const entries = header.split(",").map((part) => part.trim().split("="));
  const t = entries.find(([k]) => k === "t")?.[1];
  const signatures = entries.filter(([k]) => k === "v2").map(([, v]) => hexBytes(v ?? ""));
  if (!t || !/^\d+$/.test(t) || signatures.length === 0 || signatures.some((s) => s === null)) {
    return refuse("invalid_signature_header");
  }
  const id = request.headers.get("x-jobs-id");
  const type = request.headers.get("x-jobs-type");
  const attempt = Number(request.headers.get("x-jobs-attempt"));
  if (!id || !type || !Number.isInteger(attempt) || attempt < 1) return refuse("missing_job_headers");
  const now = options.now ?? Date.now();
  if (Math.abs(now / 1000 - Number(t)) > (options.toleranceSecs ?? 300)) return refuse("stale_timestamp");

  const job = { id, type, attempt };
  // The bytes, not `text()`: text drops a leading BOM and replaces invalid UTF-8.
  const bytes = new Uint8Array(await request.clone().arrayBuffer());
  const signed = signedBytes(t, request.method, options.url ?? request.url, job, bytes);
  for (const secret of ([] as string[]).concat(options.secrets)) {
    const key = await hmacKey(secret, "verify");
    for (const signature of signatures) {
      if (signature && (await crypto.subtle.verify("HMAC", key, signature, signed))) {
        return { valid: true, job, body: decoder.decode(bytes), bytes };
      }
    }
  }
  return refuse("no_matching_signature");
}

export interface TestDelivery {
  url: string;
  secret: string;
  /** Text is sent as its UTF-8 bytes; bytes are sent as they are. */
  body?: string | Uint8Array;
  method?: string;
  jobType?: string;
  jobId?: string;
  attempt?: number;
  /** The signature's time, in ms (default now). */
  at?: number;
}

/** A delivery signed as the platform signs one, for an app's unit tests of its endpoint. */
export async function signTestDelivery(delivery: TestDelivery): Promise<Request> {
  const method = (delivery.method ?? "POST").toUpperCase();
  const given = delivery.body ?? "";
  const body = method === "GET" || method === "HEAD" ? new Uint8Array() : typeof given === "string" ? encoder.encode(given) : given;
  const job = { id: delivery.jobId ?? "01TESTJOB0000000000000000", type: delivery.jobType ?? "http", attempt: delivery.attempt ?? 1 };
  const t = String(Math.floor((delivery.at ?? Date.now()) / 1000));
  const key = await hmacKey(delivery.secret, "sign");
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, signedBytes(t, method, delivery.url, job, body)));
  const hex = [...mac].map((b) => b.toString(16).padStart(2, "0")).join("");
  return new Request(delivery.url, {
    method,
    body: body.length === 0 ? undefined : new Uint8Array(body),
    headers: {
      "content-type": "application/json",
      [SIGNATURE_HEADER]: `t=${t},v2=${hex}`,
      "x-jobs-id": job.id,
      "x-jobs-type": job.type,
      "x-jobs-attempt": String(job.attempt),
    },
  });
}
