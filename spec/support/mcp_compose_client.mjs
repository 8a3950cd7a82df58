// The TypeScript SDK's client, v1 (@modelcontextprotocol/sdk) or v2
// (@modelcontextprotocol/client), against a claudelua server that composes others (a tools
// file mounting server-everything beside a Lua server, or `claudelua mcp --proxy`), over stdio
// or Streamable HTTP (an http:// URL in place of the command):
//   node mcp_compose_client.mjs v1 PREFIX COMMAND ARGS... | URL
//   node mcp_compose_client.mjs v2 auto|legacy PREFIX COMMAND ARGS... | URL
// PREFIX is the mount's prefix of server-everything ('-': none, the proxy). Lists and uses
// its tools, resources, templates, prompts and completions through the one server, answers
// the sampling, elicitation and roots requests its tools make (forwarded to this client), and
// waits for the list change and the resource update it triggers. Prints one JSON line; a
// step that fails records its error instead of stopping the run.
const [version, ...rest] = process.argv.slice(2);
let Client, StdioClientTransport, mode, prefix, command, args;
let notes = {};
if (version === 'v1') {
  ({ Client } = await import('@modelcontextprotocol/sdk/client/index.js'));
  ({ StdioClientTransport } = await import('@modelcontextprotocol/sdk/client/stdio.js'));
  [prefix, command, ...args] = rest;
} else {
  ({ Client } = await import('@modelcontextprotocol/client'));
  ({ StdioClientTransport } = await import('@modelcontextprotocol/client/stdio'));
  [mode, prefix, command, ...args] = rest;
}
const name = (n) => (prefix === '-' ? n : `${prefix}_${n}`);
const uri = (u) => (prefix === '-' ? u : u.replace('://', `://${prefix}/`));

// the client answers the remote's requests, which the composing server forwards to it
const options = { capabilities: { sampling: {}, elicitation: {}, roots: {} } };
if (mode) options.versionNegotiation = { mode };
const client = new Client({ name: 'compose-spec', version: '1.0.0' }, options);
const seen = { notes: [], asked: [] };
const answer = (method, result) => async (req) => {
  seen.asked.push(method);
  return result(req);
};
const handlers = {
  'sampling/createMessage': () => ({ role: 'assistant', content: { type: 'text',
    text: 'Paris is the capital' }, model: 'compose-spec-model', stopReason: 'endTurn' }),
  'elicitation/create': (req) => ({ action: 'accept', content: req.params.requestedSchema
    ?.properties?.interpretation ? { interpretation: 'the Lua language' }
    : { name: 'Alice', check: true } }),
  'roots/list': () => ({ roots: [{ uri: 'file:///compose/root', name: 'compose root' }] }),
};
if (version === 'v1') {
  const types = await import('@modelcontextprotocol/sdk/types.js');
  const schemas = { 'sampling/createMessage': types.CreateMessageRequestSchema,
    'elicitation/create': types.ElicitRequestSchema, 'roots/list': types.ListRootsRequestSchema };
  for (const [m, f] of Object.entries(handlers)) client.setRequestHandler(schemas[m], answer(m, f));
} else {
  for (const [m, f] of Object.entries(handlers)) client.setRequestHandler(m, answer(m, f));
}
const waiters = [];
client.fallbackNotificationHandler = async (n) => {
  seen.notes.push(n.method + (n.params?.uri ? ' ' + n.params.uri : ''));
  for (const w of waiters.splice(0)) w();
};
const until = async (f, ms = 30000) => {
  const end = Date.now() + ms;
  while (!f() && Date.now() < end) {
    await new Promise((r) => { waiters.push(r); setTimeout(r, 500); });
  }
  return f();
};

const step = async (key, f) => {
  try {
    seen[key] = await f();
  } catch (e) {
    seen[key] = { error: `${e.code ?? ''} ${e.message}` };
  }
};
const text = (r) => (r.isError ? 'error: ' : '') + r.content?.map((c) => c.text ?? c.uri).join('|');

// COMMAND an http:// URL: the server over Streamable HTTP
const transport = async () => {
  if (!command.startsWith('http')) return new StdioClientTransport({ command, args,
    stderr: 'inherit' });
  const { StreamableHTTPClientTransport } = version === 'v1'
    ? await import('@modelcontextprotocol/sdk/client/streamableHttp.js')
    : await import('@modelcontextprotocol/client');
  return new StreamableHTTPClientTransport(new URL(command));
};
await step('connect', async () => {
  await client.connect(await transport());
  return client.getNegotiatedProtocolVersion?.() ?? 'v1';
});
await step('tools', async () => (await client.listTools()).tools.map((t) => t.name).sort());
await step('resources', async () => (await client.listResources()).resources.map((r) => r.uri)
  .sort());
