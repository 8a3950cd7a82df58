-- The server the MCP conformance suite (@modelcontextprotocol/conformance, server side)
-- expects: every tool, resource, prompt and completion its scenarios call, by the names the
-- scenarios use. Served by `claudelua mcp spec/conformance/tools.lua` over stdio and HTTP.
local claude = require "claude"
local content = require "claude.mcp.content"
local json = require "claude.json"

-- A 1x1 red PNG and a tiny WAV, base64.
local PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0g"
  .. "AAAABJRU5ErkJggg=="
local WAV = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YQAAAAA="

local function sleep_ms(ms) claude.sleep(ms / 1000) end

local server -- for resource_updated below

local items = {
  claude.tool("test_simple_text", "Returns simple text", function()
    return "This is a simple text response for testing."
  end),
  claude.tool("test_image_content", "Returns an image", function()
    return { content.image { data = PNG, mime_type = "image/png" } }
  end),
  claude.tool("test_audio_content", "Returns audio", function()
    return { content.audio { data = WAV, mime_type = "audio/wav" } }
  end),
  claude.tool("test_embedded_resource", "Returns an embedded resource", function()
    return { content.resource { uri = "test://embedded-resource", mime_type = "text/plain",
      text = "This is an embedded resource content." } }
  end),
  claude.tool("test_multiple_content_types", "Returns text, an image and a resource",
    function()
      return {
        content.text "Multiple content types test:",
        content.image { data = PNG, mime_type = "image/png" },
        content.resource { uri = "test://mixed-content-resource", mime_type = "application/json",
          text = '{"test":"data","value":123}' },
      }
    end),
  claude.tool("test_tool_with_logging", "Logs three messages while it runs", function(_, ctx)
    ctx.log("info", "Tool execution started")
    sleep_ms(50)
    ctx.log("info", "Tool processing data")
    sleep_ms(50)
    ctx.log("info", "Tool execution completed")
    return "Tool with logging executed successfully"
  end),
  claude.tool("test_error_handling", "Always fails", function()
    error("This tool intentionally returns an error for testing", 0)
  end),
  claude.tool("test_tool_with_progress", "Reports progress 0, 50, 100 of 100", function(_, ctx)
    ctx.progress(0, 100)
    sleep_ms(50)
    ctx.progress(50, 100)
    sleep_ms(50)
    ctx.progress(100, 100)
    return "Tool with progress executed successfully"
  end),
  claude.tool("test_sampling", "Asks the client's model", { prompt = "string" },
    function(args, ctx)
      local r, err = ctx.sample {
        messages = { { role = "user", content = { type = "text", text = args.prompt } } },
        maxTokens = 100,
      }
      if not r then return nil, err end
      local text = type(r.content) == "table" and r.content.text or json.encode(r.content)
      return "LLM response: " .. tostring(text)
    end),
  claude.tool("test_elicitation", "Asks the user", { message = "string" }, function(args, ctx)
    local r, err = ctx.elicit {
      message = args.message,
      requestedSchema = { type = "object", properties = {
        username = { type = "string", description = "User's response" },
        email = { type = "string", description = "User's email address" },
      }, required = { "username", "email" } },
    }
    if not r then return nil, err end
    return "User response: action=" .. tostring(r.action) .. ", content="
      .. json.encode(r.content or json.object())
  end),
  claude.tool("test_elicitation_sep1034_defaults", "Elicitation with defaults", function(_, ctx)
    local r, err = ctx.elicit {
      message = "Please review and update the form fields with defaults",
      requestedSchema = { type = "object", properties = {
        name = { type = "string", description = "User name", default = "John Doe" },
        age = { type = "integer", description = "User age", default = 30 },
        score = { type = "number", description = "User score", default = 95.5 },
        status = { type = "string", description = "User status",
          enum = { "active", "inactive", "pending" }, default = "active" },
        verified = { type = "boolean", description = "Verification status", default = true },
      } },
    }
    if not r then return nil, err end
    return "Elicitation completed: action=" .. tostring(r.action) .. ", content="
      .. json.encode(r.content or json.object())
  end),
  claude.tool("test_elicitation_sep1330_enums", "Elicitation with every enum form",
    function(_, ctx)
      local r, err = ctx.elicit {
        message = "Please select options from the enum fields",
        requestedSchema = { type = "object", properties = {
          untitledSingle = { type = "string", description = "Select one option",
            enum = { "option1", "option2", "option3" } },
          titledSingle = { type = "string", description = "Select one option with titles",
            oneOf = { { const = "value1", title = "First Option" },
              { const = "value2", title = "Second Option" },
              { const = "value3", title = "Third Option" } } },
          legacyEnum = { type = "string", description = "Select one option (legacy)",
            enum = { "opt1", "opt2", "opt3" },
            enumNames = { "Option One", "Option Two", "Option Three" } },
          untitledMulti = { type = "array", description = "Select multiple options",
            items = { type = "string", enum = { "option1", "option2", "option3" } } },
          titledMulti = { type = "array", description = "Select multiple options with titles",
            items = { anyOf = { { const = "value1", title = "First Choice" },
              { const = "value2", title = "Second Choice" },
              { const = "value3", title = "Third Choice" } } } },
        } },
      }
      if not r then return nil, err end
      return "Elicitation completed: action=" .. tostring(r.action) .. ", content="
        .. json.encode(r.content or json.object())
    end),
  claude.tool {
    name = "json_schema_2020_12_tool",
    description = "Tool with JSON Schema 2020-12 features",
    input_schema = {
      ["$schema"] = "https://json-schema.org/draft/2020-12/schema",
      type = "object",
      ["$defs"] = { address = { type = "object", properties = {
        street = { type = "string" }, city = { type = "string" } } } },
      properties = { name = { type = "string" }, address = { ["$ref"] = "#/$defs/address" } },
      additionalProperties = false,
    },
    execute = function(args) return "Hello, " .. tostring(args.name) end,
  },

  claude.resource { uri = "test://static-text", name = "Static Text Resource",
    description = "A static text resource for testing", mime_type = "text/plain",
    text = "This is the content of the static text resource." },
  claude.resource { uri = "test://static-binary", name = "Static Binary Resource",
    description = "A static binary resource (an image) for testing", mime_type = "image/png",
    blob = PNG },
  claude.resource_template { uri_template = "test://template/{id}/data",
    name = "Resource Template", description = "A resource template with a parameter",
    mime_type = "application/json",
    read = function(uri, params)
      return { text = json.encode { id = params.id, templateTest = true,
        data = "Data for ID: " .. params.id }, mime_type = "application/json", uri = uri }
    end },
  claude.resource { uri = "test://watched-resource", name = "Watched Resource",
    description = "A resource that can be subscribed to", mime_type = "text/plain",
    read = function() return "Watched resource content" end },

  claude.prompt { name = "test_simple_prompt", description = "A simple prompt without arguments",
    get = function() return "This is a simple prompt for testing." end },
  claude.prompt { name = "test_prompt_with_arguments",
    description = "A prompt with required arguments",
    arguments = { "arg1: First test argument", "arg2: Second test argument" },
    get = function(args)
      return string.format("Prompt with arguments: arg1='%s', arg2='%s'", args.arg1, args.arg2)
    end },
  claude.prompt { name = "test_prompt_with_embedded_resource",
    description = "A prompt that includes an embedded resource",
    arguments = { "resourceUri: URI of the resource to embed" },
    get = function(args)
      return {
        { role = "user", content = content.resource { uri = args.resourceUri,
          mime_type = "text/plain", text = "Embedded resource content for testing." } },
        { role = "user", content = "Please process the embedded resource above." },
      }
    end },
  claude.prompt { name = "test_prompt_with_image", description = "A prompt that includes an image",
    get = function()
      return {
        { role = "user", content = content.image { data = PNG, mime_type = "image/png" } },
        { role = "user", content = "Please analyze the image above." },
      }
    end },

  claude.completion { ref = { type = "ref/prompt", name = "test_prompt_with_arguments" },
    complete = function(argument)
      local out = {}
      for _, v in ipairs { "paris", "park", "party", "test", "testing", "tested" } do
        if v:sub(1, #argument.value) == argument.value then out[#out + 1] = v end
      end
      return out
    end },
}

server = claude.server("conformance-test-server", items, { subscribe = true,
  instructions = "The server the MCP conformance suite tests." })

-- Tells the subscribers of test://watched-resource that it changed (a tool a test can call).
server:add(claude.tool("test_update_watched", "Marks test://watched-resource as updated",
  function()
    server:resource_updated("test://watched-resource")
    return "updated"
  end))

return server
