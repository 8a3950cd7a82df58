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
  -- server-sse-polling (SEP-1699): over HTTP the call's stream ends mid-call and the client
  -- gets the answer after it reconnects with Last-Event-ID (no stream over stdio: it just waits)
  claude.tool("test_reconnection", "Closes its SSE stream mid-call, then answers", function(_, ctx)
    sleep_ms(50)
    ctx.close_stream()
    sleep_ms(100)
    return "Reconnection test completed"
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
      ["$defs"] = { address = { ["$anchor"] = "addressDef", type = "object", properties = {
        street = { type = "string" }, city = { type = "string" } } } },
      properties = { name = { type = "string" }, address = { ["$ref"] = "#/$defs/address" },
        contactMethod = { type = "string", enum = { "phone", "email" } },
        phone = { type = "string" }, email = { type = "string" } },
      allOf = { { anyOf = { { required = { "phone" } }, { required = { "email" } } } } },
      ["if"] = { properties = { contactMethod = { const = "phone" } },
        required = { "contactMethod" } },
      ["then"] = { required = { "phone" } },
      ["else"] = { required = { "email" } },
      additionalProperties = false,
    },
    execute = function(args) return "Hello, " .. tostring(args.name) end,
  },

  -- Protocol 2026-07-28 (server-stateless, SEP-2575): the names the scenario calls.
  claude.tool("test_missing_capability", "Needs the client's sampling (-32021 without it)",
    function(_, ctx)
      local r = ctx.input { llm_answer = { method = "sampling/createMessage", params = {
        messages = { { role = "user", content = { type = "text",
          text = "Reply with the single word: pong" } } }, maxTokens = 16 } } }
      if not r then return nil, "sampling failed" end
      return "sampling round-trip complete"
    end),
  claude.tool("test_streaming_elicitation", "Answers with no request on its stream", function()
    return "stream observed: result frames only, no top-level requests"
  end),
  claude.tool("test_logging_tool", "Logs once (sent only to a request that set a logLevel)",
    function(_, ctx)
      ctx.log("info", "test_logging_tool ran")
      return "logged at the request's level"
    end),
  claude.tool("test_x_mcp_header", "Mirrors 'region' into the Mcp-Param-Region header",
    { type = "object", properties = {
      region = { type = "string", description = "mirrored into Mcp-Param-Region",
        ["x-mcp-header"] = "Region" },
      level = { type = "integer", description = "not mirrored" } } },
    function(args) return "region=" .. tostring(args.region or "<none>") end),

  -- Multi round-trip requests (SEP-2322): ctx.input and ctx.elicit ask the client; in the
  -- modern era the request ends with input_required and is retried with the answers, in the
  -- legacy one they are requests to the client. The same code serves both.
  claude.tool("test_input_required_result_elicitation", "Asks the caller's name",
    function(_, ctx)
      local r, err = ctx.input { user_name = { method = "elicitation/create", params = {
        message = "What is your name?", requestedSchema = { type = "object",
          properties = { name = { type = "string" } }, required = { "name" } } } } }
      if not r then return nil, err end
      local a = r.user_name
      return "Hello, " .. tostring(a.action == "accept" and a.content and a.content.name) .. "!"
    end),
  claude.tool("test_input_required_result_sampling", "Asks the client's model", function(_, ctx)
    local r, err = ctx.input { capital_question = { method = "sampling/createMessage", params = {
      messages = { { role = "user", content = { type = "text",
        text = "What is the capital of France?" } } }, maxTokens = 100 } } }
    if not r then return nil, err end
    return "Sampling response: " .. tostring(r.capital_question.content.text)
  end),
  claude.tool("test_input_required_result_list_roots", "Asks the client's roots",
    function(_, ctx)
      local roots, err = ctx.roots()
      if not roots then return nil, err end
      local uris = {}
      for i, root in ipairs(roots) do uris[i] = root.uri end
      return string.format("Client exposed %d root(s): %s", #roots, table.concat(uris, ", "))
    end),
  claude.tool("test_input_required_result_request_state", "Asks for a confirmation",
    function(_, ctx)
      local r, err = ctx.elicit { message = "Please confirm", requestedSchema = {
        type = "object", properties = { ok = { type = "boolean" } }, required = { "ok" } } }
      if not r then return nil, err end
      return "state-ok: confirmation " .. tostring(r.action)
    end),
  claude.tool("test_input_required_result_multiple_inputs", "Asks three things at once",
    function(_, ctx)
      local r, err = ctx.input {
        user_name = { method = "elicitation/create", params = { message = "What is your name?",
          requestedSchema = { type = "object", properties = { name = { type = "string" } },
            required = { "name" } } } },
        greeting = { method = "sampling/createMessage", params = { messages = { { role = "user",
          content = { type = "text", text = "Generate a greeting" } } }, maxTokens = 50 } },
        client_roots = { method = "roots/list" },
      }
      if not r then return nil, err end
      return string.format("%s %s, %d root(s) visible", tostring(r.greeting.content.text),
        tostring(r.user_name.content and r.user_name.content.name), #r.client_roots.roots)
    end),
  claude.tool("test_input_required_result_multi_round", "Asks twice, one after the other",
    function(_, ctx)
      local ask = function(key, message, field)
        local r, err = ctx.input { [key] = { method = "elicitation/create", params = {
          message = message, requestedSchema = { type = "object",
            properties = { [field] = { type = "string" } }, required = { field } } } } }
        if not r then error(err, 0) end
        return r[key].content and r[key].content[field]
      end
      local name = ask("step1", "Step 1: What is your name?", "name")
      local color = ask("step2", "Step 2: What is your favorite color?", "color")
      return string.format("Multi-round complete: %s likes %s", tostring(name), tostring(color))
    end),
  claude.tool("test_input_required_result_tampered_state", "Asks for a confirmation",
    function(_, ctx)
      local r, err = ctx.input { confirm = { method = "elicitation/create", params = {
        message = "Please confirm", requestedSchema = { type = "object",
          properties = { ok = { type = "boolean" } }, required = { "ok" } } } } }
      if not r then return nil, err end
      return "integrity-ok"
    end),
  claude.tool("test_input_required_result_capabilities", "Asks only what the client declared",
    function(_, ctx)
      local caps = ctx.client_capabilities or {}
      local asks = {}
      if caps.elicitation then
        asks.user_name = { method = "elicitation/create", params = {
          message = "What is your name?", requestedSchema = { type = "object",
            properties = { name = { type = "string" } }, required = { "name" } } } }
      end
      if caps.sampling then
        asks.greeting = { method = "sampling/createMessage", params = { messages = { {
          role = "user", content = { type = "text", text = "Generate a short greeting" } } },
          maxTokens = 50 } }
      end
      if caps.roots then asks.client_roots = { method = "roots/list" } end
      if next(asks) == nil then return "No declared client capability supports an input request" end
      local r, err = ctx.input(asks)
      if not r then return nil, err end
      return "Capability-aware input requests fulfilled"
    end),

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
  claude.prompt { name = "test_input_required_result_prompt",
    description = "Asks for context before it renders",
    get = function(_, ctx)
      local r, err = ctx.input { user_context = { method = "elicitation/create", params = {
        message = "What context should the prompt use?", requestedSchema = { type = "object",
          properties = { context = { type = "string" } }, required = { "context" } } } } }
      if not r then return nil, err end
      local c = r.user_context.content
      return "Use the following context: " .. tostring(c and c.context)
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

-- The skills extension (SEP-2640): the skills of spec/conformance/skills/, beside this file.
local here = (arg and arg[0] or ""):match("^(.*)/[^/]*$") or "."

server = claude.server("conformance-test-server", items, { subscribe = true,
  instructions = "The server the MCP conformance suite tests.", skills = here .. "/skills" })

-- Tells the subscribers of test://watched-resource that it changed (a tool a test can call).
server:add(claude.tool("test_update_watched", "Marks test://watched-resource as updated",
  function()
    server:resource_updated("test://watched-resource")
    return "updated"
  end))

-- The tasks extension (SEP-2663): the fixtures its scenarios call. A tool with `task` becomes a
-- task when it waits (or at ctx.task()), for a client that declares the extension.
server:add(claude.tool("greet", "Says hello (never a task)", { name = "string" }, function(args)
  return "Hello, " .. args.name .. "!"
end))
server:add(claude.tool("slow_compute", "Sleeps, then answers (a task when it sleeps)",
  { seconds = "number", label = "string?" }, function(args)
    if args.seconds > 0 then claude.sleep(args.seconds) end
    return string.format("computed %s after %ss", tostring(args.label), args.seconds)
  end, { task = true }))
server:add(claude.tool("failing_job", "Fails after a second (tasks only)", function()
  claude.sleep(1)
  error("the job failed", 0)
end, { task = "required" }))
server:add(claude.tool("protocol_error_job", "Ends in a protocol error (a task)", function()
  claude.sleep(0.1)
  error(claude.errors.new("rpc", "Internal error: the job broke", { code = -32603 }))
end, { task = true }))
server:add(claude.tool("confirm_delete", "Asks for a confirmation as a task",
  { filename = "string" }, function(args, ctx)
    ctx.task()
    local r, err = ctx.elicit { message = "Delete " .. args.filename .. "?",
      requestedSchema = { type = "object", properties = { confirm = { type = "boolean" } },
        required = { "confirm" } } }
    if not r then return nil, err end
    return (r.action == "accept" and "deleted " or "kept ") .. args.filename
  end, { task = true }))
server:add(claude.tool("multi_input", "Asks two things at once as a task", function(_, ctx)
  ctx.task()
  local r, err = ctx.input {
    first = { method = "elicitation/create", params = { message = "First?",
      requestedSchema = { type = "object", properties = { name = { type = "string" } } } } },
    second = { method = "elicitation/create", params = { message = "Second?",
      requestedSchema = { type = "object", properties = { name = { type = "string" } } } } },
  }
  if not r then return nil, err end
  return "got " .. r.first.action .. " and " .. r.second.action
end, { task = true }))
server:add(claude.tool("test_tool_with_task", "Asks a name, then goes on as a task",
  function(_, ctx)
    local r, err = ctx.input { user_name = { method = "elicitation/create", params = {
      message = "What is your name?", requestedSchema = { type = "object",
        properties = { name = { type = "string" } }, required = { "name" } } } } }
    if not r then return nil, err end
    ctx.task()
    claude.sleep(0.2)
    local c = r.user_name.content
    return "Task done for " .. tostring(c and c.name)
  end, { task = "required" }))

-- Listen diagnostics (SEP-2575): each call changes the list (a tool, a prompt, there or not),
-- so that the clients listening are told.
local spare_tool = claude.tool("test_spare_tool", "Comes and goes", function() return "here" end)
local spare_prompt = claude.prompt { name = "test_spare_prompt", description = "Comes and goes",
  get = function() return "here" end }
server:add(claude.tool("test_trigger_tool_change", "Changes the list of tools", function()
  if server.tools.test_spare_tool then
    server:remove("test_spare_tool")
  else
    server:add(spare_tool)
  end
  return "tools list changed"
end))
server:add(claude.tool("test_trigger_prompt_change", "Changes the list of prompts", function()
  if server.prompts.test_spare_prompt then
    server:remove("test_spare_prompt", "prompts")
  else
    server:add(spare_prompt)
  end
  return "prompts list changed"
end))

return server
