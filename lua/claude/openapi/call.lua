--- A call of an OpenAPI operation: the tool's arguments serialized into the HTTP request
-- as the document says (parameter styles, the request body's media type, the security
-- scheme's credentials), sent through claude.http.client behind the URL guard, and the
-- response made a tool result.
--
-- Parameter styles: path `simple` (the default), `label`, `matrix`; query `form` (the
-- default, exploded by default), `spaceDelimited`, `pipeDelimited`, `deepObject`; header
-- `simple`; cookie `form`. A parameter described by `content` is sent as JSON text.
-- @module claude.openapi.call
local json = require "claude.json"
local core = require "claude.core"
local urls = require "claude.url"
local errors = require "claude.errors"
local content = require "claude.mcp.content"
local http = require "claude.http.client"

local M = {}

local EXCERPT = 1000 -- bytes of an error response's body quoted in the tool error

local number_text = core.number_text
local encode = urls.encode

local function scalar(v)
  if type(v) == "number" then return number_text(v) end
  if v == json.null then return "" end
  if type(v) == "table" then return json.encode(v) end
  return tostring(v)
end

-- Characters allowReserved lets through in a query value (RFC 3986 reserved).
local function encode_reserved(s)
  return (s:gsub("[^%w%-%._~:/%?#%[%]@!%$&'%(%)%*%+,;=]", function(c)
    return string.format("%%%02X", c:byte())
  end))
end

local function sorted_pairs(t)
  local keys = {}
  for k in pairs(t) do keys[#keys + 1] = k end
  table.sort(keys)
  local i = 0
  return function()
    i = i + 1
    local k = keys[i]
    if k ~= nil then return k, t[k] end
  end
end

local function kind_of(v)
  if type(v) ~= "table" or v == json.null then return "scalar" end
  if json.is_array(v) then return "array" end
  return "object"
end

-- The path text of a value in style simple, label or matrix.
local function path_value(p, v)
  local style, explode = p.style or "simple", p.explode == true
  local k = kind_of(v)
  local items = {}
  if k == "array" then
    for i, x in ipairs(v) do items[i] = encode(scalar(x)) end
  elseif k == "object" then
    for name, x in sorted_pairs(v) do
      items[#items + 1] = explode and encode(name) .. "=" .. encode(scalar(x))
        or encode(name) .. "," .. encode(scalar(x))
    end
  else
    items[1] = encode(scalar(v))
  end
  if style == "label" then
    return "." .. table.concat(items, explode and "." or ",")
  elseif style == "matrix" then
    local n = encode(p.name)
    if k == "object" and explode then return ";" .. table.concat(items, ";") end
    if k == "array" and explode then
      return ";" .. n .. "=" .. table.concat(items, ";" .. n .. "=")
    end
    return ";" .. n .. "=" .. table.concat(items, ",")
  end
  return table.concat(items, ",")
end

-- Appends the query pairs of parameter `p` with value `v` to `out`.
local function query_value(out, p, v)
  local enc = p.allow_reserved and encode_reserved or encode
  local name = encode(p.name)
  local style = p.style or "form"
  local explode = p.explode
  if explode == nil then explode = style == "form" end
  local k = kind_of(v)
  if p.media then
    out[#out + 1] = name .. "=" .. encode(json.encode(v))
  elseif k == "scalar" then
    out[#out + 1] = name .. "=" .. enc(scalar(v))
  elseif style == "deepObject" and k == "object" then
    for key, x in sorted_pairs(v) do
      out[#out + 1] = name .. "%5B" .. encode(key) .. "%5D=" .. enc(scalar(x))
    end
  elseif k == "array" then
    if explode and style == "form" then
      for _, x in ipairs(v) do out[#out + 1] = name .. "=" .. enc(scalar(x)) end
    else
      local sep = style == "spaceDelimited" and "%20" or style == "pipeDelimited" and "%7C"
        or ","
      local parts = {}
      for i, x in ipairs(v) do parts[i] = enc(scalar(x)) end
      out[#out + 1] = name .. "=" .. table.concat(parts, sep)
    end
  elseif explode then -- an object, form exploded: its properties are the parameters
    for key, x in sorted_pairs(v) do out[#out + 1] = encode(key) .. "=" .. enc(scalar(x)) end
  else
    local parts = {}
    for key, x in sorted_pairs(v) do
      parts[#parts + 1] = enc(key) .. "," .. enc(scalar(x))
    end
    out[#out + 1] = name .. "=" .. table.concat(parts, ",")
  end
end

-- A header's (or cookie's) text for a value, in style simple.
local function simple_text(p, v)
  if p.media then return json.encode(v) end
  local k = kind_of(v)
  local parts = {}
  if k == "array" then
    for i, x in ipairs(v) do parts[i] = scalar(x) end
  elseif k == "object" then
    for key, x in sorted_pairs(v) do
      parts[#parts + 1] = p.explode and key .. "=" .. scalar(x) or key .. "," .. scalar(x)
    end
  else
    return scalar(v)
  end
  return table.concat(parts, ",")
end

local function form_fields(fields)
  local out = {}
  for name, v in sorted_pairs(fields) do
    if kind_of(v) == "array" then
      for _, x in ipairs(v) do out[#out + 1] = encode(name) .. "=" .. encode(scalar(x)) end
    else
      out[#out + 1] = encode(name) .. "=" .. encode(scalar(v))
    end
  end
  return table.concat(out, "&")
end

local function multipart(fields)
  -- a boundary no field holds: random (libcrypto), else the clock's
  local bytes = core.random_bytes(12) or tostring(core.now())
  local boundary = "claudelua-" .. bytes:gsub(".", function(c)
    return string.format("%02x", c:byte())
  end)
  local out = {}
  for name, v in sorted_pairs(fields) do
    local structured = type(v) == "table" and v ~= json.null
    out[#out + 1] = "--" .. boundary .. "\r\nContent-Disposition: form-data; name=\""
      .. name:gsub("[\"\r\n]", "_") .. "\"\r\n"
      .. (structured and "Content-Type: application/json\r\n" or "") .. "\r\n"
      .. (structured and json.encode(v) or scalar(v)) .. "\r\n"
  end
  out[#out + 1] = "--" .. boundary .. "--\r\n"
  return table.concat(out), "multipart/form-data; boundary=" .. boundary
end

-- The request body and its content type, or nil when the call has none.
local function body_of(plan, args)
  local b = plan.body
  if not b then return nil end
  local value
  if b.properties then
    local fields, any = json.object(), false
    for _, bp in ipairs(b.properties) do
      local v = args[bp.key]
      if v ~= nil then
        fields[bp.name] = v
        any = true
      end
    end
    if not any and not b.required then return nil end
    value = fields
  else
    value = args[b.key]
    if value == nil then return nil end
  end
  if b.kind == "json" then return json.encode(value), b.media end
  if b.kind == "form" then
    if type(value) ~= "table" then return scalar(value), b.media end
    return form_fields(value), b.media
  end
  if b.kind == "multipart" then
    if type(value) ~= "table" then value = { body = value } end
    return multipart(value)
  end
  return scalar(value), b.media == "*/*" and "application/octet-stream" or b.media
end

-- The credentials of a security scheme from `auth`: a value, or a function called for it.
local function credential(auth, name, ctx)
  local c = auth[name]
  if type(c) == "function" then
    local v, err = c(ctx, name)
    if v == nil then
      return nil, "the credentials of '" .. name .. "' are missing: " .. tostring(err or "none")
    end
    return v
  end
  return c
end

-- Applies the first security alternative whose every scheme has credentials in `auth`.
local function apply_security(plan, auth, req, ctx)
  if not auth then return true end
  for _, alt in ipairs(plan.security) do
    local ready = true
    for _, s in ipairs(alt) do
      if auth[s.name] == nil then ready = false end
    end
    if ready then
      for _, s in ipairs(alt) do
        local c, err = credential(auth, s.name, ctx)
        if c == nil then return nil, err end
        local sc = s.scheme
        local t, scheme = sc.type, type(sc.scheme) == "string" and sc.scheme:lower() or nil
        if t == "apiKey" then
          if sc["in"] == "query" then
            req.query[#req.query + 1] = encode(sc.name) .. "=" .. encode(scalar(c))
          elseif sc["in"] == "cookie" then
            req.cookies[#req.cookies + 1] = sc.name .. "=" .. scalar(c)
          else
            req.headers[sc.name] = scalar(c)
          end
        elseif t == "http" and scheme == "basic" then
          if type(c) == "table" then c = tostring(c.username) .. ":" .. tostring(c.password) end
          req.headers.authorization = "Basic " .. content.base64(c)
        elseif t == "http" and scheme ~= "bearer" and scheme then
          req.headers.authorization = sc.scheme .. " " .. scalar(c)
        else -- http bearer, oauth2, openIdConnect: a bearer token
          req.headers.authorization = "Bearer " .. scalar(c)
        end
      end
      return true
    end
  end
  return true
end

--- The request of a call: `{ method, url, headers, body }`, or nil and why.
function M.request(plan, api, args, ctx)
  local req = { query = {}, cookies = {}, headers = {} }
  for k, v in pairs(api.headers) do req.headers[k] = v end
  local path = plan.path
  for _, p in ipairs(plan.params) do
    local v = args[p.key]
    -- null: the parameter is left out (a body's null is sent: it means something there)
    if v ~= nil and v ~= json.null then
      if p.location == "path" then
        local text = path_value(p, v)
        path = path:gsub("{" .. p.name:gsub("%p", "%%%0") .. "}", function() return text end)
      elseif p.location == "query" then
        query_value(req.query, p, v)
      elseif p.location == "header" then
        req.headers[p.name] = simple_text(p, v)
      else
        req.cookies[#req.cookies + 1] = p.name .. "=" .. encode(simple_text(p, v))
      end
    end
  end
  local ok, err = apply_security(plan, api.auth, req, ctx)
  if not ok then return nil, err end
  local body, ctype = body_of(plan, args)
  if ctype then req.headers["content-type"] = ctype end
  if #req.cookies > 0 then req.headers.cookie = table.concat(req.cookies, "; ") end
  req.headers.accept = req.headers.accept or plan.accept
  local url = plan.base_url .. path
  if #req.query > 0 then
    url = url .. (url:find("?", 1, true) and "&" or "?") .. table.concat(req.query, "&")
  end
  return { method = plan.method, url = url, headers = req.headers, body = body }
end

local REASONS = { [400] = "Bad Request", [401] = "Unauthorized", [403] = "Forbidden",
  [404] = "Not Found", [405] = "Method Not Allowed", [406] = "Not Acceptable",
  [409] = "Conflict", [415] = "Unsupported Media Type", [422] = "Unprocessable Entity",
  [429] = "Too Many Requests", [500] = "Internal Server Error", [502] = "Bad Gateway",
  [503] = "Service Unavailable", [504] = "Gateway Timeout" }

local function excerpt(body)
  body = body or ""
  if #body > EXCERPT then return body:sub(1, EXCERPT) .. "... (" .. #body .. " bytes)" end
  return body
end

-- The tool result of a response.
local function result(resp, url)
  local body = resp.body or ""
  local media = ((resp.headers or {})["content-type"] or ""):lower():match("^%s*([^;%s]+)")
    or ""
  if body == "" then
    return string.format("HTTP %d%s (no content)", resp.status,
      REASONS[resp.status] and " " .. REASONS[resp.status] or "")
  end
  if media:find("json") then
    local v = json.decode(body)
    if type(v) == "table" and not json.is_array(v) then return v end
    return body
  end
  if media:find("^image/") then return content.image(body, media) end
  if media:find("^audio/") then return content.audio(body, media) end
  if media:find("^text/") or media:find("xml") or utf8.len(body) then return body end
  return content.resource { uri = url, mime_type = media ~= "" and media or nil, bytes = body }
end

--- Runs the call of `plan` with the tool's arguments: the tool's `execute`.
function M.run(plan, api, args, ctx)
  local req, why = M.request(plan, api, args, ctx)
  if not req then return nil, why end
  if api.prepare then
    local ok, perr = api.prepare(req, args, ctx)
    if ok == nil and perr ~= nil then return nil, perr end
  end
  local resolve
  if api.guard then
    local checked, err = api.guard:check(req.url)
    if not checked then return nil, errors.message(err) end
    resolve = checked.resolve
  end
  local label = req.method .. " " .. plan.path
  local resp, err = http.request { method = req.method, url = req.url, headers = req.headers,
    body = req.body, timeout = api.timeout, max_body = api.max_response, resolve = resolve }
  if resp then return result(resp, req.url) end
  if err.kind == "http" then
    return nil, string.format("%s: HTTP %d%s: %s", label, err.status,
      REASONS[err.status] and " " .. REASONS[err.status] or "", excerpt(err.body))
  elseif err.kind == "overflow" then
    return nil, string.format("%s: the response is larger than %d bytes (max_response): "
      .. "cut off", label, api.max_response)
  elseif err.kind == "timeout" then
    return nil, string.format("%s: no complete response within %g s (timeout)", label,
      api.timeout)
  end
  return nil, label .. ": " .. errors.message(err)
end

return M
