#!/usr/bin/env bash
# `kgate validate` over every package of the repository (no GPU needed: NVRTC compiles on the host):
#   every packed kernels/<op>/package* (BUILD_DIR/kernels/..., kgate pack's output),
#   runtime/package/examples/*, tests/packages/*                             -> exit 0, "valid: ..."
#   every in-tree cuda kernel NAME (kgate_add_kernel in kernels/*/CMakeLists.txt) ships a package
#   named NAME_pkg under kernels/<op>/package*/
#   a source package whose include_dirs reach outside it                    -> exit 4, naming kgate pack
#   a second validate of an unchanged package                                 -> a cache hit
#   a broken manifest / a source that does not compile                        -> exit 4, one
#                                                                                `<file>: <field>: <message>` per problem
#   kgate check on a broken package                                           -> exit 4 (before any GPU work)
# Usage: validate_packages.sh KGATE SOURCE_DIR BUILD_DIR OUT_DIR
set -u
kgate=$1
src=$2
build=$3
out=$4
rm -rf "$out"
mkdir -p "$out"
export KGATE_CACHE_DIR="$out/nvrtc-cache"  # a fresh cache: the first compile is cold
fail() { echo "FAIL: $*"; exit 1; }

n=0
kernel_packages=" "  # names of the packages under kernels/, from their "valid: NAME VERSION ..." line
for pkg in "$build"/kernels/*/package* "$src"/runtime/package/examples/* "$src"/tests/packages/*; do
  [ -f "$pkg/kgate.json" ] || continue
  "$kgate" validate "$pkg" > "$out/validate.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || { cat "$out/validate.log"; fail "kgate validate $pkg exited $rc, expected 0"; }
  grep -q "^valid: .*compiled for sm_" "$out/validate.log" || { cat "$out/validate.log"; fail "no 'valid: ... compiled' summary for $pkg"; }
  echo "ok: $(cat "$out/validate.log")"
  case "$pkg" in
    "$build"/kernels/*) kernel_packages+="$(sed -n 's/^valid: \([^ ]*\) .*/\1/p' "$out/validate.log") " ;;
  esac
  n=$((n + 1))
done
[ $n -ge 6 ] || fail "only $n packages were validated (expected the packed kernels/*/package*, the example and tests/packages/*)"
[ "$kernel_packages" != " " ] || fail "no packed package under $build/kernels (the build's kgate_packages target packs them)"

# The source packages themselves are not self-contained: validate refuses them and names the fix.
"$kgate" validate --no-compile "$src/kernels/softmax/package" > "$out/source.log" 2>&1
rc=$?
[ $rc -eq 4 ] && grep -q 'include_dirs\[1\]: "../../common" contains ".."' "$out/source.log" &&
  grep -q "kgate pack" "$out/source.log" ||
  { cat "$out/source.log"; fail "validate of a source package exited $rc, expected 4 naming include_dirs[1] and kgate pack"; }

# Every in-tree cuda kernel ships its package, so the package path checks every kernel too.
# kgate_add_kernel(NAME OP op BACKEND cuda SOURCES ...) may span lines: join each CMakeLists first.
missing=0
for cmake in "$src"/kernels/*/CMakeLists.txt; do
  while read -r name; do
    [ -n "$name" ] || continue
    case "$kernel_packages" in
      *" ${name}_pkg "*) ;;
      *) echo "FAIL: kernel $name ($cmake) has no package: expected kernels/$(basename "$(dirname "$cmake")")/package*/kgate.json with \"name\": \"${name}_pkg\""
         missing=$((missing + 1)) ;;
    esac
  done < <(tr '\n' ' ' < "$cmake" | grep -o 'kgate_add_kernel([^)]*)' | grep 'BACKEND cuda' |
           grep -v MUTANT | sed 's/kgate_add_kernel( *\([A-Za-z0-9_]*\).*/\1/')
done
[ $missing -eq 0 ] || fail "$missing in-tree cuda kernel(s) without a package"

"$kgate" validate "$build/kernels/softmax/package" > "$out/again.log" 2>&1 || fail "second validate failed"
grep -q "cached CUBIN" "$out/again.log" || { cat "$out/again.log"; fail "the second validate was not a cache hit"; }

# A broken manifest: a misspelt key and a wrong value; every problem is reported, then exit 4.
broken="$out/broken"
cp -r "$src/runtime/package/examples/softmax_rows" "$broken"
sed -i -e 's/"block": \[256\]/"blocks": [256]/' -e 's/"max": 262144/"max": "big"/' "$broken/kgate.json"
"$kgate" validate "$broken" > "$out/broken.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/broken.log"; fail "a broken manifest exited $rc, expected 4"; }
grep -qF "$broken/kgate.json: launches[0].blocks: unknown key \"blocks\"; did you mean \"block\"?" "$out/broken.log" ||
  { cat "$out/broken.log"; fail "the misspelt key is not reported as <file>: <field>: <message>"; }
grep -qF "$broken/kgate.json: guard.shapes.N.max: expected an integer >= 0, found \"big\"" "$out/broken.log" ||
  { cat "$out/broken.log"; fail "the wrong value is not reported"; }
grep -q "kgate: 3 problem(s) in" "$out/broken.log" || { cat "$out/broken.log"; fail "the problem count is missing"; }
# `kgate validate .` names the package's directory, not ".".
(cd "$broken" && "$kgate" validate --no-compile .) > "$out/broken-dot.log" 2>&1
grep -qF "kgate: 3 problem(s) in $(cd "$broken" && pwd -P)" "$out/broken-dot.log" &&
  grep -qF "$(cd "$broken" && pwd -P)/kgate.json: launches[0].blocks" "$out/broken-dot.log" ||
  { cat "$out/broken-dot.log"; fail "kgate validate . does not name the package's directory"; }

# A source that does not compile: exit 4 with NVRTC's log.
bad_src="$out/bad_source"
cp -r "$src/runtime/package/examples/softmax_rows" "$bad_src"
echo 'this is not C++;' >> "$bad_src/softmax_rows.cu"
"$kgate" validate "$bad_src" > "$out/bad_source.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/bad_source.log"; fail "a source that does not compile exited $rc, expected 4"; }
grep -q "softmax_rows.cu" "$out/bad_source.log" || { cat "$out/bad_source.log"; fail "the compile error does not name the source"; }

# kgate check stops at an invalid package with exit 4, GPU or not.
"$kgate" check "$broken" --out "$out/check-broken" -q > "$out/check_broken.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/check_broken.log"; fail "kgate check on a broken package exited $rc, expected 4"; }
grep -q "launches\[0\].blocks" "$out/check_broken.log" || fail "kgate check did not print the package's problems"
"$kgate" check --baseline-package "$src/tests/packages/softmax_v1" > /dev/null 2>&1
[ $? -eq 4 ] || fail "--baseline-package without a package should be a usage error (exit 4)"
echo "validate_packages: all passed ($n packages)"
