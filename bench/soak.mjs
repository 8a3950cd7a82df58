// bench/soak.mjs -- `claudelua mcp --http` under a mixed load for a long time: normal clients
// calling a tool at a steady rate (their latency, and that they are served throughout) among
// hostile ones (slowloris, clients that stop reading an event stream, huge batches, floods of
// sessions, oversized bodies, tools that spin or allocate where budgets must stop them).
// Samples the server's RSS and descriptors; prints a table per minute and a summary, and keeps
// the raw figures in bench/out/soak-<timestamp>.json. Run through bench/soak (README there).
// Not a test: nothing here fails on a timing; it exits 1 only when a normal call got a wrong
// answer or the server died.
import { spawn } from "node:child_process";
import fs from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { performance } from "node:perf_hooks";

const env = process.env;
const opt = {
  claudelua: env.CLAUDELUA || "build/claudelua",
  seconds: Number(process.argv[2] || env.SOAK_SECONDS || 600),
  normal: Number(env.SOAK_NORMAL || 4), // normal clients, one session and connection each
  interval: Number(env.SOAK_INTERVAL_MS || 25), // ms between the calls of one normal client
  hostile: (env.SOAK_HOSTILE ?? "slowloris,stall,batch,sessions,oversize,tools")
    .split(",").filter(Boolean),
  serverArgs: (env.SOAK_SERVER_ARGS || "").split(" ").filter(Boolean),
  out: env.SOAK_OUT || "bench/out",
};

const PROTOCOL = "2025-06-18";
const TOOLS = `
local claude = require "claude"
local function spin() while true do end end
return claude.server("soak", {
  claude.tool("add", "Adds", { a = "number", b = "number" }, function(a) return a.a + a.b end),
  -- a lot of events on the call's stream: for clients that stop reading it
  claude.tool("flood", "Logs a lot", { n = "number" }, function(args, ctx)
    for _ = 1, math.min(args.n, 400) do ctx.log("info", string.rep("x", 8192)) end
    return "flooded"
  end),
  -- what budgets stop (docs/budgets.md): each holds the loop about 1 s (the default run)
  claude.tool("spin", "Spins", spin),
  claude.tool("handler", "Spins in its message handler", function()
    return xpcall(function() error("x") end, spin)
  end),
  claude.tool("gcalloc", "Spins in __gc, allocating now and then", function()
    setmetatable({}, { __gc = function()
      local t, i = {}, 0
      while true do
        i = i + 1
        if i % 100000 == 0 then t[#t % 64 + 1] = {} end
      end
    end })
    collectgarbage()
  end),
  claude.tool("hog", "Allocates without end", function()
    local t = {}
    while true do t[#t + 1] = string.rep("x", 65536) .. #t end
  end, { budget = { memory = 16 * 1024 * 1024 } }),
})
`;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let running = true;
const t0 = performance.now();
const elapsed = () => (performance.now() - t0) / 1000;
const minuteOf = () => Math.floor(elapsed() / 60);

// ---- the server ----------------------------------------------------------------------------

const dir = fs.mkdtempSync(path.join(os.tmpdir(), "claudelua-soak-"));
const toolsFile = path.join(dir, "tools.lua");
fs.writeFileSync(toolsFile, TOOLS);
const server = spawn(opt.claudelua,
  ["mcp", "--http", "127.0.0.1:0", ...opt.serverArgs, toolsFile],
  { stdio: ["ignore", "ignore", "pipe"] });
const serverLog = [];
let serverExit = null;
server.on("exit", (code, signal) => { serverExit = { code, signal, at: elapsed() }; });
const url = await new Promise((resolve, reject) => {
  let buf = "";
  server.stderr.setEncoding("utf8");
  server.stderr.on("data", (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf("\n")) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (serverLog.length < 2000) serverLog.push(line);
      const m = line.match(/serving (http:\/\/\S+)/);
      if (m) resolve(m[1]);
    }
  });
  server.on("exit", () => reject(new Error("the server exited: " + serverLog.join("\n"))));
});
const { hostname: HOST, port: PORT, pathname: MCP } = new URL(url);

