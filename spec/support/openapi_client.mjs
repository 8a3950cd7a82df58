// The TypeScript SDK's client (@modelcontextprotocol/sdk) over stdio against the OpenAPI
// tools `claudelua mcp` serves (spec/support/openapi_tools.lua):
//   node openapi_client.mjs COMMAND ARGS...
// Lists the tools and calls three of them; prints one JSON line with what it saw.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const [command, ...args] = process.argv.slice(2);
const client = new Client({ name: 'openapi-spec', version: '1.0.0' });
await client.connect(new StdioClientTransport({ command, args, stderr: 'inherit' }));
const { tools } = await client.listTools();
const seen = {
  tools: tools.map((t) => t.name).sort(),
  addPetSchema: tools.find((t) => t.name === 'addPet').inputSchema,
};
seen.listPets = await client.callTool({ name: 'listPets', arguments: { limit: 2, tags: ['dog'] } });
seen.addPet = await client.callTool({
  name: 'addPet', arguments: { name: 'Rex', status: 'available', category: { name: 'dogs' } },
});
seen.createTodo = await client.callTool({
  name: 'createTodo', arguments: { title: 'Write docs', due: null, priority: 2 },
});
await client.close();
process.stdout.write(JSON.stringify(seen) + '\n');
