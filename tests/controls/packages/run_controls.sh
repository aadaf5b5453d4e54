#!/usr/bin/env bash
# The GEMM controls as NVRTC packages (FMA contraction on, NVRTC's default). A package carries its op
# file inside its directory, so this stages each one with a copy of kernels/gemm/package/matmul.op.json
# beside the layout its include_dirs name, packs it, then either validates it (--validate: NVRTC
# compile and the kernels' parameters, no GPU needed) or checks it on the GPU, correctness only, and
# prints each package's outcome, cases and worst margin. Every control must pass.
# Exit 0 when all passed (or validated), 1 otherwise, 77 without a GPU.
#   run_controls.sh KGATE OUT_DIR [--validate | --cases N]
set -u
kgate=${1:?usage: run_controls.sh KGATE OUT_DIR [--validate | --cases N]}
out=${2:?usage: run_controls.sh KGATE OUT_DIR [--validate | --cases N]}
mode=${3:-check}
cases=${4:-64}
[ "$mode" = --cases ] && mode=check
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out" && mkdir -p "$out/src/tests/controls" "$out/src/kernels" "$out/packed"
cp -r "$repo/tests/controls/device" "$repo/tests/controls/packages" "$out/src/tests/controls/"
cp -r "$repo/kernels/common" "$out/src/kernels/"
pkgs=()
for d in "$out"/src/tests/controls/packages/*/; do
  name=$(basename "$d")
  cp "$repo/kernels/gemm/package/matmul.op.json" "$d"
  "$kgate" pack --no-compile -q "$d" "$out/packed/$name" > "$out/pack-$name.log" 2>&1 ||
    { cat "$out/pack-$name.log"; fail "kgate pack $name"; }
  pkgs+=("$out/packed/$name")
done
[ ${#pkgs[@]} -ge 4 ] || fail "found ${#pkgs[@]} packages under $here"
if [ "$mode" = --validate ]; then
  for p in "${pkgs[@]}"; do
    name=$(basename "$p")
    "$kgate" validate "$p" > "$out/validate-$name.log" 2>&1 || { cat "$out/validate-$name.log"; fail "kgate validate $name"; }
    grep -q "^valid: control_${name}_pkg " "$out/validate-$name.log" || { cat "$out/validate-$name.log"; fail "no valid: line for $name"; }
  done
  echo "run_controls: ${#pkgs[@]} control packages packed and valid"
  exit 0
fi
"$kgate" check "${pkgs[@]}" --backend cuda --no-speed --cases "$cases" --no-device-exit-code 77 \
  --out "$out/run" > "$out/run.log" 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "SKIPPED: no GPU"; exit 77; }
python3 - "$out/run/report.json" <<'PY'
import json, sys
bad = 0
for k in json.load(open(sys.argv[1]))["kernels"]:
    c = k["correctness"]
    ok = k["outcome"] == "passed" and c["failed"] == 0
    bad += not ok
    print(f"{k['name']:32s} {k['outcome']:8s} cases {c['cases']} passed {c['passed']} failed {c['failed']} "
          f"worst margin {c.get('worst_margin', 0):.3f}")
sys.exit(1 if bad else 0)
PY
st=$?
echo "run_controls: kgate check exit $rc"
[ $st -eq 0 ] && [ $rc -eq 0 ]
