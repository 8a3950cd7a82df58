#!/usr/bin/env bash
# Sets up the test lab on Debian 12, for .ci/run (which calls it) or a developer: the
# product's packages and the lab's (tools/packages.sh product lab: busted, luacheck,
# luarocks, chromium, sshd, haproxy, wrk, clang, valgrind, node and npm), a build in
# build/, and the npm packages of package.json (the pinned CLI, the MCP peers, Inspector
# and conformance suites, playwright) and bench/package.json (the TypeScript Agent SDK).
# The product alone is tools/setup.sh's. Uses sudo for apt-get when not root.
#   CLAUDELUA_CMAKE_ARGS: more configure options (.ci/run: -DCLAUDELUA_WERROR=ON)
set -euo pipefail
cd "$(dirname "$0")/.."

# (Lua 5.3 for the specs needs nothing beyond apt: Debian's lua-busted, luassert, cjson and
# luv are built for 5.3 as well, so `busted --lua=lua5.3` runs from packages alone)
bash tools/packages.sh product lab
# shellcheck disable=SC2086
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CLAUDELUA_CMAKE_ARGS:-} >/dev/null
cmake --build build -j"$(nproc)"
# npm ci warns of deprecated packages deep in the test tools' own dependencies (the
# Inspector's, the conformance suites'): nothing this project can act on, so errors only
export npm_config_loglevel=error
# package.json into node_modules/ (npm ci, when the pinned CLI is not there yet)
bash tools/install-cli.sh >/dev/null
# packages added since that node_modules/ was made (the OpenTelemetry JS SDK of
# spec/e2e/trace_spec.lua, and its receiver's protobuf definitions): the lock file again
[ -d node_modules/otlp-transformer-protobufjs ] || npm ci --no-audit --no-fund >/dev/null
# the TypeScript Agent SDK (bench/package.json): the benchmarks' peer, and the oracle of
# spec/e2e/sdk_functions_spec.lua
(cd bench && npm ci --no-audit --no-fund >/dev/null)
