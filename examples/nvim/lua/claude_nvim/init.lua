--- An example Neovim plugin on claudelua's thin client (`require "claude"` in Neovim):
-- `:Claude {prompt}` opens a session about the current buffer. The agent gets in-process
-- tools that run here, against the editor's live state: the buffer's text, its diagnostics,
-- the quickfix list, and an edit that waits until the user accepts it (`:ClaudeAccept`) or
-- refuses it (`:ClaudeReject`). Messages stream into a scratch buffer. Nothing blocks the
-- editor: the session is a task on Neovim's loop, and each wait a callback.
local vim = rawget(_G, "vim")
local claude = require "claude"

local M = {}

local api = vim.api
local SEVERITY = { "ERROR", "WARN", "INFO", "HINT" }

--- Options (all optional): `claudelua` (the command), `demo` (true or a scenario file: the
-- scripted model, offline), `env`, and `query` (more session options, such as `model`).
function M.setup(opts)
  opts = opts or {}
  claude.setup { claudelua = opts.claudelua, demo = opts.demo, env = opts.env }
  M.query_options = opts.query or {}
  return M
end

-- The scratch buffer the messages go to, made once and shown in a split.
local function scratch()
  if M.scratch and api.nvim_buf_is_valid(M.scratch) then return M.scratch end
  local buf = api.nvim_create_buf(false, true)
  api.nvim_buf_set_name(buf, "claude://session")
  api.nvim_buf_set_option(buf, "filetype", "markdown")
  vim.cmd("botright split")
  api.nvim_win_set_buf(0, buf)
  vim.cmd("wincmd p")
  M.scratch = buf
  return buf
end

local function append(text)
  local buf = scratch()
  -- (a new buffer's one empty line is replaced, not followed)
  local empty = api.nvim_buf_line_count(buf) == 1
    and api.nvim_buf_get_lines(buf, 0, 1, false)[1] == ""
  api.nvim_buf_set_lines(buf, empty and 0 or -1, -1, false, vim.split(text, "\n", { plain = true }))
end

local function lines_of(buf)
  return table.concat(api.nvim_buf_get_lines(buf, 0, -1, false), "\n")
end

-- What the agent may use, all about `source` (the buffer `:Claude` was run from).
local function tools(source)
  return claude.server("nvim", {
    claude.tool("read_buffer", "The text of the user's current buffer", function()
      return lines_of(source)
    end),
    claude.tool("diagnostics", "The diagnostics of the current buffer", function()
      local out = {}
      for _, d in ipairs(vim.diagnostic.get(source)) do
        out[#out + 1] = string.format("%d:%d %s %s", d.lnum + 1, d.col + 1,
          SEVERITY[d.severity] or "?", d.message)
      end
      return #out > 0 and table.concat(out, "\n") or "no diagnostics"
    end),
    claude.tool("quickfix", "The quickfix list", function()
      local out = {}
      for _, item in ipairs(vim.fn.getqflist()) do
        local name = item.bufnr > 0 and api.nvim_buf_get_name(item.bufnr) or ""
        out[#out + 1] = string.format("%s:%d:%d: %s", name, item.lnum, item.col, item.text)
      end
      return #out > 0 and table.concat(out, "\n") or "the quickfix list is empty"
    end),
    claude.tool("replace_lines", "Replace lines start_line..end_line (1-based, inclusive) of the "
      .. "current buffer with text, once the user accepts", {
        start_line = { type = "integer", minimum = 1 },
        end_line = { type = "integer", minimum = 1 },
        text = "string: the new lines",
      }, function(args)
        local last = api.nvim_buf_line_count(source)
        if args.start_line > last + 1 or args.end_line < args.start_line - 1 then
          return nil, "lines " .. args.start_line .. "-" .. args.end_line .. " are not in "
            .. "the buffer (1-" .. last .. ")"
        end
        append(string.format("--- proposed edit of lines %d-%d:\n%s\n--- :ClaudeAccept or "
          .. ":ClaudeReject", args.start_line, args.end_line, args.text))
        -- the tool waits for the user; the editor goes on meanwhile
        local _, accepted = claude.await(function(done) M.pending = done end)
        if not accepted then return nil, "the user refused the edit" end
        api.nvim_buf_set_lines(source, args.start_line - 1, math.min(args.end_line, last), false,
          vim.split(args.text, "\n", { plain = true }))
        append("--- applied")
        return "applied"
      end),
  })
end

--- Answers the edit waiting for the user (`:ClaudeAccept`, `:ClaudeReject`).
function M.answer(accepted)
  local done = M.pending
  if not done then return vim.notify("claude: no edit is waiting", vim.log.levels.WARN) end
  M.pending = nil
  done(accepted)
end

-- One message in the scratch buffer: the text, the tool calls, the end.
local function show(msg)
  if msg.type == "assistant" then
    for _, block in ipairs(msg.message.content or {}) do
      if block.type == "text" then append(block.text) end
      if block.type == "tool_use" then append("> " .. block.name) end
    end
  elseif msg.type == "result" then
    append("--- " .. tostring(msg.subtype))
    M.last_result = msg.result
  end
end

--- Opens a session about the current buffer with `prompt`.
function M.open(prompt)
  local source = api.nvim_get_current_buf()
  local server = tools(source)
  local options = { mcp_servers = { nvim = server }, allowed_tools = server:tool_names() }
  for k, v in pairs(M.query_options or {}) do options[k] = v end
  append("## " .. prompt)
  M.running = true
  claude.spawn(function()
    local ok, err = pcall(function()
      for msg in claude.query(prompt, options) do show(msg) end
    end)
    if not ok then append("--- failed: " .. tostring(err)) end
    M.running = false
    api.nvim_exec_autocmds("User", { pattern = "ClaudeSessionEnd" })
  end)
end

return M
