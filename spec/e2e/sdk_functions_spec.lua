-- The TypeScript Agent SDK's functions that need no running session (saved sessions and
-- their stores, settings, denied models), each compared with the SDK itself (pinned in
-- bench/package.json, run by Node) on sessions the REAL claude CLI wrote, against the
-- scripted Messages API.
-- Run: busted spec/e2e/sdk_functions_spec.lua   (needs `cd bench && npm ci`)
local claude = require "claude"
local json = require "claude.json"
local e2e = require "support.e2e"
local harness = require "support.harness"
local ts = require "support.ts_sdk"

local text = e2e.text
local use = e2e.use
local collect = harness.collect

local function write_json(path, value)
  local f = assert(io.open(path, "wb"))
  f:write(json.encode(value))
  f:close()
end

local function result_of(msgs)
  for i = #msgs, 1, -1 do
    if msgs[i].type == "result" then return msgs[i] end
  end
end

-- A session with a subagent, written by the real CLI; returns its id.
local function subagent_session(mock)
  local msgs = collect(claude.query("go", mock:options { allowed_tools = { "Bash", "Agent" } }))
  return result_of(msgs).session_id
end

local SUBAGENT_TURNS = {
  { content = { use("Agent", { description = "look", prompt = "look around",
    subagent_type = "general-purpose", run_in_background = false }) } },
  { content = { use("Bash", { command = "echo sub", description = "sub" }) } },
  { content = { text("sub says {{last_tool_result}}") } },
  { content = { text("main done") } },
}

local describe_sdk = ts.path() and describe or pending

