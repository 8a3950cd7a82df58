// The TypeScript SDK v2 client (@modelcontextprotocol/client) against `claudelua mcp`, with
// protocol negotiation on ('auto': server/discover first, the modern era when it is answered):
//   node mcp_sdk2_client.mjs http URL [auto|legacy]
//   node mcp_sdk2_client.mjs stdio [auto|legacy] COMMAND ARGS...
// Serves spec/conformance/tools.lua's fixtures: tools (text, progress), multi round-trip input
// (elicitation, sampling, roots, a prompt), resources, prompts, a list change seen through the
// client's listen, and tasks. Prints one JSON line with what it saw; a step that fails records
// its error instead of stopping the run.
//
// The SDK's Client (2.4.0) does not implement the tasks extension: it refuses a tools/call
// answered with `resultType: "task"` (UNSUPPORTED_RESULT_TYPE). So the client declares no
// tasks, and a task-capable tool answers it at the end of the call, as the extension asks of
// a server; then one tools/call goes out through the SDK's own transport with the extension
// declared in that request's envelope (a per-request opt-in), and the Client polls the task
// with tasks/get (which it sends for the extension, given a result schema).
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { SkillsClient } from '@modelcontextprotocol/client/ext/skills';

const [kind, ...rest] = process.argv.slice(2);
let transport, mode;
if (kind === 'http') {
  const [url, m] = rest;
  mode = m ?? 'auto';
  transport = new StreamableHTTPClientTransport(new URL(url));
} else {
  const [m, command, ...args] = rest;
  mode = m;
  transport = new StdioClientTransport({ command, args, stderr: 'inherit' });
}

const TASKS = 'io.modelcontextprotocol/tasks';
// A Standard Schema that takes any object: for the requests the SDK has no schema for on this
// era (the tasks extension).
const anything = { '~standard': { version: 1, vendor: 'spec', validate: (value) => ({ value }) } };

let changed = 0;
const capabilities = { elicitation: {}, sampling: {}, roots: {} };
const client = new Client({ name: 'sdk2-spec', version: '1.0.0' }, {
  capabilities,
  versionNegotiation: { mode },
  listChanged: { tools: { onChanged: () => { changed += 1; } } },
});
const ANSWERS = { name: 'Alice', color: 'blue', context: 'from the spec', confirm: true };
client.setRequestHandler('elicitation/create', async (req) => {
  const content = {};
  for (const k of Object.keys(req.params.requestedSchema?.properties ?? {})) {
    content[k] = ANSWERS[k] ?? 'x';
  }
  return { action: 'accept', content };
});
client.setRequestHandler('sampling/createMessage', async () => ({
  role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'spec-model',
  stopReason: 'endTurn',
}));
client.setRequestHandler('roots/list', async () => ({
  roots: [{ uri: 'file:///spec/root', name: 'root' }],
}));

const seen = {};
const step = async (name, f) => {
  try {
    seen[name] = await f();
  } catch (e) {
    seen[name] = { error: `${e.code ?? ''} ${e.message}` };
  }
};
const text = (r) => r.content?.map((c) => c.text).join('');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

await step('connect', async () => {
  await client.connect(transport);
  return client.getNegotiatedProtocolVersion();
});
await step('tools', async () => (await client.listTools()).tools.map((t) => t.name).sort());
await step('simple', async () => text(await client.callTool({ name: 'test_simple_text',
  arguments: {} })));
await step('progress', async () => {
  const got = [];
  const r = await client.callTool({ name: 'test_tool_with_progress', arguments: {} },
    { onprogress: (p) => got.push(p.progress) });
  return { text: text(r), progress: got };
});
await step('elicit', async () => text(await client.callTool({
  name: 'test_input_required_result_elicitation', arguments: {} })));
await step('sample', async () => text(await client.callTool({
  name: 'test_input_required_result_sampling', arguments: {} })));
await step('roots', async () => text(await client.callTool({
  name: 'test_input_required_result_list_roots', arguments: {} })));
await step('multi_round', async () => text(await client.callTool({
  name: 'test_input_required_result_multi_round', arguments: {} })));
await step('resources', async () => (await client.listResources()).resources.map((r) => r.uri)
  .sort());
await step('read', async () => (await client.readResource({ uri: 'test://static-text' }))
  .contents[0].text);
await step('template', async () => JSON.parse((await client.readResource({
  uri: 'test://template/7/data' })).contents[0].text).id);
await step('prompts', async () => (await client.listPrompts()).prompts.map((p) => p.name)
  .sort());
await step('prompt', async () => (await client.getPrompt({ name: 'test_prompt_with_arguments',
  arguments: { arg1: 'a', arg2: 'b' } })).messages[0].content.text);
await step('prompt_input', async () => (await client.getPrompt({
  name: 'test_input_required_result_prompt' })).messages[0].content.text);
await step('list_changed', async () => {
  const before = changed;
  await client.callTool({ name: 'test_trigger_tool_change', arguments: {} });
  for (let i = 0; i < 50 && changed === before; i++) await sleep(100);
  return changed > before;
});
// the skills extension, through the SDK's SkillsClient, which checks every file it reads
// against the entry (size, SHA-256 digest, and for SKILL.md the frontmatter)
await step('skills', async () => {
  const skills = new SkillsClient(client);
  if (!skills.supported) return { supported: false };
  const { skills: entries } = await skills.list();
  const manifest = await skills.read(entries[0]);
  const guide = await skills.read(entries[0], 'references/GUIDE.md');
  const dir = await skills.readDirectory('skill://lua-style');
  return { names: entries.map((e) => e.frontmatter.name), verified: [manifest.verified,
    guide.verified], name: manifest.frontmatter?.name,
    dir: dir.resources.map((r) => r.uri).sort() };
});
await step('task_sync', async () => text(await client.callTool({ name: 'slow_compute',
  arguments: { seconds: 0.3, label: 'sync' } })));
// One request straight through the SDK's transport (its answer taken before the Client sees it).
const raw = (msg) => new Promise((resolve, reject) => {
  const prev = transport.onmessage;
  transport.onmessage = (m, extra) => {
    if (m.id !== msg.id) return prev?.(m, extra);
    transport.onmessage = prev;
    resolve(m);
  };
  transport.send(msg).catch(reject);
});
const withTasks = { 'io.modelcontextprotocol/clientCapabilities': { ...capabilities,
  extensions: { [TASKS]: {} } } };
await step('task', async () => {
  const version = client.getNegotiatedProtocolVersion();
  const answer = await raw({ jsonrpc: '2.0', id: 'task-1', method: 'tools/call', params: {
    name: 'slow_compute', arguments: { seconds: 0.5, label: 'task' }, _meta: {
      'io.modelcontextprotocol/protocolVersion': version, ...withTasks } } });
  const created = answer.result;
  if (created?.resultType !== 'task') return { answer };
  let task;
  for (let i = 0; i < 100; i++) {
    task = await client.request({ method: 'tasks/get', params: { taskId: created.taskId,
      _meta: withTasks } }, anything);
    if (['completed', 'failed', 'cancelled'].includes(task.status)) break;
    await sleep(100);
  }
  const cancelled = await client.request({ method: 'tasks/cancel',
    params: { taskId: created.taskId, _meta: withTasks } }, anything);
  return { created: created.resultType, status: task.status, text: text(task.result ?? {}),
    cancelled: typeof cancelled === 'object' };
});
await client.close();
console.log(JSON.stringify(seen));
process.exit(0);
