#!/usr/bin/env bash
# Runs the unit and integration specs inside the claudelua host under
# valgrind's memcheck: a build with the plain allocator (every Lua block is a
# malloc block memcheck can see) in build-valgrind/, busted with a wrapper as
# its interpreter. Processes the specs start (lua5.4, the CLI, children) run
# natively. Exits non-zero on any memcheck error or definite leak.
# Usage: bash tools/valgrind-specs.sh [busted args...]   (default: --run=unit, then integration)
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind-specs: install valgrind" >&2; exit 2; }

build=build-valgrind
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DCMAKE_C_FLAGS="-DCLAUDELUA_PLAIN_ALLOC -O1" >/dev/null
cmake --build "$build" -j2 >/dev/null   # the specs also run embed_host

logs=$(mktemp -d)
wrapper="$build/claudelua-memcheck"
cat >"$wrapper" <<WRAP
#!/bin/sh
exec valgrind --quiet --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
  --show-leak-kinds=definite --track-origins=yes --log-file="$logs/memcheck.%p.log" \
  "$PWD/$build/claudelua" "\$@"
WRAP
chmod +x "$wrapper"

status=0
if [ $# -gt 0 ]; then
  CLAUDELUA_BUILD="$build" busted -o utfTerminal --lua="$wrapper" "$@" || status=$?
else
  for suite in unit integration; do
    CLAUDELUA_BUILD="$build" busted -o utfTerminal --lua="$wrapper" --run="$suite" || status=$?
  done
fi

# every memcheck log that is not empty is a finding
found=0
for f in "$logs"/memcheck.*.log; do
  [ -s "$f" ] || continue
  found=1
  echo "== $f"
  cat "$f"
done
rm -rf "$logs"
if [ "$found" -ne 0 ]; then
  echo "valgrind-specs: memcheck reported errors (above)" >&2
  exit 1
fi
exit "$status"
