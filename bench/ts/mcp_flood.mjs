// mcp_flood through the TypeScript Agent SDK: one in-process server, the fake calls `add`
// CLAUDELUA_BENCH_N times and measures calls/s and latency itself.
import { query } from "@anthropic-ai/claude-agent-sdk";
import { FAKE, calcServer, now, report } from "./common.mjs";

const t0 = now();
let result = null;
let messages = 0;
for await (const m of query({
  prompt: "go",
  options: { pathToClaudeCodeExecutable: FAKE, mcpServers: { calc: calcServer() } },
})) {
  messages++;
  if (m.type === "result") result = m;
}
report({
  driver: "mcp_flood",
  ok: result !== null && !result.is_error,
  messages,
  wall_s: now() - t0,
});
