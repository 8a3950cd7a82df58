// A TypeScript SDK client against spec/support/mcp_middleware_tools.lua (the middleware specs):
//   node mcp_middleware_client.mjs sdk1|sdk2 http URL [auto|legacy]
//   node mcp_middleware_client.mjs sdk1|sdk2 stdio [auto|legacy] COMMAND ARGS...
// The v1 SDK (@modelcontextprotocol/sdk) speaks 2025-11-25; the v2 one
// (@modelcontextprotocol/client) negotiates (auto: 2026-07-28). Prints one JSON line with what
// each request gave: its result's text, or its error's code, message and data.
const [sdk, kind, ...rest] = process.argv.slice(2);
let Client, HTTP, Stdio;
if (sdk === 'sdk1') {
  ({ Client } = await import('@modelcontextprotocol/sdk/client/index.js'));
  ({ StreamableHTTPClientTransport: HTTP } =
    await import('@modelcontextprotocol/sdk/client/streamableHttp.js'));
  ({ StdioClientTransport: Stdio } = await import('@modelcontextprotocol/sdk/client/stdio.js'));
} else {
  ({ Client, StreamableHTTPClientTransport: HTTP } = await import('@modelcontextprotocol/client'));
  ({ StdioClientTransport: Stdio } = await import('@modelcontextprotocol/client/stdio'));
}
let transport, mode;
if (kind === 'http') {
  const [url, m] = rest;
  mode = m ?? 'auto';
  transport = new HTTP(new URL(url));
} else {
  const [m, command, ...args] = rest;
  mode = m;
  transport = new Stdio({ command, args, stderr: 'inherit' });
}
const options = sdk === 'sdk2' ? { versionNegotiation: { mode } } : {};
const client = new Client({ name: 'middleware-spec', version: '1.0.0' }, options);

const seen = {};
const step = async (name, f) => {
  try {
    seen[name] = await f();
  } catch (e) {
    seen[name] = { code: e.code, message: e.message, data: e.data };
  }
};
const text = (r) => r.content?.map((c) => c.text).join('');
const call = (name, args = {}) => client.callTool({ name, arguments: args }).then(text);

await client.connect(transport);
seen.protocol = client.getNegotiatedProtocolVersion?.() ?? transport.protocolVersion ?? null;
await step('tools', async () => (await client.listTools()).tools.map((t) => t.name).sort());
await step('add', () => call('add', { a: 1, b: 2 }));
await step('secret', () => call('secret'));
await step('boom', () => call('boom'));
await step('answer', () => call('answer'));
await step('slow_start', () => call('slow_start'));
await step('limited', async () => [await call('limited'), await call('limited')]);
await step('limited_third', () => call('limited'));
await step('reads', async () => {
  const a = await client.readResource({ uri: 'mem://counter' });
  // (the v2 client keeps a read its ttlMs says; asked not to, it asks the server again)
  const b = await client.readResource({ uri: 'mem://counter' }, { cacheMode: 'bypass' });
  return { texts: [a.contents[0].text, b.contents[0].text], ttlMs: b.ttlMs ?? null,
    cacheScope: b.cacheScope ?? null };
});
await step('prompt', async () => (await client.getPrompt({ name: 'greet',
  arguments: { name: 'ada' } })).messages[0].content.text);
await client.close();
console.log(JSON.stringify(seen));
