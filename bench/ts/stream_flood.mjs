// stream_flood through the TypeScript Agent SDK: counts every byte of assistant text that user
// code receives, timed from the turn's system/init to its result.
import { query } from "@anthropic-ai/claude-agent-sdk";
import { FAKE, now, report } from "./common.mjs";

let t_init = null;
let t_result = null;
let messages = 0;
let text_bytes = 0;
let result = null;
for await (const m of query({ prompt: "go", options: { pathToClaudeCodeExecutable: FAKE } })) {
  if (m.type === "assistant") {
    messages++;
    for (const block of m.message.content) {
      if (block.type === "text") text_bytes += Buffer.byteLength(block.text, "utf8");
    }
  } else if (m.type === "system" && m.subtype === "init" && t_init === null) {
    t_init = now();
  } else if (m.type === "result") {
    t_result = now();
    result = m;
  }
}
const seconds = t_result - t_init;
report({
  driver: "stream_flood",
  ok: result !== null && !result.is_error && t_init !== null,
  messages,
  text_bytes,
  seconds,
  mb_per_s: text_bytes / 1e6 / seconds,
  msgs_per_s: messages / seconds,
});
