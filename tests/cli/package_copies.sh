#!/usr/bin/env bash
# The copies of shared device headers in the kernels' packages are identical to their original.
# A package may read no file outside its own directory, so a header that several packages (or a
# package and kernels/common/) use exists once per directory. Rule: headers (.cuh, .h) of the same
# name under kernels/common/ and kernels/*/package*/ are one file and must be byte-identical; the
# original is the one in kernels/common/, else the first package directory in sorted order (e.g.
# kernels/gelu/package_gelu_elementwise/gelu_kernels.cuh, which the in-tree kernels compile).
# Usage: package_copies.sh SOURCE_DIR
set -u
src=$1
cd "$src" || { echo "FAIL: no source directory $src"; exit 1; }
declare -A original
checked=0
bad=0
for f in kernels/common/*.cuh kernels/common/*.h kernels/*/package*/*.cuh kernels/*/package*/*.h; do
  [ -f "$f" ] || continue
  name=$(basename "$f")
  if [ -z "${original[$name]+set}" ]; then
    original[$name]=$f
    continue
  fi
  checked=$((checked + 1))
  if ! cmp -s "${original[$name]}" "$f"; then
    echo "FAIL: $f differs from its original ${original[$name]} (a package cannot read outside its"
    echo "      directory, so it holds a copy); edit the original, then: cp ${original[$name]} $f"
    bad=$((bad + 1))
  fi
done
[ $checked -gt 0 ] || { echo "FAIL: no copies found under kernels/*/package*/"; exit 1; }
[ $bad -eq 0 ] || exit 1
echo "package_copies: $checked copies identical to their original"
