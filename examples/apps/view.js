// The view's code: the App class of @modelcontextprotocol/ext-apps speaks to the host (the
// ui/initialize handshake, the tool's result, calls to the server's tools), and the page
// draws the inventory the Lua tool returned. build.mjs bundles it into view.html.
import { App } from "@modelcontextprotocol/ext-apps";

const app = new App({ name: "inventory-view", version: "1.0.0" });
const status = document.getElementById("status");
const rows = document.getElementById("items");

function cell(text, className) {
  const td = document.createElement("td");
  td.textContent = text;
  if (className) td.className = className;
  return td;
}

// One row per item: its name, its count, a bar, and a button that calls `restock` (a tool
// only views may call) through the host.
function row(item, most) {
  const tr = document.createElement("tr");
  tr.dataset.item = item.name;
  if (item.count === 0) tr.className = "empty";
  const meter = cell("", "meter");
  const bar = document.createElement("div");
  bar.className = "bar";
  bar.style.width = `${most > 0 ? (100 * item.count) / most : 0}%`;
  meter.append(bar);
  const button = document.createElement("button");
  button.textContent = "+1";
  button.title = `Restock ${item.name}`;
  button.addEventListener("click", async () => {
    button.disabled = true;
    try {
      render(await app.callServerTool({ name: "restock",
        arguments: { item: item.name, count: 1 } }));
    } catch (e) {
      status.textContent = `Restocking failed: ${e.message}`;
    } finally {
      button.disabled = false;
    }
  });
  const action = document.createElement("td");
  action.append(button);
  tr.append(cell(item.name), cell(String(item.count), "count"), meter, action);
  return tr;
}

// A result of `inventory` or `restock`: the Lua tool's table is its structuredContent.
function render(result) {
  const data = result.structuredContent;
  if (result.isError || !data) {
    status.textContent = result.content?.map((c) => c.text).join(" ") || "No inventory";
    return;
  }
  const most = Math.max(...data.items.map((i) => i.count));
  rows.replaceChildren(...data.items.map((i) => row(i, most)));
  status.textContent = `${data.total} units in stock, ${data.restocks} restocks so far`;
}

app.ontoolresult = render;
await app.connect();
