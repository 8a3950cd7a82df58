// The official TypeScript SDK's MCP server serving the benchmark's `add` tool
// (McpServer with a zod schema, as its documentation writes one), over stdio
// or, with --http PORT, Streamable HTTP on 127.0.0.1 (one transport and server
// per session, the SDK's stateful pattern; JSON responses, its fastest mode).
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

function makeServer() {
  const server = new McpServer({ name: 'calc', version: '1.0.0' });
  server.registerTool('add', {
    description: 'Add two numbers',
    inputSchema: { a: z.number(), b: z.number() },
  }, async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }));
  return server;
}

const httpAt = process.argv.indexOf('--http');
if (httpAt < 0) {
  await makeServer().connect(new StdioServerTransport());
} else {
  const port = Number(process.argv[httpAt + 1]);
  const transports = new Map();
  http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks)) : undefined;
    const sid = req.headers['mcp-session-id'];
    let transport = sid && transports.get(sid);
    if (!transport) {
      transport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        enableJsonResponse: true,
        onsessioninitialized: (id) => transports.set(id, transport),
      });
      await makeServer().connect(transport);
    }
    await transport.handleRequest(req, res, body);
  }).listen(port, '127.0.0.1');
  process.on('SIGTERM', () => process.exit(0));
}
