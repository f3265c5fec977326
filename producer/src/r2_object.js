// The body of R2 object `key` in the bucket bound as `binding`, streamed, as a Response carrying
// its size and ETag; null when R2 has no such object, undefined when nothing is bound there
// (crate::artifact_download). In JS, so the WASM carries none of workers-rs's R2 API for one read.
export async function r2Response(env, binding, key) {
  const bucket = env[binding];
  if (bucket === undefined) return undefined;
  const object = await bucket.get(key);
  if (object === null) return null;
  const headers = { "content-length": String(object.size), etag: object.httpEtag };
  return new Response(object.body, { headers });
}
