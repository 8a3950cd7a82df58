// bench/lib/table.mjs — prints the side-by-side table from raw run records (bench/run writes
// them to bench/out/runs-<timestamp>.jsonl): each figure for claudelua, for the TypeScript SDK
// and the fake's own ceiling, as median [min–max] over the repeats, and the ratio claudelua ÷ TS.
//
//   node table.mjs RUNS.jsonl [--note-lua TEXT] [--markdown]
import { readFileSync } from "node:fs";

const args = process.argv.slice(2);
const file = args[0];
const noteLua = args.includes("--note-lua") ? args[args.indexOf("--note-lua") + 1] : null;
const markdown = args.includes("--markdown");

const recs = readFileSync(file, "utf8")
  .split("\n")
  .filter((l) => l.trim())
  .map((l) => JSON.parse(l));

// case, figure, label, which way is better
const ROWS = [
  ["mcp_flood_1", "calls_per_s", "mcp_flood, 1 in flight: calls/s", "hi"],
  ["mcp_flood_1", "p50_us", "  p50 latency (µs)", "lo"],
  ["mcp_flood_1", "p99_us", "  p99 latency (µs)", "lo"],
  ["mcp_flood_1", "peak_rss_mib", "  peak RSS (MiB)", "lo"],
  ["mcp_flood_1_cpu0", "calls_per_s", "mcp_flood, 1 in flight, one vCPU: calls/s", "hi"],
  ["mcp_flood_1_cpu0", "p50_us", "  p50 latency (µs)", "lo"],
  ["mcp_flood_64", "calls_per_s", "mcp_flood, 64 in flight: calls/s", "hi"],
  ["mcp_flood_64", "p50_us", "  p50 latency (µs)", "lo"],
  ["mcp_flood_64", "p99_us", "  p99 latency (µs)", "lo"],
  ["mcp_flood_64", "peak_rss_mib", "  peak RSS (MiB)", "lo"],
  ["stream_64k", "mb_per_s", "stream, 2000 × 64 KiB: MB/s of text", "hi"],
  ["stream_64k", "peak_rss_mib", "  peak RSS (MiB)", "lo"],
  ["stream_64b", "msgs_per_s", "stream, 100000 × 64 B: messages/s", "hi"],
  ["stream_64b", "mb_per_s", "  MB/s of text", "hi"],
  ["stream_64b", "peak_rss_mib", "  peak RSS (MiB)", "lo"],
  ["stream_8m", "mb_per_s", "stream, one 8 MiB line: MB/s", "hi"],
  ["stream_8m", "peak_rss_mib", "  peak RSS (MiB)", "lo"],
  ["stream_32m", "mb_per_s", "stream, one 32 MiB line: MB/s", "hi"],
  ["stream_32m", "peak_rss_mib", "  peak RSS (MiB)", "lo"],
  ["startup", "wall_s", "startup, no server: wall (s)", "lo"],
  ["startup", "peak_rss_mib", "  peak RSS (MiB)", "lo"],
  ["startup_server", "wall_s", "startup, one server: wall (s)", "lo"],
  ["startup_server", "peak_rss_mib", "  peak RSS (MiB)", "lo"],
  ["concurrent_1", "calls_per_s", "concurrent K=1: calls/s", "hi"],
  ["concurrent_1", "p99_us", "  p99 latency (µs)", "lo"],
  ["concurrent_1", "peak_rss_mib", "  peak RSS (MiB)", "lo"],
  ["concurrent_10", "calls_per_s", "concurrent K=10: calls/s", "hi"],
  ["concurrent_10", "p99_us", "  p99 latency (µs)", "lo"],
  ["concurrent_10", "peak_rss_mib", "  peak RSS (MiB)", "lo"],
  ["concurrent_50", "calls_per_s", "concurrent K=50: calls/s", "hi"],
  ["concurrent_50", "p99_us", "  p99 latency (µs)", "lo"],
  ["concurrent_50", "peak_rss_mib", "  peak RSS (MiB)", "lo"],
];

function fmt(x) {
  if (x == null || Number.isNaN(x)) return "?";
  const ax = Math.abs(x);
  if (ax >= 1000) return Math.round(x).toLocaleString("en-US");
  if (ax >= 100) return x.toFixed(0);
  if (ax >= 10) return x.toFixed(1);
  if (ax >= 1) return x.toFixed(2);
  return x.toFixed(3);
}

function median(v) {
  const s = [...v].sort((x, y) => x - y);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

function stats(sdk, kase, fig) {
  const runs = recs.filter((r) => r.sdk === sdk && r.case === kase);
  if (runs.length === 0) return { text: sdk === "lua" && noteLua ? "not ready" : "–", med: null };
  const good = runs.filter((r) => r.ok).map((r) => r.figures[fig]).filter((x) => typeof x === "number");
  const failed = runs.filter((r) => !r.ok).length;
  const tail = failed ? ` (${failed}/${runs.length} failed)` : "";
  if (good.length === 0) return { text: failed ? `FAILED ${failed}/${runs.length}` : "–", med: null };
  const med = median(good);
  const range = good.length > 1 ? ` [${fmt(Math.min(...good))}–${fmt(Math.max(...good))}]` : "";
  return { text: `${fmt(med)}${range}${tail}`, med };
}

const header = ["figure", "claudelua", "TS Agent SDK", "ratio", "better", "fake ceiling"];
const rows = [];
const casesPresent = new Set(recs.map((r) => r.case));
for (const [kase, fig, label, way] of ROWS) {
  if (!casesPresent.has(kase)) continue;
  const lua = stats("lua", kase, fig);
  const ts = stats("ts", kase, fig);
  const ceil = fig === "peak_rss_mib" ? { text: "" } : stats("ceiling", kase, fig);
  let ratio = "";
  let better = "";
  if (lua.med != null && ts.med != null && ts.med !== 0) {
    const r = lua.med / ts.med;
    ratio = `${r >= 10 ? r.toFixed(1) : r.toFixed(2)}×`;
    better = (way === "hi" ? r > 1 : r < 1) ? "claudelua" : r === 1 ? "=" : "TS";
  }
  rows.push([label, lua.text, ts.text, ratio, better, ceil.text === "–" ? "" : ceil.text]);
}

if (noteLua) console.log(`claudelua: ${noteLua}\n`);
if (markdown) {
  const esc = (s) => s.replace(/\|/g, "\\|");
  console.log("| " + header.join(" | ") + " |");
  console.log("|" + header.map((_, i) => (i === 0 ? "---" : "---:")).join("|") + "|");
  for (const r of rows) console.log("| " + r.map((c, i) => esc(i === 0 ? c.replace(/^  /, "↳ ") : c)).join(" | ") + " |");
} else {
  const w = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
  const line = (r) => r.map((c, i) => (i === 0 ? c.padEnd(w[i]) : c.padStart(w[i]))).join("  ");
  console.log(line(header));
  console.log(w.map((n) => "-".repeat(n)).join("  "));
  for (const r of rows) console.log(line(r));
}
const failures = recs.filter((r) => !r.ok);
if (failures.length) {
  console.log(`\n${failures.length} failed run(s):`);
  for (const f of failures.slice(0, 12))
    console.log(`  ${f.sdk} ${f.case} rep ${f.rep}: ${f.errors.join("; ")}${f.stderr_tail ? "\n    " + f.stderr_tail.split("\n").join("\n    ") : ""}`);
}
