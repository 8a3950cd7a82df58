--- The TypeScript Agent SDK (pinned in bench/package.json) as an oracle: a function of it
-- called with JSON arguments in a Node process, its result decoded. The SDK is looked up in
-- bench/node_modules (`cd bench && npm ci`), then in node_modules.
local json = require "claude.json"
local harness = require "support.harness"

local M = {}

local function exists(path)
  local f = io.open(path, "rb")
  if f then f:close() end
  return f ~= nil
end

--- The SDK's entry (sdk.mjs), or nil when it is not installed.
function M.path()
  for _, dir in ipairs { harness.root .. "/bench/node_modules", harness.root .. "/node_modules" } do
    local p = dir .. "/@anthropic-ai/claude-agent-sdk/sdk.mjs"
    if exists(p) then return p end
  end
end

--- The SDK's version (its package.json), or nil.
function M.version()
  local p = M.path()
  if not p then return nil end
  local f = assert(io.open(p:gsub("sdk%.mjs$", "package.json"), "rb"))
  local v = json.decode(f:read("a")).version
  f:close()
  return v
end

M.undefined = "__undefined__"

local RUNNER = [[
import { pathToFileURL } from 'node:url';
import fs from 'node:fs';
const [sdkPath, callPath] = process.argv.slice(2);
const sdk = await import(pathToFileURL(sdkPath).href);
const { fn, args, env } = JSON.parse(fs.readFileSync(callPath, 'utf8'));
for (const [k, v] of Object.entries(env || {})) process.env[k] = v;
const value = await sdk[fn](...args.map((a) => (a === '__undefined__' ? undefined : a)));
process.stdout.write(JSON.stringify(value === undefined ? null : value));
]]

--- Calls the SDK's exported function `fn` with `args` (a list, JSON-encoded; `M.undefined`
-- is JavaScript's undefined); `env` sets variables of the Node process first. Returns the
-- decoded result; raises on failure.
function M.call(fn, args, env)
  local sdk = assert(M.path(), "the TypeScript Agent SDK is not installed (cd bench && npm ci)")
  local runner = harness.tempfile(RUNNER, ".mjs")
  local call = harness.tempfile(json.encode { fn = fn, args = json.array(args or {}),
    env = env and json.object(env) or json.object() }, ".json")
  local code, out, err = harness.sh("node " .. harness.quote(runner) .. " "
    .. harness.quote(sdk) .. " " .. harness.quote(call))
  os.remove(runner)
  os.remove(call)
  assert(code == 0, "the TypeScript SDK's " .. fn .. " failed: " .. err:sub(-1500))
  return json.decode(out)
end

return M
