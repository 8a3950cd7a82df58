-- A server with the metadata of MCP 2025-11-25 (serverInfo's title, description, websiteUrl
-- and icons; icons on a tool, a resource, a resource template and a prompt) and tools that
-- use the typed requests: URL-mode elicitation, and sampling with tools (a loop: the
-- client's model asks for a tool, the tool runs here, its result goes back). Served by
-- `claudelua mcp spec/support/mcp_metadata_tools.lua` in spec/e2e/mcp_metadata_spec.lua.
local claude = require "claude"
local json = require "claude.json"

local ICON = { src = "https://example.com/icon-48.png", mime_type = "image/png",
  sizes = { "48x48" }, theme = "light" }
local SVG = { src = "data:image/svg+xml;base64,PHN2Zy8+", mime_type = "image/svg+xml",
  sizes = { "any" } }

local add = claude.tool { name = "add", description = "Add two numbers",
  input_schema = { a = "number", b = "number" },
  execute = function(args) return args.a + args.b end }

local items = {
  claude.tool { name = "ask_url", title = "Sign in", icons = { ICON, SVG },
    description = "Asks the user to open a URL",
    execute = function(_, ctx)
      local r, err, kind = ctx.elicit_url { message = "Please sign in",
        url = "https://example.com/signin?session=1", id = "signin-1" }
      if not r then return nil, kind .. ": " .. err.message end
      local completed = r.id ~= nil and ctx.elicit_complete(r.id)
      return json.encode { action = r.action, id = r.id or json.null, completed = completed }
    end },
  claude.tool { name = "sum_by_model", description = "Asks the client's model to add",
    execute = function(_, ctx)
      local messages = { "What is 2 + 3? Use the add tool." }
      local r, err, kind = ctx.sample { messages = messages, max_tokens = 200,
        system = "You add numbers.", tools = { add }, tool_choice = "required" }
      if not r then return nil, kind .. ": " .. err.message end
      local use = r.tool_uses[1]
      if not use then return nil, "no tool use: " .. r.text end
      local sum = claude.mcp.tool.call(add, use.input).content[1].text
      messages[2] = { role = "assistant", content = r.blocks }
      messages[3] = { role = "user", content = { { type = "tool_result", toolUseId = use.id,
        content = { { type = "text", text = sum } } } } }
      local final, ferr, fkind = ctx.sample { messages = messages, max_tokens = 200,
        tools = { add }, tool_choice = "none" }
      if not final then return nil, fkind .. ": " .. ferr.message end
      return json.encode { first_stop = r.stop_reason, tool = use.name, input = use.input,
        final = final.text, final_stop = final.stop_reason }
    end },
  claude.resource { uri = "test://logo", name = "logo", title = "The logo", icons = { ICON },
    text = "logo" },
  claude.resource { uri_template = "test://item/{id}", name = "item", icons = { ICON },
    read = function(_, params) return params.id end },
  claude.prompt { name = "greet", title = "Greeting", icons = { ICON },
    get = function() return "hello" end },
}

return claude.server("metadata-demo", items, { version = "2.1.0", title = "Metadata Demo",
  description = "A server that says who it is", website_url = "https://example.com/demo",
  icons = { ICON } })
