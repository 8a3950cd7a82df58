-- claude.sessions against a config dir holding links made by somebody else (no CLI needed:
-- the transcripts are written by hand): delete removes a link, never what it leads to, and
-- the walks (list_subagents, import_to_store) neither loop nor leave the session's folder.
local sessions = require "claude.sessions"
local core = require "claude.core"
local harness = require "support.harness"

local q = harness.quote
local ID = "5b0c1d2e-3f40-4a51-8b62-7c8d9e0f1a2b"

local function write(path, text)
  os.execute("mkdir -p " .. q(path:match("^(.*)/[^/]*$")))
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function line(uuid, text)
  return '{"type":"user","message":{"role":"user","content":"' .. text .. '"},"uuid":"'
    .. uuid .. '","parentUuid":null,"sessionId":"' .. ID .. '"}\n'
end

-- A config dir with one session of project `root/proj`: `{ root, config, opts, folder }`.
local function fixture()
  local root = harness.tempdir()
  os.execute("mkdir -p " .. q(root .. "/proj"))
  local key = sessions.project_key(core.realpath(root .. "/proj"))
  local project = root .. "/config/projects/" .. key
  write(project .. "/" .. ID .. ".jsonl", line("11111111-1111-4111-8111-111111111111", "hi"))
  write(project .. "/" .. ID .. "/subagents/agent-a1.jsonl",
    line("22222222-2222-4222-8222-222222222222", "sub"))
  return { root = root, config = root .. "/config", folder = project .. "/" .. ID,
    opts = { config_dir = root .. "/config", directory = root .. "/proj",
      include_worktrees = false } }
end

-- Runs `code` (a chunk given `ID`, `opts`) in a stock lua5.4 child, so that a walk that
-- never returns fails this spec instead of hanging it; its stdout, or nil and why.
local function in_child(code, opts)
  local chunk = "local sessions = require 'claude.sessions'; local ID, opts = ...; " .. code
  local run = "local f = assert(load(os.getenv('CHUNK'))); io.write(f(" .. string.format("%q", ID)
    .. ", { config_dir = os.getenv('CONFIG'), directory = os.getenv('DIR'), "
    .. "include_worktrees = false }))"
  local rc, out, err = harness.sh(harness.lua_preload .. "timeout 120 env LUA_PATH='"
    .. "lua/?.lua;lua/?/init.lua;;' LUA_CPATH=" .. q(harness.build .. "/?.so;;")
    .. " CHUNK=" .. q(chunk) .. " CONFIG=" .. q(opts.config_dir) .. " DIR="
    .. q(opts.directory) .. " lua5.4 -e " .. q(run))
  if rc ~= 0 then return nil, "exit " .. rc .. ": " .. err end
  return out
end

