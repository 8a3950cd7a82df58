--- A session's spans: the query (`invoke_agent`, from the CLI's start to its close), one
-- turn per prompt (from the prompt to its result), and inside the turn each hook, each
-- permission decision and each call of an in-process tool (claude.trace.mcp's server span).
-- The query's context goes to the CLI as `TRACEPARENT` / `TRACESTATE`, where the CLI's own
-- spans (`claude_code.interaction`, `llm_request`, `tool`...) take it as their parent when
-- its tracing is on (`enable { cli = true }` turns it on with the same exporter settings).
-- @module claude.trace.session
local trace = require "claude.trace"

local M = {}

-- the CLI's own tracing (its names, read from the pinned CLI): on, to the same endpoint
local function cli_env(c, env)
  env.CLAUDE_CODE_ENABLE_TELEMETRY = "1"
  env.CLAUDE_CODE_ENHANCED_TELEMETRY_BETA = "1"
  env.OTEL_TRACES_EXPORTER = "otlp"
  env.OTEL_METRICS_EXPORTER = env.OTEL_METRICS_EXPORTER or "none"
  env.OTEL_LOGS_EXPORTER = env.OTEL_LOGS_EXPORTER or "none"
  env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT = c.endpoint
  env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL = c.protocol
  local h = {}
  for k, v in pairs(c.headers) do h[#h + 1] = k .. "=" .. v end
  table.sort(h)
  if #h > 0 then env.OTEL_EXPORTER_OTLP_TRACES_HEADERS = table.concat(h, ",") end
  local delay = math.floor(c.schedule_delay * 1000 + 0.5)
  env.OTEL_TRACES_EXPORT_INTERVAL = tostring(delay)
  env.OTEL_BSP_SCHEDULE_DELAY = tostring(delay)
end

--- Starts the query span of session `self` and hands its context to the CLI's environment
-- (`env`, and `changes`: what a remote spawn sets).
function M.open(self, options, env, changes)
  local span = trace.start("invoke_agent claude", { attributes = {
    ["gen_ai.operation.name"] = "invoke_agent", ["gen_ai.provider.name"] = "anthropic",
    ["gen_ai.agent.name"] = "claude", ["gen_ai.request.model"] = options.model,
  } })
  if span == trace.NOOP then return end
  self.trace = { query = span, turns = {} }
  local tp, ts = span:traceparent(), span.tracestate
  for _, t in ipairs { env, changes } do
    t.TRACEPARENT, t.TRACESTATE = tp, ts
    if trace.config.cli then cli_env(trace.config, t) end
  end
end

--- The span the session's work is under now: its oldest open turn, else its query.
function M.current(self)
  local t = self.trace
  if not t then return nil end
  return t.turns[1] or t.query
end

--- A prompt went to the CLI: its turn starts.
function M.sent(self)
  local t = self.trace
  local span = trace.start("claude.turn", { parent = t.query, attributes = {
    ["gen_ai.operation.name"] = "chat", ["claude.turn.index"] = self.prompts + 1 } })
  t.turns[#t.turns + 1] = span
end

--- A result came: the oldest turn ends, with the result's usage and outcome.
function M.result(self, msg)
  local span = table.remove(self.trace.turns, 1)
  if not span then return end
  local usage = type(msg.usage) == "table" and msg.usage or {}
  span:set("gen_ai.usage.input_tokens", math.tointeger(usage.input_tokens))
  span:set("gen_ai.usage.output_tokens", math.tointeger(usage.output_tokens))
  span:set("gen_ai.conversation.id", msg.session_id)
  span:set("claude.num_turns", math.tointeger(msg.num_turns))
  span:set("claude.cost_usd", tonumber(msg.total_cost_usd))
  span:set("claude.result.subtype", msg.subtype)
  if msg.is_error then span:fail(msg.result or msg.subtype, msg.subtype or "error") end
  span:finish()
end

--- The session ended (closed, or its CLI exited): its open turns and its query end.
function M.close(self)
  local t = self.trace
  if t.closed then return end
  t.closed = true
  for _, span in ipairs(t.turns) do span:fail("the session closed first", "closed"):finish() end
  t.turns = {}
  t.query:set("gen_ai.conversation.id", self.session_id)
  if self.error then t.query:fail(tostring(self.error), self.error.kind or "error") end
  t.query:finish()
end

local function run_in(self, name, attributes, fn, req, ctx)
  return trace.span(name, { parent = M.current(self), attributes = attributes }, function(span)
    local r = fn(req, ctx)
    if type(r) == "table" then
      local decision = r.behavior or (type(r.hookSpecificOutput) == "table"
        and r.hookSpecificOutput.permissionDecision) or r.decision
      span:set("claude.decision", decision)
    end
    return r
  end)
end

--- `handler(req, ctx)` for the session's hook and permission requests, in a span of its own
-- (`claude.hook {event}`, `claude.permission {tool}`) when the session is traced.
function M.wrap(subtype, handler)
  return function(req, ctx)
    local self = ctx.session
    if not self.trace then return handler(req, ctx) end
    if subtype == "hook_callback" then
      local input = type(req.input) == "table" and req.input or {}
      local event = input.hook_event_name or "hook"
      return run_in(self, "claude.hook " .. event, { ["claude.hook.event"] = event,
        ["gen_ai.tool.name"] = input.tool_name, ["claude.hook.callback_id"] = req.callback_id,
        ["claude.tool_use_id"] = req.tool_use_id }, handler, req, ctx)
    end
    return run_in(self, "claude.permission " .. tostring(req.tool_name),
      { ["gen_ai.tool.name"] = req.tool_name, ["claude.tool_use_id"] = req.tool_use_id },
      handler, req, ctx)
  end
end

return M
