--- What a server asks of its client while it serves a request: an elicitation
-- (`elicitation/create`), a completion of the client's model (`sampling/createMessage`), the
-- client's roots (`roots/list`). In the legacy era these are requests from the server to the
-- client; in the modern era a request that needs them ends with an `input_required` result
-- (multi round-trip requests, MRTR) and the client retries it with the answers. This module
-- is the era-blind part both share: the kinds, the checks of an answer, and the value a tool's
-- task is unwound with when the modern era needs to ask.
-- @module claude.mcp.input
local json = require "claude.json"

local M = {}

local type, setmetatable, getmetatable = type, setmetatable, getmetatable

--- The methods that may be asked, and the client capability each needs.
M.CAPABILITY = { ["elicitation/create"] = "elicitation", ["sampling/createMessage"] = "sampling",
  ["roots/list"] = "roots" }

--- The short names of the keys `ctx.elicit`, `ctx.sample` and `ctx.roots` make
-- (`elicit-1`, `sample-2`, ...: the kind and the call's number in the request).
M.SHORT = { ["elicitation/create"] = "elicit", ["sampling/createMessage"] = "sample",
  ["roots/list"] = "roots" }

local ACTIONS = { accept = true, decline = true, cancel = true }

--- Is `r` a well-formed answer to `method` (an ElicitResult, a CreateMessageResult, a
-- ListRootsResult)? An answer that is not is asked again.
-- @tparam string method
-- @param r
-- @treturn boolean
function M.valid(method, r)
  if type(r) ~= "table" then return false end
  if method == "elicitation/create" then
    return ACTIONS[r.action] == true and (r.content == nil or type(r.content) == "table")
  elseif method == "sampling/createMessage" then
    return type(r.role) == "string" and type(r.content) == "table"
  elseif method == "roots/list" then
    return type(r.roots) == "table"
  end
  return false
end

--- The client capability an input request needs, as the `requiredCapabilities` of a
-- MissingRequiredClientCapability error (`{elicitation = {form = {}}}`, `{sampling = {}}`).
-- @tparam string method
-- @tparam[opt] table params
-- @treturn table
function M.required(method, params)
  local cap = M.CAPABILITY[method]
  if cap == "elicitation" then
    local mode = type(params) == "table" and params.mode == "url" and "url" or "form"
    return { elicitation = { [mode] = json.object() } }
  end
  return { [cap] = json.object() }
end

--- Does the capability object `caps` (the client's) declare what `method` needs?
-- @tparam table|nil caps
-- @tparam string method
-- @treturn boolean
function M.declared(caps, method)
  local cap = M.CAPABILITY[method]
  local v = type(caps) == "table" and cap and caps[cap]
  return type(v) == "table"
end

-- The value a task is unwound with (an error value, so that `<close>` variables and the
-- tool's own cleanup run): the transport answers the request with what it carries.
local Unwind = { __name = "claude.mcp.InputRequired" }
Unwind.__index = Unwind
Unwind.__tostring = function(u)
  return "claude.mcp.InputRequired (" .. u.kind .. "): the request needs input from the "
    .. "client and ends here; it is retried with the answers (do not catch this error)"
end

--- Unwind the running tool, prompt or read: `kind` is `"input_required"` (`fields.requests`:
-- key -> `{method =, params =}`) or `"missing_capability"` (`fields.required`: the capability
-- object the client lacks).
-- @tparam string kind
-- @tparam table fields
function M.unwind(kind, fields)
  fields.kind = kind
  error(setmetatable(fields, Unwind), 0)
end

--- Is `e` the value `unwind` raised?
-- @param e
-- @treturn boolean
function M.is_unwind(e)
  return getmetatable(e) == Unwind
end

return M
