// bench/lib/record.mjs — turns one benchmark run (the driver's JSON line, the fake CLI's report
// lines, exit status, wall time) into one raw record with its figures, appended by bench/run.
//
//   node record.mjs --sdk S --case C --kind K --rep R --rc RC --wall SECONDS
//                   --out DRIVER_STDOUT --report FAKE_REPORTS --err DRIVER_STDERR [--k SESSIONS]
import { readFileSync, existsSync } from "node:fs";

const a = {};
for (let i = 2; i < process.argv.length; i += 2) a[process.argv[i].replace(/^--/, "")] = process.argv[i + 1];

function jsonLines(file) {
  if (!file || !existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim().startsWith("{"))
    .map((l) => {
      try {
        return JSON.parse(l);
      } catch {
        return { unparsable: l.slice(0, 200) };
      }
    });
}

const driver = jsonLines(a.out).at(-1) ?? null;
const fakes = jsonLines(a.report);
const stderrTail = existsSync(a.err)
  ? readFileSync(a.err, "utf8")
      .split("\n")
      .filter((l) => l.trim() && l.length < 400)
      .slice(-6)
      .join("\n")
  : "";
const rc = Number(a.rc);
const wall = Number(a.wall);
const kind = a.kind;
const K = Number(a.k ?? 1);
const errors = [];
const figures = {};

if (rc !== 0) errors.push(`exit status ${rc}`);
if (!driver) errors.push("driver printed no JSON line");
else if (driver.ok === false) errors.push("driver reported ok=false");
for (const f of fakes) if (!f.ok) errors.push(`fake: ${f.error ?? "not ok"}`);
const wantFakes = kind === "concurrent" ? K : 1;
if (fakes.length !== wantFakes) errors.push(`${fakes.length} fake reports, want ${wantFakes}`);

const mib = (kb) => (kb == null ? null : kb / 1024);
if (driver && a.sdk !== "ceiling" && driver.peak_rss_kb != null) figures.peak_rss_mib = mib(driver.peak_rss_kb);

// Percentile from merged 2%-wide log buckets (bucket b holds latencies in [1.02^b, 1.02^(b+1)) ns).
function histPercentile(hists, q) {
  const m = new Map();
  let total = 0;
  for (const h of hists) for (const [b, c] of h) (m.set(b, (m.get(b) ?? 0) + c), (total += c));
  const keys = [...m.keys()].sort((x, y) => x - y);
  const rank = Math.max(1, Math.ceil(q * total));
  let acc = 0;
  for (const b of keys) {
    acc += m.get(b);
    if (acc >= rank) return Math.pow(1.02, b + 0.5) / 1000;
  }
  return null;
}

if (kind === "mcp_flood" && fakes.length === 1 && fakes[0].ok) {
  const f = fakes[0];
  if (f.completed !== f.n) errors.push(`fake: ${f.completed}/${f.n} calls answered`);
  figures.calls_per_s = f.calls_per_s;
  figures.p50_us = f.lat_us?.p50;
  figures.p99_us = f.lat_us?.p99;
} else if (kind === "concurrent" && fakes.length > 0 && fakes.every((f) => f.ok)) {
  const calls = fakes.reduce((s, f) => s + f.completed, 0);
  const start = Math.min(...fakes.map((f) => f.t_flood_start_ns));
  const end = Math.max(...fakes.map((f) => f.t_flood_end_ns));
  figures.calls_per_s = calls / ((end - start) / 1e9);
  figures.p99_us = histPercentile(fakes.map((f) => f.hist ?? []), 0.99);
  figures.p50_us = histPercentile(fakes.map((f) => f.hist ?? []), 0.5);
  if (driver?.wall_s != null) figures.wall_s = driver.wall_s;
} else if (kind === "stream_flood" && driver && fakes.length === 1 && fakes[0].ok) {
  const f = fakes[0];
  if (driver.text_bytes !== f.text_bytes) errors.push(`received ${driver.text_bytes} text bytes, fake sent ${f.text_bytes}`);
  if (driver.messages !== f.messages) errors.push(`received ${driver.messages} messages, fake sent ${f.messages}`);
  const secs = driver.seconds;
  figures.mb_per_s = driver.text_bytes / 1e6 / secs;
  figures.msgs_per_s = driver.messages / secs;
  figures.seconds = secs;
} else if (kind === "startup") {
  figures.wall_s = wall;
  if (fakes[0]) figures.fake_handshake = fakes[0].handshake;
}

// The hist arrays are only for merging; keep the raw record small.
const fakeSummaries = fakes.map(({ hist, ...rest }) => rest);
const rec = {
  time: new Date().toISOString(),
  sdk: a.sdk,
  case: a.case,
  kind,
  rep: Number(a.rep),
  ok: errors.length === 0,
  errors,
  rc,
  wall_s: wall,
  figures,
  driver,
  fake: kind === "concurrent" ? { sessions: fakeSummaries.length, first: fakeSummaries[0] } : fakeSummaries[0],
};
if (!rec.ok && stderrTail) rec.stderr_tail = stderrTail;
process.stdout.write(JSON.stringify(rec) + "\n");
