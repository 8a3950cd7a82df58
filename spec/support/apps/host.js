// A small web host of MCP Apps for the spec, on ext-apps' AppBridge and the TypeScript SDK
// v2 client: connects to the MCP server (through the page's own origin, /mcp, as a web
// host's backend would), calls the tool, reads its view, renders it in the sandbox proxy's
// inner iframe, and lets the view call the server's tools within their visibility.
// Its query: ?era=auto|legacy&sandbox=<the sandbox proxy's URL>&tool=<name>.
// What it saw is in window.host (the spec reads it); drive.mjs bundles it with esbuild.
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { AppBridge, PostMessageTransport, RESOURCE_MIME_TYPE, getToolUiResourceUri }
  from "@modelcontextprotocol/ext-apps/app-bridge";

const query = new URLSearchParams(window.location.search);
const host = { ready: false, calls: [], refused: [], errors: [] };
window.host = host;
const UI = "io.modelcontextprotocol/ui";
const INFO = { name: "claudelua-spec-host", version: "1.0.0" };

const visible = (tool, who) => {
  const v = tool._meta?.ui?.visibility;
  return !Array.isArray(v) || v.includes(who);
};

async function main() {
  const client = new Client(INFO, {
    capabilities: { extensions: { [UI]: { mimeTypes: [RESOURCE_MIME_TYPE] } } },
    versionNegotiation: { mode: query.get("era") ?? "auto" },
  });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", window.location.href)));
  host.protocol = client.getNegotiatedProtocolVersion();
  host.extension = client.getServerCapabilities()?.extensions?.[UI] ?? null;
  const { tools } = await client.listTools();
  const byName = new Map(tools.map((t) => [t.name, t]));
  // what the model would be offered: the tools whose visibility includes "model"
  host.modelTools = tools.filter((t) => visible(t, "model")).map((t) => t.name);
  const tool = byName.get(query.get("tool"));
  const uri = getToolUiResourceUri(tool);
  host.resourceUri = uri;

  const result = client.callTool({ name: tool.name, arguments: {} });
  const read = await client.readResource({ uri });
  const content = read.contents[0];
  if (content.mimeType !== RESOURCE_MIME_TYPE) throw new Error(`not a view: ${content.mimeType}`);
  const ui = content._meta?.ui ?? {};

  // the sandbox proxy, on its own origin, with the view's CSP (set by the server from ?csp=)
  const iframe = document.getElementById("view");
  iframe.setAttribute("sandbox", "allow-scripts allow-same-origin allow-forms");
  const proxyReady = new Promise((resolve) => {
    window.addEventListener("message", function ready(e) {
      if (e.source === iframe.contentWindow
        && e.data?.method === "ui/notifications/sandbox-proxy-ready") {
        window.removeEventListener("message", ready);
        resolve();
      }
    });
  });
  const sandbox = new URL(query.get("sandbox"));
  if (ui.csp) sandbox.searchParams.set("csp", JSON.stringify(ui.csp));
  iframe.src = sandbox.href;
  await proxyReady;

  const bridge = new AppBridge(client, INFO, {
    openLinks: {}, serverTools: client.getServerCapabilities()?.tools,
    serverResources: client.getServerCapabilities()?.resources, logging: {},
  }, { hostContext: { theme: "light", displayMode: "inline", platform: "web",
    toolInfo: { tool }, containerDimensions: { width: 560, maxHeight: 400 } } });
  const initialized = new Promise((resolve) => { bridge.oninitialized = resolve; });
  bridge.onsizechange = ({ height }) => {
    if (height !== undefined) iframe.style.height = `${Math.min(height, 400)}px`;
  };
  await bridge.connect(new PostMessageTransport(iframe.contentWindow, iframe.contentWindow));
  // a view calls only its own server's tools whose visibility includes "app" (the host's
  // duty in SEP-1865); the calls go through the bridge's client
  bridge.oncalltool = async (params, extra) => {
    const t = byName.get(params.name);
    if (!t || !visible(t, "app")) {
      host.refused.push(params.name);
      throw new Error(`tool ${params.name} is not callable by the view`);
    }
    host.calls.push({ name: params.name, arguments: params.arguments });
    return client.callTool(params, { signal: extra.mcpReq.signal });
  };
  await bridge.sendSandboxResourceReady({ html: content.text, csp: ui.csp,
    permissions: ui.permissions });
  await initialized;
  await bridge.sendToolInput({ arguments: {} });
  const answer = await result;
  document.getElementById("answer").textContent = answer.content.map((c) => c.text).join("");
  await bridge.sendToolResult(answer);
  host.ready = true;
}

main().catch((e) => {
  host.errors.push(String(e?.stack ?? e));
  host.ready = true;
});
