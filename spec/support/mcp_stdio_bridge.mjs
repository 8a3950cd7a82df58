// A stdio-to-HTTP bridge for testing stdio MCP servers with HTTP-only clients (the MCP
// conformance suite): each Streamable HTTP session (the TypeScript SDK's
// StreamableHTTPServerTransport) gets its own child server spawned over stdio (the SDK's
// StdioClientTransport), and every message is relayed unchanged both ways.
//
//   node spec/support/mcp_stdio_bridge.mjs PORT -- command args...
//
// Prints "listening <port>" on stdout once it accepts connections (PORT 0 picks one).
// stdio carries no request ids for notifications and server-to-client requests, while HTTP
// sends them on the stream of the request they belong to: the bridge relates a progress
// notification to the request that carries its progress token, and anything else the server
// sends to the latest request still in flight (exact when one request is in flight at a
// time, as in the conformance scenarios), or to the standalone GET stream when none is.
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const argv = process.argv.slice(2);
const sep = argv.indexOf('--');
if (sep !== 1 || argv.length < 3) {
  process.stderr.write('usage: mcp_stdio_bridge.mjs PORT -- command args...\n');
  process.exit(2);
}
const port = Number(argv[0]);
const [command, ...args] = argv.slice(2);
const sessions = new Map();

async function newSession() {
  const child = new StdioClientTransport({ command, args, stderr: 'inherit' });
  const inflight = []; // ids of client requests not answered yet, oldest first
  const tokens = new Map(); // progress token -> request id
  const transport = new StreamableHTTPServerTransport({
    sessionIdGenerator: () => randomUUID(),
    onsessioninitialized: (id) => sessions.set(id, transport),
  });
  transport.onmessage = (msg) => {
    if (msg.method !== undefined && msg.id !== undefined) {
      inflight.push(msg.id);
      const token = msg.params?._meta?.progressToken;
      if (token !== undefined) tokens.set(token, msg.id);
    }
    child.send(msg).catch((e) => process.stderr.write(`bridge: to the server: ${e}\n`));
  };
  transport.onclose = () => {
    if (transport.sessionId) sessions.delete(transport.sessionId);
    child.close();
  };
  child.onmessage = (msg) => {
    let related;
    if (msg.method === undefined && msg.id !== undefined) { // a response
      const i = inflight.indexOf(msg.id);
      if (i >= 0) inflight.splice(i, 1);
      for (const [t, id] of tokens) if (id === msg.id) tokens.delete(t);
    } else if (msg.method === 'notifications/progress' && tokens.has(msg.params?.progressToken)) {
      related = tokens.get(msg.params.progressToken);
    } else if (inflight.length > 0) {
      related = inflight[inflight.length - 1];
    }
    transport.send(msg, related === undefined ? undefined : { relatedRequestId: related })
      .catch((e) => process.stderr.write(`bridge: to the client: ${e}\n`));
  };
  child.onerror = (e) => process.stderr.write(`bridge: server: ${e}\n`);
  child.onclose = () => transport.close().catch(() => {});
  await child.start();
  return transport;
}

const server = http.createServer(async (req, res) => {
  try {
    if (!req.url.startsWith('/mcp')) {
      res.writeHead(404).end();
      return;
    }
    let body;
    if (req.method === 'POST') {
      const chunks = [];
      for await (const c of req) chunks.push(c);
      const text = Buffer.concat(chunks).toString();
      try {
        body = JSON.parse(text);
      } catch {
        res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({
          jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } }));
        return;
      }
    }
    const sid = req.headers['mcp-session-id'];
    let transport = sid ? sessions.get(sid) : undefined;
    if (!transport) {
      const init = [].concat(body ?? []).some((m) => m?.method === 'initialize');
      if (sid || !init) {
        res.writeHead(sid ? 404 : 400, { 'content-type': 'application/json' }).end(JSON.stringify({
          jsonrpc: '2.0', id: null,
          error: { code: -32000, message: sid ? 'Session not found' : 'No session: initialize first' } }));
        return;
      }
      transport = await newSession();
    }
    await transport.handleRequest(req, res, body);
  } catch (e) {
    process.stderr.write(`bridge: ${e?.stack ?? e}\n`);
    if (!res.headersSent) res.writeHead(500).end();
  }
});
server.listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening ${server.address().port}\n`);
});
const stop = () => {
  for (const t of sessions.values()) t.close().catch(() => {});
  server.close();
  setTimeout(() => process.exit(0), 200).unref();
};
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
