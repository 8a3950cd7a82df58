-- The reader of the docs' fenced blocks and their directives (spec/support/doc_blocks.lua).
local doc_blocks = require "support.doc_blocks"

describe("doc_blocks", function()
  it("reads blocks, their language and line, and the directive right before each", function()
    local blocks = doc_blocks.blocks(table.concat({
      "# Title", "", "<!-- doc: fragment (a piece) -->", "```lua", "x()", "```", "",
      "```sh", "echo hi", "```", "<!-- doc: output -->", "```text", "hi", "```",
      "<!-- doc: servers 3; exit 2 -->", "```sh", "server", "```",
      "<!-- doc: check -->", "", "```lua", "-- tools.lua", "return 1", "```",
    }, "\n"))
    assert.equal(5, #blocks)
    assert.same({ "lua", 4, "(a piece)" }, { blocks[1].lang, blocks[1].line, blocks[1].d.fragment })
    assert.equal("echo hi\n", blocks[2].code)
    assert.equal("hi\n", blocks[2].expect)
    assert.is_true(blocks[3].is_output)
    assert.same({ servers = 3, exit = 2 }, blocks[4].d)
    -- a directive belongs to the next block, blank lines between allowed
    assert.is_true(blocks[5].d.check)
    assert.equal("tools.lua", blocks[5].d.file)
  end)

  it("reads what a block says of itself: its command, what it needs, a saved script", function()
    local blocks = doc_blocks.blocks(table.concat({
      "```lua", "-- a.lua -- run with: busted a.lua (or lua5.4)", "```",
      "```lua", "-- needs: a real server", "```",
      "```sh", "# needs: a host to log in to", "ssh host", "```",
      "<!-- doc: file s.lua -->", "```lua", "cli:reply()", "```",
    }, "\n"))
    assert.same({ "a.lua", "busted a.lua" }, { blocks[1].d.file, blocks[1].run_with })
    assert.equal("a real server", blocks[2].needs)
    assert.equal("a host to log in to", blocks[3].needs)
    assert.same({ true, "s.lua" }, { blocks[4].saved, blocks[4].d.file })
    assert.is_falsy(blocks[1].saved)
    -- no directive adds what the reader does not see
    for _, hidden in ipairs { "cmd x", "stdin x", "env A=1", "continues", "name x" } do
      assert.has_error(function()
        doc_blocks.blocks("<!-- doc: " .. hidden .. " -->\n```lua\n```\n")
      end)
    end
    assert.has_error(function() doc_blocks.blocks("<!-- doc: frobnicate -->\n```lua\n```\n") end,
      "unknown doc directive 'frobnicate'")
  end)

  it("checks the --> texts of prints, in order, blanks and tabs alike", function()
    local arrows = doc_blocks.arrows(
      'print(1 + 1)   --> 2\nprint("a", "b")\n--> a b\nx = 1 --> no\n')
    assert.same({ "2", "a b" }, arrows)
    assert.is_true(doc_blocks.check_arrows(arrows, "2\nother\na\tb\n"))
    assert.is_nil(doc_blocks.check_arrows(arrows, "a\tb\n2\n"))
  end)

  it("matches an expected output, `...` standing for lines or for text in a line", function()
    assert.is_true(doc_blocks.check_output("a\n...\nz: ... ok\n", "a\nb\nc\nz: 1 2 ok\n"))
    assert.is_true(doc_blocks.check_output("a\n...\n", "a\n"))
    assert.is_nil(doc_blocks.check_output("a\nb\n", "a\nc\n"))
  end)
end)
