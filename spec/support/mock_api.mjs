#!/usr/bin/env node
// Scripted Anthropic Messages API for end-to-end tests with the real `claude` CLI.
// Node 20, standard library only. See docs/testing-with-the-real-cli.md.
//
//   node spec/support/mock_api.mjs --scenario FILE --port-file FILE [--log FILE] [--log-bodies]
//
// Listens on 127.0.0.1 (port 0), writes the port to --port-file atomically and prints
// "PORT <n>". Every POST /v1/messages consumes the next scripted turn of the scenario.

import http from 'node:http';
import fs from 'node:fs';
import crypto from 'node:crypto';

// ---------------------------------------------------------------- arguments
const args = { scenario: null, portFile: null, log: null, logBodies: false };
for (let i = 2; i < process.argv.length; i++) {
  const a = process.argv[i];
  const next = () => {
    if (i + 1 >= process.argv.length) die(`missing value for ${a}`);
    return process.argv[++i];
  };
  if (a === '--scenario') args.scenario = next();
  else if (a === '--port-file') args.portFile = next();
  else if (a === '--log') args.log = next();
  else if (a === '--log-bodies') args.logBodies = true;
  else die(`unknown argument ${a}`);
}
if (!args.scenario || !args.portFile) {
  die('usage: mock_api.mjs --scenario FILE --port-file FILE [--log FILE] [--log-bodies]');
}

function die(msg) {
  process.stderr.write(`mock_api: ${msg}\n`);
  process.exit(2);
}

let scenario;
try {
  scenario = JSON.parse(fs.readFileSync(args.scenario, 'utf8'));
} catch (e) {
  die(`cannot read scenario ${args.scenario}: ${e.message}`);
}
if (!scenario || !Array.isArray(scenario.turns)) die('scenario must be {"turns":[...]}');

// ---------------------------------------------------------------- logging
const t0 = process.hrtime.bigint();
const now = () => Number(process.hrtime.bigint() - t0) / 1e9;

function log(rec) {
  if (!args.log) return;
  try {
    fs.appendFileSync(args.log, JSON.stringify({ t: Number(now().toFixed(4)), ...rec }) + '\n');
  } catch (e) {
    process.stderr.write(`mock_api: log write failed: ${e.message}\n`);
  }
}

// A test mock must outlive a client that hangs up in the middle of a stream.
process.on('uncaughtException', (e) => {
  process.stderr.write(`mock_api: uncaught ${e && e.stack}\n`);
  log({ kind: 'internal_error', error: String(e && e.message) });
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => process.exit(0));

// ---------------------------------------------------------------- helpers
const B62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
function rid(prefix, n = 22) {
  const bytes = crypto.randomBytes(n);
  let s = '';
  for (const b of bytes) s += B62[b % 62];
  return prefix + s;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Rough token estimate (about 4 characters per token), never zero.
const tokens = (s) => Math.max(1, Math.ceil(String(s).length / 4));

// The CLI wraps context it injects in <system-reminder>…</system-reminder>: as extra text blocks
// of the first user message, and (2.1.330) appended to tool_result text
// ("…\n\n<system-reminder>\n<total_tokens>N tokens left</total_tokens>\n</system-reminder>").
// Templates, `match` and the log see the text with those sections removed.
const REMINDER = /<system-reminder>[\s\S]*?<\/system-reminder>/g;
function stripReminders(s) {
  if (typeof s !== 'string') return '';
  return s.includes('<system-reminder>') ? s.replace(REMINDER, '').trim() : s;
}

// Text of one tool_result block: string content, or the text parts of an array joined by "\n".
function toolResultText(block) {
  const c = block.content;
  let text;
  if (typeof c === 'string') text = stripReminders(c);
  else if (Array.isArray(c)) {
    // 2.1.330 sends [{text:"calc says 5\n"},{text:"<system-reminder>…</system-reminder>"}]:
    // drop the reminder part and the one "\n" the CLI added before it.
    const parts = [];
    for (const p of c) {
      if (!p || p.type !== 'text') continue;
      const t = stripReminders(p.text);
      if (t.length === 0 && String(p.text).includes('<system-reminder>')) {
        if (parts.length && parts[parts.length - 1].endsWith('\n')) {
          parts[parts.length - 1] = parts[parts.length - 1].slice(0, -1);
        }
        continue;
      }
      parts.push(t);
    }
    text = parts.join('\n');
  } else text = '';
  return (block.is_error ? 'ERROR: ' : '') + text;
}

// The last user message that carries real text (not only tool_results or <system-reminder>s).
// Returns the last non-reminder text block of that message, or '' if there is none.
function lastUserText(messages) {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (!m || m.role !== 'user') continue;
    if (typeof m.content === 'string') {
      const t = stripReminders(m.content);
      if (t.length) return t;
      continue;
    }
    if (!Array.isArray(m.content)) continue;
    const texts = m.content
      .filter((b) => b && b.type === 'text')
      .map((b) => stripReminders(b.text))
      .filter((t) => t.length > 0);
    if (texts.length) return texts[texts.length - 1];
  }
  return '';
}

function allToolResults(messages) {
  const out = [];
  for (const m of messages) {
    if (!m || m.role !== 'user' || !Array.isArray(m.content)) continue;
    for (const b of m.content) if (b && b.type === 'tool_result') out.push(b);
  }
  return out;
}

// Tool results carried by the last message (the ones this request is answering).
function newToolResults(messages) {
  const m = messages[messages.length - 1];
  if (!m || m.role !== 'user' || !Array.isArray(m.content)) return [];
  return m.content.filter((b) => b && b.type === 'tool_result');
}

function applyTemplates(value, ctx) {
  if (typeof value === 'string') {
    return value
      .replaceAll('{{last_tool_result}}', ctx.lastToolResult)
      .replaceAll('{{last_user_text}}', ctx.lastUserText)
      .replaceAll('{{user_text_length}}', String([...ctx.lastUserText].length));
  }
  if (Array.isArray(value)) return value.map((v) => applyTemplates(v, ctx));
  if (value && typeof value === 'object') {
    const o = {};
    for (const [k, v] of Object.entries(value)) o[k] = applyTemplates(v, ctx);
    return o;
  }
  return value;
}

// Split a string into n nearly equal pieces (by code point), at least one piece.
function split(s, n) {
  const cps = [...s];
  n = Math.max(1, Math.min(n | 0 || 1, cps.length || 1));
  const out = [];
  const size = Math.ceil(cps.length / n);
  for (let i = 0; i < n; i++) out.push(cps.slice(i * size, (i + 1) * size).join(''));
  return out.filter((p, i) => p.length > 0 || i === 0);
}

const ERROR_TYPES = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  403: 'permission_error',
  404: 'not_found_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  529: 'overloaded_error',
};

