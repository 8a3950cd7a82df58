-- The input guards: paths, commands, URLs and environment variables.
local core = require "claude.core"
local guard = require "claude.guard"
local errors = require "claude.errors"

-- A violation: nil, a guard error naming `rule`, "guard".
local function refused(rule, ok, err, kind)
  assert.is_nil(ok)
  assert.is_true(errors.is(err, "guard"), tostring(err))
  assert.equal(rule, err.rule)
  assert.equal("guard", kind)
  assert.matches("%(rule " .. rule:gsub("%.", "%%.") .. "%)$", tostring(err))
end

local function sh(cmd) assert(os.execute(cmd)) end

describe("claude.guard.path", function()
  local base, root
  setup(function()
    base = os.tmpname()
    os.remove(base)
    sh("mkdir -p " .. base .. "/root/sub " .. base .. "/outside")
    sh("echo secret > " .. base .. "/outside/secret.txt")
    sh("echo ok > " .. base .. "/root/sub/file.txt")
    sh("ln -s ../outside " .. base .. "/root/escape")
    sh("ln -s sub " .. base .. "/root/inner")
    sh("ln -s /nonexistent/target " .. base .. "/root/dangling")
    root = core.realpath(base .. "/root")
  end)
  teardown(function() sh("rm -rf " .. base) end)

  it("passes paths inside the root, relative or absolute, and canonicalizes them", function()
    local g = guard.path { root = base .. "/root" }
    assert.equal(root .. "/sub/file.txt", g:check("sub/file.txt"))
    assert.equal(root .. "/sub/file.txt", g:check(root .. "/sub/./file.txt"))
    assert.equal(root .. "/sub/file.txt", g("inner/file.txt"))          -- a link inside
    assert.equal(root .. "/sub/new.txt", g:check("sub/new.txt"))        -- to be created
    assert.equal(root .. "/sub/a/b", g:check("sub/a/b"))
    assert.equal(root, g:check("."))
  end)

  it("refuses every way out", function()
    local g = guard.path { root = base .. "/root" }
    refused("path.outside_root", g:check("../outside/secret.txt"))
    refused("path.outside_root", g:check("sub/../../outside/secret.txt"))
    refused("path.outside_root", g:check("/etc/passwd"))
    refused("path.outside_root", g:check("escape/secret.txt"))           -- a link out
    refused("path.outside_root", g:check("inner/../../outside"))         -- link, then ..
    refused("path.dotdot_after_missing", g:check("new/../../outside/x")) -- mkdir -p trap
    refused("path.dangling_link", g:check("dangling"))
    refused("path.invalid", g:check("sub/\0/x"))
    refused("path.invalid", g:check(""))
    refused("path.invalid", g:check(42))
  end)

  it("options: allow_missing and allow_root", function()
    local g = guard.path { root = base .. "/root", allow_missing = false, allow_root = false }
    refused("path.missing", g:check("sub/new.txt"))
    refused("path.is_root", g:check("."))
    assert.equal(root .. "/sub/file.txt", g:check("sub/file.txt"))
  end)

  it("misuse raises at the caller's line", function()
    local ok, err = pcall(function() guard.path { root = "/nonexistent/dir" } end)
    assert.is_false(ok)
    assert.matches("guard_spec%.lua:%d+: bad field 'root' to 'guard.path' %(/nonexistent", err)
    ok, err = pcall(function() guard.path { root = "/", rooot = 1 } end)
    assert.is_false(ok)
    assert.matches("unknown field 'rooot' to 'guard.path'", err)
    assert.equal("claude.guard.Path (root /)", tostring(guard.path { root = "/" }))
  end)
end)

