-- A replicated `claudelua mcp --http` for a spec: redis-server, N replicas sharing their tasks
-- through it (`--tasks redis://...`, one requestState key) and HAProxy in front, round-robin
-- with no stickiness but the legacy era's Mcp-Session-Id, each started here on 127.0.0.1 on
-- a free port (docs/scaling.md gives the same configuration).
local claude = require "claude"
local core = require "claude.core"
local process = require "claude.process"
local http = require "claude.http.client"
local http_server = require "claude.http.server"
local harness = require "support.harness"
local mcp_http = require "support.mcp_http"

local M = {}

--- What is missing to run a cluster (a message), or nil.
function M.missing()
  for _, exe in ipairs { "redis-server", "haproxy" } do
    if not os.execute("command -v " .. exe .. " >/dev/null 2>&1") then
      return exe .. " is not installed (Debian: apt-get install " .. exe .. "); spec skipped"
    end
  end
  return nil
end

--- A free TCP port of 127.0.0.1 (one a listener just had, given back).
function M.free_port()
  local srv = assert(http_server.listen { host = "127.0.0.1", port = 0,
    on_request = function(_, res) res:respond(404, {}, "") end })
  local port = srv:port()
  srv:close()
  return port
end

--- The HAProxy configuration of docs/scaling.md for `backends` ({node, port}).
function M.haproxy_config(port, backends)
  local lines = {
    "global", "  maxconn 4096",
    "defaults", "  mode http", "  timeout connect 2s", "  timeout client 1h",
    "  timeout server 1h", "  option http-buffer-request", "  retries 3",
    "  option redispatch 1",
    "frontend mcp", "  bind 127.0.0.1:" .. port, "  default_backend claudelua",
    "backend claudelua", "  balance roundrobin",
    "  stick-table type string len 64 size 1m expire 1h",
    "  stick on req.hdr(mcp-session-id)",
    "  stick store-response res.hdr(mcp-session-id)",
  }
  for _, b in ipairs(backends) do
    lines[#lines + 1] = string.format("  server %s 127.0.0.1:%d check inter 500ms", b.node,
      b.port)
  end
  return table.concat(lines, "\n") .. "\n"
end

local Cluster = {}
Cluster.__index = Cluster

local function write(path, text)
  local f = assert(io.open(path, "w"))
  f:write(text)
  f:close()
end

--- Start redis-server (its own port, no persistence: a restart starts empty).
function Cluster:start_redis()
  self.redis = assert(process.spawn { "redis-server", args = { "--port", self.redis_port,
    "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", self.dir },
    stdout = "ignore", stderr = "collect" })
  for _ = 1, 200 do -- until it answers
    local p = io.popen("redis-cli -p " .. self.redis_port .. " ping 2>/dev/null")
    local out = p and p:read("a") or ""
    if p then p:close() end
    if out:find("PONG") then return end
    claude.sleep(0.05)
  end
  error("redis-server did not start")
end

function Cluster:stop_redis()
  self.redis:signal("kill")
  self.redis:wait(10)
  self.redis:close()
  self.redis = nil
end

--- Start replica `node` (a new one, or again after it was killed).
function Cluster:start_replica(node)
  local args = { "--state-key-file", self.key, "--node", node, "--tasks", self.redis_url,
    "--task-lease", tostring(self.lease) }
  for _, a in ipairs(self.extra or {}) do args[#args + 1] = a end
  args[#args + 1] = self.tools
  for _, a in ipairs(self.tool_args or {}) do args[#args + 1] = a end
  args[#args + 1] = node
  local p, url, lines = mcp_http.start(args)
  self.replicas[node] = { process = p, url = url, lines = lines,
    port = tonumber(url:match(":(%d+)/")) }
  return self.replicas[node]
end

--- Start the cluster: `opts.tools` (the tools file's text, or `tools_file` its path; its
-- arguments `tool_args`, then the
-- node's name), `opts.nodes` ({"a", "b", "c"}), `opts.lease` (seconds), `opts.extra` (more
-- flags of each replica).
function M.start(opts)
  local self = setmetatable({ dir = harness.tempdir(), replicas = {}, nodes = opts.nodes,
    lease = opts.lease or 2, extra = opts.extra, tool_args = opts.tool_args }, Cluster)
  self.tools = opts.tools_file or self.dir .. "/tools.lua"
  if not opts.tools_file then write(self.tools, opts.tools) end
  self.key = self.dir .. "/state.key"
  write(self.key, core.base64url_encode(assert(core.random_bytes(32))) .. "\n")
  self.redis_port = M.free_port()
  self.redis_url = "redis://127.0.0.1:" .. self.redis_port
  self:start_redis()
  local backends = {}
  for _, node in ipairs(self.nodes) do
    local r = self:start_replica(node)
    backends[#backends + 1] = { node = node, port = r.port }
  end
  local port = M.free_port()
  write(self.dir .. "/haproxy.cfg", M.haproxy_config(port, backends))
  self.lb = assert(process.spawn { "haproxy", args = { "-db", "-f", self.dir .. "/haproxy.cfg" },
    stdout = "ignore", stderr = "collect" })
  self.url = "http://127.0.0.1:" .. port .. "/mcp"
  for _ = 1, 200 do -- until haproxy answers (a 4xx of ours through it, or anything)
    local resp, err = http.request { url = self.url, method = "GET", timeout = 1 }
    if resp or (err and err.kind == "http") then break end
    claude.sleep(0.05)
  end
  return self
end

--- Stop everything (what was killed already is skipped).
function Cluster:stop()
  if self.lb then
    self.lb:signal("term")
    self.lb:wait(10)
    self.lb:close()
  end
  for _, r in pairs(self.replicas) do r.process:close() end
  if self.redis then self:stop_redis() end
  os.execute("rm -rf " .. harness.quote(self.dir))
end

return M
