// Signed access tokens for the JWT spec of `claudelua mcp --http`, made with jose (the
// library of the TypeScript SDK's tree):   node jwt_mint.mjs ISSUER AUDIENCE
// Prints one JSON line: { jwks: the public key set, tokens: { name: JWT } } with tokens
// `good` (scope mcp:tools, an hour to live), `expired`, `other_issuer`, `other_audience`,
// `no_scope`, `bad_signature` (signed by a key not in the set) and `none` (alg "none").
import { generateKeyPair, exportJWK, SignJWT } from "jose";

const [issuer, audience] = process.argv.slice(2);
const { publicKey, privateKey } = await generateKeyPair("RS256");
const stranger = (await generateKeyPair("RS256")).privateKey;
const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256", use: "sig" };
const now = Math.floor(Date.now() / 1000);

async function sign(claims, key = privateKey) {
  return new SignJWT({ scope: "mcp:tools", client_id: "app", ...claims })
    .setProtectedHeader({ alg: "RS256", kid: "k1", typ: "at+jwt" })
    .setIssuer(claims.iss ?? issuer).setAudience(claims.aud ?? audience).setSubject("jwt-user")
    .setIssuedAt(now).setExpirationTime(claims.exp ?? now + 3600).sign(key);
}

const b64 = (o) => Buffer.from(JSON.stringify(o)).toString("base64url");
const tokens = {
  good: await sign({}),
  expired: await sign({ exp: now - 60 }),
  other_issuer: await sign({ iss: "https://other.example" }),
  other_audience: await sign({ aud: "https://other.example/mcp" }),
  no_scope: await sign({ scope: "other" }),
  bad_signature: await sign({}, stranger),
  none: `${b64({ alg: "none", typ: "JWT" })}.${b64({ iss: issuer, aud: audience,
    sub: "jwt-user", scope: "mcp:tools", exp: now + 3600 })}.`,
};
process.stdout.write(JSON.stringify({ jwks: { keys: [jwk] }, tokens }) + "\n");