describe("claude.guard.command", function()
  local g = guard.command { allow = { "ls", "/usr/bin/cat", git = { "status", "log" } },
    deny_args = { "^%-%-upload%-pack" } }

  it("splits command lines as a shell would for plain words and quotes", function()
    assert.same({ "ls", "-l", "my dir" }, g:check("ls -l 'my dir'"))
    assert.same({ "ls", 'a "b"', "c\\d" }, g:check([[ls "a \"b\"" 'c\d']]))
    assert.same({ "ls", "a b" }, g:check([[ls a\ b]]))
    assert.same({ "git", "status" }, g:check({ "git", "status" }))
    assert.same({ "/usr/bin/cat", "x" }, g:check("/usr/bin/cat x"))
  end)

  it("refuses what needs a shell instead of interpreting it", function()
    for _, line in ipairs { "ls; rm -rf /", "ls | sh", "ls && id", "ls > f", "ls $(id)",
      "ls `id`", 'ls "$HOME"', "ls *", "ls ~", "ls 'unclosed", "FOO=1 ls", "ls\nid" } do
      refused("command.shell_syntax", g:check(line))
    end
  end)

  it("allows listed programs and first arguments only", function()
    refused("command.not_allowed", g:check("rm -rf /"))
    refused("command.not_allowed", g:check("git push"))
    refused("command.not_allowed", g:check("/tmp/evil/ls"))              -- not that ls
    refused("command.not_allowed", g:check("/bin/cat x"))                -- another path
    refused("command.denied_option", g:check("git log --upload-pack=evil"))
    refused("command.denied_argument", g:check("ls --upload-pack=evil"))
    refused("command.invalid", g:check({ "ls", 3 }))
    refused("command.invalid", g:check({}))
  end)

  it("a deny list refuses the name anywhere, and programs that run programs", function()
    local d = guard.command { deny = { "rm" } }
    refused("command.denied", d:check("/bin/rm -rf /"))
    refused("command.runner", d:check("env rm -rf /"))
    refused("command.runner", d:check("sudo ls"))
    assert.same({ "ls" }, d:check("ls"))
  end)
end)

describe("claude.guard.command: runners and options", function()
  it("deny mode knows runners by what they are, not only by a short list", function()
    local d = guard.command { deny = { "rm" } }
    for _, line in ipairs { "taskset 1 rm x", "flock /tmp/l rm x", "prlimit --nofile=9 rm x",
      "chrt 1 rm x", "setarch x86_64 rm x", "x86_64 rm x", "systemd-run rm x", "rbash -c x",
      "ash -c x", "mksh -c x", "/bin/busybox rm x", "python3.11 -c x", "perl5.36.0 -e x",
      "/usr/bin/python3.12 -c x", "pypy3 -c x", "ruby3.1 -e x", "node18 -e x", "lua5.4 -e x",
      "tclsh8.6", "ssh host rm x", "numactl -C 0 rm x", "unbuffer rm x", "sed -n 1ex f",
      "/lib64/ld-linux-x86-64.so.2 /bin/rm x", { "vim", "-c", "!rm" }, "make -f x", "npx rm" } do
      refused("command.runner", d:check(line))
    end
    for _, line in ipairs { "ls -l", "cat f", "grep -r x .", "git status", "wc -l f" } do
      assert.is_table(d:check(line), line)
    end
  end)

  it("deny mode refuses the options by which well-known programs run others", function()
    local d = guard.command { deny = { "rm" } }
    for _, line in ipairs { "tar xf a.tar --to-command=rm", "tar -x -I rm -f a.tar",
      "tar xIf rm a.tar", "tar --use-compress=rm -xf a.tar", "rsync -e rm a b:c",
      "git -c core.pager=rm log", "git --exec-path=/tmp log", "zip -T -TT rm a.zip f",
      "sort --compress-program=rm f", "git grep -O rm x" } do
      refused("command.denied_option", d:check(line))
    end
  end)

  it("the docs' git = { status, diff } is read-only as written", function()
    local g = guard.command { allow = { "ls", git = { "status", "diff" } } }
    for _, line in ipairs { "git diff --output=/tmp/x", "git diff --output /tmp/x",
      "git diff --outp=/tmp/x", "git diff --no-index /etc/shadow x", "git diff --no-i a b",
      "git diff --ext-diff", "git diff HEAD --output=x", "git diff --stat -- --output=x",
      "git status --porcelain --output=x" } do
      refused("command.denied_option", g:check(line))
    end
    -- outside the work tree, two paths make `git diff` a plain diff of any two files
    for _, line in ipairs { "git diff /etc/shadow x", "git diff -- ../../etc/shadow x",
      "git diff x /etc/shadow" } do
      refused("command.denied_argument", g:check(line))
    end
    for _, line in ipairs { "git -c core.pager=sh diff", "git -C /etc diff", "git --git-dir=x diff",
      "git log" } do
      refused("command.not_allowed", g:check(line))
    end
    for _, line in ipairs { "git diff", "git diff --stat", "git diff --text HEAD^ -- src",
      "git diff HEAD -- --output", "git diff main..feature/x", "git status -s -b",
      "git diff HEAD:./a b" } do
      assert.is_table(g:check(line), line)
    end
  end)

  it("allow rules bind options: deny_options, or an options list", function()
    local g = guard.command { allow = {
      curl = { deny_options = { "-o", "--output", "-K", "--config" } },
      ls = { options = { "-l", "-a", "-R", "--color=" } },
      tar = { options = { "-t", "-v", "-f=" } }, find = { options = { "-name=", "-type=" } },
      git = { "status", log = { options = { "--oneline", "-n=", "--format=" } },
        remote = { "show", "-v" }, diff = { options = { "--stat", "--no-index" } } },
    } }
    for _, line in ipairs { "curl -o x https://h/", "curl -sSo x https://h/",
      "curl --output=x https://h/", "curl --out x https://h/", "curl https://h/ -o x",
      "curl -K cfg https://h/", { "find", ".", "-exec", "rm", "{}", "+" }, "find . -delete",
      "tar tf -I rm a.tar", "tar tvI rm a.tar", "git log --oneline -- --output=x" } do
      refused("command.denied_option", g:check(line))
    end
    for _, line in ipairs { "ls -lx", "ls --colour=never", "ls --color -- -h", "git log -p",
      "git log --oneline --stat", "git remote add x y", "git remote", "git diff -p",
      "tar tfx a.tar", "tar -tf a.tar -x", "tar xf a.tar", "find . -name x -newer y" } do
      refused("command.not_allowed", g:check(line))
    end
    for _, line in ipairs { "curl -s https://h/", "curl -sS https://h/", "ls -la", "ls -lR x",
      "ls --color=auto", "ls --color never .", "ls -- -l", "git log --oneline -n 5",
      "git log -n5 --format %h", "git log --format -p", "git remote show origin", "git remote -v",
      "ls -l -- -R", "git log --oneline -- --stat",
      "git status", "git diff --no-index a b", "tar tvf a.tar", "tar -tvf a.tar x",
      "find . -name -x -type f" } do
      assert.is_table(g:check(line), line)
    end
  end)

  it("misuse of an allow rule raises at the caller's line", function()
    for _, rule in ipairs { { git = { 3 } }, { git = { options = "x" } },
      { git = { deny_options = { 1 } } }, { git = { diff = "x" } },
      { git = { options = { "x" } } } } do
      local ok, err = pcall(function() guard.command { allow = rule } end)
      assert.is_false(ok)
      assert.matches("guard_spec.lua:%d+: bad field 'allow%.git", tostring(err))
    end
  end)
end)

