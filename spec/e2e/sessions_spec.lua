-- claude.sessions on transcripts the REAL claude CLI writes (in the mock's
-- throwaway CLAUDE_CONFIG_DIR), and the real CLI resuming a fork made here.
-- Run: busted spec/e2e/sessions_spec.lua
local claude = require "claude"
local sessions = require "claude.sessions"
local errors = require "claude.errors"
local json = require "claude.json"
local e2e = require "support.e2e"
local harness = require "support.harness"

local T = 30

-- The text of a transcript message (string content or text blocks).
local function text_of(m)
  local c = m.message.content
  if type(c) == "string" then return c end
  local out = {}
  for _, b in ipairs(c) do
    if b.type == "text" then out[#out + 1] = b.text end
  end
  return table.concat(out)
end

describe("claude.sessions with the real CLI's transcripts", function()
  before_each(harness.before)
  after_each(harness.after)

  it("lists, reads, renames, tags, forks (the CLI resumes the fork) and deletes", function()
    local mock <close> = e2e.start { turns = {
      { content = { { type = "text", text = "first: {{last_user_text}}" } } },
      { content = { { type = "text", text = "second: {{last_user_text}}" } } },
      { content = { { type = "text", text = "third: {{last_user_text}}" } } },
    } }
    local where = { config_dir = mock.dir .. "/home/.claude", directory = mock.dir .. "/work" }
    local id
    do
      local s <close> = assert(claude.connect(mock:options()))
      assert(s:send("alpha"))
      harness.collect(s:receive(T))
      assert(s:send("beta"))
      harness.collect(s:receive(T))
      id = s.session_id
      s:close()
    end

    local list = sessions.list(where)
    assert.equal(1, #list)
    local info = list[1]
    assert.equal(id, info.session_id)
    assert.equal("alpha", info.first_prompt)
    assert.is_string(info.summary)
    assert.is_number(info.created_at)
    assert.is_true(info.last_modified >= info.created_at - 1000)
    assert.is_true(info.file_size > 0)
    assert.equal(claude.core.realpath(mock.dir .. "/work"), info.cwd)
    -- without a directory: every project of the config dir
    assert.same(list, sessions.list { config_dir = where.config_dir })
    assert.same(info, sessions.get_info(id, where))

    local msgs = assert(sessions.get_messages(id, where))
    local shape = {}
    for i, m in ipairs(msgs) do shape[i] = m.type .. ":" .. text_of(m) end
    assert.same({ "user:alpha", "assistant:first: alpha", "user:beta",
      "assistant:second: beta" }, shape)
    assert.equal(id, msgs[1].session_id)
    assert.same({ msgs[3] }, sessions.get_messages(id, { config_dir = where.config_dir,
      offset = 2, limit = 1 }))

    assert(sessions.rename(id, "  Colours  ", where))
    assert(sessions.tag(id, "keep\u{200B}", where))
    info = sessions.get_info(id, where)
    assert.equal("Colours", info.custom_title)
    assert.equal("Colours", info.summary)
    assert.equal("keep", info.tag)
    assert(sessions.tag(id, nil, where))
    assert.is_nil(sessions.get_info(id, where).tag)

    -- fork after the first answer; the CLI resumes the fork with that history only
    local fork = assert(sessions.fork(id, { config_dir = where.config_dir,
      up_to_message_id = msgs[2].uuid }))
    assert.is_not.equal(id, fork.session_id)
    local forked = assert(sessions.get_messages(fork.session_id, where))
    assert.equal(2, #forked)
    assert.equal("alpha", text_of(forked[1]))
    assert.is_not.equal(msgs[1].uuid, forked[1].uuid)
    assert.equal("Colours (fork)", sessions.get_info(fork.session_id, where).custom_title)
    assert.equal(2, #sessions.list(where))

    local result
    for msg in claude.query("gamma", mock:options { resume = fork.session_id }) do
      if msg.type == "result" then result = msg end
    end
    assert.equal("third: gamma", result.result)
    local reqs = mock:requests()
    assert.equal(3, #reqs)
    assert.equal(3, reqs[3].n_messages) -- alpha, its answer, gamma: no beta

    assert(sessions.delete(id, where))
    local gone, err = sessions.get_info(id, where)
    assert.is_nil(gone)
    assert.is_true(errors.is(err, "not_found"))
    local _, derr = sessions.delete(id, where)
    assert.is_true(errors.is(derr, "not_found"))
    assert.equal(1, #sessions.list(where))
  end)

  it("raises for misuse and answers not_found for unknown sessions", function()
    local dir = harness.tempdir()
    local where = { config_dir = dir }
    assert.same({}, sessions.list(where))
    local _, err = sessions.get_messages("6f1f4d0e-0000-4000-8000-000000000000", where)
    assert.is_true(errors.is(err, "not_found"))
    local _, rerr = sessions.rename("6f1f4d0e-0000-4000-8000-000000000000", "x", where)
    assert.is_true(errors.is(rerr, "not_found"))
    for _, case in ipairs {
      { function() sessions.rename("not-a-uuid", "x") end, "a session id %(a UUID%) expected" },
      { function() sessions.rename("6f1f4d0e-0000-4000-8000-000000000000", "  ") end,
        "a non%-empty title expected" },
      { function() sessions.list { directry = "/x" } end,
        "unknown field 'directry' to 'sessions.list' %(did you mean 'directory'%?%)" },
      { function() sessions.list { limit = "5" } end,
        "bad field 'limit' to 'sessions.list' %(number expected" },
      { function() sessions.fork("6f1f4d0e-0000-4000-8000-000000000000",
          { up_to_message_id = "x" }) end, "a session id %(a UUID%) expected, got 'x'" },
    } do
      local ok, msg = pcall(case[1])
      assert.is_false(ok)
      assert.matches(case[2], msg)
      assert.matches("^spec/e2e/sessions_spec.lua:%d+:", msg)
    end
    os.execute("rm -rf " .. dir)
  end)
end)

describe("session_store with the real CLI", function()
  before_each(harness.before)
  after_each(harness.after)

  it("mirrors the transcript the CLI writes, line for line", function()
    local mock <close> = e2e.start { turns = {
      { content = { { type = "text", text = "first: {{last_user_text}}" } } },
      { content = { { type = "text", text = "second: {{last_user_text}}" } } },
      { content = { { type = "text", text = "third: {{last_user_text}}" } } },
    } }
    local appended = {}
    local store = { append = function(_, key, entries)
      claude.sleep(0.01) -- a store may wait
      appended[#appended + 1] = { key = key, n = #entries, entries = entries }
    end }
    local id
    do
      local s <close> = assert(claude.connect(mock:options { session_store = store }))
      for _, prompt in ipairs { "alpha", "beta" } do
        assert(s:send(prompt))
        for msg in s:receive(T) do
          assert.is_not.equal("transcript_mirror", msg.type)
        end
      end
      id = s.session_id
    end
    assert.is_true(#appended > 0)
    local lines = {}
    -- its api-request records (request shapes for its own use): CLI 2.1.332 does not mirror
    -- them, 2.1.337 does; the rest is compared
    for _, a in ipairs(appended) do
      assert.same({ project_key = sessions.project_key(claude.core.realpath(mock.dir .. "/work")),
        session_id = id }, a.key)
      for _, e in ipairs(a.entries) do
        if not e.type:match("^api%-request") then lines[#lines + 1] = e end
      end
    end
    -- the same entries as the transcript on disk, in order
    local disk = {}
    local path = mock.dir .. "/home/.claude/projects/" .. appended[1].key.project_key .. "/"
      .. id .. ".jsonl"
    for line in io.lines(path) do
      local e = json.decode(line)
      if not e.type:match("^api%-request") then disk[#disk + 1] = e end
    end
    local function shape(list)
      local out = {}
      for i, e in ipairs(list) do out[i] = e.type .. ":" .. tostring(e.uuid) end
      return out
    end
    assert.same(shape(disk), shape(lines))
    assert.same(disk[#disk], lines[#lines])

    -- resuming from the store on a machine without the transcript
    assert(sessions.delete(id, { config_dir = mock.dir .. "/home/.claude" }))
    local loaded
    store.load = function(_, key)
      loaded = key
      return lines
    end
    local result
    for msg in claude.query("gamma", mock:options { session_store = store, resume = id }) do
      if msg.type == "result" then result = msg end
    end
    assert.same({ project_key = appended[1].key.project_key, session_id = id }, loaded)
    assert.equal("third: gamma", result.result)
    assert.equal(5, mock:requests()[3].n_messages) -- alpha, first, beta, second, gamma
  end)
end)

describe("session_store_flush = 'eager' with the real CLI", function()
  before_each(harness.before)
  after_each(harness.after)

  it("hands entries over before the turn's result", function()
    local mock <close> = e2e.start { turns = {
      { content = { { type = "text", text = "answer" } } },
    } }
    local s
    local early, total = 0, 0
    local store = { append = function(_, _, entries)
      -- the CLI writes the prompt's line long before the answer: an eager mirror hands it
      -- over while the turn still runs
      if s.results == 0 then early = early + #entries end
      total = total + #entries
    end }
    s = assert(claude.connect(mock:options { session_store = store,
      session_store_flush = "eager" }))
    assert(s:send("alpha"))
    harness.collect(s:receive(T))
    s:close()
    assert.is_true(early > 0) -- (batched, the first hand-over is at the result)
    assert.is_true(total >= early)
  end)
end)
