// A local HTTP server for the HTTP client's specs. Listens on 127.0.0.1 on a
// free port and prints one JSON line: { "port": n, "closed_port": m }, where
// nothing listens on closed_port. Exits when stdin ends.
//
// Endpoints:
//   /echo                 JSON { method, url, headers, body }; with ?barrier=N&key=K the
//                         answer waits until N requests of key K have arrived (all in flight)
//   /status/<code>        that status, body "status <code>"
//   /slow                 never answers
//   /big?n=N              N bytes of "x"
//   /truncated            promises 100 bytes, sends 10, drops the connection
//   /json                 a JSON body (for a request that asked for SSE)
//   /sse?n=N&size=S       N events "event i" (data padded to S bytes), then ends
//   /sse/gated?key=K      event "one", then waits for /release?key=K, then "two"
//   /release?key=K        releases the gated stream K
//   /sse/forever?key=K    an event every 10 ms until the client goes
//   /sse/truncated        one event, half of another, then drops the connection
//   /sse/raw?b=BASE64     the decoded bytes as an event stream, written in 1-byte writes
//   /stats?key=K          { connections, closed: true when stream K was closed by the peer }
import http from "node:http";

let connections = 0;
const gates = new Map(); // key -> release function
const closed = new Set(); // keys of streams the client closed
const barriers = new Map(); // key -> answers waiting for the rest of their round

const server = http.createServer((req, res) => {
  const url = new URL(req.url, "http://localhost");
  const q = url.searchParams;
  const path = url.pathname;
  res.setHeader("x-connection", String(req.socket.connectionId));
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    const body = Buffer.concat(chunks).toString("utf8");
    if (path === "/echo") {
      const answer = () => {
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body }));
      };
      const want = Number(q.get("barrier") || 0);
      if (want > 0) {
        const key = q.get("key");
        const waiting = barriers.get(key) || [];
        barriers.set(key, waiting);
        waiting.push(answer);
        if (waiting.length >= want) {
          barriers.delete(key);
          waiting.forEach((f) => f());
        }
      } else {
        answer();
      }
    } else if (path.startsWith("/status/")) {
      const code = Number(path.slice(8));
      res.writeHead(code, { "content-type": "text/plain" });
      res.end("status " + code);
    } else if (path === "/slow") {
      // never answers; the client gives up
    } else if (path === "/big") {
      res.setHeader("content-type", "application/octet-stream");
      res.end(Buffer.alloc(Number(q.get("n")), "x"));
    } else if (path === "/truncated") {
      res.writeHead(200, { "content-length": "100" });
      res.write("0123456789");
      setTimeout(() => req.socket.destroy(), 20);
    } else if (path === "/json") {
      res.setHeader("content-type", "application/json");
      res.end('{"jsonrpc":"2.0","id":1,"result":{}}');
    } else if (path === "/sse") {
      sse(res);
      const n = Number(q.get("n") || 3);
      const size = Number(q.get("size") || 0);
      for (let i = 1; i <= n; i++) {
        const data = ("event " + i).padEnd(size, ".");
        res.write(`id: ${i}\ndata: ${data}\n\n`);
      }
      res.end();
    } else if (path === "/sse/flood") {
      // as fast as the client takes it (node's own buffer stays small)
      sse(res);
      const n = Number(q.get("n")), data = "x".repeat(Number(q.get("size")));
      const event = `data: {"jsonrpc":"2.0","method":"notifications/message","params":` +
        `{"level":"info","data":"${data}"}}\n\n`;
      const batch = event.repeat(100);
      let i = 0;
      const more = () => {
        while (i < n) {
          i += 100;
          if (!res.write(batch)) return res.once("drain", more);
        }
        res.end();
      };
      more();
    } else if (path === "/sse/gated") {
      sse(res);
      res.write("event: first\ndata: one\n\n");
      gates.set(q.get("key"), () => {
        res.write("data: two\n\n");
        res.end();
      });
    } else if (path === "/release") {
      const release = gates.get(q.get("key"));
      gates.delete(q.get("key"));
      if (release) release();
      res.end(release ? "released" : "unknown");
    } else if (path === "/sse/forever") {
      sse(res);
      const key = q.get("key");
      let i = 0;
      const timer = setInterval(() => res.write(`data: tick ${++i}\n\n`), 10);
      res.on("close", () => {
        clearInterval(timer);
        closed.add(key);
      });
    } else if (path === "/sse/truncated") {
      sse(res);
      res.write("id: 7\nretry: 1500\ndata: whole\n\ndata: half");
      setTimeout(() => req.socket.destroy(), 20);
    } else if (path === "/sse/raw") {
      sse(res);
      const bytes = Buffer.from(q.get("b"), "base64");
      let i = 0;
      const step = () => {
        if (i >= bytes.length) return res.end();
        res.write(bytes.subarray(i, i + 1));
        i++;
        setImmediate(step);
      };
      step();
    } else if (path === "/stats") {
      res.setHeader("content-type", "application/json");
      res.end(JSON.stringify({ connections, closed: closed.has(q.get("key")) }));
    } else {
      res.writeHead(404);
      res.end("no such endpoint");
    }
  });
});

function sse(res) {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  res.flushHeaders();
}

server.on("connection", (socket) => {
  socket.connectionId = ++connections;
});
server.keepAliveTimeout = 30000;

// a port where nothing listens: bound once, then released
const probe = http.createServer();
probe.listen(0, "127.0.0.1", () => {
  const closedPort = probe.address().port;
  probe.close(() => {
    server.listen(0, "127.0.0.1", () => {
      process.stdout.write(
        JSON.stringify({ port: server.address().port, closed_port: closedPort }) + "\n",
      );
    });
  });
});

process.stdin.on("end", () => process.exit(0));
process.stdin.resume();
