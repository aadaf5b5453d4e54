#!/usr/bin/env bash
# The formatting lane: every tracked C++ and CUDA source of the tree as .clang-format says, or the
# files that are not and the command that fixes them (exit 1). CTest runs it as lint.clang_format.
# It needs clang-format 14 (Debian bookworm's, which ci/setup.sh installs): another version formats
# some constructs otherwise, so without it the lane is SKIPPED (exit 77), never passed.
#   ci/format-check.sh [SOURCE_DIR]
set -uo pipefail
src=${1:-$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)}
cd "$src" || exit 1
cf=${CLANG_FORMAT:-clang-format}
if ! version=$("$cf" --version 2>/dev/null); then
  echo "SKIPPED: no $cf (ci/setup.sh installs it)"; exit 77
fi
case "$version" in
  *"version 14."*) ;;
  *) echo "SKIPPED: $version is not clang-format 14, whose formatting the tree follows"; exit 77 ;;
esac
files=()
if [ -d .git ] || git rev-parse --git-dir > /dev/null 2>&1; then
  mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.cu' '*.cuh' '*.h' '*.cc')
else
  mapfile -t files < <(find . -path ./build -prune -o -path './build*' -prune -o \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' \) -print)
fi
# One run over every file (a process each would take seconds more); the files it names are the bad.
mapfile -t bad < <("$cf" --dry-run --Werror "${files[@]}" 2>&1 | sed -n 's/^\([^:]*\):[0-9]*:[0-9]*: error: .*/\1/p' | sort -u)
if [ ${#bad[@]} -gt 0 ]; then
  echo "FAIL: ${#bad[@]} of ${#files[@]} files are not formatted as .clang-format says:"
  printf '  %s\n' "${bad[@]}"
  echo "fix: clang-format -i ${bad[*]}"
  exit 1
fi
echo "PASS: ${#files[@]} files formatted as .clang-format says ($version)"
