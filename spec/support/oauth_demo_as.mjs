// The TypeScript SDK's demo OAuth authorization server, for the OAuth specs of `claudelua mcp
// --http`:   node oauth_demo_as.mjs
// It is the SDK's own `setupAuthServer` (examples/server/demoInMemoryOAuthProvider.js) put
// together the same way (DemoInMemoryAuthProvider behind mcpAuthRouter: metadata, dynamic
// client registration, authorize, token; and its RFC 7662 `/introspect`), but listening on
// 127.0.0.1 and on a free port (setupAuthServer takes a fixed port and every interface).
// One test hook beside it: POST /test/revoke (token=...) forgets a token, as a revocation
// would, since the demo provider has no revocation endpoint.
// Prints one JSON line { issuer, introspection } once it listens; ends on SIGTERM or stdin EOF.
import http from "node:http";
import express from "express";
import { DemoInMemoryAuthProvider } from "@modelcontextprotocol/sdk/examples/server/demoInMemoryOAuthProvider.js";
import { mcpAuthRouter } from "@modelcontextprotocol/sdk/server/auth/router.js";

const server = http.createServer();
server.listen(0, "127.0.0.1", () => {
  const issuerUrl = new URL(`http://127.0.0.1:${server.address().port}`);
  const provider = new DemoInMemoryAuthProvider();
  const app = express();
  app.use(express.json());
  app.use(express.urlencoded());
  app.use(mcpAuthRouter({ provider, issuerUrl, scopesSupported: ["mcp:tools", "mcp:admin"] }));
  // the demo's introspection endpoint, as setupAuthServer defines it
  app.post("/introspect", async (req, res) => {
    try {
      const { token } = req.body;
      if (!token) {
        res.status(400).json({ error: "Token is required" });
        return;
      }
      const tokenInfo = await provider.verifyAccessToken(token);
      res.json({
        active: true,
        client_id: tokenInfo.clientId,
        scope: tokenInfo.scopes.join(" "),
        exp: tokenInfo.expiresAt,
        aud: tokenInfo.resource,
      });
    } catch (error) {
      res.status(401).json({ active: false, error: "Unauthorized",
        error_description: `Invalid token: ${error}` });
    }
  });
  app.post("/test/revoke", (req, res) => {
    res.json({ revoked: provider.tokens.delete(req.body.token) });
  });
  server.on("request", app);
  process.stdout.write(JSON.stringify({ issuer: issuerUrl.href,
    introspection: new URL("/introspect", issuerUrl).href }) + "\n");
});

const stop = () => {
  server.close(() => process.exit(0));
  server.closeAllConnections();
};
process.on("SIGTERM", stop);
process.stdin.on("end", stop);
process.stdin.resume();
