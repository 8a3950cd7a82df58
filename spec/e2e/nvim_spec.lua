-- Neovim (Debian's 0.7, LuaJIT): the example plugin (examples/nvim) in a real headless
-- `nvim`, on the thin client (claude.thin) driving `claudelua remote`, the real CLI against the
-- demo model. The agent calls the plugin's tools; the buffer tool's result shows the buffer's
-- text; the edit it proposes waits for :ClaudeAccept; and a timer of the same Neovim keeps
-- firing while the session runs.
local harness = require "support.harness"

local host = harness.claudelua
if host:sub(1, 1) ~= "/" then host = harness.root .. "/" .. host end
local q = harness.quote

local function nvim_path()
  local code, out = harness.sh("command -v nvim")
  return code == 0 and out:match("[^\n]+") or nil
end

-- The session, run by the plugin from inside Neovim; what it saw is written to `out` as Lua.
local DRIVER = [[
local root, host, out = ...
vim.opt.rtp:append(root)
vim.opt.rtp:append(root .. "/examples/nvim")
vim.cmd("runtime plugin/claude.lua")
local plugin = require("claude_nvim").setup { claudelua = host, demo = true }

vim.cmd("edit " .. vim.fn.fnameescape(vim.fn.tempname() .. ".txt"))
local source = vim.api.nvim_get_current_buf()
vim.api.nvim_buf_set_lines(source, 0, -1, false, { "the quick brown fox", "jumps over" })

-- counts while the session runs; accepts the proposed edit once it waits
local ticks, accepted, during = 0, 0, nil
local timer = vim.loop.new_timer()
timer:start(10, 10, vim.schedule_wrap(function()
  ticks = ticks + 1
  if plugin.pending then
    accepted = accepted + 1
    vim.cmd("ClaudeAccept")
  end
end))

vim.api.nvim_create_autocmd("User", { pattern = "ClaudeSessionEnd", once = true,
  callback = function()
    during = ticks
    local f = assert(io.open(out, "w"))
    f:write("return ", vim.inspect {
      result = plugin.last_result, ticks = during, accepted = accepted,
      scratch = table.concat(vim.api.nvim_buf_get_lines(plugin.scratch, 0, -1, false), "\n"),
      buffer = vim.api.nvim_buf_get_lines(source, 0, -1, false),
    })
    f:close()
    timer:close()
    vim.cmd("qa!")
  end })
vim.cmd("Claude Look at my buffer")
]]

describe("Neovim, the example plugin on the thin client", function()
  it("runs a session against the demo model while the editor goes on", function()
    local nvim = nvim_path()
    if not nvim then
      pending("nvim is not installed (Debian: apt-get install neovim); Neovim spec skipped")
      return
    end
    local dir = harness.tempdir()
    local driver, out = dir .. "/driver.lua", dir .. "/out.lua"
    local f = assert(io.open(driver, "w"))
    f:write(DRIVER)
    f:close()
    local cmd = "cd " .. q(dir) .. " && timeout 120 " .. q(nvim) .. " --headless -u NONE -i NONE"
      .. " -c " .. q("lua loadfile(" .. string.format("%q", driver) .. ")("
        .. string.format("%q, %q, %q", harness.root, host, out) .. ")")
    local code, stdout, stderr = harness.sh(cmd)
    local rf = io.open(out)
    assert(rf, "no result from nvim (exit " .. code .. ")\nstdout:\n" .. stdout
      .. "\nstderr:\n" .. stderr)
    local seen = assert(load(rf:read("a")))()
    rf:close()
    os.execute("rm -rf " .. q(dir))

    -- the agent called the buffer tool, and its result shows the buffer's text
    assert.truthy(seen.scratch:find("> mcp__nvim__read_buffer", 1, true), seen.scratch)
    assert.truthy(seen.result:find("read_buffer() returned: the quick brown fox\njumps over",
      1, true), seen.result)
    assert.truthy(seen.result:find("diagnostics() returned: no diagnostics", 1, true),
      seen.result)
    assert.truthy(seen.result:find("quickfix() returned: the quickfix list is empty", 1, true),
      seen.result)
    -- the edit waited for the user, then went into the buffer
    assert.equal(1, seen.accepted)
    local text = seen.result:match("replace_lines%(end_line=1, start_line=1, text=(.-)%) "
      .. "returned: applied")
    assert.truthy(text, seen.result)
    assert.same({ text, "jumps over" }, seen.buffer)
    -- the editor's own timer kept firing while the session ran
    assert.is_true(seen.ticks > 2, "ticks during the session: " .. seen.ticks)
  end)
end)
