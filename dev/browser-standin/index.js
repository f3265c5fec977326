// A local stand-in for the Browser Rendering binding, bound as the service BROWSER in dev and
// tests (wrangler dev's own browser simulation downloads Chrome, which fails offline). It speaks
// the binding's session protocol and forwards each session to a real headless Chromium on
// loopback (CHROMIUM_URL, started by scripts/dev.sh or the tests):
//   POST   /v1/devtools/browser?keep_alive=<ms>  -> {sessionId}, or 429 when MAX_SESSIONS are open
//   GET    /v1/devtools/browser/<id> (Upgrade: websocket) -> the browser's CDP socket, piped
//   DELETE /v1/devtools/browser/<id>             -> releases the session
// Sessions share the one Chromium (each job opens its own tab); a session counts against
// MAX_SESSIONS from acquisition until it is released, its socket closes, or it sits unconnected
// for longer than its keep_alive - the way the account's concurrent-browser limit behaves.
// A socket belongs to the request that opened it (workerd forbids I/O on another request's
// objects), so only its own close events tear the pair down; DELETE frees the slot.

/** sessionId -> { acquiredAt, keepAliveMs, browserPath, connected } */
const sessions = new Map();

const SESSION_PATH = /^\/v1\/devtools\/browser\/([\w-]+)$/;

export default {
  async fetch(request, env) {
    const url = new URL(request.url);
    if (url.pathname === "/v1/devtools/browser" && request.method === "POST") {
      return acquire(url, env);
    }
    const match = SESSION_PATH.exec(url.pathname);
    const id = match?.[1];
    if (!id || !sessions.has(id)) {
      return Response.json({ error: "Browser session not found" }, { status: 404 });
    }
    if (request.method === "DELETE") {
      sessions.delete(id);
      return Response.json({ status: "closed" });
    }
    if (request.method === "GET" && request.headers.get("upgrade") === "websocket") {
      return connect(id, env);
    }
    return Response.json({ error: "not supported by the stand-in" }, { status: 405 });
  },
};

async function acquire(url, env) {
  const now = Date.now();
  for (const [id, s] of sessions) {
    if (!s.connected && now - s.acquiredAt > s.keepAliveMs) sessions.delete(id);
  }
  if (sessions.size >= Number(env.MAX_SESSIONS)) {
    return Response.json(
      { error: `Too many browsers already running (${sessions.size} of ${env.MAX_SESSIONS})` },
      { status: 429, headers: { "retry-after": env.BUSY_RETRY_AFTER_SECS } },
    );
  }
  let version;
  try {
    version = await (await fetch(`${env.CHROMIUM_URL}/json/version`)).json();
  } catch (e) {
    return Response.json({ error: `Chromium is not running at ${env.CHROMIUM_URL}: ${e}` }, { status: 503 });
  }
  const sessionId = crypto.randomUUID();
  sessions.set(sessionId, {
    acquiredAt: now,
    keepAliveMs: Number(url.searchParams.get("keep_alive") ?? 60_000),
    browserPath: new URL(version.webSocketDebuggerUrl).pathname,
    connected: false,
  });
  return Response.json({ sessionId });
}

async function connect(id, env) {
  const session = sessions.get(id);
  if (session.connected) return Response.json({ error: "already connected" }, { status: 409 });
  const upstream = await fetch(`${env.CHROMIUM_URL}${session.browserPath}`, { headers: { upgrade: "websocket" } });
  const chromium = upstream.webSocket;
  if (!chromium) return Response.json({ error: `Chromium refused the socket (${upstream.status})` }, { status: 502 });
  chromium.accept();
  const [client, server] = Object.values(new WebSocketPair());
  server.accept();
  session.connected = true;
  const end = () => {
    sessions.delete(id);
    for (const socket of [server, chromium]) {
      // The side that closed first is closed already; close() on it throws, harmlessly.
      try {
        socket.close(1000, "session closed");
      } catch {}
    }
  };
  server.addEventListener("message", (m) => chromium.send(m.data));
  chromium.addEventListener("message", (m) => server.send(m.data));
  server.addEventListener("close", end);
  chromium.addEventListener("close", end);
  return new Response(null, { status: 101, webSocket: client });
}
