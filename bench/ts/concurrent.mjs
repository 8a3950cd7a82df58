// concurrent through the TypeScript Agent SDK: K sessions at once in this one process, each
// with its own fake CLI and its own in-process server running a small mcp_flood.
import { query } from "@anthropic-ai/claude-agent-sdk";
import { FAKE, calcServer, now, report } from "./common.mjs";

const K = Number(process.argv[2] ?? 10);

async function session() {
  let result = null;
  for await (const m of query({
    prompt: "go",
    options: { pathToClaudeCodeExecutable: FAKE, mcpServers: { calc: calcServer() } },
  })) {
    if (m.type === "result") result = m;
  }
  return result !== null && !result.is_error;
}

const t0 = now();
const oks = await Promise.all(Array.from({ length: K }, session));
report({ driver: "concurrent", k: K, ok: oks.every(Boolean), sessions_ok: oks.filter(Boolean).length, wall_s: now() - t0 });
