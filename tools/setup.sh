#!/usr/bin/env bash
# Installs the Debian packages claudelua needs, builds it into build/, and
# installs the pinned claude CLI into node_modules/ (for the examples' demo
# mode and the e2e specs).
# Usage: bash tools/setup.sh   (uses sudo for apt-get when not root)
set -euo pipefail
cd "$(dirname "$0")/.."

# libh2o-dev: h2o built on libuv, the HTTP server (its headers need libssl-dev);
# libpcre2-dev: JSON Schema patterns and libidn2-dev: its host name formats (both loaded on
# first use); curl: the HTTP server's specs; wrk: bench/http_wrk.sh; haproxy: the
# load-balancer spec of claudelua mcp --http (spec/e2e/mcp_haproxy_spec.lua); python3: the REPL's terminal spec (a pty); libreadline8:
# line editing in claudelua -i (loaded when there, not needed to build); openssh-server and
# -client: the specs that run the CLI "on another host" (their own sshd on 127.0.0.1);
# chromium: the headless browser of the MCP Apps spec (spec/e2e/mcp_apps_spec.lua, driven by
# the pinned playwright-core)
packages=(cmake make gcc pkg-config lua5.4 liblua5.4-dev lua-cjson libuv1-dev
          libh2o-dev libssl-dev libcurl4-openssl-dev libpcre2-dev libidn2-dev lua-busted lua-check
          lua-luv curl wrk haproxy python3 libreadline8 openssh-server openssh-client chromium)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
# npm installs the pinned claude CLI for the examples and e2e specs
command -v npm >/dev/null 2>&1 || missing+=(nodejs npm)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# CLAUDELUA_CMAKE_ARGS: more configure options (.ci/run: -DCLAUDELUA_WERROR=ON)
# shellcheck disable=SC2086
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CLAUDELUA_CMAKE_ARGS:-} >/dev/null
cmake --build build -j"$(nproc)"
bash tools/install-cli.sh >/dev/null
# the TypeScript Agent SDK (bench/package.json): the benchmarks' peer, and the oracle of
# spec/e2e/sdk_functions_spec.lua
(cd bench && npm ci --no-audit --no-fund >/dev/null)
