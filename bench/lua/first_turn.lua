-- The first turn's latency through claudelua, with the real CLI against the scripted
-- Messages API (bench/first_turn sets the environment): `cold` (claude.query starts the
-- CLI), `startup` (claude.startup before the prompt), `prewarm` (a spare claimed for the
-- folder). Prints one JSON line: the time from the prompt to its result, and the time the
-- CLI took to get ready beforehand.
local claude = require "claude"

local mode = arg[1] or "cold"
local CLI, WORK = os.getenv("CLAUDELUA_BENCH_CLI"), os.getenv("CLAUDELUA_BENCH_WORK")
local now = claude.core.now
local options = { cli_path = CLI, cwd = WORK, model = "claude-sonnet-4-5" }

local function result_of(iter, state, init, session)
  local result
  for msg in iter, state, init, session do
    if msg.type == "result" then result = msg end
  end
  return result
end

local prep_ms, t0, result = 0, nil, nil
if mode == "cold" then
  t0 = now()
  result = result_of(claude.query("hi", options))
elseif mode == "startup" then
  local p0 = now()
  local warm = assert(claude.startup(options))
  prep_ms = (now() - p0) * 1000
  t0 = now()
  result = result_of(warm:query("hi"))
elseif mode == "prewarm" then
  local spare_opts = {}
  for k, v in pairs(options) do spare_opts[k] = v end
  spare_opts.cwd = nil
  local p0 = now()
  local spare = assert(claude.prewarm(spare_opts))
  prep_ms = (now() - p0) * 1000
  t0 = now()
  result = result_of(assert(spare:claim("hi", { cwd = WORK })))
else
  error("mode: cold, startup or prewarm")
end
local first_turn_ms = (now() - t0) * 1000
io.stdout:write(claude.json.encode { sdk = "claudelua", mode = mode,
  ok = result ~= nil and not result.is_error, first_turn_ms = first_turn_ms,
  prep_ms = prep_ms }, "\n")
