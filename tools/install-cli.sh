#!/usr/bin/env bash
# Install a Claude Code CLI and print the absolute path of a working `claude`
# binary on the last line of stdout. Progress goes to stderr.
#
#   CLAUDE_BIN=$(tools/install-cli.sh | tail -n1)
#       the pin: package.json's "claudelua.cli", from the Agent SDK's platform package
#       (@anthropic-ai/claude-agent-sdk-<platform>, pinned in package.json and
#       package-lock.json), installed with `npm ci` into <repo>/node_modules
#   tools/install-cli.sh --prefix DIR
#       the pin alone into DIR (DIR/claude; tools/setup.sh): the Agent SDK's platform
#       package's tarball fetched with curl (no node, no npm) and checked against
#       package-lock.json's integrity
#   tools/install-cli.sh --version 2.1.332 [--prefix DIR]
#       another CLI into DIR (default ~/.cache/claudelua/cli-<version>), outside the repo:
#       @anthropic-ai/claude-code@<version> where npm has it, else the Agent SDK's platform
#       package that bundles it (its "claudeCodeVersion")
#   tools/install-cli.sh --version latest [--prefix DIR]
#       the newest CLI a user can install: the newest Agent SDK platform package's, or the
#       newest @anthropic-ai/claude-code if that is newer (tools/cli-drift)
#
# The newest CLIs ship only inside the Agent SDK's platform packages: the claude-code
# package stopped at 2.1.332 while the SDK's went on (0.3.337 bundles 2.1.337).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"

VERSION="" PREFIX=""
while [ $# -gt 0 ]; do
  case "$1" in
    --version) VERSION=${2:?--version needs a value}; shift 2 ;;
    --prefix)  PREFIX=${2:?--prefix needs a value}; shift 2 ;;
    -h|--help) sed -n '2,22p' "$0"; exit 0 ;;
    *) echo "install-cli: unknown argument '$1' (--version X, --prefix DIR)" >&2; exit 2 ;;
  esac
done

# Prints the version a binary reports ("2.1.337 (Claude Code)" -> "2.1.337"), or nothing.
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
SDK_PLAT="@anthropic-ai/claude-agent-sdk-$PLAT"

# The first of the given paths whose binary reports version $1, resolved.
find_bin() {
  local want=$1 c
  shift
  for c in "$@"; do
    if [ "$(version_of "$c")" = "$want" ]; then readlink -f "$c"; return 0; fi
  done
  return 1
}

# "a.b.c" sorts after "x.y.z"? (numeric, field by field)
newer() {
  [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -t. -k1,1n -k2,2n -k3,3n | tail -n1)" = "$1" ]
}

