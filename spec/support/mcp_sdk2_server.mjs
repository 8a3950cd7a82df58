// The TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0) as the peer of claude.mcp's
// client: one McpServer definition served over stdio (`serveStdio`, which speaks either era
// by the connection's first message) or over Streamable HTTP (`createMcpHandler`, either era
// per request).
//   node mcp_sdk2_server.mjs stdio
//   node mcp_sdk2_server.mjs http       (prints "listening http://127.0.0.1:PORT/mcp" on stderr)
// Tools: echo, ask_name (asks for a name: elicitation), summarize (asks a model: sampling),
// count_roots (asks for the roots), region (an x-mcp-header argument), add_tool (adds the
// tool `extra`: the tools list changes), touch (the resource test://r is updated), progress
// (three progress notifications and a log line), meta (the request's _meta as text), plus a
// prompt and two resources
// (test://r, and test://cached with a caching hint of a minute).
import http from 'node:http';
import {
  McpServer, createMcpHandler, inputRequired, acceptedContent, createRequestStateCodec,
  fromJsonSchema,
} from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

const codec = createRequestStateCodec({ key: new Uint8Array(32).fill(9) });
const schema = (props = {}, required) => fromJsonSchema({ type: 'object', properties: props,
  ...(required ? { required } : {}) });
const text = (t) => ({ content: [{ type: 'text', text: t }] });

let extra = false;   // add_tool was called
let reads = 0;       // reads of test://cached
let notify = null;   // the HTTP handler's notifier (stdio: the server's own notifications)
const servers = new Set();

function makeServer() {
  const s = new McpServer({ name: 'sdk2-fixture', version: '2.4.0' },
    { capabilities: { tools: { listChanged: true }, prompts: {},
      resources: { listChanged: true, subscribe: true }, logging: {} },
      requestState: { verify: codec.verify } });
  s.registerTool('echo', { description: 'echo', inputSchema: schema({ text: { type: 'string' } }) },
    async (a) => text(String(a.text)));
  s.registerTool('ask_name', { description: 'asks for a name', inputSchema: schema() },
    async (_a, ctx) => {
      const name = acceptedContent(ctx.mcpReq.inputResponses, 'user_name')?.name;
      if (typeof name !== 'string') {
        return inputRequired({ inputRequests: { user_name: inputRequired.elicit({
          message: 'Your name?', requestedSchema: { type: 'object',
            properties: { name: { type: 'string' } }, required: ['name'] } }) },
          requestState: await codec.mint({ step: 1 }) });
      }
      return text(`Hello, ${name}!`);
    });
  s.registerTool('summarize', { description: 'asks a model', inputSchema: schema({ text: { type: 'string' } }) },
    async (a, ctx) => {
      const r = ctx.mcpReq.inputResponses?.model;
      if (!r) {
        return inputRequired({ inputRequests: { model: inputRequired.createMessage({
          messages: [{ role: 'user', content: { type: 'text', text: `Summarize: ${a.text}` } }],
          maxTokens: 50 }) } });
      }
      return text(`summary: ${r.content?.text}`);
    });
  s.registerTool('count_roots', { description: 'asks for the roots', inputSchema: schema() },
    async (_a, ctx) => {
      const r = ctx.mcpReq.inputResponses?.roots;
      if (!r) return inputRequired({ inputRequests: { roots: inputRequired.listRoots() } });
      return text(`roots: ${r.roots.map((x) => x.uri).join(',')}`);
    });
  s.registerTool('region', { description: 'x-mcp-header',
    inputSchema: schema({ region: { type: 'string', 'x-mcp-header': 'Region' } }) },
    async (a) => text(`region=${a.region}`));
  s.registerTool('add_tool', { description: 'adds the tool extra', inputSchema: schema() },
    async () => {
      extra = true;
      if (notify) notify.toolsChanged();
      for (const srv of servers) addExtra(srv);
      return text('added');
    });
  s.registerTool('touch', { description: 'updates test://r', inputSchema: schema() },
    async () => {
      if (notify) notify.resourceUpdated('test://r');
      for (const srv of servers) srv.server.sendResourceUpdated({ uri: 'test://r' }).catch(() => {});
      return text('touched');
    });
  s.registerTool('progress', { description: 'progress and a log line', inputSchema: schema() },
    async (_a, ctx) => {
      const token = ctx.mcpReq._meta?.progressToken;
      for (let i = 1; i <= 3; i++) {
        if (token !== undefined) {
          await ctx.mcpReq.notify({ method: 'notifications/progress',
            params: { progressToken: token, progress: i, total: 3 } });
        }
      }
      await ctx.mcpReq.log('info', 'progress done');
      return text('done');
    });
  s.registerTool('meta', { description: 'the request _meta it got', inputSchema: schema() },
    async (_a, ctx) => text(JSON.stringify(ctx.mcpReq._meta ?? {})));
  if (extra) addExtra(s);
  s.registerPrompt('greet', { description: 'greet' },
    async () => ({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }] }));
  s.registerResource('r', 'test://r', { mimeType: 'text/plain' },
    async () => ({ contents: [{ uri: 'test://r', mimeType: 'text/plain', text: 'R' }] }));
  s.registerResource('cached', 'test://cached', { mimeType: 'text/plain',
    cacheHint: { ttlMs: 60000, cacheScope: 'private' } },
    async () => ({ contents: [{ uri: 'test://cached', mimeType: 'text/plain',
      text: `read ${++reads}` }] }));
  return s;
}

function addExtra(s) {
  if (s._hasExtra) return;
  s._hasExtra = true;
  s.registerTool('extra', { description: 'added later', inputSchema: schema() },
    async () => text('extra'));
}

if (process.argv[2] === 'http') {
  const handler = createMcpHandler(() => makeServer());
  notify = handler.notify;
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = Buffer.concat(chunks);
    const port = server.address().port;
    const request = new Request(`http://127.0.0.1:${port}${req.url}`, { method: req.method,
      headers: req.headers, body: body.length ? body : undefined });
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      const reader = response.body.getReader();
      req.on('close', () => reader.cancel().catch(() => {}));
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ done: true }));
        if (done) break;
        res.write(value);
      }
    }
    res.end();
  });
  server.listen(0, '127.0.0.1', () => {
    process.stderr.write(`listening http://127.0.0.1:${server.address().port}/mcp\n`);
  });
} else {
  serveStdio(() => {
    const s = makeServer();
    servers.add(s);
    return s;
  });
}
