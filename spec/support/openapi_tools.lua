-- The tools of spec/e2e/openapi_spec.lua, served by `claudelua mcp`: the Petstore (OpenAPI
-- 3.0) and the to-do list (3.1) of spec/fixtures/openapi/, each API on the port given.
--   claudelua mcp spec/support/openapi_tools.lua PETSTORE_PORT TODO_PORT
local claude = require "claude"

local pet_port, todo_port = ...
local guard = claude.guard.url { allow_classes = { "loopback" } } -- the APIs are on 127.0.0.1
local pets = assert(claude.openapi.tools("spec/fixtures/openapi/petstore.json", {
  variables = { port = pet_port }, guard = guard,
  auth = { api_key = "spec-key", bearer = "spec-token",
    basic = { username = "spec", password = "pw" }, api_key_query = "spec-query-key" } }))
local todos = assert(claude.openapi.tools("spec/fixtures/openapi/todo31.json", {
  variables = { port = todo_port }, guard = guard }))
for _, t in ipairs(todos) do pets[#pets + 1] = t end
return claude.server("apis", pets, { version = "1.0.0" })
