-- The example plugin's commands (Neovim 0.7+); the work is in lua/claude_nvim/init.lua.
--   :Claude {prompt}   a session about the current buffer; messages stream into a scratch buffer
--   :ClaudeAccept      apply the edit the agent proposed
--   :ClaudeReject      refuse it (the agent is told)
local vim = rawget(_G, "vim")
local command = vim.api.nvim_create_user_command

command("Claude", function(o) require("claude_nvim").open(o.args) end,
  { nargs = "+", desc = "Ask Claude about the current buffer" })
command("ClaudeAccept", function() require("claude_nvim").answer(true) end,
  { desc = "Apply the edit Claude proposed" })
command("ClaudeReject", function() require("claude_nvim").answer(false) end,
  { desc = "Refuse the edit Claude proposed" })
