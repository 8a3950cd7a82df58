// The `jose` library (node_modules/jose) as a peer for the JWT specs: one
// JSON request per line on stdin, one JSON answer per line on stdout, and an
// HTTP server that serves a JWK set the specs publish. Prints
// { "port": n } first; exits when stdin ends.
//
// Requests:
//   { op: "keypair", alg }                 -> { id, jwk } (jwk: the public key)
//   { op: "secret", k }                    -> { id } (an HMAC key from base64url)
//   { op: "sign", id, alg, claims, kid? }  -> { token }
//   { op: "verify", token, jwk, alg?, issuer?, audience? }
//                                          -> { ok, payload?, header?, code?, message? }
//   { op: "verify_remote", token, url, issuer?, audience? } -> as verify, keys
//                                             fetched from url (createRemoteJWKSet)
//   { op: "publish", jwks }                -> { ok } (served at /jwks.json)
//   { op: "hits" }                         -> { hits } (requests for /jwks.json)
import http from "node:http";
import readline from "node:readline";
import * as jose from "jose";

const keys = new Map(); // id -> private key (CryptoKey or Uint8Array)
let nextId = 1;
let published = { keys: [] };
let hits = 0;

const server = http.createServer((req, res) => {
  if (req.url === "/jwks.json") {
    hits++;
    res.writeHead(200, { "content-type": "application/jwk-set+json" });
    res.end(JSON.stringify(published));
  } else {
    res.writeHead(404);
    res.end();
  }
});

function result(promise) {
  return promise.then(
    (r) => ({ ok: true, payload: r.payload, header: r.protectedHeader }),
    (e) => ({ ok: false, code: e.code, message: e.message }),
  );
}

async function handle(req) {
  switch (req.op) {
    case "keypair": {
      const { publicKey, privateKey } = await jose.generateKeyPair(req.alg, { extractable: true });
      const id = String(nextId++);
      keys.set(id, privateKey);
      return { id, jwk: await jose.exportJWK(publicKey) };
    }
    case "secret": {
      const id = String(nextId++);
      keys.set(id, jose.base64url.decode(req.k));
      return { id };
    }
    case "sign": {
      const header = { alg: req.alg, typ: "JWT" };
      if (req.kid) header.kid = req.kid;
      const token = await new jose.SignJWT(req.claims).setProtectedHeader(header).sign(keys.get(req.id));
      return { token };
    }
    case "verify": {
      const key = await jose.importJWK(req.jwk, req.alg);
      return result(jose.jwtVerify(req.token, key, { issuer: req.issuer, audience: req.audience }));
    }
    case "verify_remote": {
      const set = jose.createRemoteJWKSet(new URL(req.url));
      return result(jose.jwtVerify(req.token, set, { issuer: req.issuer, audience: req.audience }));
    }
    case "publish":
      published = req.jwks;
      return { ok: true };
    case "hits":
      return { hits };
    default:
      throw new Error("unknown op " + req.op);
  }
}

server.listen(0, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + "\n");
  const lines = readline.createInterface({ input: process.stdin });
  // one request at a time, answered in order
  let chain = Promise.resolve();
  lines.on("line", (line) => {
    chain = chain.then(async () => {
      let answer;
      try {
        answer = await handle(JSON.parse(line));
      } catch (e) {
        answer = { error: String(e && e.message) };
      }
      process.stdout.write(JSON.stringify(answer) + "\n");
    });
  });
  lines.on("close", () => chain.then(() => server.close(() => process.exit(0))));
});