// ---- JSON-RPC over HTTP --------------------------------------------------------------------

function post(agent, body, sid, timeoutMs = 20000) {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  return new Promise((resolve, reject) => {
    const headers = {
      "content-type": "application/json", accept: "application/json, text/event-stream",
      "content-length": Buffer.byteLength(text),
    };
    if (sid) Object.assign(headers, { "mcp-session-id": sid, "mcp-protocol-version": PROTOCOL });
    const req = http.request({ host: HOST, port: PORT, path: MCP, method: "POST", agent, headers },
      (res) => {
        const chunks = [];
        res.on("data", (c) => chunks.push(c));
        res.on("end", () => {
          const raw = Buffer.concat(chunks).toString("utf8");
          let json = null;
          try {
            if ((res.headers["content-type"] || "").startsWith("text/event-stream")) {
              const datas = [...raw.matchAll(/^data: (.+)$/gm)].map((m) => JSON.parse(m[1]));
              json = datas.filter((d) => d.id !== undefined || Array.isArray(d)).pop() ?? null;
            } else if (raw) json = JSON.parse(raw);
          } catch { json = null; }
          resolve({ status: res.statusCode, headers: res.headers, json });
        });
        res.on("error", reject);
      });
    req.setTimeout(timeoutMs, () => req.destroy(new Error("timeout")));
    req.on("error", reject);
    req.end(text);
  });
}

async function initialize(agent) {
  const r = await post(agent, { jsonrpc: "2.0", id: 0, method: "initialize", params: {
    protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "soak", version: "1" } } });
  const sid = r.headers["mcp-session-id"];
  if (r.status !== 200 || !sid) throw new Error("initialize: " + r.status);
  await post(agent, { jsonrpc: "2.0", method: "notifications/initialized" }, sid);
  return sid;
}

const call = (id, name, args) =>
  ({ jsonrpc: "2.0", id, method: "tools/call", params: { name, arguments: args } });

// ---- figures -------------------------------------------------------------------------------

const minutes = []; // per minute: latencies (ms) of normal calls, errors, wrong answers
const minute = (m = minuteOf()) =>
  (minutes[m] ??= { lat: [], errors: 0, wrong: 0, rss: [], fds: [] });
const hostile = {}; // kind -> { outcome -> count }
const count = (kind, outcome, n = 1) => {
  hostile[kind] ??= {};
  hostile[kind][outcome] = (hostile[kind][outcome] || 0) + n;
};
const gaps = []; // per normal client: the longest time without a good answer, in s
const samples = [];

function pct(sorted, p) {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

function sampleServer() {
  try {
    const status = fs.readFileSync(`/proc/${server.pid}/status`, "utf8");
    const kb = (k) => Number((status.match(new RegExp(`^${k}:\\s+(\\d+)`, "m")) || [])[1]);
    const fds = fs.readdirSync(`/proc/${server.pid}/fd`).length;
    const s = { t: Math.round(elapsed()), rss_kb: kb("VmRSS"), hwm_kb: kb("VmHWM"), fds };
    samples.push(s);
    minute().rss.push(s.rss_kb);
    minute().fds.push(fds);
    return s;
  } catch { return null; }
}

// ---- normal clients ------------------------------------------------------------------------

async function normalClient(i) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sid = await initialize(agent);
  let n = 0, lastGood = elapsed(), gap = 0;
  const start = performance.now();
  while (running) {
    n += 1;
    const a = i * 1000000 + n, b = 7;
    const began = performance.now();
    try {
      const r = await post(agent, call(n, "add", { a, b }), sid);
      const ms = performance.now() - began;
      const text = r.json?.result?.content?.[0]?.text;
      if (r.status === 200 && !r.json.result.isError && text === String(a + b)) {
        minute().lat.push(ms);
        gap = Math.max(gap, elapsed() - lastGood);
        lastGood = elapsed();
      } else {
        minute().wrong += 1;
        count("normal", `wrong answer (HTTP ${r.status})`);
      }
    } catch (e) {
      minute().errors += 1;
      count("normal", "error: " + e.message);
    }
    const next = start + n * opt.interval;
    await sleep(Math.max(0, next - performance.now()));
  }
  gaps[i] = Math.max(gap, elapsed() - lastGood);
  agent.destroy();
}

