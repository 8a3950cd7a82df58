-- A trivial HTTP server for load tests (bench/http_wrk.sh):
--   build/claudelua bench/http_serve.lua [core|task] [seconds]
-- prints the port, serves "ok" to every request for `seconds` (default 10).
local claude = require "claude"
local core = require "claude.core"
local http = require "claude.http.server"

local mode, seconds = arg[1] or "core", tonumber(arg[2] or "10")
local listen = mode == "task" and http.listen or core.http_listen
local TEXT = { ["content-type"] = "text/plain" }
local srv = assert(listen { on_request = function(_, res) res:respond(200, TEXT, "ok\n") end })
io.stdout:write(srv:port(), "\n")
io.stdout:flush()
claude.sleep(seconds)
srv:close()
