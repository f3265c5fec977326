// The queue batch's messages read in ONE call from the WASM (consumer/src/delivery.rs): each
// message's delivery count and body, as one JSON text `[[attempts, body], ...]`. A body JSON
// cannot carry (a BigInt, a cycle) is `null` there, which the consumer drops as not a job. It
// crosses as UTF-8 bytes, as a claim's rows do (store/src/packed_rows.js).
const encoder = new TextEncoder();

export function messagesJson(messages) {
  const rows = messages.map((m) => {
    let body;
    try {
      body = JSON.stringify(m.body);
    } catch {
      body = undefined;
    }
    return `[${m.attempts ?? 1},${body ?? "null"}]`;
  });
  return encoder.encode(`[${rows.join(",")}]`);
}
