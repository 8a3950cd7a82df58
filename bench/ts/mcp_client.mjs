// The TypeScript SDK v2's MCP Client (@modelcontextprotocol/client) under the same load as
// bench/lua/mcp_client.lua: `node bench/ts/mcp_client.mjs SERVER [INFLIGHT] [CALLS] [ERA]`
// (ERA `modern`: version negotiation `auto` against `SERVER modern`; `legacy`, the default:
// the SDK's legacy mode, plain initialize).
import { readFileSync } from "node:fs";
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [server, inflightArg, callsArg, eraArg] = process.argv.slice(2);
const inflight = Number(inflightArg ?? 1);
const calls = Number(callsArg ?? 20000);
const era = eraArg ?? "legacy";
const WARMUP = 1000;

function peakRssKb() {
  const m = /VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) : null;
}

const client = new Client({ name: "bench", version: "1.0.0" },
  { versionNegotiation: { mode: era === "modern" ? "auto" : "legacy" } });
await client.connect(new StdioClientTransport({ command: server,
  args: era === "modern" ? ["modern"] : [] }));
const negotiated = client.getNegotiatedProtocolVersion();
if ((negotiated >= "2026-07-28") !== (era === "modern")) {
  throw new Error(`negotiated ${negotiated} for the ${era} era`);
}

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
console.log(JSON.stringify({ side: "ts", era, inflight, calls,
  seconds: Number(seconds.toFixed(4)), calls_per_s: Math.round(calls / seconds),
  cpu_us_per_call: Number(((cpu.user + cpu.system) / calls).toFixed(1)),
  peak_rss_kb: peakRssKb() }));
await client.close();
