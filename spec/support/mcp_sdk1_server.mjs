// The TypeScript SDK v1 (@modelcontextprotocol/sdk 1.32.2), a server of the legacy era: the
// peer that shows claude.mcp's probe falling back to `initialize`.
//   node mcp_sdk1_server.mjs stdio
//   node mcp_sdk1_server.mjs http      (prints "listening http://127.0.0.1:PORT/mcp" on stderr)
// Tools: echo {text}, ask_name (an elicitation request to the client).
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

function makeServer() {
  const s = new McpServer({ name: 'sdk1-fixture', version: '1.32.2' });
  s.tool('echo', { text: z.string() }, async ({ text }) => ({
    content: [{ type: 'text', text }] }));
  s.tool('ask_name', {}, async () => {
    const r = await s.server.elicitInput({ message: 'Your name?', requestedSchema: {
      type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } });
    return { content: [{ type: 'text', text: `Hello, ${r.content?.name}!` }] };
  });
  return s;
}

if (process.argv[2] === 'http') {
  const sessions = new Map();
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const raw = Buffer.concat(chunks).toString();
    const body = raw ? JSON.parse(raw) : undefined;
    const sid = req.headers['mcp-session-id'];
    let transport = sid && sessions.get(sid);
    if (!transport) {
      transport = new StreamableHTTPServerTransport({ sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => sessions.set(id, transport) });
      await makeServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  });
  server.listen(0, '127.0.0.1', () => {
    process.stderr.write(`listening http://127.0.0.1:${server.address().port}/mcp\n`);
  });
} else {
  await makeServer().connect(new StdioServerTransport());
}
