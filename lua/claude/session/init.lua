--- One session with the claude CLI: the process, its message stream, and the
-- control protocol both ways.
--
-- Inbound lines are decoded in C and dispatched here. The control protocol
-- both ways is a `claude.rpc` peer: answers to our control requests, the
-- CLI's own requests (can_use_tool, hook_callback, ...; each in its own task,
-- also while we wait for an answer of ours) and its cancellations. The CLI's
-- `mcp_message` requests to in-process servers skip the peer and go straight
-- to the router (the tool-call hot path). Everything else goes to the message
-- queue. The CLI is a `claude.process`, stopped by its one escalation ladder.
--
-- The thin control requests (interrupt, set_model, mcp_*, ...) are in
-- claude.session.requests, the in-process servers in claude.session.servers.
--
-- (Over 600 lines: the message dispatch, the control peer, the process's life and the
-- public methods all act on the one session state; each part of the session that stands
-- alone (argv, options, hooks, permissions, the mirror, the servers) is its own file.)
-- @module claude.session
local core = require "claude.core"
local async = require "claude.async"
local rpc = require "claude.rpc"
local process = require "claude.process"
local queue = require "claude.queue"
local json = require "claude.json"
local errors = require "claude.errors"
local cli = require "claude.session.argv"
local hooks = require "claude.session.hooks"
local permissions = require "claude.session.permissions"
local servers = require "claude.session.servers"
local trace = require "claude.trace"

local M = {}

local DEFAULT_INITIALIZE_TIMEOUT = 60
local DEFAULT_CONTROL_TIMEOUT = 60
local DEFAULT_CLOSE_GRACE = 5
local SIGNAL_GRACE = 2 -- after SIGTERM, after SIGKILL
local STDERR_TAIL_LINES = 40

-- Sessions not closed yet, so the host can close them politely at exit.
local open_sessions = setmetatable({}, { __mode = "k" })

local Session = {}
Session.__index = Session
Session.__name = "claude.Session"

function Session:__tostring()
  return string.format("claude.Session (pid %s, %s)", tostring(self.pid), self.state)
end

-- The stderr tail is bounded: each line and the whole tail, whatever the CLI writes.
local STDERR_LINE_MAX, STDERR_TAIL_MAX = 1024, 8192

