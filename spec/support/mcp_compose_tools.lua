-- A Lua server and server-everything (started by claude.mcp over stdio) composed in one:
-- the tools file of spec/e2e/mcp_compose_spec.lua. Arguments: node, server-everything's
-- entry.
local claude = require "claude"

local node, everything = ...
local notes = {}

local lua_server = claude.server("notes", {
  claude.tool("add", "Store a note", { text = "string" }, function(args)
    notes[#notes + 1] = args.text
    return "stored as #" .. #notes
  end),
  claude.resource { uri = "notes://all", name = "All notes", mime_type = "text/plain",
    read = function() return table.concat(notes, "\n") end },
  claude.prompt { name = "summarize", arguments = { "style?" },
    get = function(a) return "Summarize my notes" .. (a.style and " as " .. a.style or "") end },
  claude.completion { ref = { type = "ref/prompt", name = "summarize" },
    complete = function(argument)
      local out = {}
      for _, v in ipairs { "bullets", "haiku", "one line" } do
        if v:sub(1, #argument.value) == argument.value then out[#out + 1] = v end
      end
      return out
    end },
})

-- its sampling, elicitation and roots requests go to the client of the call that made them
local everything_client = assert(claude.mcp.connect { command = node,
  args = { everything, "stdio" }, timeout = 30, forward_requests = true })

return claude.server("composed", {})
  :mount("notes", lua_server)
  :mount("ev", everything_client)