describe_sdk("the TypeScript SDK's functions, against the SDK itself", function()
  before_each(harness.before)
  after_each(harness.after)

  it("match_denied_models: what the SDK blocks and warns", function()
    local models = { "claude-opus-4-8", "claude-opus-4-8[1m]", "claude-sonnet-4-5-20250929",
      "claude-3-5-sonnet", "us.anthropic.claude-haiku-4-5-v1:0", "claude-fable-5",
      "my-custom-model", "opus", "claude-opus-5-5", "claude-sonnet-4-6-fast",
      "claude-haiku-4-5@20251001", "Claude-Opus-4-1", "bedrock/claude-opus-4-1" }
    local lists = {
      { "opus" }, { "claude-opus-4" }, { "claude-opus-4-8" }, { "opus-4-8" },
      { "claude-sonnet-4-5" }, { "sonnet[1m]" }, { "opus[1m]" }, { "" }, { "default" },
      { "my-custom-model" }, { "claude-opus-4.8" }, { "opus 4.8" }, { "opus 5" }, { "opsu" },
      { "mythos" }, { "claude-3-5-sonnet" }, { "claude-haiku-4-5-v1:0" },
      { "claude-opus-4-8-latest" }, { "FABLE" }, { "claude-sonnet-4-6-fast" },
      { "fable", "haiku" }, {},
    }
    for _, denied in ipairs(lists) do
      local want = ts.call("matchDeniedModels", { models, json.array(denied) })
      local got = claude.settings.match_denied_models(models, denied)
      assert.same(want.denied, got.denied, json.encode(denied))
      assert.same(want.warnings, got.warnings, json.encode(denied))
    end
    -- lists that are not lists, entries that are not names
    for _, case in ipairs { { models, "opus" }, { models, { "opus", 3 } },
      { "opus", { "opus" } }, { { "opus", 4 }, { "opus" } } } do
      local want = ts.call("matchDeniedModels", case)
      local got = claude.settings.match_denied_models(case[1], case[2])
      assert.same(want, got, json.encode(case))
    end
  end)

  it("resolve and filter_escalating_default_mode: the SDK's cascade, and the CLI's", function()
    local mock <close> = e2e.start { turns = { { content = { text("x") } } } }
    local home, work = mock.dir .. "/home", mock.dir .. "/work"
    os.execute("mkdir -p " .. work .. "/.claude")
    write_json(home .. "/.claude/settings.json", { permissions = {
      allow = { "Bash(a)", "Bash(b)" }, defaultMode = "acceptEdits" }, env = { X = "1" },
      includeCoAuthoredBy = false })
    write_json(work .. "/.claude/settings.json", { permissions = { allow = { "Bash(b)",
      "Bash(c)" }, deny = { "WebFetch" }, defaultMode = "bypassPermissions" },
      env = { Y = "2" }, model = "claude-haiku-4-5" })
    write_json(work .. "/.claude/settings.local.json", { model = "claude-opus-4-8",
      permissions = { ask = { "Write" } } })
    local managed = { permissions = { deny = { "Bash(rm:*)" } }, model = "claude-sonnet-4-5" }
    local env = { HOME = home, CLAUDE_CONFIG_DIR = home .. "/.claude" }
    local want = ts.call("resolveSettings", { { cwd = work, managedSettings = managed,
      settingSources = { "user", "project", "local" } } }, env)
    local got = claude.settings.resolve { cwd = work, managed_settings = managed,
      config_dir = home .. "/.claude", managed_dir = mock.dir .. "/no-policy" }
    assert.same(want.effective, got.effective)
    local function sources(list)
      local out = {}
      for _, s in ipairs(list) do out[#out + 1] = { source = s.source, settings = s.settings } end
      return out
    end
    assert.same(sources(want.sources), sources(got.sources))
    for key, p in pairs(want.provenance) do
      assert.equal(p.source, got.provenance[key].source, key)
      assert.equal(p.path, got.provenance[key].path, key)
    end
    -- the trust filter: the project's bypassPermissions is dropped, as the SDK drops it
    local filtered = ts.call("filterEscalatingDefaultMode", { want })
    assert.same(filtered, claude.settings.filter_escalating_default_mode(got))
    assert.is_nil(filtered.permissions.defaultMode)
    -- and the CLI merges the same files the same way
    local s <close> = assert(claude.connect(mock:options { setting_sources = { "user", "project",
      "local" }, managed_settings = managed }))
    assert.same(got.effective, assert(s:get_settings()).effective)
  end)

  it("list_subagents and get_subagent_messages read what the SDK reads", function()
    local mock <close> = e2e.start { turns = SUBAGENT_TURNS }
    local id = subagent_session(mock)
    local config = mock.dir .. "/home/.claude"
    local env = { HOME = mock.dir .. "/home", CLAUDE_CONFIG_DIR = config }
    local agents = assert(claude.sessions.list_subagents(id, { config_dir = config }))
    assert.equal(1, #agents)
    assert.same(ts.call("listSubagents", { id }, env), agents)
    local msgs = assert(claude.sessions.get_subagent_messages(id, agents[1],
      { config_dir = config }))
    local want = ts.call("getSubagentMessages", { id, agents[1] }, env)
    assert.equal(#want, #msgs)
    for i, m in ipairs(want) do
      assert.equal(m.type, msgs[i].type)
      assert.equal(m.uuid, msgs[i].uuid)
      assert.same(m.message, msgs[i].message)
    end
    assert.equal("look around", claude.text(msgs[1]))
    assert.same({}, assert(claude.sessions.get_subagent_messages(id, "nope",
      { config_dir = config })))
  end)

  it("archive, unarchive, and a prompt that unarchives, as the SDK lists them", function()
    local mock <close> = e2e.start { turns = { { content = { text("one") } },
      { content = { text("two") } } } }
    local config = mock.dir .. "/home/.claude"
    local env = { HOME = mock.dir .. "/home", CLAUDE_CONFIG_DIR = config }
    local id = result_of(collect(claude.query("hi", mock:options()))).session_id
    local function archived()
      local mine = assert(claude.sessions.get_info(id, { config_dir = config })).archived
      local theirs = ts.call("getSessionInfo", { id }, env).archived == true
      assert.equal(theirs, mine)
      return mine
    end
    assert.is_false(archived())
    assert.is_true(claude.sessions.archive(id, { config_dir = config }))
    assert.is_true(archived())
    assert.is_true(claude.sessions.unarchive(id, { config_dir = config }))
    assert.is_false(archived())
    assert.is_true(claude.sessions.archive(id, { config_dir = config }))
    claude.sleep(0.01)
    -- a prompt sent in the session takes it out of the archive
    collect(claude.query("again", mock:options { resume = id }))
    assert.is_false(archived())
  end)

  it("memory_store as a session's store; fold_summary as the SDK folds", function()
    local mock <close> = e2e.start { turns = { { content = { text("one") } } } }
    local store = claude.sessions.memory_store()
    local id = result_of(collect(claude.query("Summarize the plan", mock:options {
      session_store = store, title = "Plan" }))).session_id
    local project = claude.sessions.project_key(claude.core.realpath(mock.dir .. "/work"))
    local key = { project_key = project, session_id = id }
    local entries = store:get_entries(key)
    assert.is_true(#entries > 0)
    assert.equal(1, store:size())
    assert.same({ { session_id = id, mtime = store:list_sessions(project)[1].mtime } },
      store:list_sessions(project))
    local summary = store:list_session_summaries(project)[1]
    local want = ts.call("foldSessionSummary", { ts.undefined, { projectKey = project,
      sessionId = id }, entries, { mtime = summary.mtime } })
    local mine = claude.sessions.fold_summary(nil, key, entries, { mtime = summary.mtime })
    assert.same(want.data, mine.data)
    assert.equal(want.mtime, mine.mtime)
    assert.same(want.data, summary.data) -- the store folded batch by batch: the same
    assert.equal("Plan", summary.data.customTitle)
    assert.equal("Summarize the plan", summary.data.firstPrompt)
    store:delete(key)
    assert.equal(0, store:size())
  end)

  it("the session functions on a store read and write what the files have", function()
    local mock <close> = e2e.start { turns = SUBAGENT_TURNS }
    local store = claude.sessions.memory_store()
    local work = claude.core.realpath(mock.dir .. "/work")
    local msgs = collect(claude.query("go", mock:options { allowed_tools = { "Bash", "Agent" },
      session_store = store, title = "Stored" }))
    local id = result_of(msgs).session_id
    local files_opts = { config_dir = mock.dir .. "/home/.claude", directory = work }
    local store_opts = { store = store, directory = work }
    local listed = assert(claude.sessions.list(store_opts))
    assert.equal(1, #listed)
    assert.equal(id, listed[1].session_id)
    local from_files = assert(claude.sessions.get_info(id, files_opts))
    local from_store = assert(claude.sessions.get_info(id, store_opts))
    for _, k in ipairs { "summary", "custom_title", "first_prompt", "cwd", "created_at" } do
      assert.equal(from_files[k], from_store[k], k)
    end
    local a = assert(claude.sessions.get_messages(id, files_opts))
    local b = assert(claude.sessions.get_messages(id, store_opts))
    assert.equal(#a, #b)
    for i = 1, #a do assert.equal(a[i].uuid, b[i].uuid) end
    -- the subagent's transcript is mirrored as a subkey
    local agents = assert(claude.sessions.list_subagents(id, store_opts))
    assert.same(assert(claude.sessions.list_subagents(id, files_opts)), agents)
    local sub = assert(claude.sessions.get_subagent_messages(id, agents[1], store_opts))
    assert.equal("look around", claude.text(sub[1]))
    -- writes go through the store
    assert.is_true(claude.sessions.rename(id, "Renamed in the store", store_opts))
    assert.is_true(claude.sessions.tag(id, "kept", store_opts))
    local info = assert(claude.sessions.get_info(id, store_opts))
    assert.equal("Renamed in the store", info.custom_title)
    assert.equal("kept", info.tag)
    assert.equal("Stored", assert(claude.sessions.get_info(id, files_opts)).custom_title)
    local none, err = claude.sessions.get_info("00000000-0000-4000-8000-000000000000", store_opts)
    assert.is_nil(none)
    assert.equal("not_found", err.kind)
    assert.is_true(claude.sessions.delete(id, store_opts))
    assert.equal(0, store:size())
  end)

  it("import_to_store copies a session and its subagents' transcripts", function()
    local mock <close> = e2e.start { turns = SUBAGENT_TURNS }
    local id = subagent_session(mock)
    local config = mock.dir .. "/home/.claude"
    local store = claude.sessions.memory_store()
    local work = claude.core.realpath(mock.dir .. "/work")
    assert.is_true(claude.sessions.import_to_store(id, store, { config_dir = config,
      directory = work, batch_size = 3 }))
    local project = claude.sessions.project_key(work)
    local key = { project_key = project, session_id = id }
    local path = config .. "/projects/" .. project .. "/" .. id .. ".jsonl"
    local n = 0
    for line in io.lines(path) do
      if line:find("%S") then n = n + 1 end
    end
    assert.equal(n, #store:get_entries(key))
    local agent = assert(claude.sessions.list_subagents(id, { config_dir = config }))[1]
    assert.same({ "subagents/agent-" .. agent }, store:list_subkeys(key))
    -- resumed from the store alone, the CLI sees the conversation
    local missing, err = claude.sessions.import_to_store("00000000-0000-4000-8000-000000000000",
      store, { config_dir = config })
    assert.is_nil(missing)
    assert.equal("not_found", err.kind)
  end)
end)