// ---- hostile clients -----------------------------------------------------------------------

// Raw connections; `s.ours` once the client closes one (else the server did).
const sockets = new Set();
function raw(onClose) {
  const s = net.connect(PORT, HOST);
  sockets.add(s);
  s.on("error", () => {});
  s.on("close", () => { sockets.delete(s); onClose?.(); });
  return s;
}
function drop(s) {
  s.ours = true;
  s.destroy();
}

// Slowloris: 64 connections that send a request a byte-sized header at a time, every 10 s
// (half stop in the head, half in a body they promised).
async function slowloris() {
  const N = 64;
  let open = 0;
  const one = (k) => {
    if (!running) return;
    open += 1;
    count("slowloris", "opened");
    const s = raw(() => {
      open -= 1;
      count("slowloris", s.ours ? "closed by the client" : "closed by the server");
      setTimeout(() => one(k), 1000);
    });
    s.on("data", () => count("slowloris", "got an answer"));
    const head = `POST ${MCP} HTTP/1.1\r\nHost: ${HOST}\r\nContent-Type: application/json\r\n`;
    s.write(k % 2 ? head : head + "Content-Length: 1000\r\n\r\n{");
    const timer = setInterval(() => {
      if (!running) { clearInterval(timer); drop(s); return; }
      s.write(k % 2 ? "X-Slow: 1\r\n" : " ");
    }, 10000);
    s.on("close", () => clearInterval(timer));
  };
  for (let k = 0; k < N; k++) { one(k); await sleep(20); }
  while (running) await sleep(500);
}

// Clients that stop reading: 8 at a time, each a session whose call streams 3 MB of events
// (tool "flood") into a connection that never reads; each is dropped after 60 s for a new one.
async function stall() {
  const one = async () => {
    const agent = new http.Agent({ keepAlive: false });
    let sid;
    try { sid = await initialize(agent); } catch { count("stall", "initialize failed"); return; }
    const body = JSON.stringify(call(1, "flood", { n: 400 }));
    const s = raw();
    s.write(`POST ${MCP} HTTP/1.1\r\nHost: ${HOST}\r\nContent-Type: application/json\r\n` +
      `Accept: application/json, text/event-stream\r\nMcp-Session-Id: ${sid}\r\n` +
      `MCP-Protocol-Version: ${PROTOCOL}\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n` +
      body);
    s.pause();
    count("stall", "stalled");
    const until = elapsed() + 60;
    while (running && elapsed() < until && !s.destroyed) await sleep(500);
    if (!s.destroyed) drop(s);
    count("stall", s.ours ? "dropped by the client" : "closed by the server");
  };
  const all = [];
  for (let k = 0; k < 8 && running; k++) {
    all.push((async () => { while (running) await one(); })());
    await sleep(7500);
  }
  await Promise.all(all);
}

// Huge batches: 500 calls in one POST, every 5 s, on one session.
async function batch() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sid = await initialize(agent);
  let id = 0;
  while (running) {
    const list = [];
    for (let k = 0; k < 500; k++) list.push(call(++id, "add", { a: k, b: 1 }));
    const began = performance.now();
    try {
      const r = await post(agent, list, sid, 60000);
      const answers = Array.isArray(r.json) ? r.json.length : 0;
      count("batch", `HTTP ${r.status}, ${answers} answers`);
      (hostile.batch_ms ??= []).push(performance.now() - began);
    } catch (e) { count("batch", "error: " + e.message); }
    await sleep(5000);
  }
  agent.destroy();
}

// Floods of sessions: 50 new sessions every 10 s, never closed (they wait for the session
// timeout).
async function sessions() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 4 });
  while (running) {
    const init = { jsonrpc: "2.0", id: 0, method: "initialize", params: {
      protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "flood", version: "1" } } };
    const made = await Promise.allSettled(Array.from({ length: 50 }, () => post(agent, init)));
    for (const m of made) {
      count("sessions", m.status === "fulfilled" ? `HTTP ${m.value.status}`
        : "error: " + m.reason.message);
    }
    await sleep(10000);
  }
  agent.destroy();
}

