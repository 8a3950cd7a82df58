// The official TypeScript SDK v2's MCP server (@modelcontextprotocol/server 2.4.0) serving the
// benchmark's `add` tool in both protocol eras, over stdio (`serveStdio`: the first message
// decides the era) or, with --http PORT, Streamable HTTP on 127.0.0.1 (`createMcpHandler`:
// 2026-07-28 per request, 2025-era requests through its stateless legacy fallback), on
// node:http the way its documentation mounts it.
import http from 'node:http';
import { McpServer, createMcpHandler, fromJsonSchema } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';

function makeServer() {
  const server = new McpServer({ name: 'calc', version: '1.0.0' });
  server.registerTool('add', {
    description: 'Add two numbers',
    inputSchema: fromJsonSchema({ type: 'object', properties: { a: { type: 'number' },
      b: { type: 'number' } }, required: ['a', 'b'] }),
  }, async ({ a, b }) => ({ content: [{ type: 'text', text: String(a + b) }] }));
  return server;
}

const httpAt = process.argv.indexOf('--http');
if (httpAt < 0) {
  serveStdio(() => makeServer());
} else {
  const port = Number(process.argv[httpAt + 1]);
  const handler = createMcpHandler(() => makeServer());
  http.createServer(async (req, res) => {
    const chunks = [];
    for await (const c of req) chunks.push(c);
    const body = chunks.length ? Buffer.concat(chunks) : undefined;
    const response = await handler.fetch(new Request(`http://127.0.0.1:${port}${req.url}`,
      { method: req.method, headers: req.headers, body }));
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      for await (const chunk of response.body) res.write(chunk);
    }
    res.end();
  }).listen(port, '127.0.0.1');
  process.on('SIGTERM', () => process.exit(0));
}
