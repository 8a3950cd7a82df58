// Reads bench/mcp_servers' raw runs and prints medians side by side, per case and protocol
// era, with the ratio claudelua ÷ TypeScript (the SDK v2 server when it ran, else the v1 one;
// for latency, RSS and start-up, smaller is better).
import fs from 'node:fs';

const runs = fs.readFileSync(process.argv[2], 'utf8').trim().split('\n').map((l) => JSON.parse(l));
const median = (xs) => {
  const s = xs.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN;
};
const cases = [...new Set(runs.map((r) => `${r.case} ${r.era ?? 'legacy'}`))];
const keyOf = (r) => `${r.case} ${r.era ?? 'legacy'}`;
const tsSide = runs.some((r) => r.side === 'ts2') ? 'ts2' : 'ts';
const fields = [
  ['calls_per_s', 'calls/s', (x) => Math.round(x).toLocaleString('en-US')],
  ['p50_us', 'p50 µs', (x) => x.toFixed(0)],
  ['p99_us', 'p99 µs', (x) => x.toFixed(0)],
  ['server_peak_rss_kb', 'peak RSS MiB', (x) => (x / 1024).toFixed(1)],
  ['startup_ms', 'start-up ms', (x) => x.toFixed(1)],
];
const rows = [['case', 'figure', 'claudelua mcp', tsSide === 'ts2' ? 'TS SDK v2' : 'TS McpServer',
  'ratio']];
for (const c of cases) {
  for (const [key, label, fmt] of fields) {
    const of = (side) => median(runs.filter((r) => keyOf(r) === c && r.side === side && r.result?.ok)
      .map((r) => r.result[key]));
    const lua = of('lua'), ts = of(tsSide);
    rows.push([c, label, Number.isFinite(lua) ? fmt(lua) : '–', Number.isFinite(ts) ? fmt(ts) : '–',
      Number.isFinite(lua) && Number.isFinite(ts) && ts > 0 ? (lua / ts).toFixed(2) + '×' : '–']);
  }
}
const widths = rows[0].map((_, i) => Math.max(...rows.map((r) => String(r[i]).length)));
for (const r of rows) console.log('| ' + r.map((v, i) => String(v).padEnd(widths[i])).join(' | ') + ' |');
