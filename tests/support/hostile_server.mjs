// A real local HTTP server playing a hostile or overloaded remote: huge bodies, bodies that
// never end, slow answers, and follow-up jobs nobody asked for. It counts the requests open at
// once, so a test can see how many connections the consumer held.
import { createServer } from "node:http";
import { gzipSync } from "node:zlib";

export async function startHostileServer() {
  let open = 0;
  let maxOpen = 0;
  const hits = new Map();
  const server = createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    hits.set(url.pathname, (hits.get(url.pathname) ?? 0) + 1);
    open += 1;
    maxOpen = Math.max(maxOpen, open);
    res.on("close", () => (open -= 1));
    const num = (name, dflt) => Number(url.searchParams.get(name) ?? dflt);
    switch (url.pathname) {
      // 200 with a JSON body of about `bytes` bytes.
      case "/huge": {
        const body = JSON.stringify({ data: "x".repeat(num("bytes", 3_000_000)) });
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(body);
      }
      // 200 with a gzip body that inflates to about `bytes` bytes; its Content-Length is the
      // compressed size.
      case "/gzip": {
        const body = gzipSync(JSON.stringify({ data: "x".repeat(num("bytes", 3_000_000)) }));
        res.writeHead(200, {
          "content-type": "application/json",
          "content-encoding": "gzip",
          "content-length": body.length,
        });
        return res.end(body);
      }
      // 200 and a body that trickles forever, one byte every 100 ms; with `length`, under a
      // Content-Length it never reaches; with `head=405`, HEAD is refused (a link check's GET).
      case "/trickle": {
        if (req.method === "HEAD" && url.searchParams.get("head") === "405") {
          res.writeHead(405);
          return res.end();
        }
        const length = url.searchParams.get("length");
        res.writeHead(200, { "content-type": "text/plain", ...(length && { "content-length": length }) });
        const timer = setInterval(() => res.write("x"), 100);
        return res.on("close", () => clearInterval(timer));
      }
      // 200 after `ms` milliseconds.
      case "/slow":
        return setTimeout(() => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end('{"ok":true}');
        }, num("ms", 1000));
      // 200 naming a follow-up job, then `pad` bytes more.
      case "/follow-up":
        res.writeHead(200, { "content-type": "application/json" });
        return res.end(JSON.stringify({ follow_up: [{ type: "noop" }], pad: "x".repeat(num("pad", 0)) }));
      default:
        res.writeHead(404);
        return res.end();
    }
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const base = `http://127.0.0.1:${server.address().port}`;
  return {
    url: (path) => base + path,
    /** The most requests that were open at once since the last reset. */
    maxOpen: () => maxOpen,
    resetMaxOpen: () => (maxOpen = open),
    hits: (path) => hits.get(path) ?? 0,
    close: () => {
      server.closeAllConnections();
      return new Promise((r) => server.close(r));
    },
  };
}
