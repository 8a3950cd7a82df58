--- A CLI started before the first prompt, so that the first turn does not pay the CLI's
-- start-up: `claude.startup` (the TypeScript SDK's `startup()`: the session's options up
-- front, the CLI initialized and waiting for the prompt) and `claude.prewarm` (its
-- `prewarm()`: a spare CLI parked with `--await-claim`, not yet any session, bound later to
-- a folder and a prompt with `claim_session`).
-- @module claude.session.warm
local core = require "claude.core"
local errors = require "claude.errors"
local session = require "claude.session"

local M = {}

local function copy(t)
  local out = {}
  for k, v in pairs(t or {}) do out[k] = v end
  return out
end

-- The options with the start-up marks asked for (the CLI reports its checkpoints while it
-- starts, so a timeout can say where it stopped).
local function with_marks(options)
  options = copy(options)
  local env = copy(options.env)
  if env.CLAUDE_CODE_SDK_READS_STARTUP_MARKS == nil then
    env.CLAUDE_CODE_SDK_READS_STARTUP_MARKS = "1"
  end
  options.env = env
  return options
end

local function ready(s)
  local info, err = s:wait_ready()
  if not info then
    s:close()
    return nil, err, err.kind
  end
  return info
end

---------------------------------------------------------------------------
-- startup

local Warm = {}
Warm.__index = Warm
Warm.__name = "claude.WarmQuery"

function Warm:__tostring()
  return "claude.WarmQuery (" .. (self.used and "used" or "ready") .. ")"
end

--- Sends `prompt` to the waiting CLI and iterates over the conversation, as `claude.query`
-- does (same prompt forms; the fourth value is the session). Only once.
-- @function Warm:query
Warm.query = errors.public(function(self, prompt)
  if self.used then errors.misuse("this warm query was used already (query once)") end
  if type(prompt) ~= "string" and type(prompt) ~= "table" and type(prompt) ~= "function" then
    errors.misuse("bad argument #1 to 'query' (string, table or function expected, got %s)",
      type(prompt))
  end
  self.used = true
  return session.run_query(self.session, prompt)
end)

--- The session itself, for many turns (`send`, `receive`, ...). Only once, instead of `query`.
function Warm:connect()
  if self.used then return errors.fail("closed", "this warm query was used already") end
  self.used = true
  return self.session
end

--- Stops the waiting CLI without a prompt; also `<close>`.
function Warm:close()
  self.used = true
  self.session:close()
end
Warm.__close = Warm.close

--- Starts the CLI with `options` and waits until it is initialized: the first prompt then
-- goes to a CLI that is ready. The TypeScript SDK's `startup()`.
-- @return the warm query (`query(prompt)`, `connect()`, `close()`), or nil, err, kind
-- @function startup
M.startup = errors.public(function(options)
  local s, err = session.open(with_marks(options), "startup")
  if not s then return nil, err, err.kind end
  local info, ierr, kind = ready(s)
  if not info then return nil, ierr, kind end
  return setmetatable({ session = s }, Warm)
end)

---------------------------------------------------------------------------
-- prewarm

local Spare = {}
Spare.__index = Spare
Spare.__name = "claude.Spare"

function Spare:__tostring()
  return "claude.Spare (" .. (self.claimed and ("claimed, session " .. tostring(
    self.claimed.session_id)) or self.used and "closed" or "parked") .. ")"
end

local function remove_parking(self)
  if self.parking then
    os.execute("rm -rf '" .. self.parking:gsub("'", "'\\''") .. "'")
    self.parking = nil
  end
end

local CLAIM = { cwd = "string", env = "table", additional_directories = "table",
  permission_mode = "string", append_system_prompt = "string", title = "string",
  agents = "table", model = "string", max_thinking_tokens = "number", settings = "table" }