await step('templates', async () => (await client.listResourceTemplates()).resourceTemplates
  .map((t) => t.uriTemplate).sort());
await step('prompts', async () => (await client.listPrompts()).prompts.map((p) => p.name).sort());
await step('sum', async () => text(await client.callTool({ name: name('get-sum'),
  arguments: { a: 2, b: 3 } })));
await step('bad', async () => text(await client.callTool({ name: name('get-sum'),
  arguments: { a: 'x' } })));
await step('read', async () => (await client.readResource({
  uri: uri('demo://resource/dynamic/text/4') })).contents.map((c) => c.uri + ' ' + c.text
  .replace(/ created at .*/, '')));
await step('missing', async () => (await client.readResource({
  uri: uri('demo://resource/nothing') })).contents);
await step('prompt', async () => (await client.getPrompt({ name: name('args-prompt'),
  arguments: { city: 'Paris' } })).messages.map((m) => m.content.text));
await step('complete', async () => (await client.complete({
  ref: { type: 'ref/prompt', name: name('completable-prompt') },
  argument: { name: 'name', value: '' }, context: { arguments: { department: 'Sales' } },
})).completion.values);
await step('complete_template', async () => (await client.complete({
  ref: { type: 'ref/resource', uri: uri('demo://resource/dynamic/text/{resourceId}') },
  argument: { name: 'resourceId', value: '7' } })).completion.values);
// the remote's requests during a call, answered by this client
await step('sampled', async () => text(await client.callTool({
  name: name('trigger-sampling-request'), arguments: { prompt: 'capital of France?', maxTokens: 20 } })));
await step('elicited', async () => text(await client.callTool({
  name: name('trigger-elicitation-request'), arguments: {} })));
await step('rooted', async () => text(await client.callTool({ name: name('get-roots-list'),
  arguments: {} })));
if (prefix !== '-') {
  // a tool the remote runs only as a task: the call waits for it, the task's own
  // elicitation answered by this client too (mounted only: it takes seconds, and the proxy
  // runs the same forwarder)
  await step('research', async () => text(await client.callTool({
    name: name('simulate-research-query'), arguments: { topic: 'lua', ambiguous: true } })));
  await step('lua_tool', async () => text(await client.callTool({ name: 'notes_add',
    arguments: { text: 'hi' } })));
  await step('lua_read', async () => (await client.readResource({ uri: 'notes://notes/all' }))
    .contents.map((c) => c.text));
  await step('lua_prompt', async () => (await client.getPrompt({ name: 'notes_summarize',
    arguments: { style: 'haiku' } })).messages.map((m) => m.content.text));
  await step('lua_complete', async () => (await client.complete({
    ref: { type: 'ref/prompt', name: 'notes_summarize' },
    argument: { name: 'style', value: 'h' } })).completion.values);
}
// the notifications: a resource the remote adds, an update it sends; in the modern era on a
// listen (subscriptions/listen) for the resources' list and the one resource
let listening;
{
  // a name of its own: the clients of one proxy share the remote's resources
  seen.file = `x-${process.pid}.txt`;
  await step('subscribe', async () => {
    if (seen.connect === '2026-07-28') {
      listening = await client.listen({ resourcesListChanged: true,
        resourceSubscriptions: [uri('demo://resource/dynamic/text/1')] });
      return listening.honoredFilter.resourceSubscriptions?.length === 1;
    }
    await client.subscribeResource({ uri: uri('demo://resource/dynamic/text/1') });
    return true;
  });
  await step('gzip', async () => text(await client.callTool({ name: name('gzip-file-as-resource'),
    arguments: { name: seen.file, data: 'data:text/plain;base64,aGVsbG8=' } })));
  await step('listed', async () => {
    await until(() => seen.notes.includes('notifications/resources/list_changed'));
    return (await client.listResources()).resources.map((r) => r.uri)
      .filter((u) => u.includes(seen.file));
  });
  await step('toggle', async () => text(await client.callTool({
    name: name('toggle-subscriber-updates'), arguments: {} })));
  await step('updated', async () => until(() => seen.notes.includes(
    'notifications/resources/updated ' + uri('demo://resource/dynamic/text/1'))));
  await client.callTool({ name: name('toggle-subscriber-updates'), arguments: {} });
  if (listening) await listening.close();
}
await client.close();
process.stdout.write(JSON.stringify(seen) + '\n');
