-- A session's recording (the `record` option) holds no secrets: the values of secret-named
-- variables and headers (the env guard's test), in the header's env, in --mcp-config and in
-- initialize's mcpServers, and the password of a URL; the file is 0600; and the recording
-- still replays, the code under test sending the same secrets.
local claude = require "claude"
local core = require "claude.core"
local testing = require "claude.testing"
local harness = require "support.harness"

local SECRETS = { "ghp_0123456789abcdefABCDEF", "xak-live-5d4c3b2a19", "mysql-pw-4242",
  "s3cr3t-pw", "hush-token-77" }

local SCRIPT = [[
return function(cli)
  cli:expect_initialize()
  local _, text = cli:expect_user()
  cli:assistant("ok: " .. text)
  cli:result()
end
]]

-- The code under test: one turn, with external servers whose env and headers hold secrets.
local function run(base, delivery)
  local s <close> = assert(claude.connect(testing.merge(base, {
    mcp_servers_delivery = delivery,
    env = { MYSQL_PWD = "mysql-pw-4242", PLAIN_SETTING = "visible-value" },
    mcp_servers = {
      github = { command = "github-mcp", args = { "--verbose" }, env = {
        GITHUB_PERSONAL_ACCESS_TOKEN = "ghp_0123456789abcdefABCDEF",
        DATABASE_URL = "postgres://app:s3cr3t-pw@db.internal:5432/app",
        LOG_LEVEL = "debug" } },
      web = { type = "http", url = "https://mcp.example.com/mcp", headers = {
        ["X-API-Key"] = "xak-live-5d4c3b2a19", Accept = "application/json" } },
      tok = { command = "tok-mcp", args = { "--token", "hush-token-77" },
        env = { SERVICE_TOKEN = "hush-token-77" } },
    },
  })))
  assert(s:send("use postgres://app:s3cr3t-pw@db.internal:5432/app please"))
  local texts = {}
  for msg in s:receive(30) do
    if msg.type == "result" then texts[#texts + 1] = msg.result end
  end
  s:close() -- now, on Lua 5.3 too (the replay checks a closed session)
  return texts
end

describe("a session's recording and secrets", function()
  before_each(harness.before)
  after_each(function()
    testing.cleanup()
    harness.after()
  end)

  for _, delivery in ipairs { "argv", "initialize" } do
    it("redacts env, headers and URL passwords (delivery " .. delivery .. "), 0600, replays",
      harness.task(function()
      local file = harness.tempfile("", ".jsonl")
      os.remove(file) -- the recording makes it
      local opts = testing.fake_cli(SCRIPT)
      local texts = run(testing.merge(opts, { record = file }), delivery)
      assert.equal(1, #texts)
      assert.equal(tonumber("600", 8), core.stat(file).mode)
      local text = assert(io.open(file, "rb")):read("a")
      for _, secret in ipairs(SECRETS) do
        assert.is_nil(text:find(secret, 1, true), secret)
      end
      -- what is not secret stays, and a URL keeps all but its password
      assert.truthy(text:find("postgres://app:[redacted]@db.internal:5432/app", 1, true))
      assert.truthy(text:find("visible-value", 1, true))
      assert.matches('LOG_LEVEL\\?":\\?"debug', text)
      assert.matches('Accept\\?":\\?"application/json', text)
      assert.truthy(text:find('"MYSQL_PWD":"[redacted]"', 1, true))
      -- the same code passes the replay of it, sending the same secrets (what the CLI
      -- echoes comes back redacted)
      local ropts, replay = testing.replay(file)
      assert.same({ "ok: use postgres://app:[redacted]@db.internal:5432/app please" },
        run(ropts, delivery))
      assert(replay:check())
      -- changed code still fails it
      local ropts2, replay2 = testing.replay(file)
      local changed = testing.merge(ropts2, {})
      pcall(run, changed, delivery == "argv" and "initialize" or "argv")
      assert.is_nil((replay2:check()))
      os.remove(file)
    end, 60))
  end
end)
