// The MCP Apps browser run of spec/e2e/mcp_apps_spec.lua:
//   node drive.mjs MCP_URL OUT_DIR [ERA ...]     (ERA: auto, legacy; default both)
// Bundles the spec's host page (host.js: ext-apps' AppBridge and the TypeScript SDK v2
// client) with esbuild, serves it on one origin (with /mcp passed through to MCP_URL, as a
// web host's backend would) and the sandbox proxy on another (its CSP header made from the
// view's _meta.ui.csp, as SEP-1865 says), starts headless Chromium once (Debian's, driven
// by playwright-core), and per era: opens the host, waits for the view to show the tool's
// result, reads its DOM, clicks "+1" on pears (the view calls `restock` through the host),
// reads the DOM again, checks what the view may not do (fetch, reach the host's page),
// and takes a screenshot. Prints one JSON line: { ERA: { host, before, after, ... } }.
import { createServer, request } from "node:http";
import { readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import * as esbuild from "esbuild";
import { chromium } from "playwright-core";

const here = dirname(fileURLToPath(import.meta.url));
const [mcpUrl, outDir, ...eras] = process.argv.slice(2);
if (eras.length === 0) eras.push("auto", "legacy");
const upstream = new URL(mcpUrl);

const bundle = await esbuild.build({
  entryPoints: [join(here, "host.js")], bundle: true, write: false, format: "esm",
  platform: "browser", target: "es2022", logLevel: "error",
});
const hostJs = bundle.outputFiles[0].text;
const hostHtml = readFileSync(join(here, "host.html"));
const sandboxHtml = readFileSync(join(here, "sandbox.html"));

// The view's CSP (SEP-1865, "Content Security Policy Enforcement"): the restrictive default
// without csp; the declared origins added otherwise.
function csp(param) {
  let c;
  try { c = param ? JSON.parse(param) : undefined; } catch { c = undefined; }
  if (!c) {
    return "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' "
      + "'unsafe-inline'; img-src 'self' data:; media-src 'self' data:; connect-src 'none'; "
      + "frame-src 'none'; object-src 'none'; base-uri 'self'";
  }
  const list = (k) => (Array.isArray(c[k]) ? c[k].join(" ") : "");
  const res = list("resourceDomains");
  return [`default-src 'none'`, `script-src 'self' 'unsafe-inline' ${res}`,
    `style-src 'self' 'unsafe-inline' ${res}`, `connect-src 'self' ${list("connectDomains")}`,
    `img-src 'self' data: ${res}`, `font-src 'self' ${res}`, `media-src 'self' data: ${res}`,
    `frame-src ${list("frameDomains") || "'none'"}`, "object-src 'none'",
    `base-uri ${list("baseUriDomains") || "'self'"}`].map((d) => d.trim()).join("; ");
}

function listen(handler) {
  const server = createServer(handler);
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => resolve(server));
  });
}

const hostServer = await listen((req, res) => {
  const url = new URL(req.url, "http://host");
  if (url.pathname === "/mcp" || url.pathname.startsWith("/mcp/")) {
    // passed through as it comes, streams included
    const headers = { ...req.headers, host: upstream.host };
    const up = request({ hostname: upstream.hostname, port: upstream.port,
      path: upstream.pathname + url.pathname.slice(4) + url.search, method: req.method,
      headers }, (ur) => {
      res.writeHead(ur.statusCode, ur.headers);
      ur.pipe(res);
    });
    up.on("error", () => res.destroy());
    res.on("close", () => up.destroy());
    req.pipe(up);
    return;
  }
  const files = { "/host.html": [hostHtml, "text/html"], "/host.js": [hostJs, "text/javascript"] };
  const f = files[url.pathname];
  if (!f) {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { "content-type": `${f[1]}; charset=utf-8`, "cache-control": "no-store" });
  res.end(f[0]);
});
const sandboxServer = await listen((req, res) => {
  const url = new URL(req.url, "http://sandbox");
  if (url.pathname !== "/sandbox.html") {
    res.writeHead(404).end();
    return;
  }
  res.writeHead(200, { "content-type": "text/html; charset=utf-8", "cache-control": "no-store",
    "content-security-policy": csp(url.searchParams.get("csp")) });
  res.end(sandboxHtml);
});
const hostOrigin = `http://127.0.0.1:${hostServer.address().port}`;
const sandboxUrl = `http://127.0.0.1:${sandboxServer.address().port}/sandbox.html`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium", headless: true,
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

const out = {};
try {
  for (const era of eras) {
    const page = await browser.newPage({ viewport: { width: 640, height: 360 } });
    const logs = [];
    page.on("console", (m) => { if (m.type() === "error") logs.push(m.text()); });
    page.on("pageerror", (e) => logs.push(String(e)));
    const r = { logs };
    out[era] = r;
    try {
      await page.goto(`${hostOrigin}/host.html?era=${era}&tool=inventory`
        + `&sandbox=${encodeURIComponent(sandboxUrl)}`);
      await page.waitForFunction(() => window.host?.ready, null, { timeout: 30000 });
      r.host = await page.evaluate(() => window.host);
      // the view: the frame inside the sandbox proxy's frame
      const view = page.frames().find((f) => f.parentFrame()?.url().startsWith(sandboxUrl));
      await view.waitForSelector('tr[data-item="pears"]', { timeout: 30000 });
      const state = () => view.evaluate(() => ({
        status: document.querySelector("#status").textContent,
        rows: [...document.querySelectorAll("tr")].map((tr) =>
          [tr.dataset.item, tr.querySelector(".count").textContent]),
        // the drawn width of each item's bar, in pixels
        bars: Object.fromEntries([...document.querySelectorAll("tr")].map((tr) =>
          [tr.dataset.item, tr.querySelector(".bar").getBoundingClientRect().width])),
      }));
      r.before = await state();
      r.answer = await page.textContent("#answer");
      await view.click('tr[data-item="pears"] button');
      await view.waitForFunction((old) => document.querySelector("#status").textContent !== old,
        r.before.status, { timeout: 30000 });
      r.after = await state();
      r.calls = await page.evaluate(() => window.host.calls);
      // what a view may not do: reach the network (connect-src 'none'), reach the host's page
      r.fetch = await view.evaluate(async (url) => {
        try {
          await fetch(url, { mode: "no-cors" });
          return "allowed";
        } catch (e) {
          return `blocked: ${e.name}`;
        }
      }, `${hostOrigin}/host.html`);
      r.top = await view.evaluate(() => {
        try {
          return `reached: ${window.top.document.title}`;
        } catch (e) {
          return `blocked: ${e.name}`;
        }
      });
      r.viewOrigin = await view.evaluate(() => window.location.origin);
      r.hostOrigin = hostOrigin;
      r.screenshot = join(outDir, `mcp-apps-${era}.png`);
      await page.screenshot({ path: r.screenshot });
    } catch (e) {
      r.error = String(e?.stack ?? e);
    } finally {
      await page.close();
    }
  }
} finally {
  await browser.close();
  hostServer.closeAllConnections();
  sandboxServer.closeAllConnections();
  hostServer.close();
  sandboxServer.close();
}
console.log(JSON.stringify(out));
