#!/usr/bin/env bash
# Sets up claudelua, the product, on Debian 12: the packages it needs to build and run
# (tools/packages.sh product), the pinned claude CLI (tools/install-cli.sh --prefix: one
# tarball from the npm registry, no node or npm), a build in build/, `cmake --install` to
# PREFIX (default ~/.local), and a demo run. The test lab (browsers, sshd, haproxy, the
# conformance suites) is .ci/run's (tools/setup-lab.sh).
#   bash tools/setup.sh                 PREFIX=/opt/claudelua bash tools/setup.sh
# Puts in PREFIX: bin/claudelua, the Lua module and libclaudelua (README.md: what goes
# where), the pinned CLI in lib/claudelua/cli/, and bin/claude linking to it when no
# `claude` is found on PATH (yours is left alone). It edits no shell profile: it prints the
# line to add when PREFIX/bin is not on PATH. Uses sudo for apt-get when not root.
set -euo pipefail
cd "$(dirname "$0")/.."
started=$SECONDS
PREFIX=${PREFIX:-$HOME/.local}
mkdir -p "$PREFIX"
PREFIX=$(cd "$PREFIX" && pwd)
cli_dir="$PREFIX/lib/claudelua/cli"

echo "== Debian packages (tools/packages.sh product)"
bash tools/packages.sh product

echo "== the pinned claude CLI into $cli_dir, while building into build/"
cli_log=$(mktemp "${TMPDIR:-/tmp}/claudelua-setup-cli.XXXXXX")
trap 'rm -f "$cli_log"' EXIT
bash tools/install-cli.sh --prefix "$cli_dir" >"$cli_log" 2>&1 &
cli_job=$!
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
if ! wait "$cli_job"; then cat "$cli_log" >&2; exit 1; fi
cli=$(tail -n 1 "$cli_log")

echo "== cmake --install build --prefix $PREFIX"
cmake --install build --prefix "$PREFIX" >/dev/null
if [ "$(readlink -f "$PREFIX/bin/claude" 2>/dev/null)" = "$cli" ]; then
  echo "claude: $PREFIX/bin/claude -> $cli (the pinned CLI)"
elif claude_on_path=$(command -v claude); then
  echo "claude: yours ($claude_on_path) is used; the pinned one is $cli"
elif [ -e "$PREFIX/bin/claude" ] || [ -L "$PREFIX/bin/claude" ]; then
  echo "claude: $PREFIX/bin/claude is left as it is; the pinned one is $cli"
else
  ln -s "$cli" "$PREFIX/bin/claude"
  echo "claude: $PREFIX/bin/claude -> $cli"
  echo "  (the pinned CLI: log in with \`claude\` to run without --demo, or remove the link"
  echo "  and install Claude Code your own way)"
fi

echo "== claudelua --demo examples/calculator.lua (offline: the real CLI, a scripted model)"
"$PREFIX/bin/claudelua" --demo examples/calculator.lua

echo "== done in $((SECONDS - started)) s: $PREFIX/bin/claudelua"
case ":$PATH:" in
  *":$PREFIX/bin:"*) ;;
  *)
    shown=$PREFIX/bin
    [ "${shown#"$HOME"/}" = "$shown" ] || shown="\$HOME/${shown#"$HOME"/}"
    echo "$PREFIX/bin is not on your PATH. For this shell:"
    echo "  export PATH=\"$shown:\$PATH\""
    if [ "$PREFIX" = "$HOME/.local" ] && grep -qs '\.local/bin' "$HOME/.profile"; then
      echo "(your ~/.profile adds it at your next login, as Debian's default one does)"
    else
      echo "and to keep it, add that line to your shell's profile (~/.profile or ~/.bashrc)"
    fi
    ;;
esac
