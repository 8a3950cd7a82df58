// Shared by the TypeScript-SDK drivers: where the fake CLI is, peak RSS, one JSON line out.
import { readFileSync } from "node:fs";
import { createSdkMcpServer, tool } from "@anthropic-ai/claude-agent-sdk";
import { z } from "zod";

export const FAKE = process.env.CLAUDELUA_BENCH_FAKE;
if (!FAKE) {
  console.error("CLAUDELUA_BENCH_FAKE must name the fake CLI (bench/run sets it)");
  process.exit(2);
}

// Peak resident set of this process alone (the fake CLI is a separate process, not counted).
export function peakRssKb() {
  const m = /VmHWM:\s+(\d+)/.exec(readFileSync("/proc/self/status", "utf8"));
  return m ? Number(m[1]) : null;
}

export function now() {
  return performance.now() / 1000;
}

// The `calc` server with the one tool the fake calls: add(a, b) -> text of the sum.
export function calcServer() {
  return createSdkMcpServer({
    name: "calc",
    version: "1.0.0",
    tools: [
      tool("add", "Add two numbers", { a: z.number(), b: z.number() }, async ({ a, b }) => ({
        content: [{ type: "text", text: String(a + b) }],
      })),
    ],
  });
}

export function report(obj) {
  process.stdout.write(JSON.stringify({ sdk: "ts", peak_rss_kb: peakRssKb(), ...obj }) + "\n");
}
