--- Composition: `server:mount(prefix, other)` serves another server's tools, resources,
-- resource templates, prompts and completions as the server's own, under a prefix. `other`
-- is a `claude.server` (a local one: its items are shared, a call costs what it costs there)
-- or a client of `claude.mcp` (a remote one, over stdio or HTTP, its OAuth the client's:
-- every request is forwarded through it, with its timeouts and sizes).
--
-- Names: a tool or prompt `name` becomes `prefix_name`; a URI `scheme://rest` becomes
-- `scheme://prefix/rest` (`scheme:rest` without `//`: `scheme:prefix/rest`), in resources,
-- resource templates, completion refs and resource updates, and back again on the way in.
-- An empty prefix keeps every name (`claudelua mcp --proxy`).
--
-- The mounted server's changes pass through: its list changes replace its items in the
-- server (whose clients get `list_changed`), its resource updates reach the server's
-- subscribers with their URIs rewritten; a subscription to a remote resource is forwarded.
-- A plain server (nothing mounted) runs none of this: the items are the server's own.
-- Over 600 lines: one concept, each primitive's namespacing beside the others' (local and
-- remote sources), which read best side by side.
-- @module claude.mcp.mount
local async = require "claude.async"
local errors = require "claude.errors"
local json = require "claude.json"
local content = require "claude.mcp.content"
local forward = require "claude.mcp.forward"
local uri_template = require "claude.mcp.uri_template"

local M = {}

local misuse, public, typename = errors.misuse, errors.public, errors.typename
-- claude.mcp.tool, handed in by its server:mount and server:unmount (the two modules would
-- otherwise require each other), with the classes of the items it makes
local tool, classes
local fmt = string.format

-- The server's lists, each with its key field (claude.mcp.tool's)
local LISTS = { tools = "tool_list", resources = "resource_list",
  resource_templates = "resource_template_list", prompts = "prompt_list",
  completions = "completion_list" }
local KEYS = { tools = "name", resources = "uri", resource_templates = "uri_template",
  prompts = "name", completions = "key" }
local KINDS = { "tools", "resources", "resource_templates", "prompts", "completions" }

local function warn(m, f, ...)
  io.stderr:write(fmt("claude: mount '%s' of server '%s': %s\n", m.prefix, m.server.name,
    f:format(...)))
end

---------------------------------------------------------------------------------------------
-- Names and URIs
---------------------------------------------------------------------------------------------

local function name_in(prefix, name)
  if prefix == "" then return name end
  return ((prefix .. "_" .. name):gsub("[^%w_%-]", "_"):sub(1, 64))
end

local SCHEME = "^([%a][%w+.%-]*:)(/?/?)(.*)$"

--- The server's URI for the mounted server's `uri` (nil: no scheme, it cannot be told apart).
-- @tparam string prefix
-- @tparam string uri
-- @treturn string|nil
function M.uri_in(prefix, uri)
  if prefix == "" then return uri end
  local scheme, slashes, rest = uri:match(SCHEME)
  if not scheme then return nil end
  return scheme .. slashes .. prefix .. "/" .. rest
end