// Oversized bodies: 17 MiB (past the 16 MiB default) every 30 s, and a body that claims 1 GiB.
async function oversize() {
  const agent = new http.Agent({ keepAlive: false });
  const big = '{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"' +
    "x".repeat(17 * 1024 * 1024) + '"}}';
  while (running) {
    try {
      const r = await post(agent, big, null, 60000);
      count("oversize", `17 MiB: HTTP ${r.status}`);
    } catch (e) { count("oversize", "17 MiB: " + e.message); }
    await new Promise((resolve) => {
      const s = raw(resolve);
      let got = "";
      s.on("data", (d) => { got += d; });
      s.on("close", () => count("oversize", "claims 1 GiB: " +
        ((got.match(/^HTTP\/1\.1 (\d+)/) || [])[1] || "closed without an answer")));
      s.write(`POST ${MCP} HTTP/1.1\r\nHost: ${HOST}\r\nContent-Type: application/json\r\n` +
        `Content-Length: 1073741824\r\n\r\n` + "x".repeat(1 << 20));
      setTimeout(() => drop(s), 5000);
    });
    await sleep(30000);
  }
}

// Tools that budgets must stop, one every 20 s in turn; each holds the loop about a second.
async function tools() {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const sid = await initialize(agent);
  const names = ["spin", "handler", "gcalloc", "hog"];
  let id = 0;
  while (running) {
    const name = names[id % names.length];
    try {
      const r = await post(agent, call(++id, name, {}), sid, 60000);
      const text = r.json?.result?.content?.[0]?.text || `HTTP ${r.status}`;
      const why = (text.match(/budget '(\w+)' exceeded/) || [])[1];
      count("tools", `${name}: ${why ? "stopped (" + why + ")" : text.slice(0, 60)}`);
    } catch (e) { count("tools", `${name}: ${e.message}`); }
    await sleep(20000);
  }
  agent.destroy();
}

// ---- the run -------------------------------------------------------------------------------

const HOSTILE = { slowloris, stall, batch, sessions, oversize, tools };
const load = [os.loadavg()[0]];
console.error(`soak: ${url}, ${opt.seconds} s, ${opt.normal} normal clients every ` +
  `${opt.interval} ms, hostile: ${opt.hostile.join(", ") || "none"}`);
sampleServer();
const sampler = setInterval(sampleServer, 5000);
const reporter = setInterval(() => {
  const m = minutes[minuteOf() - 1];
  if (!m) return;
  const lat = [...m.lat].sort((x, y) => x - y);
  console.error(`soak: minute ${minuteOf()}: ${lat.length} calls, p50 ${pct(lat, 50).toFixed(1)} ` +
    `ms, p99 ${pct(lat, 99).toFixed(1)} ms, errors ${m.errors + m.wrong}, RSS ` +
    `${(Math.max(...m.rss) / 1024).toFixed(1)} MiB`);
}, 60000);
const tasks = [];
for (let i = 0; i < opt.normal; i++) tasks.push(normalClient(i));
for (const k of opt.hostile) {
  if (!HOSTILE[k]) throw new Error("unknown hostile kind " + k);
  tasks.push(HOSTILE[k]().catch((e) => count(k, "failed: " + e.message)));
}
while (elapsed() < opt.seconds && serverExit === null) await sleep(200);
running = false;
for (const s of sockets) drop(s);
await Promise.all(tasks);
clearInterval(reporter);
clearInterval(sampler);
// the clients are gone: what the server keeps once it is idle again
await sleep(5000);
const idle = sampleServer();
load.push(os.loadavg()[0]);
const stopAt = performance.now(), stopAtSeconds = elapsed();
let stopped = serverExit;
const diedEarly = stopped !== null;
if (!stopped) {
  server.kill("SIGTERM");
  while (serverExit === null && performance.now() - stopAt < 30000) await sleep(50);
  stopped = serverExit;
}

// ---- the report ----------------------------------------------------------------------------

