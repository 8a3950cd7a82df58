--- The HTTP requests of the OAuth client (metadata, registration, tokens):
-- one request each on claude.http.client, no redirect followed (a 3xx is an
-- answer like any other), any status returned to the caller, and a failure
-- to get an answer at all an `auth` error. Nothing here quotes a response
-- body in an error: token responses hold secrets.
-- @module claude.oauth.fetch
local http = require "claude.http.client"
local json = require "claude.json"
local errors = require "claude.errors"

local M = {}

M.TIMEOUT = 30 -- seconds for one request to an authorization or resource server

--- Sends a request and waits for its answer.
-- @tparam table opts `method`, `url`, `headers`, `body`, `what` (what the
--   request is for, for messages: "the token request")
-- @return `{ status, headers, body }` (any status) | nil, err, "auth"
function M.send(opts)
  local resp, err = http.request { method = opts.method or "GET", url = opts.url,
    headers = opts.headers, body = opts.body, timeout = M.TIMEOUT,
    max_body = 1024 * 1024 }
  if resp then return resp end
  if err.kind == "http" then
    return { status = err.status, headers = err.headers or {}, body = err.body or "" }
  end
  local label = (opts.method or "GET") .. " " .. tostring(opts.url)
  local why = errors.message(err)
  if why:sub(1, #label + 2) == label .. ": " then why = why:sub(#label + 3) end
  return errors.fail("auth", string.format("%s (%s) failed: %s", opts.what, label, why),
    { cause = err })
end

--- The JSON object of a response body.
-- @return the table | nil and why
function M.object(resp)
  local ctype = resp.headers and resp.headers["content-type"] or ""
  local value, err = json.decode(resp.body or "")
  if value == nil then
    return nil, "not JSON (" .. (ctype ~= "" and ctype or "no content type") .. "): "
      .. tostring(err)
  end
  if type(value) ~= "table" or value[1] ~= nil then return nil, "not a JSON object" end
  return value
end

--- The OAuth error of a failed response (`error`, `error_description`, RFC
-- 6749 section 5.2), as text for a message; the body itself is never quoted.
-- @return e.g. `"invalid_grant (the code has expired)"`, or `"HTTP 500"`
function M.oauth_error(resp)
  local value = M.object(resp)
  local code = type(value) == "table" and value.error
  if type(code) ~= "string" then return "HTTP " .. tostring(resp.status), nil end
  local text = code:gsub("[^%w_%-%.]", "?"):sub(1, 64)
  local desc = value.error_description
  if type(desc) == "string" and desc ~= "" then
    desc = desc:gsub("%c", " ")
    text = text .. " (" .. (#desc > 200 and (desc:sub(1, 200) .. "...") or desc) .. ")"
  end
  return text, code
end

return M
