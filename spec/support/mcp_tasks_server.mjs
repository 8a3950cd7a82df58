// A stdio MCP server of the 2026-07-28 era with the tasks extension (SEP-2663,
// `io.modelcontextprotocol/tasks`), written from the protocol (no SDK serves it yet): the
// peer of claude.mcp's task handles.
//   node mcp_tasks_server.mjs
// Tools: greet (never a task), slow {seconds} (a task when the request declares the
// extension, else run at once), failing (a task that fails), confirm {file} (a task that
// needs an elicitation answered through tasks/update), forced (a task whatever the client
// declared: the client must accept a task it did not ask for).
// Every status change is also sent as `notifications/tasks` (a stdio server may).
import readline from 'node:readline';

const EXT = 'io.modelcontextprotocol/tasks';
const V = '2026-07-28';
const tasks = new Map();
let next = 1;

const send = (m) => process.stdout.write(JSON.stringify(m) + '\n');
const result = (id, r) => send({ jsonrpc: '2.0', id, result: { resultType: 'complete', ...r } });
const error = (id, code, message, data) => send({ jsonrpc: '2.0', id, error: { code, message,
  ...(data ? { data } : {}) } });
const text = (t) => ({ content: [{ type: 'text', text: t }] });
const now = () => new Date().toISOString();

function declared(params) {
  const caps = params?._meta?.['io.modelcontextprotocol/clientCapabilities'];
  return caps?.extensions?.[EXT] !== undefined;
}

function setStatus(t, status, extra = {}) {
  Object.assign(t, { status, lastUpdatedAt: now() }, extra);
  send({ jsonrpc: '2.0', method: 'notifications/tasks', params: { taskId: t.taskId, status } });
}

function create(id, body) {
  const t = { taskId: `task-${next++}`, status: 'working', createdAt: now(), lastUpdatedAt: now(),
    ttlMs: 60000, pollIntervalMs: 50 };
  tasks.set(t.taskId, t);
  send({ jsonrpc: '2.0', id, result: { resultType: 'task', ...t } });
  body(t);
}

function detailed(t) {
  const { timer, ...rest } = t;
  return rest;
}

const TOOLS = [
  { name: 'greet', inputSchema: { type: 'object', properties: { name: { type: 'string' } } } },
  { name: 'slow', inputSchema: { type: 'object', properties: { seconds: { type: 'number' } } } },
  { name: 'failing', inputSchema: { type: 'object' } },
  { name: 'confirm', inputSchema: { type: 'object', properties: { file: { type: 'string' } } } },
  { name: 'forced', inputSchema: { type: 'object' } },
];

function call(id, params) {
  const args = params.arguments ?? {};
  const want = declared(params);
  switch (params.name) {
    case 'greet':
      return result(id, text(`Hello, ${args.name}!`));
    case 'slow': {
      const ms = (args.seconds ?? 0.2) * 1000;
      if (!want) return setTimeout(() => result(id, text('slow done')), ms);
      return create(id, (t) => {
        t.timer = setTimeout(() => setStatus(t, 'completed', { result: text('slow done') }), ms);
      });
    }
    case 'failing':
      if (!want) return error(id, -32021, 'the tasks extension is required',
        { requiredCapabilities: { extensions: { [EXT]: {} } } });
      return create(id, (t) => {
        t.timer = setTimeout(() => setStatus(t, 'failed',
          { error: { code: -32603, message: 'the job broke' } }), 50);
      });
    case 'confirm':
      return create(id, (t) => {
        t.file = args.file;
        setStatus(t, 'input_required', { inputRequests: { ok: { method: 'elicitation/create',
          params: { message: `Delete ${args.file}?`, requestedSchema: { type: 'object',
            properties: { yes: { type: 'boolean' } } } } } } });
      });
    case 'forced':
      return create(id, (t) => {
        t.timer = setTimeout(() => setStatus(t, 'completed', { result: text('forced done') }), 50);
      });
    default:
      return error(id, -32602, `Unknown tool: ${params.name}`);
  }
}

function handle(msg) {
  const { id, method, params } = msg;
  if (id === undefined) return; // notifications
  const meta = params?._meta;
  if (method !== 'server/discover' && meta?.['io.modelcontextprotocol/protocolVersion'] !== V) {
    return error(id, -32022, 'Unsupported protocol version', { supported: [V],
      requested: meta?.['io.modelcontextprotocol/protocolVersion'] ?? null });
  }
  if (method.startsWith('tasks/') && !declared(params)) {
    return error(id, -32021, 'the tasks extension was not declared',
      { requiredCapabilities: { extensions: { [EXT]: {} } } });
  }
  const t = params?.taskId !== undefined ? tasks.get(params.taskId) : undefined;
  switch (method) {
    case 'server/discover':
      return result(id, { supportedVersions: [V], capabilities: { tools: {},
        extensions: { [EXT]: {} } }, serverInfo: { name: 'tasks-fixture', version: '1.0.0' },
        ttlMs: 0, cacheScope: 'private' });
    case 'tools/list':
      return result(id, { tools: TOOLS, ttlMs: 0, cacheScope: 'private' });
    case 'tools/call':
      return call(id, params);
    case 'tasks/get':
      if (!t) return error(id, -32602, `Unknown task: ${params.taskId}`);
      return result(id, detailed(t));
    case 'tasks/update':
      if (!t) return error(id, -32602, `Unknown task: ${params.taskId}`);
      if (t.status === 'input_required' && params.inputResponses?.ok) {
        const yes = params.inputResponses.ok.content?.yes === true;
        setStatus(t, 'working', { inputRequests: undefined });
        t.timer = setTimeout(() => setStatus(t, 'completed',
          { result: text(yes ? `deleted ${t.file}` : `kept ${t.file}`) }), 50);
      }
      return result(id, {});
    case 'tasks/cancel':
      if (!t) return error(id, -32602, `Unknown task: ${params.taskId}`);
      if (!['completed', 'failed', 'cancelled'].includes(t.status)) {
        clearTimeout(t.timer);
        setStatus(t, 'cancelled');
      }
      return result(id, {});
    default:
      return error(id, -32601, `Method not found: ${method}`);
  }
}

readline.createInterface({ input: process.stdin }).on('line', (line) => {
  let msg;
  try { msg = JSON.parse(line); } catch { return; }
  handle(msg);
});
