-- claude.mcp.skills (a folder of Agent Skills: frontmatter, digests, the tree) and the skills
-- a server serves (server option `skills`, server:add_skills).
local claude = require "claude"
local core = require "claude.core"
local skills = require "claude.mcp.skills"
local harness = require "support.harness"

local FIXTURE = harness.root .. "/spec/conformance/skills"

local function write(path, text)
  os.execute("mkdir -p " .. harness.quote(path:match("^(.*)/[^/]*$")))
  local f = assert(io.open(path, "wb"))
  f:write(text)
  f:close()
end

local function hex(s)
  return (s:gsub(".", function(c) return string.format("%02x", c:byte()) end))
end

describe("claude.mcp.skills", function()
  it("parses the frontmatter of SKILL.md", function()
    local f = assert(skills.frontmatter(table.concat({ "---", "name: pdf",
      "description: 'Reads PDFs: tables, forms'", "license: MIT", "metadata:",
      "  author: me", "  version: \"1.0\"", "tags: [a, b]", "allowed-tools:", "  - Bash",
      "  - Read", "long: |", "  one", "  two", "---", "# body" }, "\n")))
    assert.equal("pdf", f.name)
    assert.equal("Reads PDFs: tables, forms", f.description)
    assert.same({ author = "me", version = "1.0" }, f.metadata)
    assert.same({ "a", "b" }, f.tags)
    assert.same({ "Bash", "Read" }, f["allowed-tools"])
    assert.equal("one\ntwo", f.long)
    assert.same({ nil, "no frontmatter (a '---' line, YAML, a '---' line)" },
      { skills.frontmatter("# no frontmatter") })
  end)

  it("tells valid skill names", function()
    for _, n in ipairs { "pdf", "lua-style", "a1", string.rep("a", 64) } do
      assert.is_true(skills.valid_name(n), n)
    end
    for _, n in ipairs { "", "-a", "a-", "a--b", "A", "a_b", string.rep("a", 65) } do
      assert.is_false(skills.valid_name(n), n)
    end
  end)

  it("loads a folder: entries, digests, sizes, directories", function()
    local c = skills.load(FIXTURE)
    assert.equal(1, #c.skills)
    local e = c.skills[1]
    assert.equal("skill://lua-style/SKILL.md", e.uri)
    assert.equal("lua-style", e.frontmatter.name)
    assert.equal("skill://lua-style/SKILL.md", e.resources[1].uri)
    local bytes = assert(io.open(FIXTURE .. "/lua-style/SKILL.md", "rb")):read("a")
    assert.equal("sha256:" .. hex(core.sha256(bytes)), e.resources[1].digest)
    assert.equal(#bytes, e.resources[1].size)
    assert.equal(3, #e.resources)
    local children = skills.children(c, "lua-style")
    local kinds = {}
    for _, ch in ipairs(children) do kinds[ch.name] = ch.mimeType end
    assert.same({ ["SKILL.md"] = "text/markdown", references = "inode/directory",
      scripts = "inode/directory" }, kinds)
    assert.is_nil(skills.children(c, "lua-style/SKILL.md"))
    assert.equal("lua-style/scripts/check.sh", skills.path("skill://lua-style/scripts/check.sh"))
    assert.equal("skill://a%20b/SKILL.md", skills.uri("a b/SKILL.md"))
  end)

  it("refuses a folder whose skills are not valid, saying which", function()
    local dir = harness.tempdir()
    write(dir .. "/one/x/SKILL.md", "---\nname: y\ndescription: d\n---\n")
    assert.has_error(function() skills.load(dir .. "/one") end,
      "bad field 'skills' to 'server' (" .. dir .. "/one/x/SKILL.md: its name 'y' is not its "
      .. "directory's 'x')")
    write(dir .. "/two/x/SKILL.md", "---\nname: x\n---\n")
    assert.has_error(function() skills.load(dir .. "/two") end,
      "bad field 'skills' to 'server' (" .. dir .. "/two/x/SKILL.md: the frontmatter needs a "
      .. "description)")
    write(dir .. "/three/Bad/SKILL.md", "---\nname: Bad\ndescription: d\n---\n")
    assert.error_matches(function() skills.load(dir .. "/three") end, "not a valid skill name")
    assert.error_matches(function() skills.load(dir .. "/none") end, "is not a directory")
    os.execute("rm -rf " .. harness.quote(dir))
  end)

  it("serves no file through a link out of the folder: a linked file, a linked folder",
    harness.task(function()
    local dir = harness.tempdir()
    write(dir .. "/outside/secret.txt", "the secret")
    write(dir .. "/outside/ssh/id_rsa", "-----BEGIN OPENSSH PRIVATE KEY-----")
    write(dir .. "/skills/pdf/SKILL.md", "---\nname: pdf\ndescription: d\n---\n")
    write(dir .. "/skills/pdf/notes.md", "inside")
    local q = harness.quote
    os.execute("ln -s " .. q(dir .. "/outside/secret.txt") .. " "
      .. q(dir .. "/skills/pdf/leak.txt")
      .. " && ln -s ../../outside/ssh " .. q(dir .. "/skills/pdf/keys")
      .. " && ln -s notes.md " .. q(dir .. "/skills/pdf/alias.md") -- inside: served
      .. " && ln -s " .. q(dir .. "/outside") .. " " .. q(dir .. "/skills/elsewhere"))
    local c = skills.load(dir .. "/skills")
    assert.equal(1, #c.skills)
    local uris = {}
    for _, r in ipairs(c.skills[1].resources) do uris[#uris + 1] = r.uri end
    table.sort(uris)
    assert.same({ "skill://pdf/SKILL.md", "skill://pdf/alias.md", "skill://pdf/notes.md" }, uris)
    assert.is_nil(c.files["pdf/leak.txt"])
    assert.is_nil(c.files["pdf/keys/id_rsa"])
    assert.is_nil(skills.children(c, "pdf/keys"))
    -- and as a server serves them
    local srv = claude.server("s", {}, { skills = dir .. "/skills" })
    local r = require("claude.mcp.router").new({ s = srv })
    for _, uri in ipairs { "skill://pdf/leak.txt", "skill://pdf/keys/id_rsa" } do
      local read = r:handle("s", { jsonrpc = "2.0", id = 1, method = "resources/read",
        params = { uri = uri } })
      assert.is_nil(read.result, uri)
    end
    -- a skill folder given itself, whose SKILL.md links out: refused, saying why
    write(dir .. "/outside/SKILL.md", "---\nname: one\ndescription: d\n---\n")
    os.execute("mkdir -p " .. q(dir .. "/one") .. " && ln -s ../outside/SKILL.md "
      .. q(dir .. "/one/SKILL.md"))
    assert.error_matches(function() skills.load(dir .. "/one") end,
      "SKILL.md leads out of the skills folder")
    os.execute("rm -rf " .. q(dir))
  end))

  it("reads a file beneath a folder, the kernel refusing a path out when it opens it",
    function()
    local dir = harness.tempdir()
    write(dir .. "/in/a.md", "inside")
    write(dir .. "/out.txt", "secret")
    local q = harness.quote
    os.execute("ln -s a.md " .. q(dir .. "/in/rel.md") .. " && ln -s ../out.txt "
      .. q(dir .. "/in/leak.txt") .. " && ln -s " .. q(dir .. "/in/a.md") .. " "
      .. q(dir .. "/in/abs.md") .. " && mkfifo " .. q(dir .. "/in/fifo"))
    local _, _, code = core.read_beneath(dir .. "/in", "a.md", 100)
    if code == "ENOSYS" then return end -- no openat2: skills check real paths instead
    assert.equal("inside", core.read_beneath(dir .. "/in", "a.md", 100))
    assert.equal("inside", core.read_beneath(dir .. "/in", "rel.md", 100))
    for _, path in ipairs { "leak.txt", "../out.txt", dir .. "/out.txt", "abs.md" } do
      assert.equal("EXDEV", select(3, core.read_beneath(dir .. "/in", path, 100)), path)
    end
    assert.equal("EINVAL", select(3, core.read_beneath(dir .. "/in", "fifo", 100)))
    assert.equal("EFBIG", select(3, core.read_beneath(dir .. "/in", "a.md", 3)))
    -- a skill with such links loads, serving none of them
    write(dir .. "/in/pdf/SKILL.md", "---\nname: pdf\ndescription: d\n---\n")
    os.execute("ln -s " .. q(dir .. "/in/a.md") .. " " .. q(dir .. "/in/pdf/abs.md"))
    local c = skills.load(dir .. "/in")
    assert.same({ "skill://pdf/SKILL.md" }, { c.skills[1].resources[1].uri,
      c.skills[1].resources[2] and c.skills[1].resources[2].uri })
    os.execute("rm -rf " .. q(dir))
  end)

  it("walks a folder holding links to itself once (no loop)", function()
    local dir = harness.tempdir()
    write(dir .. "/pdf/SKILL.md", "---\nname: pdf\ndescription: d\n---\n")
    os.execute("ln -s . " .. harness.quote(dir .. "/pdf/a") .. " && ln -s . "
      .. harness.quote(dir .. "/pdf/b") .. " && ln -s .. " .. harness.quote(dir .. "/up"))
    local c = skills.load(dir)
    assert.equal(1, #c.skills)
    assert.equal(1, #c.skills[1].resources)
    os.execute("rm -rf " .. harness.quote(dir))
  end)

  it("serves a server's skills as resources", harness.task(function()
    local srv = claude.server("s", {}, { skills = FIXTURE })
    assert.equal("skill://lua-style/SKILL.md", srv.resource_list[1].uri)
    assert.equal("lua-style", srv.resource_list[1].name)
    assert.equal("skill://{+path}", srv.resource_template_list[1].uri_template)
    local r = require("claude.mcp.router").new({ s = srv })
    local read = r:handle("s", { jsonrpc = "2.0", id = 1, method = "resources/read",
      params = { uri = "skill://lua-style/references/GUIDE.md" } })
    assert.matches("^# The guide", read.result.contents[1].text)
    assert.equal("text/markdown", read.result.contents[1].mimeType)
    -- served again: the old ones go
    srv:add_skills({ FIXTURE })
    assert.equal(1, #srv.resource_list)
  end))
end)