local function keep_stderr(self, line)
  local n = #line
  if n > STDERR_LINE_MAX then
    self.stderr_cut = self.stderr_cut + n - STDERR_LINE_MAX
    line = line:sub(1, STDERR_LINE_MAX) .. string.format(" [%d bytes cut]", n - STDERR_LINE_MAX)
  end
  local tail = self.stderr_lines
  tail[#tail + 1] = line
  local size = self.stderr_size + #line + 1
  while #tail > STDERR_TAIL_LINES or (size > STDERR_TAIL_MAX and #tail > 1) do
    local for_size = #tail <= STDERR_TAIL_LINES -- not only the rolling of the last lines
    local old = table.remove(tail, 1)
    size = size - #old - 1
    if for_size then self.stderr_cut = self.stderr_cut + #old + 1 end
  end
  self.stderr_size = size
end

local function stderr_tail(self)
  local text = table.concat(self.stderr_lines, "\n")
  if self.stderr_cut > 0 then
    text = string.format("[%d bytes of stderr cut]\n", self.stderr_cut) .. text
  end
  return text
end

local function close_stdin(self)
  if self.stdin_closed or self.exited then return end
  self.stdin_closed = true
  if self.recorder then self.recorder:eof() end
  self.proc:close_stdin()
end

-- Ends the session with `err`: every pending wait sees it at once.
local function fail(self, err)
  if self.error then return end
  self.error = err
  self.peer:fail(err)
  self.inbox:close(err)
  -- EOF tells the CLI to finish; close() (the iterator's, <close>, or the
  -- host's at exit) escalates to signals if it does not
  close_stdin(self)
end

local function write(self, msg)
  if self.error then return nil, self.error, self.error.kind end
  if self.stdin_closed or self.proc.closed then
    return errors.fail("closed", "the session's input is closed")
  end
  local rec = self.recorder
  if rec then rec:to_cli(msg) end
  local ok, err = self.proc:write_json(msg)
  if not ok then
    return errors.fail("connection", "cannot write to the claude CLI: " .. errors.message(err))
  end
  return true
end

--- Sends a control request and waits for its answer (at most `timeout`
-- seconds, default `control_timeout`; when it times out the CLI is sent a
-- `control_cancel_request`).
-- @return the response body (a table), or nil, err, kind
function Session:control(subtype, fields, timeout)
  if type(subtype) ~= "string" then
    return errors.blame("bad argument #1 to 'control' (string expected, got %s)", type(subtype))
  end
  if timeout ~= nil and (type(timeout) ~= "number" or timeout < 0) then
    return errors.blame("bad argument #3 to 'control' (non-negative number expected, got %s)",
      tostring(timeout))
  end
  return self.peer:request(subtype, fields, timeout)
end

-- The handlers for the CLI's requests, `fn(request, ctx)` (`ctx.session` is
-- the session); each returns the response body or raises (which becomes an
-- error answer).
-- The control protocol, plus the one message the CLI takes outside a
-- control_request and answers as one: update_environment_variables.
local CONTROL = setmetatable({
  request = function(id, method, params)
    if method == "update_environment_variables" then
      return { type = method, variables = params.variables, request_id = id }
    end
    return rpc.control.request(id, method, params)
  end,
}, { __index = rpc.control })

local handlers = {}

function handlers.can_use_tool(req, ctx)
  local o = ctx.session.options
  return permissions.decide(o.can_use_tool, req, ctx, o.strict)
end

function handlers.hook_callback(req, ctx)
  return hooks.run(ctx.session.hooks, req, ctx)
end

-- Reached only without in-process servers (with them, dispatch hands every mcp_message to
-- the router): the server named is not ours.
function handlers.mcp_message(req)
  return { mcp_response = require("claude.mcp.router").unknown_server(req.server_name,
    req.message) }
end

function handlers.elicitation(req, ctx)
  local fn = ctx.session.options.on_elicitation
  if not fn then return { action = "decline" } end
  local result = fn(req, ctx)
  if type(result) == "string" then result = { action = result } end
  return result or { action = "decline" }
end

function handlers.request_user_dialog(req, ctx)
  local fn = ctx.session.options.on_user_dialog
  if not fn then return { behavior = "cancelled" } end
  return fn(req, ctx) or { behavior = "cancelled" }
end

function handlers.oauth_token_refresh()
  return { accessToken = json.null }
end

function handlers.host_auth_token_refresh()
  return { authToken = json.null }
end

-- traced: each hook and permission decision in a span of its own (claude.trace.session)
trace.instrument(function()
  local traced = require "claude.trace.session"
  handlers.can_use_tool = traced.wrap("can_use_tool", handlers.can_use_tool)
  handlers.hook_callback = traced.wrap("hook_callback", handlers.hook_callback)
end)

-- A request of a subtype claudelua does not know (a newer CLI's): the script's
-- on_control_request answers it, whole; without one, the error answer as before.
setmetatable(handlers, { __index = function(_, subtype)
  return function(req, ctx)
    local fn = ctx.session.options.on_control_request
    if not fn then -- (an error value: answered without a report on stderr)
      error(errors.new("control", "Unsupported control request subtype: " .. tostring(subtype)))
    end
    return fn(subtype, req, ctx)
  end
end })

-- Agent tasks keep a one-shot run alive past a result (the CLI delivers
-- their notifications later), as the Python SDK tracks them.
local AGENT_TASK_TYPES = { local_agent = true, local_workflow = true }
local TERMINAL_TASK_STATUS = { completed = true, failed = true, stopped = true, killed = true }

local function on_system(self, msg)
  local sub = msg.subtype
  if sub == "init" then
    self.session_id = msg.session_id
    self.init = msg
  elseif sub == "task_started" and AGENT_TASK_TYPES[msg.task_type] then
    self.agent_tasks[msg.task_id] = true
  elseif sub == "task_notification" then
    self.agent_tasks[msg.task_id or false] = nil
  elseif sub == "task_updated" and type(msg.patch) == "table"
    and TERMINAL_TASK_STATUS[msg.patch.status] then
    self.agent_tasks[msg.task_id or false] = nil
  end
  self.inbox:push(msg)
end

local function on_result(self, msg)
  if self.mirror then self.mirror:flush() end -- the turn's transcript goes to the store
  -- a CLI that refuses to start says why in a result before it exits (known causes)
  if msg.startup_failure_reason ~= nil and not self.ready.is_set then self.startup_failure = msg end
  self.results = self.results + 1
  self.last_result = msg
  if msg.session_id then self.session_id = msg.session_id end
  -- a run-ending result: no agent task is still going to report back
  if self.close_after_results and self.results >= self.close_after_results
    and next(self.agent_tasks) == nil then
    close_stdin(self)
  end
  if self.trace then require("claude.trace.session").result(self, msg) end
  self.inbox:push(msg)
end

local function on_control(self, msg)
  self.peer:receive(msg)
end

local function on_control_request(self, msg)
  local req = msg.request
  local router = self.router
  if router and type(req) == "table" and req.subtype == "mcp_message" then
    -- the hot path of in-process tools: no task unless the tool waits
    router:handle_async(req.server_name, req.message, self.mcp_reply, msg.request_id)
    return
  end
  self.peer:receive(msg)
end

-- What the session does with each type of message; any other type (assistant, user,
-- stream_event...) only goes to the inbox.
local ON_MESSAGE = {
  control_response = on_control,
  control_request = on_control_request,
  control_cancel_request = on_control,
  -- with CLAUDE_CODE_SDK_READS_STARTUP_MARKS, the start-up checkpoints the CLI passed
  keep_alive = function(self, msg)
    local mark = msg.startup_mark
    if type(mark) == "string" then self.startup_mark = { mark = mark, at = core.now() } end
  end,
  system = on_system,
  result = on_result,
  -- the session mirror (options.session_store): to the store, never to the iterators
  transcript_mirror = function(self, msg)
    if self.mirror then self.mirror:enqueue(msg) end
  end,
}

-- A line that does not decode but names a control request or the answer to one fails only
-- that request: the request gets an error answer, the answer ends its wait with the error.
-- @return true when the line was such a line
local function undecodable_request(self, line, err)
  local request_id, _, mtype = core.json_peek_ids(line)
  if request_id == nil then return false end
  local why = "cannot be decoded (" .. tostring(err) .. ")"
  if mtype == "control_request" then
    if self.closed then return true end
    self.peer:respond_error(request_id, rpc.INVALID_REQUEST, "the control request " .. why)
    return true
  elseif mtype == "control_response" then
    self.peer:fail_request(request_id, errors.new("json_decode", "the claude CLI's answer to "
      .. "control request " .. tostring(request_id) .. " " .. why, { line = line }))
    return true
  end
  return false
end

-- The stdout callback of a session: one closure per session, so that each message costs
-- one call.
local function dispatcher(self)
  return function(msg, err, line, kind)
    if msg == nil then
      if err == nil then return end -- EOF: the exit callback ends the session
      if kind == "json" then
        if line and not line:match("^%s*{") then -- not JSON at all: debug noise on stdout
          if self.options.stderr then pcall(self.options.stderr, line) end
          return
        end
        if line and undecodable_request(self, line, err) then return end
        fail(self, errors.new("json_decode", "the claude CLI wrote a line that is not valid "
          .. "JSON (" .. tostring(err) .. "): " .. tostring(line):sub(1, 200), { line = line }))
      elseif kind == "overflow" then
        fail(self, errors.new("overflow", "the claude CLI wrote a message larger than "
          .. "max_buffer_size: " .. tostring(err)))
      else
        fail(self, errors.new("connection", "reading from the claude CLI failed: "
          .. tostring(err)))
      end
      return
    end
    if type(msg) ~= "table" then
      fail(self, errors.new("protocol", "the claude CLI wrote a JSON " .. type(msg)
        .. " where a message object was expected"))
      return
    end
    local t = msg.type
    local on = ON_MESSAGE[t]
    if on then return on(self, msg) end
    if t == nil and json.is_array(msg) then
      fail(self, errors.new("protocol", "the claude CLI wrote a JSON array where a message "
        .. "object was expected: " .. json.encode(msg):sub(1, 200)))
      return
    end
    self.inbox:push(msg)
  end
end

-- The dispatcher of a recorded session: each message goes to the recording first.
local function recording(self, dispatch)
  local rec = self.recorder
  return function(msg, err, line, kind)
    if type(msg) == "table" then rec:from_cli(msg) end
    return dispatch(msg, err, line, kind)
  end
end

local function on_exit(self, code, signal)
  if self.recorder then self.recorder:exit(code, signal) end
  if self.trace then require("claude.trace.session").close(self) end
  self.exited = true
  self.exit_code, self.exit_signal = code, signal
  self.state = "closed"
  local clean = code == 0 and signal == 0
  -- After an error result the CLI exits 1: the result already told the story.
  local expected = clean or (self.closing and (signal ~= 0 or code == 143))
    or (code == 1 and self.last_result and self.last_result.is_error)
  -- A clean exit with work unanswered loses it: say what was lost.
  local lost
  if clean and not self.closing then
    if not self.ready.is_set then
      lost = "before answering initialize"
    elseif self.results < self.prompts then
      local n = self.prompts - self.results
      lost = string.format("with %d prompt%s unanswered", n, n == 1 and "" or "s")
    end
    if lost then expected = false end
  end
  local err
  if not expected then
    local how = lost and ("exited with code 0 " .. lost)
      or signal ~= 0 and ("was killed by signal " .. signal)
      or ("exited with code " .. code)
    err = errors.new("process", "the claude CLI " .. how, {
      exit_code = code, signal = signal, stderr_tail = stderr_tail(self) })
  else
    err = errors.new("closed", "the claude CLI has exited (code " .. code .. ")",
      { exit_code = code, signal = signal, clean = true })
  end
  self.peer:fail(err)
  if expected then
    self.inbox:close()
  else
    self.error = self.error or err
    self.inbox:close(self.error)
  end
end

local function initialize_request(self)
  local request = { hooks = hooks.wire(self.hooks) }
  if self.sdk_names[1] then
    request.sdkMcpServers = json.array(self.sdk_names)
    request.sdkMcpServerManifests = servers.manifests(self.router, self.sdk_names)
    request.sdkMcpServerConfigs = servers.configs(self.router, self.sdk_names)
  end
  if self.options.agents then request.agents = cli.agents_wire(self.options.agents) end
  for k, v in pairs(cli.initialize_fields(self.options, self.servers_delivery)) do
    request[k] = v
  end
  self.mcp_servers_sent = request.mcpServers ~= nil
  return request
end

--- Starts the CLI. Raises for bad options; returns nil, err when the CLI
-- cannot be found or started.
-- @tparam table options
-- @tparam[opt] string fname the public function given the options ("query", "connect")
function M.open(options, fname)
  fname = fname or "connect"
  options = cli.check_options(options, fname)
  -- its misuse before any CLI
  local hook_registry = hooks.register(options.hooks, fname, options.strict)
  local env = cli.build_env(options)
  local custom = options.spawn
  local prefix, ferr
  if custom then
    -- the CLI runs where the spawn function puts it: its path is not looked up here
    prefix = type(options.cli_path) == "table" and options.cli_path or { options.cli_path
      or "claude" }
  else
    prefix, ferr = cli.find(options.cli_path, env.PATH)
    if not prefix then return nil, ferr end
  end
  -- external servers' configs in initialize where the CLI reads them there (their secrets
  -- then stay off its command line)
  local delivery = cli.servers_delivery(options, not custom and #prefix == 1 and prefix[1])
  local argv = cli.build_args(options, delivery)
  local args = {}
  for i = 2, #prefix do args[#args + 1] = prefix[i] end
  for i = 1, #argv do args[#args + 1] = argv[i] end

  process.check_exec_strings(string.format("bad argument #%d to '%s'",
    fname == "query" and 2 or 1, fname), prefix[1], args, env, options.cwd)

  local sdk, _, sdk_names = cli.split_servers(options.mcp_servers)
  local self = setmetatable({
    options = options,
    state = "starting",
    inbox = queue.new(),
    stderr_lines = {},
    stderr_size = 0,
    stderr_cut = 0,
    agent_tasks = {},
    results = 0,
    prompts = 0,
    ready = async.event(),          -- the answer to initialize came
    hooks = hook_registry,
    sdk_names = sdk_names,
    servers_delivery = delivery,
  }, Session)
  self.peer = rpc.new {
    codec = CONTROL,
    name = "CLI",
    send = function(msg) return write(self, msg) end,
    handlers = handlers,
    context = { session = self },
    timeout = options.control_timeout or DEFAULT_CONTROL_TIMEOUT,
  }
  self.write_message = function(msg) return write(self, msg) end
  local env_changes = cli.env_changes(options)
  -- traced: the query's span, its context handed to the CLI (before the servers: their
  -- calls' spans are under it)
  if trace.enabled then require("claude.trace.session").open(self, options, env, env_changes) end
  if options.record then
    -- before the servers: their replies are then written as messages, and recorded
    local rerr
    self.recorder, rerr = require("claude.session.record").open(options.record, argv, env,
      cli.env_changes(options), options.cwd)
    if not self.recorder then return nil, rerr end
  end
  if next(sdk) then servers.attach(self, sdk) end
  if options.session_store then self.mirror = require("claude.session.mirror").new(options, env) end
  if options.cwd and not custom then
    local ok = os.rename(options.cwd, options.cwd)
    if not ok then
      return nil, errors.new("connection", "working directory does not exist: " .. options.cwd)
    end
  end
  if options.session_store then
    local ok, merr = require("claude.session.mirror").materialize(options, env)
    if not ok then return nil, merr end
  end
  local user_stderr = options.stderr
  local spec = {
    prefix[1], command = prefix[1], env_changes = env_changes,
    args = args, env = env, clear_env = true, cwd = options.cwd,
    user = options.user, stdout = "json", max_line = options.max_buffer_size,
    -- a child of the CLI may hold its pipes open: do not wait for it long
    eof_grace = 0.5,
    on_stdout = self.recorder and recording(self, dispatcher(self)) or dispatcher(self),
    stderr = function(line)
      keep_stderr(self, line)
      if self.recorder then self.recorder:stderr(line) end
      if user_stderr then
        local ok, e = pcall(user_stderr, line)
        if not ok then
          io.stderr:write("claude: error in the stderr callback: ", tostring(e), "\n")
        end
      end
    end,
    on_exit = function(code, signal) on_exit(self, code, signal) end,
  }
  local proc, perr
  if custom then
    proc, perr = require("claude.session.spawn").run(custom, spec)
    if not proc then return nil, perr end
  else
    proc, perr = process.spawn(spec)
  end
  if not proc then
    return nil, errors.new("connection", "cannot start the claude CLI (" .. prefix[1] .. "): "
      .. tostring(perr), { code = perr })
  end
  self.proc = proc
  self.raw = proc.raw -- the hot path writes tool results through it
  -- a tool call's control request reaches the router as its few values, not six tables;
  -- a recording takes whole messages, so a recorded session reads them decoded
  if self.router and not self.recorder then
    -- the tool calls go to the router straight, as call records; the rest to the dispatcher
    local reader = core.envelope_reader("control", self.call_record)
    reader:target(self.router.route)
    self.router._retarget = function(route) reader:target(route) end -- (tracing turned on)
    proc.raw:read_with(reader)
  end
  self.pid = proc.pid
  open_sessions[self] = true
  self.state = "running"
  -- initialize goes first; its answer is the readiness signal
  local id, err = self.peer:start("initialize", initialize_request(self), function(body, err)
    self.init_response, self.init_error = body, err
    self.ready:set()
  end)
  if not id then
    self.init_error = err
    self.ready:set()
  end
  return self
end

--- True when callbacks, hooks or in-process servers need the CLI's input
-- open until the run is over.
function Session:bidirectional()
  local o = self.options
  return self.router ~= nil or o.can_use_tool ~= nil or self.hooks.count > 0
    or o.on_elicitation ~= nil or o.on_user_dialog ~= nil or o.on_control_request ~= nil
end

--- Waits for the CLI's answer to initialize (the sign it is ready).
-- @return the server info table, or nil and an error
function Session:wait_ready(timeout)
  do
    local ok, err = self.ready:wait(timeout or self.options.initialize_timeout
      or M.initialize_timeout())
    if not ok then
      local mark = self.startup_mark
      return nil, errors.new("timeout", "the claude CLI did not answer initialize: "
        .. tostring(err and err.message or "timed out")
        .. (mark and string.format(" (its last start-up checkpoint: %s, %.1f s ago)", mark.mark,
          core.now() - mark.at) or ""), { startup_mark = mark and mark.mark })
    end
  end
  local err = self.init_error
  local refused = self.startup_failure
  if err and refused then
    local why = type(refused.errors) == "table" and refused.errors[1]
    return nil, errors.new("startup", "the claude CLI refused to start ("
      .. tostring(refused.startup_failure_reason) .. ")" .. (why and (": " .. why) or ""),
      { reason = refused.startup_failure_reason, result = refused,
        exit_code = self.exit_code })
  end
  if errors.is(err, "control") then
    return nil, errors.new("control", "initialize failed: " .. tostring(err.remote_message),
      { response = err.response })
  elseif err then
    return nil, err
  end
  -- servers or plugins sent in initialize: the CLI says whether it took them
  local o, r = self.options, self.init_response
  if type(r) == "table" and self.mcp_servers_sent and r.mcp_servers_applied ~= true then
    return nil, errors.new("startup", "the claude CLI did not take the MCP servers sent in "
      .. "initialize (mcp_servers_applied is " .. tostring(r.mcp_servers_applied) .. "; a CLI "
      .. "older than " .. cli.SERVERS_IN_INITIALIZE .. " reads them only from its command "
      .. "line: mcp_servers_delivery = \"argv\")", { reason = "mcp_servers_not_applied" })
  end
  if type(r) == "table" and o.plugin_delivery == "initialize" and o.plugins
    and #o.plugins > 0 and r.plugins_applied ~= true then
    return nil, errors.new("startup", "the claude CLI did not take the plugins sent in "
      .. "initialize (plugins_applied is " .. tostring(r.plugins_applied) .. ")",
      { reason = "plugins_not_applied" })
  end
  self.server_info_table = self.init_response
  return self.server_info_table
end

--- The initialize timeout: CLAUDE_CODE_STREAM_CLOSE_TIMEOUT (ms), at least 60 s.
function M.initialize_timeout()
  local ms = tonumber(os.getenv("CLAUDE_CODE_STREAM_CLOSE_TIMEOUT") or "")
  return math.max(DEFAULT_INITIALIZE_TIMEOUT, (ms or 0) / 1000)
end

--- A user message for `prompt`: a string, a list of content blocks, or a
-- complete message table (type = "user").
function M.user_message(prompt)
  if type(prompt) == "string" then
    return { type = "user", message = { role = "user", content = prompt },
      parent_tool_use_id = json.null, session_id = "default" }
  elseif type(prompt) == "table" and prompt.type == "user" then
    return prompt
  elseif type(prompt) == "table" then
    return { type = "user", message = { role = "user", content = json.array(prompt) },
      parent_tool_use_id = json.null, session_id = "default" }
  end
  errors.misuse("bad prompt (string, content block list or user message expected, got %s)",
    type(prompt))
end

local SEND_OPTIONS = { session_id = true, uuid = true, priority = true, client_composed = true }
local PRIORITIES = { now = true, next = true, later = true }

--- `msg` with the options of `send` applied (a copy when they change it).
local function with_send_options(msg, opts)
  if type(opts) ~= "table" then
    errors.misuse("bad argument #2 to 'send' (table expected, got %s)", type(opts))
  end
  errors.check_fields(opts, SEND_OPTIONS, "send")
  errors.check_field(opts.session_id, "session_id", "send", "string", true)
  errors.check_field(opts.uuid, "uuid", "send", "string", true)
  errors.check_field(opts.client_composed, "client_composed", "send", "boolean", true)
  if opts.priority ~= nil and not PRIORITIES[opts.priority] then
    errors.bad_field("priority", "send", "'now', 'next' or 'later' expected, got %s",
      tostring(opts.priority))
  end
  if next(opts) then
    local copy = {}
    for k, v in pairs(msg) do copy[k] = v end
    for k, v in pairs(opts) do copy[k] = v end
    msg = copy
  end
  return msg
end

--- Sends a user message (a string, content blocks, or a message table).
-- `opts.session_id` sets the message's `session_id` (as the Python SDK's
-- `query(prompt, session_id)` does; default "default").
-- @function Session:send
-- @return true | nil, err, kind
Session.send = errors.public(function(self, prompt, opts)
  local msg = M.user_message(prompt)
  if opts ~= nil then msg = with_send_options(msg, opts) end
  if self.options.verbatim_prompts and msg.client_composed == nil then
    msg = with_send_options(msg, { client_composed = true })
  end
  local ok, err, kind = write(self, msg)
  if ok then
    if self.trace then require("claude.trace.session").sent(self) end
    self.prompts = self.prompts + 1
  end
  return ok, err, kind
end)

--- The next message, waiting at most `timeout` seconds.
-- @return the message; nil at the end of the session; nil, err on failure
function Session:next_message(timeout)
  local msg, err = self.inbox:pop(timeout)
  if msg == nil and err == nil then return nil end
  return msg, err
end

-- `closes`: the session is a query's, closed as soon as its messages end or fail. A `for`
-- would close it then too (its closing value), but Lua 5.3 has no closing value, and code
-- that calls the iterator itself has none either.
local function iterate(self, timeout, until_result, closes)
  local finished = false
  local inbox = self.inbox
  local pop = inbox.pop
  return function()
    if finished then return nil end
    local msg, err = pop(inbox, timeout)
    if msg == nil then
      finished = true
      if closes then self:close() end
      if err then error(err, 0) end
      return nil
    end
    if until_result and msg.type == "result" then finished = true end
    return msg
  end
end

--- Iterates over the messages of one turn, up to and including its result.
-- Raises on errors (the CLI died, a timeout between messages).
function Session:receive(timeout)
  return iterate(self, timeout, true)
end

--- Iterates over every message until the session ends.
function Session:messages(timeout)
  return iterate(self, timeout, false)
end

--- The CLI's answer to initialize (commands, agents, models, account...).
function Session:server_info()
  return self.server_info_table
end
Session.get_server_info = Session.server_info

--- The CLI's answer to initialize, waiting for it (a query does not wait before its first
-- prompt): the TypeScript SDK's `initializationResult()`.
-- @return the answer | nil, err, kind
function Session:initialization_result(timeout)
  local info, err = self:wait_ready(timeout)
  if not info then return nil, err, err.kind end
  return info