const REASONS = { 529: 'Overloaded' };

function sendJson(res, status, obj, extraHeaders = {}) {
  const body = JSON.stringify(obj);
  res.writeHead(status, REASONS[status] || http.STATUS_CODES[status] || 'Error', {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(body),
    ...extraHeaders,
  });
  res.end(body);
}

function apiError(res, status, message, requestId, extraHeaders = {}) {
  const type = ERROR_TYPES[status] || (status >= 500 ? 'api_error' : 'invalid_request_error');
  sendJson(
    res,
    status,
    { type: 'error', error: { type, message: message || type }, request_id: requestId },
    { 'request-id': requestId, ...extraHeaders }
  );
}

// ---------------------------------------------------------------- turns
let nextTurn = 0;
let servedOfTurn = 0; // how many requests the current turn has answered (for "repeat")
let seq = 0;

function pickTurn(lastText) {
  if (nextTurn >= scenario.turns.length) {
    return {
      index: null,
      exhausted: true,
      turn: { content: [{ type: 'text', text: '(no more scripted turns)' }], stop_reason: 'end_turn' },
    };
  }
  const index = nextTurn;
  const turn = scenario.turns[index] || {};
  // "repeat": N serves the same turn to N consecutive requests (a 400 is sent 3 times by 2.1.330).
  if (++servedOfTurn >= Math.max(1, turn.repeat | 0)) {
    nextTurn++;
    servedOfTurn = 0;
  }
  if (typeof turn.match === 'string' && !lastText.includes(turn.match)) {
    return {
      index,
      mismatch: true,
      turn: {
        content: [
          {
            type: 'text',
            text: `MOCK MISMATCH: expected ${JSON.stringify(turn.match)} in the last user text, got ${JSON.stringify(lastText.slice(0, 500))} (turn ${index})`,
          },
        ],
        stop_reason: 'end_turn',
      },
    };
  }
  return { index, turn };
}

// Build the final content blocks (ids, templates) of a turn.
function buildBlocks(turn, ctx) {
  const blocks = Array.isArray(turn.content) ? turn.content : [];
  return blocks.map((b) => {
    if (b.type === 'tool_use') {
      return {
        type: 'tool_use',
        id: b.id || rid('toolu_01'),
        name: b.name,
        input: applyTemplates(b.input || {}, ctx),
      };
    }
    if (b.type === 'thinking') {
      return { type: 'thinking', thinking: applyTemplates(b.thinking || '', ctx), signature: b.signature || rid('sig_', 40) };
    }
    return { type: 'text', text: applyTemplates(b.text ?? '', ctx) };
  });
}

