// The TypeScript SDK's client, v1 (@modelcontextprotocol/sdk) or v2
// (@modelcontextprotocol/client), against a claudelua server that composes others (a tools
// file mounting server-everything beside a Lua server, or `claudelua mcp --proxy`), over stdio:
//   node mcp_compose_client.mjs v1 PREFIX COMMAND ARGS...
//   node mcp_compose_client.mjs v2 auto|legacy PREFIX COMMAND ARGS...
// PREFIX is the mount's prefix of server-everything ('-': none, the proxy). Lists and uses
// its tools, resources, templates, prompts and completions through the one server, and
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

const options = { capabilities: {} };
if (mode) options.versionNegotiation = { mode };
const client = new Client({ name: 'compose-spec', version: '1.0.0' }, options);
const seen = { notes: [] };
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

await step('connect', async () => {
  await client.connect(new StdioClientTransport({ command, args, stderr: 'inherit' }));
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
if (prefix !== '-') {
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
// the legacy era's notifications: a resource the remote adds, an update it sends
if (seen.connect !== '2026-07-28') {
  await step('subscribe', async () => {
    await client.subscribeResource({ uri: uri('demo://resource/dynamic/text/1') });
    return true;
  });
  await step('gzip', async () => text(await client.callTool({ name: name('gzip-file-as-resource'),
    arguments: { name: 'x.txt', data: 'data:text/plain;base64,aGVsbG8=' } })));
  await step('listed', async () => {
    await until(() => seen.notes.includes('notifications/resources/list_changed'));
    return (await client.listResources()).resources.map((r) => r.uri)
      .filter((u) => u.includes('session'));
  });
  await step('toggle', async () => text(await client.callTool({
    name: name('toggle-subscriber-updates'), arguments: {} })));
  await step('updated', async () => until(() => seen.notes.includes(
    'notifications/resources/updated ' + uri('demo://resource/dynamic/text/1'))));
  await client.callTool({ name: name('toggle-subscriber-updates'), arguments: {} });
}
await client.close();
process.stdout.write(JSON.stringify(seen) + '\n');
