#!/usr/bin/env bash
# The Debian 12 packages of claudelua, in two sets, and their install:
#   bash tools/packages.sh product     what tools/setup.sh needs: build, run, fetch the CLI
#   bash tools/packages.sh lab         what the specs, benchmarks and fuzzing add (.ci/run)
# Installs the packages of the sets named that are not installed yet (apt-get, with sudo
# when not root); prints nothing when all are there.
set -euo pipefail

# product: a compiler and cmake; Lua 5.4 and libuv (linked); the headers of the libraries
# loaded on first use (src/dynlib.h): libh2o-dev (the HTTP server, h2o on libuv; its
# headers need libssl-dev), libcurl4-openssl-dev (the HTTP client), libssl-dev (the
# cryptography), libpcre2-dev and libidn2-dev (JSON Schema patterns, and host name formats
# when asserted), libhiredis-dev (the Redis task store of `claudelua mcp --tasks redis://`,
# hiredis on libuv), libyaml-dev (YAML documents: claude.yaml, OpenAPI documents in YAML);
# liblua5.3-dev: the module of Lua 5.3 hosts (build/lua5.3/claude.so: Debian's haproxy,
# pandoc, nmap); lua5.4: `require "claude"` from stock
# Lua; libreadline8: line editing in claudelua -i (loaded when there); curl and
# ca-certificates: tools/setup.sh fetches the pinned claude CLI from the npm registry
product=(cmake make gcc pkg-config lua5.4 liblua5.4-dev liblua5.3-dev libuv1-dev libh2o-dev
         libssl-dev libcurl4-openssl-dev libpcre2-dev libidn2-dev libhiredis-dev libyaml-dev
         libreadline8 curl ca-certificates)

# lab: busted, luacheck, lua-cjson (spec/unit/json_spec.lua compares with it) and luv (the
# foreign-loop specs and example); lua5.3: the unit and integration specs once more on
# Lua 5.3 (Debian's busted, luassert, cjson and luv are built for it too); pandoc: the
# Lua filter spec (spec/e2e/pandoc_spec.lua); luarocks: the install spec (luarocks make);
# python3: the REPL's terminal spec (a pty), the Redis servers that never answer of
# spec/integration/redis_spec.lua; wrk: bench/http_wrk.sh; haproxy: the
# load-balancer spec of claudelua mcp --http (spec/e2e/mcp_haproxy_spec.lua,
# mcp_scaling_spec.lua) and the Lua 5.3 host of spec/e2e/haproxy_lua53_spec.lua;
# redis-server: the replicas' shared task store (spec/e2e/mcp_scaling_spec.lua, the Redis
# client's spec/integration/redis_spec.lua with its redis-cli, bench/scaling.sh,
# bench/task_cost); openssh-server and -client: the
# specs that run the CLI "on another host" (their own sshd on 127.0.0.1); chromium: the
# headless browser of the MCP Apps spec (spec/e2e/mcp_apps_spec.lua, driven by the pinned
# playwright-core); clang and its libFuzzer runtime: the fuzz targets; valgrind:
# tools/valgrind-specs.sh; nodejs and npm (below): the pinned CLI, the MCP peers and
# conformance suites of package.json, the TypeScript SDK of bench/package.json
lab=(lua-busted lua-check lua-cjson lua-luv lua5.3 pandoc luarocks python3 wrk haproxy
     redis-server openssh-server openssh-client chromium clang libclang-rt-14-dev valgrind)

wanted=()
for set in "$@"; do
  case "$set" in
    product) wanted+=("${product[@]}") ;;
    lab)     wanted+=("${lab[@]}") ;;
    *) echo "packages.sh: unknown set '$set' (product, lab)" >&2; exit 2 ;;
  esac
done
missing=()
for p in "${wanted[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
# npm may come from elsewhere (NodeSource's nodejs carries its own)
if [[ " $* " == *" lab "* ]] && ! command -v npm >/dev/null 2>&1; then missing+=(nodejs npm); fi
[ ${#missing[@]} -gt 0 ] || exit 0

sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "packages: installing ${missing[*]}" >&2
$sudo apt-get update -qq
$sudo env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
