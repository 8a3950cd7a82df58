// The TypeScript SDK v1's MCP Client (@modelcontextprotocol/sdk 1.32.2) under the same load
// as bench/lua/mcp_client.lua: `node bench/ts/mcp_client1.mjs SERVER [INFLIGHT] [CALLS]`. The
// v1 SDK speaks the legacy era only (initialize, then bare requests).
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [server, inflightArg, callsArg] = process.argv.slice(2);
const inflight = Number(inflightArg ?? 1);
const calls = Number(callsArg ?? 20000);
const WARMUP = 1000;

function peakRssKb() {
  const m = /VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) : null;
}

const client = new Client({ name: "bench", version: "1.0.0" });
await client.connect(new StdioClientTransport({ command: server, args: [] }));

async function load(n) {
  let next = 0;
  const worker = async (w) => {
    while (next < n) {
      const i = ++next;
      const r = await client.callTool({ name: "add", arguments: { a: i, b: w } });
      if (Number(r.content[0].text) !== i + w) throw new Error("wrong answer");
    }
  };
  await Promise.all(Array.from({ length: inflight }, (_, w) => worker(w + 1)));
}

await load(WARMUP);
const t0 = performance.now();
const cpu0 = process.cpuUsage();
await load(calls);
const seconds = (performance.now() - t0) / 1000;
const cpu = process.cpuUsage(cpu0);
console.log(JSON.stringify({ side: "ts-v1", era: "legacy", inflight, calls,
  seconds: Number(seconds.toFixed(4)), calls_per_s: Math.round(calls / seconds),
  cpu_us_per_call: Number(((cpu.user + cpu.system) / calls).toFixed(1)),
  peak_rss_kb: peakRssKb() }));
await client.close();