end

-- A field of the initialize answer, waiting for it.
local function from_initialize(field)
  return function(self, timeout)
    local info, err, kind = self:initialization_result(timeout)
    if not info then return nil, err, kind end
    local v = info[field]
    if v == nil then return json.array() end
    return v
  end
end

--- The slash commands and skills of the session (`commands` of the initialize answer).
Session.supported_commands = from_initialize("commands")
--- The models the session may select (`models`).
Session.supported_models = from_initialize("models")
--- The subagents of the session (`agents`).
Session.supported_agents = from_initialize("agents")

--- The account the CLI uses (`account` of the initialize answer: `tokenSource`,
-- `apiKeySource`, `apiProvider`, `email`, ...).
function Session:account_info(timeout)
  local info, err, kind = self:initialization_result(timeout)
  if not info then return nil, err, kind end
  return info.account or json.object()
end

--- Sends `initialize` again to the running CLI and returns its fresh answer (the CLI
-- registers the session's hooks anew); `server_info` is then that answer.
-- @return the answer | nil, err, kind
function Session:reinitialize(timeout)
  local info, err, kind = self:initialization_result(timeout)
  if not info then return nil, err, kind end
  local r
  r, err, kind = self.peer:request("initialize", initialize_request(self), timeout)
  if r == nil then return nil, err, kind end
  self.init_response, self.server_info_table = r, r
  return r
end

--- Sends the CLI a signal ("int", "term", "kill", ... or a number), through the session's
-- process (a custom `spawn` may carry it to another host). SIGINT interrupts a turn as
-- `interrupt` does.
-- @return true | nil, err, kind
function Session:signal(sig)
  if not self.proc then return errors.fail("closed", "the session has no process") end
  return self.proc:signal(sig)
end

--- Ends the session with `err`: pending waits and the message iterator see
-- it, and the CLI is stopped.
function Session:abort(err)
  fail(self, err)
end

--- Closes the CLI's input; it finishes the current turn, then exits.
function Session:end_input()
  close_stdin(self)
end

--- Closes the CLI's input once `n` results in all have arrived (at once if
-- they have): one-shot runs keep it open while callbacks may still be
-- needed, and close it when the run is over.
function Session:end_input_after(n)
  if self.results >= n and next(self.agent_tasks) == nil then
    close_stdin(self)
  else
    self.close_after_results = n
  end