describe("claude.sessions and links in a session's folder", function()
  it("delete removes a link, never the file or folder it leads to", function()
    local f = fixture()
    write(f.root .. "/victim/keep.txt", "keep")
    write(f.root .. "/victim.txt", "keep too")
    os.execute("ln -s " .. q(f.root .. "/victim") .. " " .. q(f.folder .. "/dir-link")
      .. " && ln -s " .. q(f.root .. "/victim.txt") .. " " .. q(f.folder .. "/file-link")
      .. " && ln -s " .. q(f.root .. "/victim") .. " " .. q(f.folder .. "/subagents/nested"))
    assert.is_true(sessions.delete(ID, f.opts))
    assert.is_nil(core.lstat(f.folder))
    assert.equal("keep", assert(io.open(f.root .. "/victim/keep.txt")):read("a"))
    assert.equal("keep too", assert(io.open(f.root .. "/victim.txt")):read("a"))
    os.execute("rm -rf " .. q(f.root))
  end)

  it("a session's folder that is itself a link: the link goes, its target stays", function()
    local f = fixture()
    write(f.root .. "/elsewhere/keep.txt", "keep")
    os.execute("rm -rf " .. q(f.folder) .. " && ln -s " .. q(f.root .. "/elsewhere") .. " "
      .. q(f.folder))
    assert.is_true(sessions.delete(ID, f.opts))
    assert.is_nil(core.lstat(f.folder))
    assert.equal("keep", assert(io.open(f.root .. "/elsewhere/keep.txt")):read("a"))
    os.execute("rm -rf " .. q(f.root))
  end)

  it("archive and rename write no file through a link", function()
    local f = fixture()
    write(f.root .. "/victim.json", "keep")
    os.execute("ln -s " .. q(f.root .. "/victim.json") .. " " .. q(f.folder .. "/archived.json"))
    assert.is_true(sessions.archive(ID, f.opts))
    assert.equal("keep", assert(io.open(f.root .. "/victim.json")):read("a"))
    assert.is_true(sessions.get_info(ID, f.opts).archived)
    -- a transcript that is a link: read, but not appended to
    local transcript = f.folder .. ".jsonl"
    os.execute("mv " .. q(transcript) .. " " .. q(f.root .. "/victim.jsonl") .. " && ln -s "
      .. q(f.root .. "/victim.jsonl") .. " " .. q(transcript))
    local before = assert(io.open(f.root .. "/victim.jsonl")):read("a")
    local ok, err = sessions.rename(ID, "new title", f.opts)
    assert.is_nil(ok)
    assert.equal("io", err.kind)
    assert.equal(before, assert(io.open(f.root .. "/victim.jsonl")):read("a"))
    -- a session folder that is a link gets no mark through it
    os.execute("rm -rf " .. q(f.folder) .. " && mkdir " .. q(f.root .. "/elsewhere")
      .. " && ln -s " .. q(f.root .. "/elsewhere") .. " " .. q(f.folder))
    ok, err = sessions.unarchive(ID, f.opts)
    assert.is_nil(ok)
    assert.equal("io", err.kind)
    assert.same({}, core.scandir(f.root .. "/elsewhere"))
    os.execute("rm -rf " .. q(f.root))
  end)

  it("list_subagents returns on a folder with two links to '.', and leaves no root", function()
    local f = fixture()
    local sub = f.folder .. "/subagents"
    write(f.root .. "/outside/agent-x.jsonl", line("33333333-3333-4333-8333-333333333333", "x"))
    os.execute("ln -s . " .. q(sub .. "/a") .. " && ln -s . " .. q(sub .. "/b")
      .. " && ln -s .. " .. q(sub .. "/up")
      .. " && ln -s " .. q(f.root .. "/outside") .. " " .. q(sub .. "/out")
      .. " && ln -s " .. q(f.root .. "/outside/agent-x.jsonl") .. " "
      .. q(sub .. "/agent-leak.jsonl"))
    local out, err = in_child("return table.concat(assert(sessions.list_subagents(ID, opts)), "
      .. "',')", f.opts)
    assert.equal("a1", out, err)
    assert.same({ "a1" }, sessions.list_subagents(ID, f.opts))
    assert.same({}, sessions.get_subagent_messages(ID, "leak", f.opts))
    os.execute("rm -rf " .. q(f.root))
  end)

  it("import_to_store returns too, and imports nothing from outside", function()
    local f = fixture()
    local sub = f.folder .. "/subagents"
    write(f.root .. "/outside/agent-x.jsonl", line("33333333-3333-4333-8333-333333333333", "x"))
    os.execute("ln -s . " .. q(sub .. "/a") .. " && ln -s . " .. q(sub .. "/b")
      .. " && ln -s " .. q(f.root .. "/outside") .. " " .. q(sub .. "/out"))
    local out, err = in_child([[
      local store = sessions.memory_store()
      assert(sessions.import_to_store(ID, store, opts))
      local subs = assert(store:list_subkeys({ session_id = ID, project_key =
        sessions.project_key(require("claude.core").realpath(opts.directory)) }))
      table.sort(subs)
      return table.concat(subs, ",")
    ]], f.opts)
    assert.equal("subagents/agent-a1", out, err)
    os.execute("rm -rf " .. q(f.root))
  end)
end)