describe("claude.guard.url", function()
  local g = guard.url {}

  it("refuses internal addresses however they are spelled", function()
    for _, url in ipairs { "http://127.0.0.1/", "http://2130706433/", "http://0x7f.1/",
      "http://0177.0.0.1/", "http://[::1]/", "http://[::ffff:127.0.0.1]/", "http://10.0.0.1/",
      "http://192.168.1.1:8080/x", "http://169.254.169.254/latest/meta-data/",
      "http://[fd00:ec2::254]/", "http://0.0.0.0/", "http://100.64.0.1/", "http://localhost/" } do
      refused("url.address", g:check(url))
    end
  end)

  it("classes an IPv6 address by the IPv4 address it carries, and every special range", function()
    for address, class in pairs {
      -- NAT64 (RFC 6052): the well-known prefix carries the IPv4 address in its last 32 bits
      ["64:ff9b::7f00:1"] = "loopback", ["64:ff9b::a9fe:a9fe"] = "metadata",
      ["64:ff9b::10.0.0.1"] = "private", ["64:ff9b::8.8.8.8"] = "public",
      ["64:ff9b:0:1::808:808"] = "reserved",     -- in 64:ff9b::/32 but not the /96
      ["64:ff9b:1::8.8.8.8"] = "private",        -- local-use NAT64 (RFC 8215): its layout is the
      ["64:ff9b:1:7f00:1::1"] = "private",       -- operator's, so not the address it carries
      -- Teredo (RFC 4380): the client's address, inverted, in the last 32 bits
      ["2001:0:4136:e378::80ff:fffe"] = "loopback", ["2001:0:4136:e378::5601:5601"] = "metadata",
      ["2001:0:4136:e378:8000:63bf:f7f7:f7f7"] = "public",
      -- 6to4 (RFC 3056): bytes 2-5
      ["2002:7f00:1::1"] = "loopback", ["2002:a9fe:a9fe::"] = "metadata",
      ["2002:c0a8:101::1"] = "private", ["2002:808:808::1"] = "public",
      -- IPv4-mapped, IPv4-translated (RFC 2765), IPv4-compatible (deprecated)
      ["::ffff:127.0.0.1"] = "loopback", ["::ffff:8.8.8.8"] = "public",
      ["::ffff:0:127.0.0.1"] = "loopback", ["::ffff:0:169.254.169.254"] = "metadata",
      ["::ffff:0:8.8.8.8"] = "public", ["::127.0.0.1"] = "loopback", ["::10.1.2.3"] = "private",
      ["::0.0.0.2"] = "unspecified", ["::"] = "unspecified", ["::1"] = "loopback",
      -- IANA IPv6 special-purpose registry, and space outside global unicast 2000::/3
      ["100::"] = "reserved", ["100::1"] = "reserved",                -- discard-only
      ["100:0:0:1::1"] = "reserved", ["2001:1::1"] = "reserved",      -- dummy, PCP anycast
      ["2001:2::1"] = "reserved", ["2001:3::1"] = "reserved",         -- benchmarking, AMT
      ["2001:10::1"] = "reserved", ["2001:20::1"] = "reserved",       -- ORCHID, ORCHIDv2
      ["2001:30::1"] = "reserved", ["2001:1ff::1"] = "reserved",      -- DET, rest of 2001::/23
      ["2001:db8::1"] = "reserved", ["3fff::1"] = "reserved",         -- documentation
      ["5f00::1"] = "reserved", ["4000::1"] = "reserved", ["e000::1"] = "reserved",
      ["fc00::1"] = "private", ["fd00::1"] = "private", ["fec0::1"] = "private",
      ["fe80::1"] = "link_local", ["febf::1"] = "link_local", ["ff02::1"] = "multicast",
      ["fd00:ec2::254"] = "metadata",
      ["2001:4860:4860::8888"] = "public", ["2606:4700::1111"] = "public",
      ["2001:200::1"] = "public",
      -- IANA IPv4 special-purpose registry
      ["192.88.99.1"] = "reserved", ["192.0.0.170"] = "reserved", ["255.255.255.255"] = "reserved",
      ["100.100.100.200"] = "metadata", ["8.8.8.8"] = "public",
    } do
      assert.equal(class, core.address_class(address), address)
    end
    refused("url.address", g:check("http://[64:ff9b::7f00:1]/"))
    refused("url.address", g:check("http://[64:ff9b::a9fe:a9fe]/latest/meta-data/"))
    refused("url.address", g:check("http://[2001:0:4136:e378::80ff:fffe]/"))
    refused("url.address", g:check("http://[::ffff:0:7f00:1]/"))
    refused("url.address", g:check("http://[100::1]/"))
  end)

  it("passes a public address and pins it", function()
    local u = assert(g:check("https://93.184.215.14/path?q=1"))
    assert.equal("https", u.scheme)
    assert.equal(443, u.port)
    assert.equal("/path?q=1", u.path)
    assert.equal("93.184.215.14", u.address)
    assert.equal("93.184.215.14:443:93.184.215.14", u.resolve)
  end)

  it("refuses what parsers disagree on, and unlisted schemes, hosts and ports", function()
    refused("url.invalid", g:check("http://evil.com@127.0.0.1/"))
    refused("url.invalid", g:check("http://a.com\\@b.com/"))
    refused("url.invalid", g:check("http://a.com:99999/"))
    refused("url.invalid", g:check("/relative"))
    refused("url.invalid", g:check("http://%31%32%37.0.0.1/"))
    refused("url.scheme", g:check("file:///etc/passwd"))
    refused("url.scheme", g:check("gopher://8.8.8.8/"))
    local strict = guard.url { schemes = { "https" }, allow_hosts = { "*.example.com" },
      deny_hosts = { "bad.example.com" }, ports = { 443 } }
    refused("url.scheme", strict:check("http://www.example.com/"))
    refused("url.port", strict:check("https://www.example.com:8443/"))
    refused("url.host_denied", strict:check("https://bad.example.com/"))
    refused("url.host_not_allowed", strict:check("https://example.org/"))
  end)

  it("resolves host names on the loop, inside a task too", function()
    local loopback_ok = guard.url { allow_classes = { "loopback" } }
    local u = assert(loopback_ok:check("http://localhost:8080/"))
    assert.equal("loopback", core.address_class(u.address))
    local claude = require "claude"
    local t = claude.spawn(function() return loopback_ok:check("http://localhost/") end)
    local ok, r = t:join(10)
    assert.is_true(ok)
    assert.equal(80, r.port)
  end)
end)

