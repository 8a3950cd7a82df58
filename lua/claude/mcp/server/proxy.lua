--- `claudelua mcp --proxy TARGET`: a remote MCP server served as a local one. TARGET is an
-- `http(s)://` URL (Streamable HTTP, or the HTTP+SSE transport of 2024-11-05) or a command
-- and its arguments (stdio); a `claude.mcp` client connects to it (its OAuth with `--proxy-oauth`,
-- static headers with `--proxy-header`) and an empty server mounts it with no prefix
-- (claude.mcp.mount): every tool, resource, template, prompt and completion of the remote,
-- its list changes and resource updates, served over stdio or `--http` in both eras; the
-- remote's requests during a call (sampling, elicitation, roots) are its caller's to answer.
-- @module claude.mcp.server.proxy
local tool = require "claude.mcp.tool"
local mcp = require "claude.mcp"

local M = {}

local function is_url(target)
  return target:find("^[Hh][Tt][Tt][Pp][Ss]?://") ~= nil
end
M.is_url = is_url

-- The client's options for the parsed command line `o` (`file` is the target).
local function connect_options(o)
  -- the remote's sampling, elicitation and roots requests go to the client of the call
  local opts = { name = "proxied", timeout = o.proxy_timeout, forward_requests = true }
  if is_url(o.file) then
    opts.url = o.file
    if o.headers then opts.headers = o.headers end
    if o.oauth then
      local oauth = require "claude.oauth"
      local lb = assert(oauth.loopback())
      opts.auth = { client_name = "claudelua mcp --proxy", redirect_uri = lb.redirect_uri,
        on_authorize = lb.on_authorize,
        store = o.token_store and oauth.file_store(o.token_store) or nil }
    end
  else
    opts.command, opts.args = o.file, o.args
  end
  return opts
end

--- Connects to the target of `o` and makes the server that serves it.
-- @tparam table o what claude.mcp.server.command parsed
-- @return `{ {name, server} }` (command's shape) | nil, message
function M.load(o)
  local client, err = mcp.connect(connect_options(o))
  if not client then
    return nil, string.format("--proxy %s: %s", o.file, tostring(err and err.message or err))
  end
  local info = client.server_info
  local name = type(info.name) == "string" and info.name:gsub("[^%w_%-]", "_"):sub(1, 64)
  if not name or name == "" then name = "proxy" end
  local opts = { version = type(info.version) == "string" and info.version or nil,
    instructions = client.instructions }
  -- what the remote says of itself, when it passes our checks (claude.mcp.metadata)
  local meta = { title = info.title, description = info.description,
    website_url = info.websiteUrl }
  local ok, server = pcall(tool.server, name, {}, setmetatable(meta, { __index = opts }))
  if not ok then server = tool.server(name, {}, opts) end
  server:mount("", client)
  server.proxied = client
  return { { name, server } }
end

return M
