#!/usr/bin/env bash
# Calls/s of `claudelua mcp --http` scaled out (docs/scaling.md), in one run, with wrk:
# one process alone (no balancer), then HAProxy in front of one and of two replicas sharing
# their tasks through redis-server (--tasks redis://). Each a modern-era tools/call of a tool
# that answers at once, round-robin, keep-alive connections. Everything on 127.0.0.1.
#   bench/scaling.sh [seconds] [connections]
# Needs wrk, haproxy and redis-server (tools/packages.sh lab).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-5} conns=${2:-32}
dir=$(mktemp -d /tmp/claudelua-scaling.XXXXXX)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$dir"; }
trap cleanup EXIT
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

cat > "$dir/tools.lua" <<'LUA'
local claude = require "claude"
return claude.server("bench", {
  claude.tool("echo", "Echoes", { text = "string" }, function(args) return args.text end),
})
LUA
cat > "$dir/call.lua" <<'LUA'
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.headers["accept"] = "application/json, text/event-stream"
wrk.headers["mcp-protocol-version"] = "2026-07-28"
wrk.headers["mcp-method"] = "tools/call"
wrk.headers["mcp-name"] = "echo"
wrk.body = '{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",'
  .. '"arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":'
  .. '"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}'
LUA
head -c 32 /dev/urandom | base64 > "$dir/state.key"
redis_port=$(free_port)
redis-server --port "$redis_port" --bind 127.0.0.1 --save "" --appendonly no \
  --dir "$dir" >/dev/null &
pids+=($!)

replica() { # port node [tasks]
  build/claudelua mcp --http "127.0.0.1:$1" --node "$2" --state-key-file "$dir/state.key" \
    ${3:+--tasks "$3"} "$dir/tools.lua" 2>/dev/null &
  pids+=($!)
}
wait_port() { for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return; sleep 0.1; done; }
haproxy_cfg() { # port backend-ports...
  local port=$1; shift
  printf 'global\n  maxconn 4096\ndefaults\n  mode http\n  timeout connect 2s\n'
  printf '  timeout client 1h\n  timeout server 1h\n  option http-buffer-request\n'
  printf 'frontend mcp\n  bind 127.0.0.1:%s\n  default_backend claudelua\n' "$port"
  printf 'backend claudelua\n  balance roundrobin\n'
  local i=0
  for b in "$@"; do i=$((i + 1)); printf '  server r%d 127.0.0.1:%s\n' "$i" "$b"; done
}
run() { # label url
  local rps
  rps=$(wrk -t2 -c"$conns" -d"${secs}s" -s "$dir/call.lua" "$2" | awk '/Requests\/sec/ {print $2}')
  printf '%-40s %10s calls/s\n' "$1" "$rps"
}

p0=$(free_port); replica "$p0" solo; wait_port "$p0"
run "one process, no balancer" "http://127.0.0.1:$p0/mcp"

p1=$(free_port); p2=$(free_port)
replica "$p1" a "redis://127.0.0.1:$redis_port"
replica "$p2" b "redis://127.0.0.1:$redis_port"
wait_port "$p1"; wait_port "$p2"
for n in 1 2; do
  lb=$(free_port)
  if [ "$n" = 1 ]; then haproxy_cfg "$lb" "$p1" > "$dir/h$n.cfg"
  else haproxy_cfg "$lb" "$p1" "$p2" > "$dir/h$n.cfg"; fi
  haproxy -db -f "$dir/h$n.cfg" >/dev/null 2>&1 &
  hp=$!; pids+=($hp)
  wait_port "$lb"
  run "haproxy, $n replica(s), --tasks redis" "http://127.0.0.1:$lb/mcp"
  kill "$hp"
done