if [ -z "$VERSION" ] && [ -n "$PREFIX" ]; then
  # package.json's "claudelua": { "cli": ... } and the lock's entry of the platform package,
  # read without node (npm writes both with one key per line)
  WANT=$(sed -n 's/^ *"cli": *"\([^"]*\)".*/\1/p' "$ROOT/package.json")
  lock_field() {
    awk -v key="\"node_modules/$SDK_PLAT\":" -v field="\"$1\":" \
      '$1 == key { inside = 1 } inside && $1 == field { gsub(/[",]/, "", $2); print $2; exit }' \
      "$ROOT/package-lock.json"
  }
  sdk=$(lock_field version) integrity=$(lock_field integrity)
  if [ -z "$WANT" ] || [ -z "$sdk" ] || [ "${integrity%%-*}" != sha512 ]; then
    echo "install-cli: no pin for $SDK_PLAT in package.json and package-lock.json" >&2
    exit 1
  fi
  mkdir -p "$PREFIX"
  PREFIX=$(cd "$PREFIX" && pwd)
  if ! find_bin "$WANT" "$PREFIX/claude" >/dev/null; then
    registry=${npm_config_registry:-https://registry.npmjs.org}
    url="${registry%/}/$SDK_PLAT/-/${SDK_PLAT#*/}-$sdk.tgz"
    echo "install-cli: fetching $url" >&2
    tgz="$PREFIX/.download.tgz"
    curl -fsSL --retry 3 -o "$tgz" "$url"
    want_sum=$(printf '%s' "${integrity#sha512-}" | base64 -d | od -An -v -tx1 | tr -d ' \n')
    if [ "$(sha512sum "$tgz" | cut -d' ' -f1)" != "$want_sum" ]; then
      rm -f "$tgz"
      echo "install-cli: $url does not match package-lock.json's integrity" >&2
      exit 1
    fi
    tar -xzf "$tgz" -C "$PREFIX" --strip-components=1 --no-same-owner
    rm -f "$tgz"
  fi
  if BIN=$(find_bin "$WANT" "$PREFIX/claude"); then
    echo "install-cli: claude $WANT ready ($SDK_PLAT@$sdk)" >&2
    echo "$BIN"
    exit 0
  fi
  echo "install-cli: no working claude $WANT in $PREFIX ($SDK_PLAT@$sdk)" >&2
  exit 1
fi

if [ -z "$VERSION" ]; then
  # The single source of truth for the version is the pin in package.json.
  WANT=$(node -e 'process.stdout.write(require(process.argv[1]).claudelua.cli)' "$ROOT/package.json")
  CANDIDATES=("$ROOT/node_modules/$SDK_PLAT/claude")
  if ! find_bin "$WANT" "${CANDIDATES[@]}" >/dev/null; then
    echo "install-cli: installing $SDK_PLAT (CLI $WANT) with npm ci" >&2
    npm ci --no-audit --no-fund >&2
  fi
  if BIN=$(find_bin "$WANT" "${CANDIDATES[@]}"); then
    echo "install-cli: claude $WANT ready" >&2
    echo "$BIN"
    exit 0
  fi
  echo "install-cli: no working claude $WANT under $ROOT/node_modules ($SDK_PLAT)" >&2
  exit 1
fi

# --version: which npm package holds that CLI.
if [ "$VERSION" = latest ]; then
  sdk=$(npm view "$SDK_PLAT@latest" version 2>/dev/null || true)
  sdk_cli=$(npm view "$SDK_PLAT@$sdk" claudeCodeVersion 2>/dev/null || true)
  [ -n "$sdk_cli" ] || sdk_cli=$(npm view "@anthropic-ai/claude-agent-sdk@$sdk" claudeCodeVersion 2>/dev/null || true)
  cc=$(npm view "@anthropic-ai/claude-code@latest" version 2>/dev/null || true)
  if [ -n "$sdk_cli" ] && { [ -z "$cc" ] || ! newer "$cc" "$sdk_cli"; }; then
    VERSION=$sdk_cli PKG="$SDK_PLAT@$sdk"
  else
    VERSION=$cc PKG="@anthropic-ai/claude-code@$cc"
  fi
elif [ -n "$(npm view "@anthropic-ai/claude-code@$VERSION" version 2>/dev/null || true)" ]; then
  PKG="@anthropic-ai/claude-code@$VERSION"
else
  # The SDK's patch number has followed the CLI's (0.3.337 bundles 2.1.337); checked below.
  PKG="$SDK_PLAT@0.3.${VERSION##*.}"
fi
[ -n "$VERSION" ] || { echo "install-cli: npm knows no newest CLI (offline?)" >&2; exit 1; }
PREFIX=${PREFIX:-${XDG_CACHE_HOME:-$HOME/.cache}/claudelua/cli-$VERSION}
mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
CANDIDATES=("$PREFIX/node_modules/.bin/claude" "$PREFIX/node_modules/$SDK_PLAT/claude"
  "$PREFIX/node_modules/@anthropic-ai/claude-code-$PLAT/claude")
if ! find_bin "$VERSION" "${CANDIDATES[@]}" >/dev/null; then
  echo "install-cli: installing $PKG into $PREFIX" >&2
  [ -f "$PREFIX/package.json" ] || echo '{"private":true}' > "$PREFIX/package.json"
  (cd "$PREFIX" && npm install --no-audit --no-fund --no-save "$PKG" >&2)
fi
if BIN=$(find_bin "$VERSION" "${CANDIDATES[@]}"); then
  echo "install-cli: claude $VERSION ready ($PKG)" >&2
  echo "$BIN"
else
  echo "install-cli: no working claude $VERSION under $PREFIX ($PKG)" >&2
  exit 1
fi
