// Start-up as a Node client sees it (bench/startup): the TypeScript SDK v2's Client
// (@modelcontextprotocol/client, StdioClientTransport) connects to `BIN mcp TOOLS`, timed
// from connect() (the spawn) to its end (the initialize answer read, initialized sent).
// `node bench/ts/startup_client.mjs ROUNDS TOOLS BIN...`: one connect first that is not
// timed (Node's own warm-up), then ROUNDS rounds, each starting every BIN once in turn.
// Prints one JSON line per BIN: {"bin":...,"ms":[...]}.
import { Client } from "@modelcontextprotocol/client";
import { StdioClientTransport } from "@modelcontextprotocol/client/stdio";

const [roundsArg, tools, ...bins] = process.argv.slice(2);
const rounds = Number(roundsArg);

async function start(bin) {
  const client = new Client({ name: "startup", version: "1.0.0" },
    { versionNegotiation: { mode: "legacy" } });
  const t0 = performance.now();
  await client.connect(new StdioClientTransport({ command: bin, args: ["mcp", tools],
    stderr: "inherit" }));
  const ms = performance.now() - t0;
  await client.close();
  return ms;
}

await start(bins[0]);
const times = bins.map(() => []);
for (let r = 0; r < rounds; r++) {
  for (let b = 0; b < bins.length; b++) times[b].push(await start(bins[b]));
}
bins.forEach((bin, b) => console.log(JSON.stringify({ bin, ms: times[b] })));
