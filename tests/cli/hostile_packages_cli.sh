#!/usr/bin/env bash
# Hostile packages, through the kgate command (no GPU needed: everything here happens before a kernel
# runs):
#   a source that #includes /proc/self/environ, /etc/passwd or a file of the working directory
#     -> kgate validate exits 4, and not one byte of the environment or the file is printed
#   --require-sandbox where a sandbox can be entered -> compiles as usual
#   a macro bomb with --compile-timeout 3            -> exit 4 within seconds, "did not finish"
#   two packages with one name in one kgate check    -> exit 4 naming both directories, before any GPU work
#   a manifest or an op file nested 100,000s of levels deep -> exit 4 naming the depth (was SIGSEGV)
# Usage: hostile_packages_cli.sh KGATE SOURCE_DIR OUT_DIR
set -u
kgate=$1
src=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
export KGATE_CACHE_DIR="$out/nvrtc-cache"
fail() { echo "FAIL: $*"; exit 1; }

# A package whose source is $1 (before a trivial kernel).
make_pkg() {
  local dir=$1 text=$2
  mkdir -p "$dir"
  printf '%s\nextern "C" __global__ void probe(float* y) { y[0] = 1.0f; }\n' "$text" > "$dir/probe.cu"
  cat > "$dir/kgate.json" <<JSON
{"format": "kgate-package/1", "name": "probe", "version": "0.1.0", "op": "softmax",
 "sources": ["probe.cu"], "symbols": {"N": ["x", -1]},
 "launches": [{"kernel": "probe", "grid": [1], "block": [32], "args": [{"tensor": "y"}]}],
 "guard": {"dtypes": ["f32"]}}
JSON
}

# Which sandbox this machine gives a compile (the validate summary names it).
make_pkg "$out/fine" ''
KGATE_CACHE_DIR="$out/no-cache" "$kgate" validate "$out/fine" > "$out/fine0.log" 2>&1
sandbox=$(grep -o 'sandbox: [a-z-]*' "$out/fine0.log" | head -1)
echo "compile $sandbox"

secret="kgate-cli-secret-$RANDOM$RANDOM"
echo "#error $secret" > "$out/cwd_secret.h"
for probe in '#include "/proc/self/environ"' '#include "/etc/passwd"' '#include "cwd_secret.h"' \
             "#include \"/proc/$$/environ\""; do
  if [ "$sandbox" = "sandbox: none" ] && [ "$probe" != '#include "/proc/self/environ"' ]; then
    echo "SKIPPED (visibly): no compile sandbox on this machine, so '$probe' would be read"; continue
  fi
  make_pkg "$out/leak" "$probe"
  (cd "$out" && KGATE_TEST_SECRET="$secret" "$kgate" validate "$out/leak") > "$out/leak.log" 2>&1
  rc=$?
  [ $rc -eq 4 ] || { cat "$out/leak.log"; fail "validate of a package with '$probe' exited $rc, expected 4"; }
  grep -q "cannot open source file" "$out/leak.log" || { cat "$out/leak.log"; fail "'$probe' was not refused by the compiler"; }
  if grep -q -e "$secret" -e "root:x:" -e "KGATE_TEST_SECRET" "$out/leak.log"; then
    cat "$out/leak.log"; fail "'$probe' printed the runner's data"
  fi
  echo "ok: $probe -> exit 4, nothing printed"
done

if [ "$sandbox" = "sandbox: none" ]; then
  # Where no sandbox can be entered, --require-sandbox must refuse (exit 4) and say why.
  "$kgate" --require-sandbox validate "$out/fine" > "$out/fine.log" 2>&1
  rc=$?
  [ $rc -eq 4 ] || { cat "$out/fine.log"; fail "validate --require-sandbox without a sandbox exited $rc, expected 4"; }
  echo "SKIPPED (visibly): no compile sandbox on this machine; --require-sandbox refused with exit 4"
else
  KGATE_CACHE_DIR="$out/no-cache-2" "$kgate" --require-sandbox validate "$out/fine" > "$out/fine.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || { cat "$out/fine.log"; fail "validate --require-sandbox exited $rc, expected 0"; }
  grep -q "warning: package compiles run without a sandbox" "$out/fine.log" && fail "a sandboxed compile warned it was not"
  echo "ok: --require-sandbox compiles ($(grep -o 'sandbox: [a-z-]*' "$out/fine.log"))"
fi

bomb='#define A0 x x x x x x x x x x'
for i in 1 2 3 4 5 6 7 8 9; do bomb+=$'\n'"#define A$i$(printf " A$((i - 1))%.0s" 1 2 3 4 5 6 7 8 9 10)"; done
bomb+=$'\nint kgate_bomb[] = { A9 };'
make_pkg "$out/bomb" "$bomb"
start=$SECONDS
"$kgate" validate "$out/bomb" --compile-timeout 3 > "$out/bomb.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/bomb.log"; fail "a macro bomb exited $rc, expected 4"; }
grep -q "did not finish compiling package \"probe\" (probe.cu) within 3 s" "$out/bomb.log" \
  || { cat "$out/bomb.log"; fail "no time-limit verdict for the macro bomb"; }
[ $((SECONDS - start)) -lt 30 ] || fail "the macro bomb held validate for $((SECONDS - start)) s"
echo "ok: macro bomb stopped after $((SECONDS - start)) s"

# Two packages, one name.
cp -r "$src/tests/packages/softmax_v1" "$out/first"
cp -r "$src/tests/packages/softmax_v1" "$out/second"
"$kgate" check "$out/first" "$out/second" --out "$out/twins" > "$out/twins.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/twins.log"; fail "two packages named alike exited $rc, expected 4"; }
grep -q "two packages are named \"softmax_v1\": $out/first and $out/second" "$out/twins.log" \
  || { cat "$out/twins.log"; fail "the same-name error does not name both directories"; }
echo "ok: same-name packages refused up front"

# A manifest nested 500,000 levels deep and an op file nested 100,000: refused (exit 4) before anything walks them
# (they overflowed the stack: SIGSEGV), naming the file and the depth.
mkdir -p "$out/deep" "$out/deep_op"
python3 - "$out/deep/kgate.json" "$out/deep_op/deep.op.json" <<'PY'
import sys
deep = lambda n: "[" * n + "]" * n
open(sys.argv[1], "w").write('{"format": "kgate-package/1", "name": "deep", "guard": ' + deep(500000) + '}')
# (op files are read up to 256 KiB: 100,000 levels)
open(sys.argv[2], "w").write('{"format": "kgate-op/1", "name": "deep", "summary": ' + deep(100000) + '}')
PY
"$kgate" validate "$out/deep" > "$out/deep.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { head -c 2000 "$out/deep.log"; fail "a manifest nested 500,000 deep exited $rc, expected 4"; }
grep -q "nested more than 128 levels deep" "$out/deep.log" || { head -c 2000 "$out/deep.log"; fail "the depth is not named"; }
"$kgate" --ops "$out/deep_op" list --ops > "$out/deep_op.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { head -c 2000 "$out/deep_op.log"; fail "an op file nested 100,000 deep exited $rc, expected 4"; }
grep -q "deep.op.json" "$out/deep_op.log" && grep -q "nested more than 128 levels deep" "$out/deep_op.log" \
  || { head -c 2000 "$out/deep_op.log"; fail "the op file's depth error does not name the file and the depth"; }
echo "ok: documents nested 100,000 and 500,000 deep refused"
echo "PASS"