--- The mounted server's URI for the server's `uri` (nil: not one of the mount's).
-- @tparam string prefix
-- @tparam string uri
-- @treturn string|nil
function M.uri_out(prefix, uri)
  if prefix == "" then return uri end
  local scheme, slashes, rest = uri:match(SCHEME)
  if not scheme or rest:sub(1, #prefix + 1) ~= prefix .. "/" then return nil end
  return scheme .. slashes .. rest:sub(#prefix + 2)
end
local uri_in, uri_out = M.uri_in, M.uri_out

local function copy(t)
  local c = {}
  for k, v in pairs(t) do c[k] = v end
  return c
end

-- The server's URI for a URI in the mounted server's results (a link, an embedded
-- resource, a read's contents): rewritten when it is the mounted server's, that is of a
-- scheme its resources or templates use (a link to `https://example.com` elsewhere stays).
local function link_in(m, uri)
  if type(uri) ~= "string" then return uri end
  local scheme = uri:match("^([%a][%w+.%-]*):")
  if not (scheme and m.schemes[scheme:lower()]) then return uri end
  return uri_in(m.prefix, uri) or uri
end

-- A content block with its resource URI the server's (a link, an embedded resource).
local function block_in(m, b)
  if type(b) ~= "table" then return b end
  if b.type == "resource_link" and type(b.uri) == "string" then
    b = copy(b)
    b.uri = link_in(m, b.uri)
  elseif b.type == "resource" and type(b.resource) == "table"
    and type(b.resource.uri) == "string" then
    b = copy(b)
    b.resource = copy(b.resource)
    b.resource.uri = link_in(m, b.resource.uri)
  end
  return b
end

-- The CallToolResult `r` of a mounted tool (remote or local) with its links the server's.
local function result_in(m, r)
  if type(r.content) ~= "table" then return r end
  local blocks = json.array()
  for i, b in ipairs(r.content) do blocks[i] = block_in(m, b) end
  r.content = blocks
  return r
end

-- A GetPromptResult of the mounted server with its messages' links the server's.
local function messages_in(m, r)
  if m.prefix ~= "" and type(r.messages) == "table" then
    for _, msg in ipairs(r.messages) do
      if type(msg) == "table" then msg.content = block_in(m, msg.content) end
    end
  end
  return content.finished_result(r)
end

-- A ReadResourceResult of the mounted server with its contents' URIs the server's.
local function contents_in(prefix, r)
  if prefix ~= "" and type(r.contents) == "table" then
    r = copy(r)
    local contents = json.array()
    for i, c in ipairs(r.contents) do
      if type(c) == "table" and type(c.uri) == "string" then
        c = copy(c)
        c.uri = uri_in(prefix, c.uri) or c.uri
      end
      contents[i] = c
    end
    r.contents = contents
  end
  return content.finished_result(r)
end

-- The schemes of the mounted server's resources and templates (link_in's).
local function note_schemes(m, what, uris)
  local set = {}
  for _, u in ipairs(uris) do
    local scheme = u:match("^([%a][%w+.%-]*):")
    if scheme then set[scheme:lower()] = true end
  end
  m.scheme_sets[what] = set
  local all = {}
  for _, each in pairs(m.scheme_sets) do
    for sch in pairs(each) do all[sch] = true end
  end
  m.schemes = all
end

-- A listing's `_meta` with the URI of its MCP Apps view rewritten (both spellings).
local function view_meta(prefix, meta)
  if type(meta) ~= "table" then return meta end
  local ui, flat = meta.ui, meta["ui/resourceUri"]
  if not (type(ui) == "table" and type(ui.resourceUri) == "string")
    and type(flat) ~= "string" then
    return meta
  end
  meta = copy(meta)
  if type(ui) == "table" and type(ui.resourceUri) == "string" then
    meta.ui = copy(ui)
    meta.ui.resourceUri = uri_in(prefix, ui.resourceUri) or ui.resourceUri
  end
  if type(flat) == "string" then meta["ui/resourceUri"] = uri_in(prefix, flat) or flat end
  return meta
end

---------------------------------------------------------------------------------------------
-- A local server's items: shared, renamed
---------------------------------------------------------------------------------------------

local from_server = {}

function from_server.tools(m)
  local child, out = m.source, {}
  for _, t in ipairs(child.tool_list) do
    local c = setmetatable(copy(t), getmetatable(t))
    c.name, c.view, c.report_error = name_in(m.prefix, t.name), nil, nil
    c.budget = t.budget or child.budget
    c.listing = copy(t.listing)
    c.listing.name, c.listing._meta = c.name, view_meta(m.prefix, t.listing._meta)
    local execute, state = t.execute, child.state
    if state ~= nil then -- its tools see their own server's state
      c.execute = function(args, ctx)
        if ctx then ctx.state = state end
        return execute(args, ctx)
      end
    end
    if m.prefix ~= "" then -- its results' links the server's, as a remote's are
      local run = c.execute
      c.execute = function(args, ctx)
        local r = content.result(t, true, run(args, ctx))
        if type(r) ~= "table" or r.content == nil then return r end
        return content.finished_result(result_in(m, r))
      end
    end
    out[#out + 1] = c
  end
  return out
end

-- A read of the server's URI reads the mounted server's (`r`, whose read is `read`); its
-- contents' URIs are the server's.
local function local_read(prefix, r, read)
  if prefix == "" then return read end
  return function(uri, params, ctx)
    local inner = uri_out(prefix, uri) or uri
    local res, err = content.read_result(r, inner, true, read(inner, params, ctx))
    if not res then return nil, err end
    return contents_in(prefix, res)
  end
end

function from_server.resources(m)
  local out = {}
  for _, r in ipairs(m.source.resource_list) do
    local uri = uri_in(m.prefix, r.uri)
    if uri then
      local c = setmetatable(copy(r), getmetatable(r))
      c.uri, c.read, c.listing = uri, local_read(m.prefix, r, r.read), copy(r.listing)
      c.listing.uri = uri
      out[#out + 1] = c
    else
      warn(m, "resource '%s' left out (a URI without a scheme cannot be prefixed)", r.uri)
    end
  end
  return out
end

function from_server.resource_templates(m)
  local out, prefix = {}, m.prefix
  for _, r in ipairs(m.source.resource_template_list) do
    local tpl = uri_in(prefix, r.uri_template)
    if tpl then
      local c = setmetatable(copy(r), getmetatable(r))
      local match = r.match
      c.uri_template, c.read, c.listing = tpl, local_read(prefix, r, r.read), copy(r.listing)
      c.listing.uriTemplate = tpl
      c.match = function(uri)
        local u = uri_out(prefix, uri)
        return u and match(u)
      end
      out[#out + 1] = c
    else
      warn(m, "resource template '%s' left out (no scheme to prefix)", r.uri_template)
    end
  end
  return out
end

function from_server.prompts(m)
  local out = {}
  for _, p in ipairs(m.source.prompt_list) do
    local c = setmetatable(copy(p), getmetatable(p))
    c.name, c.listing = name_in(m.prefix, p.name), copy(p.listing)
    c.listing.name = c.name
    if m.prefix ~= "" then c.get = function(args, ctx)
      local r, err = content.prompt_result(p, true, p.get(args, ctx))
      if not r then return nil, err end
      return messages_in(m, r)
    end end
    out[#out + 1] = c
  end
  return out
end

-- A completion's ref in the server (nil: it cannot be named there).
local function ref_in(prefix, ref)
  if ref.type == "ref/prompt" then
    return { type = "ref/prompt", name = name_in(prefix, ref.name) }
  end
  local uri = uri_in(prefix, ref.uri)
  return uri and { type = "ref/resource", uri = uri }
end

local function completion(ref, complete)
  local c = setmetatable({ kind = "completion", ref = ref, complete = complete },
    classes.completion)
  c.key = ref.type .. " " .. (ref.name or ref.uri)
  return c
end

function from_server.completions(m)
  local out = {}
  for _, c in ipairs(m.source.completion_list) do
    local ref = ref_in(m.prefix, c.ref)
    if ref then out[#out + 1] = completion(ref, c.complete) end
  end
  return out
end

---------------------------------------------------------------------------------------------
-- A remote server's items: forwarders through its client
---------------------------------------------------------------------------------------------

local from_client = {}

local forwarded, relay = forward.forwarded, forward.relay

local function listed(m, method)
  local list, err = m.source[method](m.source)
  if not list then
    warn(m, "%s failed: %s", method, errors.message(err))
    return nil
  end
  return list
end

function from_client.tools(m)
  local list = listed(m, "list_tools")
  if not list then return nil end
  local out = {}
  for _, remote in ipairs(list) do
    if type(remote) == "table" and type(remote.name) == "string" then
      local t = forward.forwarder(tool, m.source, remote, name_in(m.prefix, remote.name),
        m.opts)
      -- its listing as the remote gave it, but for its name and view (and no task support:
      -- the forwarder waits for the remote's answer)
      local listing = copy(remote)
      listing.name, listing.execution = t.name, nil
      listing._meta = view_meta(m.prefix, remote._meta)
      t.listing = listing
      out[#out + 1] = t
    end
  end
  return out
end

-- The remote's answer to a read, its URIs the server's.
local function read_remote(m)
  local client, prefix = m.source, m.prefix
  return function(uri, _, ctx)
    local r, err = client:read_resource(uri_out(prefix, uri) or uri,
      forwarded(ctx, { timeout = m.opts.timeout, cache = false }))
    if not r then relay(err) end
    return contents_in(prefix, r)
  end
end

function from_client.resources(m)
  if type(m.source.capabilities.resources) ~= "table" then return {} end
  local list = listed(m, "list_resources")
  if not list then return nil end
  local out, read = {}, read_remote(m)
  for _, remote in ipairs(list) do
    local uri = type(remote) == "table" and type(remote.uri) == "string"
      and uri_in(m.prefix, remote.uri)
    if uri then
      local listing = copy(remote)
      listing.uri = uri
      out[#out + 1] = setmetatable({ kind = "resource", uri = uri, name = remote.name,
        read = read, listing = listing }, classes.resource)
    end
  end
  return out
end

-- Matches the remote's template, or, one of the expressions this side does not match, any
-- URI that starts as it does (the remote tells what it serves).
local function template_match(prefix, tpl)
  local match = uri_template.matcher(tpl)
  if not match then
    local head = tpl:match("^[^{]*")
    match = function(u) return u:sub(1, #head) == head and {} or nil end
  end
  return function(uri)
    local u = uri_out(prefix, uri)
    return u and match(u)
  end
end

function from_client.resource_templates(m)
  if type(m.source.capabilities.resources) ~= "table" then return {} end
  local list = listed(m, "list_resource_templates")
  if not list then return nil end
  local out, read = {}, read_remote(m)
  for _, remote in ipairs(list) do
    local tpl = type(remote) == "table" and type(remote.uriTemplate) == "string"
      and uri_in(m.prefix, remote.uriTemplate)
    if tpl then
      local listing = copy(remote)
      listing.uriTemplate = tpl
      out[#out + 1] = setmetatable({ kind = "resource_template", uri_template = tpl,
        name = remote.name, read = read, listing = listing,
        match = template_match(m.prefix, remote.uriTemplate), remote = remote.uriTemplate },
        classes.resource_template)
    end
  end
  return out
end

local function accept() return true end

function from_client.prompts(m)
  if type(m.source.capabilities.prompts) ~= "table" then return {} end
  local list = listed(m, "list_prompts")
  if not list then return nil end
  local out, client = {}, m.source
  for _, remote in ipairs(list) do
    if type(remote) == "table" and type(remote.name) == "string" then
      local name, listing = name_in(m.prefix, remote.name), copy(remote)
      listing.name = name
      out[#out + 1] = setmetatable({ kind = "prompt", name = name, listing = listing,
        validate = accept, -- the remote checks its arguments
        arguments = remote.arguments, remote = remote.name,
        get = function(args, ctx)
          local r, err = client:get_prompt(remote.name, args,
            forwarded(ctx, { timeout = m.opts.timeout }))
          if not r then relay(err) end
          return messages_in(m, r)
        end }, classes.prompt)
    end
  end
  return out
end

-- The completions of the remote's prompts and templates, when it offers completions.
function from_client.completions(m)
  local client = m.source
  if type(client.capabilities.completions) ~= "table" then return {} end
  local out = {}
  local function completes(remote_ref, ref)
    out[#out + 1] = completion(ref, function(argument, ctx)
      local r, err = client:complete(remote_ref, argument, forwarded(ctx,
        { timeout = m.opts.timeout, context = { arguments = ctx.arguments } }))
      if not r then relay(err) end
      return { completion = r }
    end)
  end
  for _, p in ipairs(m.held_list.prompts or {}) do
    completes({ type = "ref/prompt", name = p.remote }, { type = "ref/prompt", name = p.name })
  end
  for _, t in ipairs(m.held_list.resource_templates or {}) do
    completes({ type = "ref/resource", uri = t.remote },
      { type = "ref/resource", uri = t.uri_template })
  end
  return out
end

---------------------------------------------------------------------------------------------
-- Holding a mount's items in the server
---------------------------------------------------------------------------------------------

local function same(x, y)
  if x == y then return true end
  if type(x) ~= "table" or type(y) ~= "table" then return false end
  for k, v in pairs(x) do
    if not same(v, y[k]) then return false end
  end
  for k in pairs(y) do
    if x[k] == nil then return false end
  end
  return true
end

-- Do two lists of items list the same? (A remote's list that changed elsewhere gives the
-- same listings anew: its clients need not be told.)
local function same_listings(a, b)
  if #a ~= #b then return false end
  for i = 1, #a do
    if not same(a[i].listing, b[i].listing) then return false end
  end
  return true
end

-- Puts `items` (a list of the kind `what`) in the server in place of the mount's previous
-- ones, telling its clients once when the list changed.
local function swap(m, what, items)
  local s, key = m.server, KEYS[what]
  local map, list = s[what], s[LISTS[what]]
  local old = m.held[what] or {}
  for _, item in pairs(old) do
    if map[item[key]] == item then map[item[key]] = nil end
  end
  for i = #list, 1, -1 do
    if old[list[i][key]] == list[i] then table.remove(list, i) end
  end
  local held, kept = {}, {}
  for _, item in ipairs(items) do
    local k = item[key]
    if map[k] then
      warn(m, "%s '%s' left out: the server has one of that name", what:gsub("s$", ""), k)
    else
      map[k], held[k] = item, item
      list[#list + 1], kept[#kept + 1] = item, item
    end
  end
  local before = m.held_list[what] or {}
  m.held[what], m.held_list[what] = held, kept
  if what == "resources" or what == "resource_templates" then
    local uris = {}
    for i, item in ipairs(items) do uris[i] = item.uri or item.uri_template end
    note_schemes(m, what, uris)
  end
  s.revision = s.revision + 1
  if what ~= "completions" and not same_listings(before, kept) then
    for _, fn in pairs(s._watchers) do fn(s, what) end
  end
end

-- Brings the mount's items of the kinds `whats` up to date (a remote list that fails keeps
-- the items it had).
local function sync(m, whats)
  local from = m.remote and from_client or from_server
  for _, what in ipairs(whats) do
    local items = from[what](m)
    if items then swap(m, what, items) end
  end
end

-- The lists a notification of the remote changes.
local CHANGES = {
  ["notifications/tools/list_changed"] = { "tools" },
  ["notifications/resources/list_changed"] = { "resources", "resource_templates",
    "completions" },
  ["notifications/prompts/list_changed"] = { "prompts", "completions" },
}

-- Syncs of a remote run in a task of their own, one at a time per mount: a change that
-- comes while one runs is synced after it.
local function resync(m, whats)
  for _, w in ipairs(whats) do m.dirty[w] = true end
  if m.syncing then return end
  m.syncing = async.spawn(function()
    while next(m.dirty) and not m.closed do
      local list = {}
      for _, w in ipairs(KINDS) do
        if m.dirty[w] then list[#list + 1] = w end
      end
      m.dirty = {}
      sync(m, list)
    end
    m.syncing = nil
  end)
end

-- The server's subscriptions to the remote's resources, counted by URI (connections and
-- listens of both eras): the remote is subscribed while one wants it.
local function subscribe_remote(m, uri, on)
  local counts = m.subscriptions
  local n = (counts[uri] or 0) + (on and 1 or -1)
  if n < 0 then n = 0 end
  counts[uri] = n > 0 and n or nil
  if (on and n == 1) or (not on and n == 0) then
    async.spawn(function()
      local ok, err
      if on then ok, err = m.source:subscribe(uri) else ok, err = m.source:unsubscribe(uri) end
      if not ok and not m.closed then
        warn(m, "%s '%s' failed: %s", on and "subscribe" or "unsubscribe", uri,
          errors.message(err))
      end
    end)
  end
end

--- A subscription of a client of `server` to `uri` began (`on`) or ended: forwarded to the
-- remote server mounted there, if any (the transports call this for servers with mounts).
-- @tparam claude.Server server
-- @tparam string uri
-- @tparam boolean on
function M.subscribed(server, uri, on)
  for _, m in pairs(server._mounts) do
    local u = m.remote and m.subscribable and uri_out(m.prefix, uri)
    if u then subscribe_remote(m, u, on) end
  end
end

local function watch_source(m)
  local s, prefix = m.server, m.prefix
  if m.remote then
    m.source.observers = m.source.observers or setmetatable({}, { __mode = "k" })
    m.source.observers[m] = function(method, params)
      local whats = CHANGES[method]
      if whats then return resync(m, whats) end
      if method == "notifications/resources/updated" and type(params) == "table"
        and type(params.uri) == "string" and s.subscribe then
        s:resource_updated(uri_in(prefix, params.uri) or params.uri)
      end
    end
    -- a modern client listens for the changes it has observers for
    if m.source.era == "modern" then m.source.listening:open() end
    return
  end
  m.source._watchers[m] = function(_, what)
    sync(m, what == "resources" and { "resources", "completions" }
      or what == "resource_templates" and { "resource_templates", "completions" }
      or what == "prompts" and { "prompts", "completions" } or { what })
  end
  m.source._subscribers[m] = function(uri)
    if s.subscribe then s:resource_updated(uri_in(prefix, uri) or uri) end
  end
end

---------------------------------------------------------------------------------------------
-- server:mount, server:unmount
---------------------------------------------------------------------------------------------

local OPTIONS = { timeout = "number", guard = "function", on_call = "function" }

local function is_client(v)
  local mcp = package.loaded["claude.mcp.client"]
  return mcp ~= nil and mcp.is_client(v)
end

--- Mounts `source` in `server` under `prefix` (see the module). Its items join the server's
-- lists now; one whose name the server already has is left out, saying so on stderr.
-- @tparam claude.Server server
-- @tparam string prefix letters, digits, `_`, `-`; `""`: the names as they are
-- @param source a `claude.Server`, or a connected client of `claude.mcp`
-- @tparam[opt] table opts a remote's: `timeout` (seconds per request, default the client's),
--   `guard` and `on_call` (its tool calls', as `client:as_server`'s)
-- @treturn claude.Server the server
-- @function mount
M.mount = public(function(tool_module, server, prefix, source, opts)
  tool, classes = tool_module, tool_module._classes
  if not tool.is_server(server) then
    misuse("bad self to 'mount' (claude.Server expected, got %s)", typename(server))
  end
  if type(prefix) ~= "string" or (prefix ~= "" and not prefix:find("^[%w_%-]+$")) then
    misuse("bad argument #1 to 'mount' (%s)", type(prefix) == "string"
      and fmt("'%s' is not a valid prefix (A-Z a-z 0-9 _ -)", prefix)
      or "string expected, got " .. typename(prefix))
  end
  local remote = is_client(source)
  if not remote and not tool.is_server(source) then
    misuse("bad argument #2 to 'mount' (claude.Server or claude.mcp client expected, got %s)",
      typename(source))
  end
  if source == server then misuse("bad argument #2 to 'mount' (a server cannot mount itself)") end
  if opts ~= nil then
    if type(opts) ~= "table" then
      misuse("bad argument #3 to 'mount' (table expected, got %s)", typename(opts))
    end
    for k, v in pairs(opts) do
      if not OPTIONS[k] then errors.unknown_field(k, OPTIONS, "mount") end
      if type(v) ~= OPTIONS[k] then
        misuse("bad field '%s' to 'mount' (%s expected, got %s)", k, OPTIONS[k], typename(v))
      end
    end
  end
  local mounts = server._mounts or {}
  if mounts[prefix] then
    misuse("bad argument #1 to 'mount' (the prefix '%s' is mounted already)", prefix)
  end
  if remote and source.state ~= "connected" then
    local ok, err = source.ready:wait(source.opts.timeout)
    if not ok or source.state ~= "connected" then
      misuse("bad argument #2 to 'mount' (the MCP client '%s' is not connected%s)",
        source.name, err and ": " .. errors.message(err) or "")
    end
  end
  local m = { server = server, prefix = prefix, source = source, remote = remote,
    opts = opts or {}, held = {}, held_list = {}, dirty = {}, subscriptions = {},
    scheme_sets = {}, schemes = {} }
  if remote then
    local caps = source.capabilities.resources
    m.subscribable = type(caps) == "table" and caps.subscribe == true
    m.opts = copy(m.opts)
    -- the remote's JSON-RPC errors are the answers, its links the server's (forward.forwarder)
    m.opts.relay = true
    if prefix ~= "" then m.opts.result = function(r) return result_in(m, r) end end
  else
    m.subscribable = source.subscribe
  end
  if m.subscribable then server.subscribe = true end
  mounts[prefix] = m
  server._mounts = mounts
  sync(m, KINDS)
  watch_source(m)
  return server
end)

--- Unmounts what `prefix` holds: its items leave the server (its clients are told), its
-- remote subscriptions end. The client of a remote stays open (it is the caller's).
-- @tparam claude.Server server
-- @tparam string prefix
-- @treturn boolean whether something was mounted there
-- @function unmount
M.unmount = public(function(tool_module, server, prefix)
  tool, classes = tool_module, tool_module._classes
  if not tool.is_server(server) then
    misuse("bad self to 'unmount' (claude.Server expected, got %s)", typename(server))
  end
  local m = server._mounts and server._mounts[prefix]
  if not m then return false end
  m.closed = true
  server._mounts[prefix] = nil
  if m.remote then
    if m.source.observers then m.source.observers[m] = nil end
    for uri in pairs(m.subscriptions) do subscribe_remote(m, uri, false) end
  else
    m.source._watchers[m], m.source._subscribers[m] = nil, nil
  end
  for _, what in ipairs(KINDS) do swap(m, what, {}) end
  return true
end)

return M
