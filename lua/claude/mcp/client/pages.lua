--- The paginated lists (`tools/list`, `resources/list`, `resources/templates/list`,
-- `prompts/list`): every page, followed by its cursor, within bounds a hostile server cannot
-- stretch (issue 34): at most `max_pages` pages (default 1000) and `max_bytes` of items
-- (their JSON, default 32 MiB), one `timeout` for the whole walk (each page gets what is
-- left), and a cursor never seen twice. A server past a bound is `nil, err, "protocol"`
-- (with `err.bound` naming it), past the timeout `nil, err, "timeout"`.
-- @module claude.mcp.client.pages
local core = require "claude.core"
local errors = require "claude.errors"
local json = require "claude.json"

local M = {}

M.MAX_PAGES = 1000
M.MAX_BYTES = 32 * 1024 * 1024

local function protocol(client, method, what, bound)
  return errors.fail("protocol", string.format("the MCP server '%s' answered %s %s",
    client.name, method, what), bound and { bound = bound } or nil)
end

--- Every item of a list method's pages.
-- @param client the client (`name`, `opts.max_pages`, `opts.max_list_bytes`)
-- @tparam function fetch `fetch(cursor, timeout)` -> one page's result | nil, err, kind
-- @tparam string method
-- @tparam string field the items' member (`tools`, ...)
-- @param timeout seconds for every page together, or false (none)
-- @tparam[opt] table opts the call's `max_pages`, `max_bytes`
-- @return a JSON array of the items | nil, err, kind
function M.collect(client, fetch, method, field, timeout, opts)
  local o = client.opts
  local max_pages = opts and opts.max_pages or o.max_pages or M.MAX_PAGES
  local max_bytes = opts and opts.max_bytes or o.max_list_bytes or M.MAX_BYTES
  local deadline = timeout and core.now() + timeout
  local out, cursor, seen, pages, bytes = json.array(), nil, {}, 0, 0
  repeat
    local left = timeout
    if deadline then
      left = deadline - core.now()
      if left <= 0 then
        return errors.fail("timeout", string.format("%s timed out after %g s (%d pages)",
          method, timeout, pages))
      end
    end
    local r, err, kind = fetch(cursor, left)
    if r == nil then return nil, err, kind end
    local items = type(r) == "table" and r[field]
    if type(items) ~= "table" then
      return protocol(client, method, "without '" .. field .. "'")
    end
    pages = pages + 1
    -- one page more than the bound was asked for: the bound is reached, not guessed
    if pages > max_pages then
      return protocol(client, method, string.format("with more than %d pages (max_pages)",
        max_pages), "max_pages")
    end
    -- (a page's size, the JSON of its items: the page's answer was at most this much more)
    bytes = bytes + #json.encode(items)
    if bytes > max_bytes then
      return protocol(client, method, string.format("with more than %d bytes of %s "
        .. "(max_list_bytes)", max_bytes, field), "max_bytes")
    end
    for _, item in ipairs(items) do out[#out + 1] = item end
    cursor = r.nextCursor
    if cursor == json.null then cursor = nil end
    if cursor ~= nil then
      if type(cursor) ~= "string" then
        return protocol(client, method, "with a nextCursor that is not a string")
      end
      if seen[cursor] then
        return protocol(client, method, "with a nextCursor it gave before (the pages loop)",
          "cursor")
      end
      seen[cursor] = true
      bytes = bytes + #cursor -- (kept until the walk ends)
    end
  until cursor == nil
  return out
end

return M
