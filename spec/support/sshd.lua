--- An OpenSSH server of its own on 127.0.0.1 for the specs ("another host" for the CLI):
-- a fresh host key and client key in a temporary directory, the current user allowed in
-- with that key only, `sshd -D` as a child that dies with the spec process. Needs
-- Debian's openssh-server (/usr/sbin/sshd); as root, its privilege separation directory.
local process = require "claude.process"
local harness = require "support.harness"
local claude = require "claude"

local M = {}

M.SSHD = os.getenv("CLAUDELUA_SSHD") or "/usr/sbin/sshd"

local function run(cmd)
  local code, out, err = harness.sh(cmd)
  assert(code == 0, cmd .. " failed: " .. out .. err)
  return out
end

--- True when an sshd can be started here.
function M.available()
  local f = io.open(M.SSHD, "rb")
  if f then f:close() end
  return f ~= nil
end

local Server = {}
Server.__index = Server

--- Starts the server; returns it (`port`, `key`, `dir`, `ssh_options()`, `stop()`).
function M.start()
  local dir = harness.tempdir()
  run("ssh-keygen -q -t ed25519 -N '' -f " .. dir .. "/host_key")
  run("ssh-keygen -q -t ed25519 -N '' -f " .. dir .. "/client_key")
  run("cp " .. dir .. "/client_key.pub " .. dir .. "/authorized_keys && chmod 600 "
    .. dir .. "/authorized_keys")
  local _, uid = harness.sh("id -u")
  if uid:match("^0%s") then
    run("mkdir -p /run/sshd && chmod 755 /run/sshd") -- root's sshd insists on it
  end
  local last
  for _ = 1, 10 do
    local port = math.random(20000, 60000)
    local config = dir .. "/sshd_config"
    local f = assert(io.open(config, "wb"))
    f:write(table.concat({
      "Port " .. port, "ListenAddress 127.0.0.1", "HostKey " .. dir .. "/host_key",
      "PidFile " .. dir .. "/sshd.pid", "AuthorizedKeysFile " .. dir .. "/authorized_keys",
      "PubkeyAuthentication yes", "PasswordAuthentication no",
      "KbdInteractiveAuthentication no", "UsePAM no", "StrictModes no",
      "PermitRootLogin prohibit-password", "AllowTcpForwarding no", "X11Forwarding no",
      "PrintMotd no", "LogLevel INFO", "MaxStartups 100", "MaxSessions 100", "",
    }, "\n"))
    f:close()
    local lines = {}
    local proc = assert(process.spawn { M.SSHD, args = { "-D", "-e", "-f", config },
      stdin = "ignore", stdout = "ignore",
      stderr = function(line) if #lines < 200 then lines[#lines + 1] = line end end })
    local deadline = claude.core.now() + 10
    while claude.core.now() < deadline and not proc.finished do
      for _, line in ipairs(lines) do
        last = line
        if line:find("Server listening on 127.0.0.1 port " .. port, 1, true) then
          return setmetatable({ dir = dir, port = port, key = dir .. "/client_key",
            proc = proc, log = lines }, Server)
        end
      end
      claude.sleep(0.05)
    end
    proc:close(1)
  end
  error("sshd did not start: " .. tostring(last))
end

--- The options of `claude.ssh` for this server.
function Server:ssh_options()
  return { host = "127.0.0.1", port = self.port, identity = self.key,
    options = { "StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null", "LogLevel=ERROR" } }
end

function Server:stop()
  if self.proc then
    self.proc:close(1)
    self.proc = nil
  end
  os.execute("rm -rf " .. self.dir)
end

return M
