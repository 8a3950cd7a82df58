--- The answer of `auth.on_authorize`: a bare authorization code, or the
-- whole URL the authorization server redirected the browser to. A URL is
-- checked before its code is used: it must go to the `redirect_uri` that
-- was sent, repeat no parameter, carry the `state` that was sent, and,
-- when it names an issuer (RFC 9207), exactly that of the server asked (and it must name
-- one when the server promises to).
-- @module claude.oauth.redirect
local errors = require "claude.errors"
local url = require "claude.url"

local M = {}

local fail = errors.fail

-- The redirect's target without its query, compared as URLs where they
-- are URLs (scheme and host case-insensitively, the default port implied).
local function same_target(a, b)
  local x, y = url.parse_canonical(a), url.parse_canonical(b)
  if x and y then
    return x.scheme == y.scheme and x.host == y.host and x.port == y.port
      and (x.path == "" and "/" or x.path) == (y.path == "" and "/" or y.path)
  end
  return a == b
end

--- The authorization code of an answer.
-- @param answer what `on_authorize` returned
-- @tparam table expect `state`, `redirect_uri`, `issuer`, `iss_required`
--   (the server said `authorization_response_iss_parameter_supported`)
-- @return the code | nil, err, "auth"
function M.code(answer, expect)
  if type(answer) ~= "string" or answer == "" then
    return fail("auth", "auth.on_authorize returned " .. (type(answer) == "string"
      and "an empty string" or ("a " .. type(answer))) .. ", not a code or a redirect URL")
  end
  if not answer:find("^%a[%w+.-]*:") then
    if answer:find("[%s%c]") then
      return fail("auth", "the code auth.on_authorize returned holds blanks or control "
        .. "characters")
    end
    return answer -- a bare code: there is nothing to check it against
  end
  local target, rest = answer:match("^([^?#]*)(.*)$")
  local want = expect.redirect_uri:match("^([^?#]*)")
  if not same_target(target, want) then
    return fail("auth", string.format("the redirect goes to '%s', not to the redirect_uri "
      .. "'%s': a tampered redirect is refused", target, want))
  end
  local query = rest:match("^%?([^#]*)")
  if not query or query == "" then
    return fail("auth", "the redirect URL carries no parameters (no code, no state)")
  end
  local p, repeated = url.params(query)
  if repeated then
    return fail("auth", string.format("the redirect URL repeats the parameter '%s': a "
      .. "tampered redirect is refused", repeated:sub(1, 40)))
  end
  if p.state == nil then
    return fail("auth", "the redirect carries no state: it cannot be told from a forged one")
  end
  if p.state ~= expect.state then
    return fail("auth", "the redirect's state is not the one sent with this authorization "
      .. "request: a forged or stale redirect is refused")
  end
  if p.error then
    local desc = p.error_description and (" (" .. p.error_description:gsub("%c", " "):sub(1, 200)
      .. ")") or ""
    return fail("auth", string.format("the authorization server refused the authorization: "
      .. "%s%s", p.error:gsub("[^%w_%-%.]", "?"):sub(1, 64), desc), { oauth_error = p.error })
  end
  if p.iss ~= nil and expect.issuer then
    -- RFC 9207 section 2.4: a simple string comparison, no normalization at all
    if p.iss ~= expect.issuer then
      return fail("auth", string.format("the redirect names issuer '%s', not the "
        .. "authorization server asked ('%s'): a mix-up is refused", p.iss:sub(1, 200),
        expect.issuer))
    end
  elseif p.iss == nil and expect.iss_required then
    return fail("auth", "the redirect names no issuer, which this authorization server "
      .. "promises (authorization_response_iss_parameter_supported)")
  end
  if p.code == nil or p.code == "" then return fail("auth", "the redirect carries no code") end
  return p.code
end

return M
