// The TypeScript SDK's client, v1 (@modelcontextprotocol/sdk) or v2
// (@modelcontextprotocol/client), against `claudelua mcp spec/support/mcp_metadata_tools.lua`
// over stdio:
//   node mcp_metadata_client.mjs v1 COMMAND ARGS...
//   node mcp_metadata_client.mjs v2 auto|legacy COMMAND ARGS...
// Reports what the SDK saw of the server's metadata (serverInfo, icons and titles in the
// lists), and answers the typed requests of its tools: a URL-mode elicitation (accepted), and
// sampling with tools (a tool_use first, then text from the tool's result). Prints one JSON
// line; a step that fails records its error instead of stopping the run.
const [version, ...rest] = process.argv.slice(2);
let Client, StdioClientTransport, mode, command, args;
let onElicit = 'elicitation/create', onSample = 'sampling/createMessage';
if (version === 'v1') {
  ({ Client } = await import('@modelcontextprotocol/sdk/client/index.js'));
  ({ StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js'));
  const types = await import('@modelcontextprotocol/sdk/types.js');
  onElicit = types.ElicitRequestSchema;
  onSample = types.CreateMessageRequestSchema;
  [command, ...args] = rest;
} else {
  ({ Client } = await import('@modelcontextprotocol/client'));
  ({ StdioClientTransport } = await import('@modelcontextprotocol/client/stdio'));
  [mode, command, ...args] = rest;
}

const capabilities = { elicitation: { form: {}, url: {} }, sampling: { tools: {} } };
const options = { capabilities };
if (mode) options.versionNegotiation = { mode };
const client = new Client({ name: 'metadata-spec', version: '1.0.0' }, options);
const seen = { elicitations: [], samplings: [], completed: [] };
client.setRequestHandler(onElicit, async (req) => {
  const p = req.params;
  seen.elicitations.push({ mode: p.mode, message: p.message, url: p.url, id: p.elicitationId });
  return { action: 'accept' };
});
client.setRequestHandler(onSample, async (req) => {
  const p = req.params;
  seen.samplings.push({ tools: (p.tools ?? []).map((t) => t.name), choice: p.toolChoice?.mode,
    system: p.systemPrompt, messages: p.messages.length,
    schema: p.tools?.[0]?.inputSchema?.properties ? Object.keys(p.tools[0].inputSchema
      .properties).sort() : undefined });
  const last = p.messages[p.messages.length - 1];
  const blocks = Array.isArray(last.content) ? last.content : [last.content];
  const result = blocks.find((b) => b.type === 'tool_result');
  if (!result) {
    return { role: 'assistant', model: 'spec-model', stopReason: 'toolUse',
      content: [{ type: 'tool_use', id: 'call-1', name: 'add', input: { a: 2, b: 3 } }] };
  }
  return { role: 'assistant', model: 'spec-model', stopReason: 'endTurn',
    content: { type: 'text', text: `2 + 3 = ${result.content[0].text}` } };
});
client.fallbackNotificationHandler = async (n) => {
  if (n.method === 'notifications/elicitation/complete') seen.completed.push(n.params);
};

const step = async (name, f) => {
  try {
    seen[name] = await f();
  } catch (e) {
    seen[name] = { error: `${e.code ?? ''} ${e.message}` };
  }
};
const text = (r) => (r.isError ? 'error: ' : '') + r.content?.map((c) => c.text).join('');
const pick = (x) => ({ name: x.name, title: x.title, icons: x.icons });

await step('connect', async () => {
  await client.connect(new StdioClientTransport({ command, args, stderr: 'inherit' }));
  return client.getNegotiatedProtocolVersion?.() ?? 'v1';
});
await step('server', async () => client.getServerVersion());
await step('tools', async () => (await client.listTools()).tools.map(pick));
await step('resources', async () => (await client.listResources()).resources.map(pick));
await step('templates', async () => (await client.listResourceTemplates()).resourceTemplates
  .map(pick));
await step('prompts', async () => (await client.listPrompts()).prompts.map(pick));
await step('ask_url', async () => text(await client.callTool({ name: 'ask_url', arguments: {} })));
await step('sum', async () => text(await client.callTool({ name: 'sum_by_model',
  arguments: {} })));
await new Promise((r) => setTimeout(r, 200));
await client.close();
console.log(JSON.stringify(seen));
