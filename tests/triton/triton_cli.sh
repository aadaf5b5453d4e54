#!/usr/bin/env bash
# A Triton kernel's CUBIN as a kgate package (tests/triton/softmax_rows, made by make_fixture.py):
#   cpu: kgate validate passes (the CUBIN's 7 parameters: 5 visible, 2 scratch pointers Triton
#        appends); a manifest that leaves the scratch pointers out is refused naming the kernel's
#        parameter sizes (exit 4)
#   gpu: kgate check --no-speed of the package passes (exit 77, SKIPPED, without a GPU); then its
#        speed against eager is printed, exit 0 or 2 (the fixture is a plain Triton softmax: on the
#        H100 it was 1.3x slower than eager at B=4096, N=1024, faster on smaller batches)
#   triton_cli.sh KGATE PACKAGE_DIR OUT_DIR cpu|gpu
set -u
kgate=$1 package=$2 out=$3 mode=$4
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out" && mkdir -p "$out"
if [ "$mode" = gpu ]; then
  nvidia-smi -L > /dev/null 2>&1 || { echo "SKIPPED: no GPU"; exit 77; }
  "$kgate" check "$package" --no-speed --out "$out/check" > "$out/check.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || { cat "$out/check.log"; fail "kgate check --no-speed of the Triton CUBIN package: exit $rc"; }
  sed -n '/^kernel /,$p' "$out/check.log"
  "$kgate" check "$package" --out "$out/speed" > "$out/speed.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 2 ] || { cat "$out/speed.log"; fail "kgate check of the Triton CUBIN package with its speed: exit $rc"; }
  sed -n '/^kernel /,$p' "$out/speed.log"
  echo "triton_cli gpu: PASS"
  exit 0
fi
"$kgate" validate "$package" > "$out/validate.log" 2>&1 || { cat "$out/validate.log"; fail "kgate validate: exit $?"; }
grep -q "precompiled cubin softmax_rows.cubin for sm_90" "$out/validate.log" || { cat "$out/validate.log"; fail "the CUBIN was not read"; }
cp -r "$package" "$out/no_scratch"
python3 - "$out/no_scratch/kgate.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["launches"][0]["args"] = m["launches"][0]["args"][:5]  # the scratch pointers left out
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
"$kgate" validate "$out/no_scratch" > "$out/no_scratch.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/no_scratch.log"; fail "a launch without Triton's scratch pointers: exit $rc, expected 4"; }
grep -q 'takes 7 parameter(s) of 8, 8, 4, 4, 4, 8, 8 bytes, but "args" lists 5' "$out/no_scratch.log" ||
  { cat "$out/no_scratch.log"; fail "the refusal does not name the kernel's parameters"; }
echo "triton_cli cpu: PASS"
