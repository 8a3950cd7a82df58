// startup through the TypeScript Agent SDK: one trivial turn, with `--server` one in-process
// MCP server declared. bench/run times the whole process from outside.
import { query } from "@anthropic-ai/claude-agent-sdk";
import { FAKE, calcServer, report } from "./common.mjs";

const withServer = process.argv.includes("--server");
const options = { pathToClaudeCodeExecutable: FAKE };
if (withServer) options.mcpServers = { calc: calcServer() };
let result = null;
for await (const m of query({ prompt: "hi", options })) {
  if (m.type === "result") result = m;
}
report({ driver: "startup", server: withServer, ok: result !== null && !result.is_error });