end

--- Waits for the CLI to exit.
-- @return exit code, signal | nil, timeout error
function Session:wait(timeout)
  return self.proc:wait(timeout)
end

--- Ends the session: stops a turn still running, closes the CLI's input,
-- gives it `grace` seconds to exit (it flushes its transcript), then SIGTERM,
-- then SIGKILL. Idempotent; also the `<close>` handler. Never raises.
function Session:close(grace)
  if self.closed then return end
  self.closed = true
  self.closing = true
  open_sessions[self] = nil
  grace = grace or self.options.close_timeout or DEFAULT_CLOSE_GRACE
  local proc = self.proc
  if proc then
    -- A turn still running would be finished first (and paid for): stop it,
    -- by the control protocol, or by SIGINT (the CLI treats it the same way)
    -- when its input is already closed.
    if not self.exited and self.results < self.prompts then
      if not self.error and not self.stdin_closed then
        self.peer:notify("interrupt")
      else
        proc:signal("int")
      end
    end
    close_stdin(self)
    self.raw = nil
    proc:close { eof_grace = grace, term_grace = SIGNAL_GRACE, kill_grace = SIGNAL_GRACE }
  end
  self.peer:close("session closed")
  if self.router then self.router:cancel_all("session closed") end
  if self.mirror then pcall(self.mirror.wait, self.mirror, 10) end
  if not self.error then self.inbox:close() end
  self.state = "closed"
  if self.trace then require("claude.trace.session").close(self) end
