--- Output validation. The `outputSchema`s the last `list_tools` saw (the tool descriptions
-- themselves go to the caller untouched), each compiled when a result first needs it: a
-- result of such a tool whose `structuredContent` is missing or does not match is a
-- `validation` failure, as the server side refuses to send it (claude.mcp.content). A schema
-- that cannot be compiled fails the call too: unchecked is not valid.
--
-- The schema is the server's, and a hostile server can make compiling or checking it cost
-- seconds or minutes (a costly pattern over many items, a huge `enum`, a schema at the
-- message limit: issue 34). So a schema larger than `max_schema_bytes` (its JSON, default
-- 4 MiB) is refused, and the compile and the check run under a budget (claude.core's: the
-- watchdog, nothing paid until it bites) of the time the call has left of its `timeout`: past
-- it the call is `nil, err, "timeout"`, and the loop was held no longer than the call may
-- take. The validator's own bounds (`max_steps`, `max_subschemas`, PCRE2's match limits)
-- hold inside that time.
-- @module claude.mcp.client.output
local core = require "claude.core"
local errors = require "claude.errors"
local json = require "claude.json"

local M = {}

local pack = table.pack

M.MAX_SCHEMA_BYTES = 4 * 1024 * 1024

local schema_mod -- claude.schema, loaded on the first check

--- The output schemas of a tools/list answer, by tool name (the tables as listed).
function M.schemas(tools)
  local out = {}
  for _, t in ipairs(tools) do
    if type(t) == "table" and type(t.name) == "string" and type(t.outputSchema) == "table" then
      out[t.name] = { schema = t.outputSchema }
    end
  end
  return out
end

-- The schema compiled once (its failure kept: it will not compile later either), then `sc`
-- checked: true | nil, err.
local function check(known, sc, max_bytes)
  if not known.validate then
    local size = #json.encode(known.schema)
    local v, err
    if size > max_bytes then
      err = errors.new("validation", string.format("it is %d bytes, more than the client "
        .. "compiles (max_schema_bytes, %d)", size, max_bytes), { bound = "max_schema_bytes" })
    else
      schema_mod = schema_mod or require "claude.schema"
      v, err = schema_mod.compile(known.schema)
    end
    known.validate = v or function()
      return nil, errors.new("validation", "its outputSchema cannot be checked: " .. err.message)
    end
  end
  if sc == nil or sc == json.null then
    return nil, errors.new("validation", "the result has no structuredContent")
  end
  return known.validate(sc)
end

--- A call's results, or a failure when its structured result breaks the tool's output
-- schema (`validation`), or checking it would take longer than the call has left (`timeout`).
-- @param self the client
-- @tparam string name the tool
-- @param deadline `core.now()` when the call must have ended, or nil/false (no timeout)
-- @param r ... the call's results, returned as they are when there is nothing to check
function M.check(self, name, deadline, r, ...)
  local known = type(r) == "table" and self.output_schemas and self.output_schemas[name]
  if not known or r.isError == true then return r, ... end
  local max_bytes = self.opts.max_schema_bytes or M.MAX_SCHEMA_BYTES
  local ok, err
  if not deadline then -- (no timeout: none here either)
    ok, err = check(known, r.structuredContent, max_bytes)
  else
    -- every check, not only the first: a later result can be the costly one
    local left = deadline - core.now()
    local out = left > 0 and pack(core.budget({ run = left }):resume(coroutine.create(check),
      known, r.structuredContent, max_bytes))
    if not out or not out[1] and out.n == 3 then -- (false, message, reason: stopped)
      -- (an unfinished compile is not kept: a later call may have more time)
      return errors.fail("timeout", string.format("the MCP server '%s' returned a result for "
        .. "tool '%s' that could not be checked against its outputSchema within the call's "
        .. "timeout", self.name, name))
    elseif not out[1] then
      return errors.fail("validation", string.format("checking the result of tool '%s' of "
        .. "the MCP server '%s' against its outputSchema failed: %s", name, self.name,
        tostring(out[2])))
    end
    ok, err = out[2], out[3]
  end
  if ok then return r end
  return errors.fail("validation", string.format("the MCP server '%s' returned a result for "
    .. "tool '%s' that does not match its outputSchema: %s", self.name, name, err.message))
end

return M
