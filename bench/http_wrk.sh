#!/usr/bin/env bash
# Requests/s of the HTTP server on a trivial handler, with wrk (Debian: wrk):
#   bench/http_wrk.sh [core|task] [seconds] [connections]
# core: core.http_listen answers in the callback; task: claude.http.server,
# each request in its own task. One wrk thread, keep-alive connections.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-core} secs=${2:-3} conns=${3:-32}
exec 3< <(build/claudelua bench/http_serve.lua "$mode" $((secs + 2)))
read -r port <&3
wrk -t1 -c"$conns" -d"${secs}s" "http://127.0.0.1:$port/"