describe("claude.guard.env", function()
  it("drops secret-looking names and values, keeps the rest", function()
    local g = guard.env { allow = { "MY_API_KEY" }, deny = { "DEBUG" } }
    local kept, dropped = g:filter {
      PATH = "/usr/bin", HOME = "/home/u", LANG = "C.UTF-8", GITHUB_TOKEN = "x",
      AWS_SECRET_ACCESS_KEY = "x", DB_PASSWORD = "x", MY_API_KEY = "kept", DEBUG = "1",
      SOME_URL = "postgres://user:hunter2@db/x", LOOKS_FINE = "sk-ant-api03-abc",
      SSL_CERT_FILE = "/etc/ssl/cert.pem",
    }
    assert.same({ PATH = "/usr/bin", HOME = "/home/u", LANG = "C.UTF-8", MY_API_KEY = "kept",
      SSL_CERT_FILE = "/etc/ssl/cert.pem" }, kept)
    assert.same({ "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "DEBUG", "GITHUB_TOKEN", "LOOKS_FINE",
      "SOME_URL" }, dropped)
    refused("env.secret_name", g:check("GITHUB_TOKEN", "x"))
    refused("env.secret_value", g:check("X", "ghp_abc"))
  end)
end)

describe("claude.guard.env: database passwords and URLs with credentials", function()
  it("drops the standard password variables and any URL whose userinfo has a password", function()
    local g = guard.env {}
    for name, value in pairs {
      PGPASSWORD = "x", MYSQL_PWD = "x", SQLCMDPASSWORD = "x", LDAPPASSWORD = "x",
      REDIS_PWD = "x", ISC_PASSWORD = "x", DBPWD = "x",
    } do
      refused("env.secret_name", g:check(name, value))
    end
    for _, value in ipairs { "redis://:pw@host:6379/0", "postgres://user:pw@db/x",
      "amqp://:@rabbit/", "mongodb+srv://u%40x:p%3Aw@cluster/db", "https://u:p@h/ and more",
      "http://a@b:c@host/", "DSN=mysql://root:pw@tcp(localhost)/db",
      "https://ghp_abcdef@github.com/o/r.git" } do
      refused("env.secret_value", g:check("SOME_URL", value))
    end
    local env = { PWD = "/home/u", OLDPWD = "/tmp", URL = "https://host:8443/a@b",
      MAIL = "mailto:u@example.com", PROXY = "http://proxy:3128/", ME = "https://user@host/" }
    local kept, dropped = g:filter(env)
    assert.same(env, kept)
    assert.same({}, dropped)
  end)
end)