function makeUsage(turn, body, blocks) {
  const outChars = blocks
    .map((b) => (b.type === 'text' ? b.text : b.type === 'thinking' ? b.thinking : JSON.stringify(b.input)))
    .join('');
  const { metadata, ...countable } = body; // eslint-disable-line no-unused-vars
  return {
    input_tokens: tokens(JSON.stringify(countable)),
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
    output_tokens: tokens(outChars),
    service_tier: 'standard',
    ...(turn.usage || {}),
  };
}

// ---------------------------------------------------------------- SSE
async function streamMessage(req, res, { turn, blocks, usage, model, msgId, requestId, seqNo }) {
  let closed = false;
  res.on('close', () => {
    if (!res.writableFinished) {
      closed = true;
      log({ kind: 'client_closed', seq: seqNo });
    }
  });
  const send = (event, data) => {
    if (closed || res.destroyed) return false;
    res.write(`event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    return true;
  };
  const chunks = turn.chunks || 1;
  const chunkDelay = turn.chunk_delay_ms || 0;

  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
    'request-id': requestId,
    'anthropic-organization-id': '00000000-0000-0000-0000-000000000000',
    ...(turn.headers || {}),
  });
  res.flushHeaders();

  if (turn.delay_ms) await sleep(turn.delay_ms);

  if (
    !send('message_start', {
      type: 'message_start',
      message: {
        id: msgId,
        type: 'message',
        role: 'assistant',
        model,
        content: [],
        stop_reason: null,
        stop_sequence: null,
        usage: { ...usage, output_tokens: 1 },
      },
    })
  )
    return;

  let first = true;
  for (let index = 0; index < blocks.length; index++) {
    const b = blocks[index];
    let start;
    let pieces;
    let deltaOf;
    if (b.type === 'tool_use') {
      start = { type: 'tool_use', id: b.id, name: b.name, input: {} };
      pieces = ['', ...split(JSON.stringify(b.input), chunks)];
      deltaOf = (p) => ({ type: 'input_json_delta', partial_json: p });
    } else if (b.type === 'thinking') {
      start = { type: 'thinking', thinking: '', signature: '' };
      pieces = split(b.thinking, chunks);
      deltaOf = (p) => ({ type: 'thinking_delta', thinking: p });
    } else {
      start = { type: 'text', text: '' };
      pieces = split(b.text, chunks);
      deltaOf = (p) => ({ type: 'text_delta', text: p });
    }
    if (!send('content_block_start', { type: 'content_block_start', index, content_block: start })) return;
    if (first) {
      send('ping', { type: 'ping' });
      first = false;
    }
    for (const p of pieces) {
      if (!send('content_block_delta', { type: 'content_block_delta', index, delta: deltaOf(p) })) return;
      if (chunkDelay) await sleep(chunkDelay);
    }
    if (b.type === 'thinking') {
      send('content_block_delta', { type: 'content_block_delta', index, delta: { type: 'signature_delta', signature: b.signature } });
    }
    if (!send('content_block_stop', { type: 'content_block_stop', index })) return;
  }
  if (
    !send('message_delta', {
      type: 'message_delta',
      delta: { stop_reason: turn.stop_reason, stop_sequence: null },
      usage: {
        input_tokens: usage.input_tokens,
        cache_creation_input_tokens: usage.cache_creation_input_tokens,
        cache_read_input_tokens: usage.cache_read_input_tokens,
        output_tokens: usage.output_tokens,
      },
    })
  )
    return;
  if (!send('message_stop', { type: 'message_stop' })) return;
  res.end();
  log({ kind: 'stream_done', seq: seqNo });
}

// ---------------------------------------------------------------- handlers
async function handleMessages(req, res, body, path) {
  const seqNo = ++seq;
  const requestId = rid('req_011', 21);
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const lastText = lastUserText(messages);
  const results = allToolResults(messages);
  const ctx = {
    lastUserText: lastText,
    lastToolResult: results.length ? toolResultText(results[results.length - 1]) : '',
  };
  const picked = pickTurn(lastText);
  const turn = { ...picked.turn };

  const rec = {
    kind: 'request',
    seq: seqNo,
    path,
    turn_index: picked.index,
    model: body.model,
    stream: !!body.stream,
    n_messages: messages.length,
    last_user_text: lastText,
    tools: Array.isArray(body.tools) ? body.tools.map((t) => t && t.name) : [],
    tool_results: newToolResults(messages).map((b) => ({
      tool_use_id: b.tool_use_id,
      is_error: !!b.is_error,
      text: toolResultText(b),
    })),
    user_agent: req.headers['user-agent'],
    betas: String(req.headers['anthropic-beta'] ?? '').split(',').map((b) => b.trim()).filter(Boolean),
    retry_count: Number(req.headers['x-stainless-retry-count'] ?? 0),
  };
  if (picked.exhausted) rec.exhausted = true;
  if (picked.mismatch) rec.mismatch = { expected: scenario.turns[picked.index].match };
  if (turn.status) rec.status = turn.status;
  if (args.logBodies) rec.body = body;
  log(rec);
  if (picked.exhausted) process.stderr.write(`mock_api: no more scripted turns (request ${seqNo})\n`);
  if (picked.mismatch) process.stderr.write(`mock_api: MISMATCH at turn ${picked.index}\n`);

  if (turn.status && turn.status !== 200) {
    if (turn.delay_ms) await sleep(turn.delay_ms);
    apiError(res, turn.status, turn.error_message, requestId, turn.headers || {});
    return;
  }

  const blocks = buildBlocks(turn, ctx);
  turn.stop_reason = turn.stop_reason || (blocks.some((b) => b.type === 'tool_use') ? 'tool_use' : 'end_turn');
  const usage = makeUsage(turn, body, blocks);
  const model = body.model || 'claude-sonnet-4-5';
  const msgId = rid('msg_01');

  if (body.stream) {
    await streamMessage(req, res, { turn, blocks, usage, model, msgId, requestId, seqNo });
    return;
  }
  if (turn.delay_ms) await sleep(turn.delay_ms);
  if (res.destroyed) return;
  sendJson(
    res,
    200,
    {
      id: msgId,
      type: 'message',
      role: 'assistant',
      model,
      content: blocks,
      stop_reason: turn.stop_reason,
      stop_sequence: null,
      usage,
    },
    { 'request-id': requestId, ...(turn.headers || {}) }
  );
}

function handleCountTokens(req, res, body, path) {
  const { metadata, ...countable } = body; // eslint-disable-line no-unused-vars
  const n = tokens(JSON.stringify(countable));
  log({ kind: 'count_tokens', seq: ++seq, path, input_tokens: n });
  sendJson(res, 200, { input_tokens: n });
}

const server = http.createServer((req, res) => {
  req.on('error', () => {});
  res.on('error', () => {});
  // A proxied plain-HTTP request names an absolute URL: something tried to leave the machine.
  if (/^[a-z]+:\/\//i.test(req.url)) {
    log({ kind: 'tripwire', method: req.method, url: req.url });
    sendJson(res, 403, { type: 'error', error: { type: 'permission_error', message: 'mock: egress blocked' } });
    return;
  }
  const [pathname] = req.url.split('?');
  const chunks = [];
  req.on('data', (c) => chunks.push(c));
  req.on('end', () => {
    let body = {};
    const raw = Buffer.concat(chunks).toString('utf8');
    if (raw.length) {
      try {
        body = JSON.parse(raw);
      } catch (e) {
        log({ kind: 'bad_json', method: req.method, path: req.url });
        apiError(res, 400, `mock: invalid JSON body: ${e.message}`, rid('req_011', 21));
        return;
      }
    }
    if (req.method === 'POST' && pathname === '/v1/messages') {
      handleMessages(req, res, body, req.url).catch((e) => {
        log({ kind: 'internal_error', error: String(e && e.stack) });
        if (!res.headersSent) apiError(res, 500, `mock: ${e.message}`, rid('req_011', 21));
        else res.destroy();
      });
    } else if (req.method === 'POST' && pathname === '/v1/messages/count_tokens') {
      handleCountTokens(req, res, body, req.url);
    } else {
      log({ kind: 'not_found', method: req.method, path: req.url });
      sendJson(res, 404, {
        type: 'error',
        error: { type: 'not_found_error', message: `mock: no route for ${req.method} ${pathname}` },
      });
    }
  });
});

// HTTPS_PROXY points here: a CONNECT means the CLI tried to reach a real host. Refuse and log.
server.on('connect', (req, socket) => {
  log({ kind: 'tripwire', method: 'CONNECT', url: req.url });
  socket.on('error', () => {});
  socket.end('HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n');
});
server.on('clientError', (err, socket) => {
  if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\n\r\n');
  else socket.destroy();
});
server.keepAliveTimeout = 65000;

server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const tmp = `${args.portFile}.tmp${process.pid}`;
  fs.writeFileSync(tmp, `${port}\n`);
  fs.renameSync(tmp, args.portFile);
  log({ kind: 'mock_started', port, scenario: args.scenario, turns: scenario.turns.length });
  process.stdout.write(`PORT ${port}\n`);
});
