// The first turn's latency through the TypeScript Agent SDK, with the real CLI against the
// scripted Messages API (bench/first_turn sets the environment): `cold` (query() starts the
// CLI), `startup` (startup() before the prompt), `prewarm` (a spare claimed for the folder).
// Prints one JSON line, as bench/lua/first_turn.lua does.
import { query, startup, prewarm } from "@anthropic-ai/claude-agent-sdk";

const mode = process.argv[2] ?? "cold";
const CLI = process.env.CLAUDELUA_BENCH_CLI;
const WORK = process.env.CLAUDELUA_BENCH_WORK;
const now = () => performance.now();
const options = { pathToClaudeCodeExecutable: CLI, cwd: WORK, model: "claude-sonnet-4-5" };

async function resultOf(q) {
  let result = null;
  for await (const m of q) if (m.type === "result") result = m;
  return result;
}

let prep = 0;
let t0;
let result;
if (mode === "cold") {
  t0 = now();
  result = await resultOf(query({ prompt: "hi", options }));
} else if (mode === "startup") {
  const p0 = now();
  const warm = await startup({ options });
  prep = now() - p0;
  t0 = now();
  result = await resultOf(warm.query("hi"));
} else if (mode === "prewarm") {
  const { cwd, ...spareOptions } = options; // eslint-disable-line no-unused-vars
  const p0 = now();
  const spare = await prewarm({ options: spareOptions });
  prep = now() - p0;
  t0 = now();
  result = await resultOf(spare.claim({ prompt: "hi", options: { cwd: WORK } }));
} else {
  throw new Error("mode: cold, startup or prewarm");
}
const firstTurn = now() - t0;
process.stdout.write(JSON.stringify({ sdk: "ts", mode, ok: result !== null && !result.is_error,
  first_turn_ms: firstTurn, prep_ms: prep }) + "\n");
process.exit(0);