--- Binds the spare to a session in `claim.cwd` and sends `prompt`; iterates over the
-- conversation as `claude.query` does. Only once.
-- @tparam string|table|function prompt
-- @tparam table claim `{ cwd = dir (required), env = { only CLAUDE_CODE_OAUTH_TOKEN,
--   CLAUDE_CODE_SESSION_ACCESS_TOKEN, CLAUDE_CODE_HOST_SESSION_ID }, additional_directories =,
--   permission_mode =, append_system_prompt =, title =, agents =, model =,
--   max_thinking_tokens =, settings = { flag settings } }`
-- @return the iterator, nil, nil, the session | nil, err (kind `claim`: the spare refused;
--   start the session with `claude.query` instead)
-- @function Spare:claim
Spare.claim = errors.public(function(self, prompt, claim)
  if self.used then errors.misuse("this spare was claimed or closed already (claim once)") end
  errors.check(claim, 2, "claim", "table")
  for k, v in pairs(claim) do
    local want = type(k) == "string" and CLAIM[k]
    if not want then errors.unknown_field(k, CLAIM, "claim") end
    errors.check_field(v, k, "claim", want)
  end
  if type(claim.cwd) ~= "string" then errors.bad_field("cwd", "claim", "a directory expected") end
  self.used = true
  local s = self.session
  local cwd = claim.cwd
  if cwd:sub(1, 1) ~= "/" and cwd ~= "~" and cwd:sub(1, 2) ~= "~/" then
    cwd = core.cwd() .. "/" .. cwd
  end
  local fields = { cwd = cwd, env = claim.env, permission_mode = claim.permission_mode,
    additional_directories = claim.additional_directories and require("claude.json").array(
      copy(claim.additional_directories)),
    append_system_prompt = claim.append_system_prompt, title = claim.title,
    agents = claim.agents and require("claude.session.argv").agents_wire(claim.agents),
    sdk_mcp_servers = require("claude.json").array(copy(s.sdk_names)),
    include_initialize = true }
  local r, err = s:control("claim_session", fields)
  remove_parking(self)
  if not r then
    s:close()
    return nil, errors.new("claim", "the spare refused the claim: " .. errors.message(
      err.remote_message or err), { cause = err }), "claim"
  end
  self.claimed = { cwd = r.cwd or cwd, session_id = r.session_id, parked_ms = r.parked_ms,
    sdk_mcp_settled = r.sdk_mcp_settled }
  if type(r.initialize) == "table" then s.init_response, s.server_info_table = r.initialize,
    r.initialize end
  -- the flag settings go before the prompt: one refused means no prompt (as the TypeScript
  -- SDK does); a model or thinking budget refused only leaves the session without it
  if claim.settings then
    local ok, serr = s:apply_flag_settings(claim.settings)
    if not ok then
      s:close()
      return nil, errors.new("claim", "settings_not_applied: " .. errors.message(serr),
        { cause = serr }), "claim"
    end
  end
  self.not_applied = {}
  if claim.model then
    local ok, merr = s:set_model(claim.model)
    if not ok then self.not_applied.model = merr end
  end
  if claim.max_thinking_tokens then
    local ok, terr = s:set_max_thinking_tokens(claim.max_thinking_tokens)
    if not ok then self.not_applied.max_thinking_tokens = terr end
  end
  return session.run_query(s, prompt)
end)

--- Discards the spare (before a claim), or closes its session (after); also `<close>`.
function Spare:close()
  self.used = true
  self.session:close()
  remove_parking(self)
end
Spare.__close = Spare.close

local NOT_FOR_SPARES = { "resume", "continue", "continue_conversation", "fork_session",
  "session_id" }

--- Starts a spare CLI that is not yet any session (`--await-claim`): initialized, its tools,
-- plugins and MCP servers connected, waiting for `spare:claim(prompt, { cwd = ... })`. The
-- TypeScript SDK's `prewarm()`. Without `options.cwd` it waits in a folder of its own under
-- the CLI's config directory.
-- @return the spare (`claim`, `close`), or nil, err, kind
-- @function prewarm
M.prewarm = errors.public(function(options)
  errors.check(options, 1, "prewarm", "table", true)
  options = with_marks(options)
  for _, k in ipairs(NOT_FOR_SPARES) do
    if options[k] ~= nil then
      errors.bad_field(k, "prewarm", "a spare is no session yet: give it to claude.query")
    end
  end
  local parking
  if not options.cwd then
    local env = options.env
    local config = env.CLAUDE_CONFIG_DIR or os.getenv("CLAUDE_CONFIG_DIR")
    if not config or config == "" then
      config = (env.HOME or os.getenv("HOME") or "/tmp") .. "/.claude"
    end
    core.mkdir(config)
    core.mkdir(config .. "/spares")
    parking = config .. "/spares/spare-" .. require("claude.sessions").uuid4():sub(1, 8)
    core.mkdir(parking)
    options.cwd = parking
  end
  local extra = copy(options.extra_args)
  extra["await-claim"] = true
  options.extra_args = extra
  local s, err = session.open(options, "prewarm")
  if not s then return nil, err, err.kind end
  local info, ierr, kind = ready(s)
  if not info then return nil, ierr, kind end
  return setmetatable({ session = s, parking = parking }, Spare)
end)

M.Warm, M.Spare = Warm, Spare

return M