end
Session.__close = function(self) self:close() end
Session.__gc = function(self)
  if self.proc and not self.closed then self.proc.raw:close() end
end

--- Closes every session still open (the host does this when the script
-- ends, so no CLI is left behind even without `<close>`).
function M.close_all()
  local list = {}
  for s in pairs(open_sessions) do list[#list + 1] = s end
  for _, s in ipairs(list) do s:close() end
end

--- The open session whose CLI runs the conversation `id` (as its init message named it), or
-- nil and whether an open session has not named its conversation yet. The demo's model
-- (claude.testing.messages_api) reads a request's session this way.
function M.find(id)
  local unnamed = false
  for s in pairs(open_sessions) do
    if s.session_id == id then return s end
    unnamed = unnamed or s.session_id == nil
  end
  return nil, unnamed
end

--- Runs a one-shot conversation on `session` (opened, maybe ready): sends `prompt` (a
-- string, a message table, or an iterator function of them, fed from a task), then closes
-- the CLI's input once it is no longer needed (`claude.query`'s rules). Raises when the
-- prompt cannot be written.
-- @return the iterator over every message, nil, nil, the session (a `for` closes it)
function M.run_query(session, prompt)
  if type(prompt) == "function" then
    session.feeder = async.spawn_observed(function()
      local sent = 0
      local ok, err = pcall(function()
        for msg in prompt do
          local wok, werr = session:send(msg)
          if not wok then error(werr, 0) end
          sent = sent + 1
        end
      end)
      if not ok then -- the prompt iterator failed: so does the query
        session:abort(errors.new("prompt", "the prompt iterator failed: " .. tostring(err),
          { cause = err }))
      elseif session:bidirectional() then
        session:end_input_after(sent)
      else
        session:end_input()
      end
    end)
  else
    local ok, werr = session:send(prompt)
    if not ok then
      session:close()
      error(werr, 0)
    end
    if session:bidirectional() then session:end_input_after(1) else session:end_input() end
  end
  -- the iterator closes the session at the end and on error; the session is also the
  -- loop's closing value, so that a `for` closes it on break (Lua 5.4)
  return iterate(session, nil, false, true), nil, nil, session
end

for name, method in pairs(require "claude.session.requests") do Session[name] = method end

M.Session = Session
return M
