--- The loopback redirect of an interactive script (RFC 8252 section 7.3):
-- a `redirect_uri` on 127.0.0.1, and an `on_authorize` that listens there,
-- opens the browser on the authorization URL and waits for the browser to
-- come back. It answers only the redirect of the authorization it waits for
-- (the same `state`); anything else gets a 400 and the wait goes on. The
-- whole redirect URL is returned, so that the library checks it again.
-- @module claude.oauth.loopback
local async = require "claude.async"
local errors = require "claude.errors"
local url = require "claude.url"

local M = {}

local DEFAULT_TIMEOUT = 300 -- seconds to sign in

local PAGE = [[<!doctype html><html><head><meta charset="utf-8"><title>%s</title></head>
<body style="font-family: sans-serif; margin: 3em"><h1>%s</h1><p>%s</p></body></html>
]]

local function page(title, text)
  return PAGE:format(title, title, text)
end

local HTML = { ["content-type"] = "text/html; charset=utf-8", ["cache-control"] = "no-store" }

-- Opens the browser on `target` ($BROWSER, else xdg-open, else open on
-- macOS), in a task of its own; false when none is found.
local function open_browser(target)
  local process = require "claude.process"
  local chosen = os.getenv("BROWSER")
  chosen = chosen and chosen:match("^[^:]+") -- a list, as Python's webbrowser reads it
  for _, cmd in ipairs { chosen or "xdg-open", "xdg-open", "open" } do
    if process.which(cmd) then
      local p = process.spawn { cmd, args = { target }, stdin = "ignore", stdout = "ignore",
        stderr = "ignore" }
      if p then
        async.spawn(function()
          p:wait(30) -- the opener returns once the browser has the URL
          p:close()
        end)
        return true
      end
    end
  end
  return false
end

local function check_options(opts)
  if opts == nil then return {} end
  if type(opts) ~= "table" then
    errors.misuse("bad argument #1 to 'loopback' (table expected, got %s)",
      errors.typename(opts))
  end
  local types = { port = "number", path = "string", open_browser = "boolean|function",
    timeout = "number", host = "string" }
  for k, v in pairs(opts) do
    local want = types[k]
    if not want then errors.unknown_field(k, types, "loopback") end
    errors.check_field(v, k, "loopback", want)
  end
  if opts.port and (math.type(opts.port) ~= "integer" or opts.port < 0 or opts.port > 65535) then
    errors.bad_field("port", "loopback", "0-65535 expected")
  end
  if opts.path and opts.path:sub(1, 1) ~= "/" then
    errors.bad_field("path", "loopback", "a path starting with '/' expected")
  end
  if opts.host and not url.is_loopback(opts.host) then
    errors.bad_field("host", "loopback", "a loopback address expected, got '%s'", opts.host)
  end
  return opts
end

--- A loopback redirect listener.
-- @tparam[opt] table opts `port` (default 0: a free port, chosen now so that
--   the redirect URI is known), `path` ("/callback"), `host` ("127.0.0.1"),
--   `open_browser` (true: $BROWSER, xdg-open or open; false: the URL is only
--   printed to stderr; a function(url) opens it another way), `timeout`
--   (seconds to wait for the browser, default 300)
-- @return `{ redirect_uri = ..., on_authorize = function(authorization_url) }`
--   | nil, err, kind when no port could be had
function M.new(opts)
  opts = check_options(opts)
  local http = require "claude.http.server"
  local host = opts.host or "127.0.0.1"
  local path = opts.path or "/callback"
  local timeout = opts.timeout or DEFAULT_TIMEOUT
  local port = opts.port or 0
  if port == 0 then
    -- a free port, now: the redirect URI is registered before any listening
    local probe, err, kind = http.listen { host = host, port = 0,
      on_request = function(_, res) res:respond(503) end }
    if not probe then return nil, err, kind end
    port = probe:port()
    probe:close()
  end
  local shown = host:find(":", 1, true) and ("[" .. host .. "]") or host
  local base = "http://" .. shown .. ":" .. port
  local self = { redirect_uri = base .. path }

  function self.on_authorize(authorization_url)
    local auth_u = url.parse_canonical(authorization_url)
    local state = auth_u and url.params(auth_u.query).state
    local done = async.event()
    local answer
    local srv, err = http.listen { host = host, port = port, on_request = function(req, res)
      if req.method ~= "GET" or req.path ~= path then
        return res:respond(404, HTML, page("Not found", "This is not the sign-in redirect."))
      end
      local p = url.params(req.query)
      if answer or (state and p.state ~= state) then
        return res:respond(400, HTML, page("Not this sign-in", "This redirect does not belong "
          .. "to the sign-in the program is waiting for."))
      end
      answer = base .. req.target
      if p.error then
        res:respond(200, HTML, page("Sign-in refused", "The authorization server refused: "
          .. (p.error:gsub("[^%w_%-%.]", "?")) .. ". You can close this window."))
      else
        res:respond(200, HTML, page("Signed in", "You can close this window and return to "
          .. "the program."))
      end
      done:set()
    end }
    if not srv then return nil, err end
    local opener = opts.open_browser
    if opener == nil then opener = true end
    if type(opener) ~= "function" then
      -- also when a browser is opened: there may be none on this machine
      io.stderr:write("claude.oauth: to authorize, open this URL in a browser: ",
        authorization_url, "\n")
    end
    if type(opener) == "function" then
      local ok, oerr = pcall(opener, authorization_url)
      if not ok then
        srv:close()
        return nil, errors.new("auth", "open_browser raised: " .. errors.message(oerr))
      end
    elseif opener then
      open_browser(authorization_url)
    end
    local ok, werr = pcall(done.wait, done, timeout)
    srv:close()
    if not ok then error(werr, 0) end -- cancelled
    if not answer then
      return nil, errors.new("timeout", string.format("no redirect reached %s within %g s",
        self.redirect_uri, timeout))
    end
    return answer
  end

  return self
end

return M
