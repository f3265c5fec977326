// A real local HTTP server speaking the Anthropic Messages API shape (POST /v1/messages with
// x-api-key and anthropic-version): it answers with a text block and reports token usage, as
// the real API does. What it answers is chosen by a marker in the item's title ("[prose]",
// "[429]", ...), so a test lays out its items and knows each reply. Every request is recorded.
import { createServer } from "node:http";

export const LLM_KEY = "test-llm-key";
/** Usage billed per reply: at Claude Sonnet 4 prices ($3 / $15 per million) exactly 6 cents. */
export const USAGE = { input_tokens: 10_000, output_tokens: 2_000 };
export const CENTS_PER_CALL = 6;

const TAGS = { topics: ["AI", "Machine Learning", "Technology"], sentiment: "positive", categories: ["Technology", "Science"], confidence: 0.85 };

/** The reply text for a title's marker: valid tags unless the marker says otherwise. */
function replyText(title) {
  const marker = /\[([\w-]+)\]/.exec(title)?.[1];
  switch (marker) {
    case "fenced":
      return "```json\n" + JSON.stringify({ ...TAGS, sentiment: "mixed" }, null, 2) + "\n```";
    case "prose":
      return "The topics are AI and machine learning; the mood is upbeat.";
    case "two-topics":
      return JSON.stringify({ ...TAGS, topics: ["AI", "ML"] });
    case "angry":
      return JSON.stringify({ ...TAGS, sentiment: "angry" });
    case "overconfident":
      return JSON.stringify({ ...TAGS, confidence: 1.5 });
    case "many-categories":
      return JSON.stringify({ ...TAGS, categories: ["Technology", "Science", "Business", "World"] });
    default:
      return JSON.stringify(TAGS);
  }
}

/** JSON has integers past JavaScript's: this string is written as 2^64 - 1 unquoted. */
const U64_MAX = "<u64-max>";

/** The usage a reply reports: USAGE, unless the marker asks for one no budget can read
 * ("[bad-usage]") or one past any call's ("[huge-usage]", 2^64 - 1 tokens). */
function usageFor(title) {
  if (title.includes("[bad-usage]")) return { input_tokens: -5, output_tokens: "NaN" };
  if (title.includes("[huge-usage]")) return { input_tokens: U64_MAX, output_tokens: 0 };
  return USAGE;
}

export async function startLlmServer() {
  const received = [];
  const server = createServer((req, res) => {
    const chunks = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const raw = Buffer.concat(chunks);
      const body = JSON.parse(raw.toString("utf8") || "null");
      // The item's title, pulled out of the prompt: its marker chooses the answer.
      const title = /^Title: (.*)$/m.exec(body?.messages?.[0]?.content ?? "")?.[1] ?? "";
      received.push({ method: req.method, path: req.url, headers: req.headers, body, bytes: raw.length, title });
      const send = (status, json, headers = {}) => {
        res.writeHead(status, { "content-type": "application/json", ...headers });
        res.end(JSON.stringify(json).replace(`"${U64_MAX}"`, "18446744073709551615"));
      };
      const error = (status, type, message) => send(status, { type: "error", error: { type, message } });
      if (req.method !== "POST" || req.url !== "/v1/messages") return error(404, "not_found_error", "no such route");
      if (req.headers["x-api-key"] !== LLM_KEY) return error(401, "authentication_error", "invalid x-api-key");
      if (!req.headers["anthropic-version"]) return error(400, "invalid_request_error", "anthropic-version missing");
      if (title.includes("[429]")) return send(429, { type: "error", error: { type: "rate_limit_error", message: "slow down" } }, { "retry-after": "120" });
      if (title.includes("[500]")) return error(500, "api_error", "boom");
      if (title.includes("[401]")) return error(401, "authentication_error", "key revoked");
      send(200, {
        id: `msg_${received.length}`,
        type: "message",
        role: "assistant",
        model: body.model,
        content: [{ type: "text", text: replyText(title) }],
        stop_reason: "end_turn",
        stop_sequence: null,
        usage: usageFor(title),
      });
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  return {
    base: `http://127.0.0.1:${server.address().port}`,
    /** Requests so far, each with the item's title. */
    requests: () => [...received],
    clear: () => received.splice(0),
    close: () => new Promise((r) => server.close(r)),
  };
}
