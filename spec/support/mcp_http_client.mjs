// The TypeScript SDK's Streamable HTTP client against `claudelua mcp --http`:
//   node mcp_http_client.mjs URL
// connects, lists the tools, calls `add` (answered with JSON) and `count` with a progress
// token (answered with an SSE stream of progress notifications), opens a second client on the
// same server concurrently, terminates the session (DELETE), and prints one JSON line with
// what it saw. Any failure exits 1 with the error on stderr.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const url = new URL(process.argv[2]);

async function connect() {
  const client = new Client({ name: "sdk-spec", version: "1.0.0" });
  const transport = new StreamableHTTPClientTransport(url);
  await client.connect(transport);
  return { client, transport };
}

try {
  const a = await connect();
  const b = await connect();
  const tools = (await a.client.listTools()).tools.map((t) => t.name).sort();
  const progress = [];
  const [sum, counted, echoed] = await Promise.all([
    a.client.callTool({ name: "add", arguments: { a: 20, b: 22 } }),
    a.client.callTool({ name: "count", arguments: { n: 3 } }, undefined, {
      onprogress: (p) => progress.push([p.progress, p.total, p.message]),
    }),
    b.client.callTool({ name: "add", arguments: { a: 1, b: 2 } }),
  ]);
  const session = a.transport.sessionId;
  await a.transport.terminateSession();
  await a.client.close();
  await b.client.close();
  console.log(JSON.stringify({
    tools, session, progress, sum: sum.content[0].text, counted: counted.content[0].text,
    other: echoed.content[0].text, protocol: a.transport.protocolVersion,
  }));
} catch (err) {
  console.error(err?.stack ?? String(err));
  process.exit(1);
}
