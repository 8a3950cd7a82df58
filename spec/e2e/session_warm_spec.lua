-- A CLI started before the first prompt: claude.startup (the session's options up front)
-- and claude.prewarm (a spare, claimed later for a folder), against the REAL claude CLI and
-- the scripted Messages API. bench/first_turn measures what they save.
-- Run: busted spec/e2e/session_warm_spec.lua
local claude = require "claude"
local e2e = require "support.e2e"
local harness = require "support.harness"

local T = 30

local text = e2e.text
local collect = harness.collect

local function result_of(msgs)
  for i = #msgs, 1, -1 do
    if msgs[i].type == "result" then return msgs[i] end
  end
end

local function first(msgs, type_, subtype)
  for _, m in ipairs(msgs) do
    if m.type == type_ and (subtype == nil or m.subtype == subtype) then return m end
  end
end

local function is_dir(path)
  local st = claude.core.stat(path)
  return st ~= nil and st.type == "directory"
end

describe("a CLI started before the first prompt", function()
  before_each(harness.before)
  after_each(harness.after)

  it("startup: initialized before the prompt, then one query", function()
    local mock <close> = e2e.start { turns = { { content = { text("got {{last_user_text}}") } } } }
    local warm = assert(claude.startup(mock:options()))
    -- ready: the answer to initialize is in, and the CLI said where it got to
    assert.is_table(warm.session:server_info())
    assert.equal("initialize_before_reply", warm.session.startup_mark.mark)
    assert.equal(0, #mock:requests())
    local msgs = collect(warm:query("hello"))
    assert.equal("got hello", result_of(msgs).result)
    assert.has_error(function() warm:query("again") end)
    warm:close()
  end)

  it("startup: connect() for many turns; close() without a prompt stops the CLI", function()
    local mock <close> = e2e.start { turns = { { content = { text("1") } },
      { content = { text("2") } } } }
    local warm = assert(claude.startup(mock:options()))
    local s <close> = assert(warm:connect())
    assert(s:send("a"))
    assert.equal("1", result_of(collect(s:receive(T))).result)
    assert(s:send("b"))
    assert.equal("2", result_of(collect(s:receive(T))).result)
    local idle = assert(claude.startup(mock:options()))
    local pid = idle.session.pid
    idle:close()
    assert.is_not_nil(idle.session.exit_code)
    assert.is_false(claude.core.kill(pid, 0) == true)
  end)

  it("prewarm: a spare parked under the config directory, claimed for a folder", function()
    local mock <close> = e2e.start({ turns = { { content = { text("in {{last_user_text}}") } } } },
      { log_bodies = true })
    local opts = mock:options()
    opts.cwd = nil -- the spare parks in a folder of its own
    local spare = assert(claude.prewarm(opts))
    local parking = spare.parking
    assert.matches("^" .. mock.dir:gsub("%p", "%%%0") .. "/home/%.claude/spares/spare%-", parking)
    assert.is_true(is_dir(parking))
    local work = mock.dir .. "/work"
    local msgs = collect(assert(spare:claim("the folder", { cwd = work, title = "Claimed",
      model = "claude-haiku-4-5" })))
    assert.equal("in the folder", result_of(msgs).result)
    assert.equal(work, first(msgs, "system", "init").cwd)
    assert.equal(work, spare.claimed.cwd)
    assert.equal(result_of(msgs).session_id, spare.claimed.session_id)
    assert.is_number(spare.claimed.parked_ms)
    assert.is_false(is_dir(parking)) -- the parking folder goes at the claim
    assert.equal("claude-haiku-4-5", mock:requests()[1].model)
    local info = assert(claude.sessions.get_info(spare.claimed.session_id,
      { config_dir = mock.dir .. "/home/.claude" }))
    assert.equal("Claimed", info.custom_title)
    assert.has_error(function() spare:claim("again", { cwd = work }) end)
  end)

  it("prewarm: a claim the spare refuses is a claim error, and nothing runs", function()
    local mock <close> = e2e.start { turns = { { content = { text("never") } } } }
    local spare = assert(claude.prewarm(mock:options()))
    local it, err, kind = spare:claim("hi", { cwd = mock.dir .. "/no/such/folder" })
    assert.is_nil(it)
    assert.equal("claim", kind)
    assert.matches("cwd_not_found", err.message)
    assert.equal(0, #mock:requests())
    spare:close()
    -- what belongs to one session is refused at once
    assert.has_error(function() claude.prewarm(mock:options { resume = "x" }) end)
  end)
end)
