// The TypeScript SDK's MCP client with its OAuth provider against `claudelua mcp --http` with
// OAuth, the SDK's demo authorization server issuing the tokens:
//   node mcp_oauth_client.mjs MCP_URL AS_ISSUER
// MCP_URL serves `notes` (scope mcp:tools) and MCP_URL/admin serves `admin` (scope
// mcp:admin). The script:
//  1. connects without a provider: the server answers 401;
//  2. connects with the SDK's InMemoryOAuthClientProvider: the 401 starts the SDK's flow
//     (protected resource metadata, authorization server metadata, dynamic client
//     registration, authorization request with PKCE); the authorization redirect is followed
//     here, as a browser would, and `finishAuth(code)` exchanges the code for a token; the
//     next connection calls `whoami`, which returns the tool's `ctx.auth`;
//  3. connects to MCP_URL/admin with that token (scope mcp:tools): 403 insufficient_scope, and
//     the SDK asks for mcp:admin (step-up); once authorized, `whoami` there answers;
//  4. revokes the token at the authorization server (the demo's test hook): the next call
//     gets 401 invalid_token.
// Every HTTP exchange the SDK makes goes through a recording fetch; prints one JSON line with
// what was seen. Any unexpected failure exits 1 with the error on stderr.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError } from "@modelcontextprotocol/sdk/client/auth.js";
import { InMemoryOAuthClientProvider } from "@modelcontextprotocol/sdk/examples/client/simpleOAuthClientProvider.js";

const mcpUrl = new URL(process.argv[2]);
const adminUrl = new URL(process.argv[2] + "/admin");
const issuer = new URL(process.argv[3]);
const CALLBACK = "http://127.0.0.1:1/callback"; // never reached: the redirect is read here

const seen = []; // { method, url (path), status, www } of every exchange
const recordingFetch = async (url, init) => {
  const res = await fetch(url, init);
  const u = new URL(url instanceof Request ? url.url : url);
  seen.push({ method: init?.method ?? "GET", host: u.host, path: u.pathname,
    status: res.status, www: res.headers.get("www-authenticate") ?? undefined });
  return res;
};

let authorizationUrl;
const provider = new InMemoryOAuthClientProvider(CALLBACK, {
  client_name: "claudelua oauth spec",
  redirect_uris: [CALLBACK],
  grant_types: ["authorization_code", "refresh_token"],
  response_types: ["code"],
  token_endpoint_auth_method: "client_secret_post",
}, (url) => { authorizationUrl = url; });

function transport(url, withProvider = true) {
  return new StreamableHTTPClientTransport(url, { fetch: recordingFetch,
    authProvider: withProvider ? provider : undefined });
}

// The user agent's part: GET the authorization URL, read the code off the redirect.
async function authorize() {
  const res = await fetch(authorizationUrl, { redirect: "manual" });
  const location = res.headers.get("location");
  if (res.status !== 302 || !location) throw new Error(`authorize answered ${res.status}`);
  const code = new URL(location).searchParams.get("code");
  if (!code) throw new Error(`no code in the redirect: ${location}`);
  return code;
}

// Connects; on UnauthorizedError authorizes and connects again. -> { client, rounds }
async function connectWithAuth(url) {
  for (let round = 1; round <= 3; round++) {
    const t = transport(url);
    const client = new Client({ name: "oauth-spec", version: "1.0.0" });
    try {
      await client.connect(t);
      return { client, rounds: round };
    } catch (error) {
      if (!(error instanceof UnauthorizedError)) throw error;
      await t.finishAuth(await authorize());
    }
  }
  throw new Error("still unauthorized after 3 rounds");
}

async function whoami(client) {
  const r = await client.callTool({ name: "whoami", arguments: {} });
  return JSON.parse(r.content[0].text);
}

const out = {};
try {
  // 1. no provider
  try {
    await new Client({ name: "oauth-spec", version: "1.0.0" }).connect(transport(mcpUrl, false));
    out.no_provider = "connected";
  } catch (error) {
    out.no_provider = { code: error.code, unauthorized: error instanceof UnauthorizedError };
  }
  // 2. the whole flow
  let mark = seen.length;
  const a = await connectWithAuth(mcpUrl);
  out.flow = seen.slice(mark).map((s) => `${s.method} ${s.host === mcpUrl.host ? "mcp" : "as"}`
    + `${s.path} ${s.status}`);
  out.first_www = seen[mark + 0].www;
  out.authorization = Object.fromEntries(authorizationUrl.searchParams);
  delete out.authorization.code_challenge;
  delete out.authorization.state;
  out.tokens = { scope: provider.tokens().scope, type: provider.tokens().token_type };
  out.whoami = await whoami(a.client);
  out.rounds = a.rounds;
  // 3. a token without the scope of /mcp/admin: 403, then step-up
  mark = seen.length;
  authorizationUrl = undefined;
  const b = await connectWithAuth(adminUrl);
  const forbidden = seen.slice(mark).find((s) => s.status === 403);
  out.step_up = { status: forbidden?.status, www: forbidden?.www,
    scope: authorizationUrl && authorizationUrl.searchParams.get("scope"),
    resource: authorizationUrl && authorizationUrl.searchParams.get("resource"),
    whoami: await whoami(b.client) };
  // 4. revoked at the authorization server
  const form = new URLSearchParams({ token: provider.tokens().access_token });
  const revoked = await (await fetch(new URL("/test/revoke", issuer), { method: "POST",
    body: form })).json();
  mark = seen.length;
  try {
    await whoami(b.client);
    out.revoked = "served";
  } catch (error) {
    const refused = seen.slice(mark).find((s) => s.status === 401);
    out.revoked = { hook: revoked.revoked, status: refused?.status, www: refused?.www,
      error: error.constructor.name };
  }
  await a.client.close();
  await b.client.close().catch(() => {});
  process.stdout.write(JSON.stringify(out) + "\n");
  process.exit(0);
} catch (error) {
  process.stderr.write(`${error.stack ?? error}\nseen: ${JSON.stringify(seen)}\n`);
  process.exit(1);
}