describe("claude.guard in tools and can_use_tool", function()
  it("a violation in a tool is an isError result naming the rule", function()
    local tool = require "claude.mcp.tool"
    local g = guard.path { root = "/usr" }
    local read = tool.tool("read", { path = "string" }, function(args)
      local p, err = g:check(args.path)
      if not p then return nil, err end
      return p
    end)
    local r = tool.call(read, { path = "/etc/passwd" })
    assert.is_true(r.isError)
    assert.matches("rule path%.outside_root", r.content[1].text)
    assert.is_nil(tool.call(read, { path = "/usr/bin" }).isError)
  end)

  it("checks the CLI's built-in tools by their input fields", function()
    local can_use_tool = guard.can_use_tool {
      path = guard.path { root = "/usr" }, command = guard.command { allow = { "ls" } },
    }
    assert.is_true(can_use_tool("Read", { file_path = "/usr/bin/env" }))
    local ok, why = can_use_tool("Write", { file_path = "/etc/passwd" })
    assert.is_false(ok)
    assert.matches("rule path%.outside_root", why)
    assert.is_true(can_use_tool("Bash", { command = "ls -l" }))
    ok, why = can_use_tool("Bash", { command = "ls; id" })
    assert.is_false(ok)
    assert.matches("rule command%.shell_syntax", why)
    ok, why = can_use_tool("WebFetch", { url = "http://x/" })
    assert.is_false(ok)
    assert.matches("rule fallback", why)
    local open = guard.can_use_tool { fallback = true }
    assert.is_true(open("WebFetch", { url = "http://x/" }))
  end)
end)
