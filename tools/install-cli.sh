#!/usr/bin/env bash
# Install the pinned Claude Code CLI (package.json / package-lock.json) into
# <repo>/node_modules and print the absolute path of a working `claude`
# binary on the last line of stdout. Progress goes to stderr.
#
#   CLAUDE_BIN=$(tools/install-cli.sh | tail -n1)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

# The single source of truth for the version is the pin in package.json.
WANT=$(node -e 'process.stdout.write(require(process.argv[1]).dependencies["@anthropic-ai/claude-code"])' "$ROOT/package.json")

# Prints the version a binary reports ("2.1.330 (Claude Code)" -> "2.1.330"), or nothing.
version_of() {
  [ -x "$1" ] || return 0
  "$1" --version 2>/dev/null | awk 'NR==1{print $1}' || true
}

case "$(uname -s)-$(uname -m)" in
  Linux-x86_64)  PLAT=linux-x64 ;;
  Linux-aarch64) PLAT=linux-arm64 ;;
  Darwin-arm64)  PLAT=darwin-arm64 ;;
  Darwin-x86_64) PLAT=darwin-x64 ;;
  *)             PLAT=unknown ;;
esac
if [ "$PLAT" != unknown ] && ldd --version 2>&1 | grep -qi musl; then PLAT="$PLAT-musl"; fi

CANDIDATES=(
  "$ROOT/node_modules/.bin/claude"
  "$ROOT/node_modules/@anthropic-ai/claude-code-$PLAT/claude"
)

find_bin() {
  local c
  for c in "${CANDIDATES[@]}"; do
    if [ "$(version_of "$c")" = "$WANT" ]; then
      # Resolve the .bin symlink so callers get a stable absolute path.
      readlink -f "$c"
      return 0
    fi
  done
  return 1
}

if [ "$(version_of "$ROOT/node_modules/.bin/claude")" != "$WANT" ]; then
  echo "install-cli: installing @anthropic-ai/claude-code@$WANT with npm ci" >&2
  npm ci --no-audit --no-fund >&2
fi

if BIN=$(find_bin); then
  echo "install-cli: claude $WANT ready" >&2
  echo "$BIN"
else
  echo "install-cli: no working claude $WANT under $ROOT/node_modules" >&2
  exit 1
fi