const rows = [];
const all = [];
let calls = 0, errors = 0;
minutes.forEach((m, i) => {
  if (!m || m.lat.length + m.errors + m.wrong === 0) return;
  const lat = [...m.lat].sort((x, y) => x - y);
  all.push(...m.lat);
  calls += lat.length;
  errors += m.errors + m.wrong;
  rows.push({ minute: i + 1, calls: lat.length, errors: m.errors + m.wrong,
    p50: pct(lat, 50), p90: pct(lat, 90), p99: pct(lat, 99), max: lat[lat.length - 1],
    rss_mib: m.rss.length ? Math.max(...m.rss) / 1024 : NaN,
    fds: m.fds.length ? Math.max(...m.fds) : NaN });
});
all.sort((x, y) => x - y);
const f1 = (x) => (Number.isFinite(x) ? x.toFixed(1) : "-");
const lines = [];
lines.push(`claudelua mcp --http soak: ${opt.seconds} s, ${opt.normal} normal clients (a call ` +
  `every ${opt.interval} ms each), hostile: ${opt.hostile.join(", ") || "none"}; load ` +
  `average ${load[0].toFixed(2)} before, ${load[1].toFixed(2)} after (${os.cpus().length} CPUs)`);
lines.push("");
lines.push("| minute | normal calls | errors | p50 ms | p90 ms | p99 ms | max ms | RSS MiB " +
  "| fds |");
lines.push("|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const r of rows) {
  lines.push(`| ${r.minute} | ${r.calls} | ${r.errors} | ${f1(r.p50)} | ${f1(r.p90)} | ` +
    `${f1(r.p99)} | ${f1(r.max)} | ${f1(r.rss_mib)} | ${r.fds} |`);
}
const peak = Math.max(...samples.map((x) => x.hwm_kb)) / 1024;
lines.push(`| all | ${calls} | ${errors} | ${f1(pct(all, 50))} | ${f1(pct(all, 90))} | ` +
  `${f1(pct(all, 99))} | ${f1(all[all.length - 1])} | peak ${f1(peak)} | |`);
lines.push("");
lines.push(`Normal clients served throughout: the longest time one went without a good answer ` +
  `was ${f1(Math.max(...gaps))} s. RSS once the clients were gone: ` +
  `${idle ? f1(idle.rss_kb / 1024) + " MiB, " + idle.fds + " fds" : "-"}. ` +
  (stopped === null ? "SIGTERM: still running after 30 s." : diedEarly
    ? `The server died at ${f1(stopped.at)} s (exit ${stopped.code ?? stopped.signal}).`
    : `SIGTERM: exit ${stopped.code ?? "by " + stopped.signal} after ` +
      `${(stopped.at - stopAtSeconds).toFixed(1)} s.`));
lines.push("");
lines.push("| hostile | outcomes |");
lines.push("|---|---|");
for (const [kind, outcomes] of Object.entries(hostile)) {
  if (kind === "batch_ms") continue;
  lines.push(`| ${kind} | ${Object.entries(outcomes).map(([o, n]) => `${o}: ${n}`).join("; ")} |`);
}
if (hostile.batch_ms) {
  const b = [...hostile.batch_ms].sort((x, y) => x - y);
  lines.push(`| batch time | p50 ${f1(pct(b, 50))} ms, max ${f1(b[b.length - 1])} ms |`);
}
const report = lines.join("\n");
console.log(report);
fs.mkdirSync(opt.out, { recursive: true });
const stamp = new Date().toISOString().replace(/[:.]/g, "-");
fs.writeFileSync(path.join(opt.out, `soak-${stamp}.json`), JSON.stringify({ opt, url, load, rows,
  samples, hostile, gaps, idle, stopped, server_stderr: serverLog.slice(0, 200) }, null, 1));
fs.writeFileSync(path.join(opt.out, `soak-${stamp}.md`), report + "\n");
fs.rmSync(dir, { recursive: true, force: true });
// 1: the server died before the end (or would not stop), or a normal call failed
process.exit(diedEarly || stopped === null || errors > 0 ? 1 : 0);
