#!/usr/bin/env bash
# The layout lane: rooms a reader can hold, and dependencies that run one way.
#  1. No product source (core, gates, runtime, cli, report, references, plan: every top-level folder
#     but bench, tests, kernels, examples and tooling) is over 900 lines.
#  2. core/ includes nothing of kgate's but core/; references/ (the op catalogue) includes only
#     core/ and references/: the layers run runtime -> references -> core, never back.
# Exit 1 naming each file and line that breaks a rule. CTest runs it as lint.layout.
#   ci/layout-check.sh [SOURCE_DIR]
set -uo pipefail
src=${1:-$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)}
cd "$src" || exit 1
max=900
# Files over the limit that are being split; a file listed here is still reported, as a note.
known_over=(runtime/checked_timing.cpp)
# The product folders: every top-level folder but those of tests, benchmarks, kernels under test,
# examples and tooling (a new folder is a product folder until listed here).
dirs=()
for d in */; do
  d=${d%/}
  case "$d" in bench|tests|kernels|examples|ci|cmake|docs|build*|debian|packaging) continue ;; esac
  dirs+=("$d")
done
bad=0
while IFS= read -r f; do
  n=$(wc -l < "$f")
  [ "$n" -le "$max" ] && continue
  if printf '%s\n' "${known_over[@]}" | grep -qx "$f"; then
    echo "note: $f has $n lines (over $max; known, to be split)"
  else
    echo "FAIL: $f has $n lines, over $max: split it by concern into files of their own"
    bad=1
  fi
done < <(find "${dirs[@]}" -type f \( -name '*.cpp' -o -name '*.hpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) | sort)
# layer: folder, then the folders it may include from
check_includes() {
  local dir=$1 allowed=$2
  local hits
  hits=$(grep -rnE '^[[:space:]]*#[[:space:]]*include[[:space:]]+"(core|gates|runtime|cli|report|references|bench|kernels)/' "$dir" \
    | grep -vE "#[[:space:]]*include[[:space:]]+\"($allowed)/")
  if [ -n "$hits" ]; then
    echo "FAIL: $dir/ includes from a layer above it (it may include only $allowed/):"
    echo "$hits" | sed 's/^/  /'
    bad=1
  fi
}
check_includes core core
check_includes references 'core|references'
[ "$bad" = 0 ] && echo "PASS: no product file over $max lines (but the known ones); core and references include downward only"
exit "$bad"
