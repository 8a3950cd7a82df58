-- The MCP conformance suite's client: `claudelua spec/conformance/client.lua <url>`,
-- with the scenario in MCP_CONFORMANCE_SCENARIO (the suite sets it). Each
-- scenario does what a client would; the suite's server checks it.
local claude = require "claude"

local url = assert(arg[1], "usage: client.lua <server-url>")
local scenario = os.getenv("MCP_CONFORMANCE_SCENARIO") or "initialize"

local function connect(opts)
  opts = opts or {}
  opts.url = url
  opts.timeout = opts.timeout or 30
  return assert(claude.mcp.connect(opts))
end

local scenarios = {}

function scenarios.initialize()
  local c <close> = connect()
  assert(c:list_tools())
end

scenarios["tools_call"] = function()
  local c <close> = connect()
  for _, t in ipairs(assert(c:list_tools())) do
    if t.name == "add_numbers" then assert(c:call_tool(t.name, { a = 5, b = 3 })) end
  end
end

-- Accepts with empty content: the client fills in the schema's defaults.
scenarios["elicitation-sep1034-client-defaults"] = function()
  local c <close> = connect { on_elicitation = function()
    return { action = "accept", content = {} }
  end }
  for _, t in ipairs(assert(c:list_tools())) do
    assert(c:call_tool(t.name, {}))
  end
end

-- The server closes the tool call's stream after a priming event: the client
-- resumes it with a GET after `retry`, with Last-Event-ID.
scenarios["sse-retry"] = function()
  local c <close> = connect()
  for _, t in ipairs(assert(c:list_tools())) do
    assert(c:call_tool(t.name, {}))
  end
end

---------------------------------------------------------------------------------------------
-- The modern era (2026-07-28): the envelope, the standard and custom headers, multi
-- round-trip results, schemas passed through untouched.
---------------------------------------------------------------------------------------------

local json = require "claude.json"
local context = json.decode(os.getenv("MCP_CONFORMANCE_CONTEXT") or "{}") or {}

-- SEP-2575: the first request is refused with -32022 naming the revision to use; the
-- client asks again at it (the probe is that request).
scenarios["request-metadata"] = function()
  local c <close> = connect { roots = { "/tmp" }, on_sampling = function() end,
    on_elicitation = function() return "decline" end }
  assert(c.era == "modern", "expected the modern era")
end

-- SEP-2322: the tools answer input_required; the client answers with on_elicitation and
-- calls again with the server's requestState untouched.
scenarios["sep-2322-client-request-state"] = function()
  local c <close> = connect { on_elicitation = function()
    return { action = "accept", content = { confirmed = true } }
  end }
  for _, name in ipairs { "test_mrtr_echo_state", "test_mrtr_no_state", "test_mrtr_unrelated" } do
    assert(c:call_tool(name, {}))
  end
  -- no resultType from a modern server: a broken answer, never retried
  local r, err = c:call_tool("test_mrtr_no_result_type", {})
  assert(r or err.kind == "protocol", tostring(err))
end

-- SEP-2243: Mcp-Method and Mcp-Name on every kind of request.
scenarios["http-standard-headers"] = function()
  local c <close> = connect()
  local tools = assert(c:list_tools())
  if tools[1] then assert(c:call_tool(tools[1].name, {})) end
  local resources = assert(c:list_resources())
  if resources[1] then assert(c:read_resource(resources[1].uri)) end
  local prompts = assert(c:list_prompts())
  if prompts[1] then assert(c:get_prompt(prompts[1].name, {})) end
end

-- SEP-2243: the arguments a tool's schema designates with x-mcp-header go in
-- Mcp-Param-* headers.
scenarios["http-custom-headers"] = function()
  local c <close> = connect()
  assert(c:list_tools())
  for _, call in ipairs(context.toolCalls or {}) do
    assert(c:call_tool(call.name, call.arguments))
  end
end

-- Tools whose x-mcp-header declarations are invalid are left out of the list: only the
-- valid one is called.
scenarios["http-invalid-tool-headers"] = function()
  local c <close> = connect { on_error = function() end }
  for _, t in ipairs(assert(c:list_tools())) do
    assert(c:call_tool(t.name, { region = "us-west1" }))
  end
end

-- SEP-2106: a $ref to the network is never fetched.
scenarios["json-schema-ref-no-deref"] = function()
  local c <close> = connect()
  local tools, err = c:list_tools()
  assert(tools or err.kind == "protocol", tostring(err))
end

-- SEP-1613: the schema the client got is the one it echoes, every keyword kept.
scenarios["json-schema-2020-12-preservation"] = function()
  local c <close> = connect()
  local schema
  for _, t in ipairs(assert(c:list_tools())) do
    if t.name == "json_schema_2020_12_tool" then schema = t.inputSchema end
  end
  assert(c:call_tool("json_schema_echo", { schema = assert(schema) }))
end

---------------------------------------------------------------------------------------------
-- Authorization (auth/*): the suite's resource and authorization servers;
-- MCP_CONFORMANCE_CONTEXT holds pre-registered credentials when a scenario
-- has them.
---------------------------------------------------------------------------------------------

local http = require "claude.http.client"
local oauth = require "claude.oauth"

-- What a browser would do: the suite's authorization server redirects at
-- once, and the redirect (Location) is the answer; the library checks it.
local function follow_once(authorization_url)
  local resp, err = http.request { url = authorization_url, timeout = 10 }
  if not resp then return nil, err end
  return resp.headers.location
end

local function authorized(auth)
  auth = auth or {}
  auth.client_id = auth.client_id or context.client_id
  auth.client_secret = auth.client_secret or context.client_secret
  if auth.grant == "authorization_code" or auth.grant == nil then
    auth.client_name = "claudelua conformance client"
    auth.redirect_uri = "http://127.0.0.1:3000/callback"
    auth.on_authorize = follow_once
  end
  local c <close> = connect { auth = auth }
  for _, t in ipairs(assert(c:list_tools())) do
    assert(c:call_tool(t.name, {}))
  end
end

local auth_scenarios = {
  ["auth/basic-cimd"] = function()
    authorized { client_metadata_url = "https://conformance-test.local/client-metadata.json" }
  end,
  ["auth/client-credentials-basic"] = function()
    authorized { grant = "client_credentials" }
  end,
  -- SEP-1046: private_key_jwt with the scenario's ES256 key; the library signs the
  -- assertion for the issuer, the algorithm taken from the server's metadata
  ["auth/client-credentials-jwt"] = function()
    authorized { grant = "client_credentials", private_key = context.private_key_pem }
  end,
  -- SEP-990: the ID token exchanged at the identity provider for an ID-JAG, which the JWT
  -- bearer grant turns into an access token (client_secret_basic at the server)
  ["auth/enterprise-managed-authorization"] = function()
    authorized { grant = "jwt_bearer", assertion = oauth.id_jag {
      idp_token_endpoint = context.idp_token_endpoint, id_token = context.idp_id_token,
      client_id = context.idp_client_id } }
  end,
  -- SEP-1933: a workload's identity token as the grant, a public client (no secret)
  ["auth/wif-jwt-bearer"] = function()
    authorized { grant = "jwt_bearer", assertion = function() return context.valid_jwt end }
  end,
}

-- its name in conformance 0.1.16
auth_scenarios["auth/cross-app-access-complete-flow"] =
  auth_scenarios["auth/enterprise-managed-authorization"]

if scenario:find("^auth/") then
  scenarios[scenario] = auth_scenarios[scenario] or authorized
end

local run = scenarios[scenario]
if not run then
  io.stderr:write("unknown scenario: ", scenario, "\n")
  os.exit(2)
end
run()
