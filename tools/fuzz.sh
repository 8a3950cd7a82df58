#!/usr/bin/env bash
# Runs one libFuzzer target from build-fuzz/ (CC=clang cmake -S . -B build-fuzz
# -DCLAUDELUA_FUZZ=ON; docs/fuzzing.md) over its seed corpus in fuzz/corpus/<target>,
# with new inputs going to a scratch directory (fuzz/corpus is not changed).
# Usage: bash tools/fuzz.sh json|lines|router|sse|jwt|http|client [runs (default: until stopped)] [libFuzzer flags...]
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: tools/fuzz.sh json|lines|router|sse|jwt|http|client [runs] [flags...]}
runs=${2:--1}
shift $(( $# >= 2 ? 2 : 1 ))
bin=build-fuzz/fuzz_$target
[ -x "$bin" ] || { echo "fuzz.sh: $bin is not built (see docs/fuzzing.md)" >&2; exit 2; }
work=${FUZZ_WORK:-build-fuzz/corpus-$target}
mkdir -p "$work" build-fuzz/artifacts
# One Lua state serves every input, so its live blocks grow between inputs: libFuzzer's
# per-input leak check would rescan the heap after each one. Leaks are the sanitizer and
# valgrind spec runs' business.
log=build-fuzz/fuzz-$target.log
status=0
"$bin" -detect_leaks=0 -max_len=65536 -runs="$runs" -print_final_stats=1 \
  -artifact_prefix=build-fuzz/artifacts/ "$@" "$work" "fuzz/corpus/$target" >"$log" 2>&1 ||
  status=$?
if [ "$status" -ne 0 ]; then
  tail -n 80 "$log"
  echo "fuzz.sh: $target failed (exit $status); the input is in build-fuzz/artifacts/" >&2
  exit "$status"
fi
echo "fuzz_$target: $(grep -E '^Done' "$log")"
