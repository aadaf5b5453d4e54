#!/usr/bin/env bash
# Outputs and workspaces with a start value (kgate-package/1 "outputs", a workspace's "start"), on a
# GPU, with tests/packages/softmax_reads_output (y = 0 * y + softmax(x); a running maximum in a
# workspace that must start at -inf):
#   start_values_gpu.sh KGATE PACKAGE_DIR OUT_DIR
#   1. as it is: every correctness case passes and checked timing judges its launches (exit 0, or 2
#      when it is slower than eager);
#   2. without "outputs": the NaN poison reaches every element (0 * NaN), exit 1;
#   3. with the workspace zeroed instead of -inf: exit 1;
#   4. with the float expression "1 / sqrt(N + 1)" for the kernel's 1/sqrt(N): exit 1.
# Exit 77 (SKIPPED) without a GPU.
set -u
kgate=$1 package=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
# shellcheck source=tests/packages/variant.sh
. "$(dirname "${BASH_SOURCE[0]}")/variant.sh"  # fail, variant
check() {  # DIR NAME [args]
  local dir=$1 name=$2
  shift 2
  "$kgate" check "$dir" --backend cuda --cases 24 --seed 7 --no-device-exit-code 77 --out "$out/$name" "$@" \
    > "$out/$name.log" 2>&1
}
check "$package" as-is --speed-cases 1 --time-budget 0.3
rc=$?
[ $rc -eq 77 ] && { echo "SKIPPED: no GPU"; exit 77; }
[ $rc -eq 0 ] || [ $rc -eq 2 ] || { tail -30 "$out/as-is.log"; fail "as it is: exit $rc"; }
python3 - "$out/as-is/report.json" <<'PY' || exit 1
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
c = k["correctness"]
problems = []
if c["failed"] or c["passed"] == 0: problems.append(f"correctness {c['passed']} passed, {c['failed']} failed")
for s in k["speed"]:
    if s["decision"] in ("invalid", "failed") or not s.get("checked_launches"):
        problems.append(f"speed {s['case']['id']}: {s['decision']}, {len(s.get('checked_launches') or [])} checked launches: {s.get('note', '')}")
if not k["speed"]: problems.append("nothing timed")
if problems: print("FAIL: as it is: " + "; ".join(problems)); sys.exit(1)
print(f"ok: as it is: {c['passed']} cases passed; timed {len(k['speed'])} case(s), "
      f"{sum(len(s.get('checked_launches') or []) for s in k['speed'])} checked launches judged")
PY
variant no-outputs 'del m["outputs"]'
check "$out/no-outputs" no-outputs --no-speed
rc=$?
[ $rc -eq 1 ] || { tail -20 "$out/no-outputs.log"; fail "without \"outputs\": exit $rc, expected 1"; }
echo "ok: without \"outputs\": exit 1 ($(grep -m1 -o '[0-9]* of [0-9]* cases failed' "$out/no-outputs.log" || echo 'failed'))"
variant zeroed 'm["workspace"][0].pop("start"); m["workspace"][0]["zero"] = True'
check "$out/zeroed" zeroed --no-speed
rc=$?
[ $rc -eq 1 ] || { tail -20 "$out/zeroed.log"; fail "workspace zeroed instead of -inf: exit $rc, expected 1"; }
echo "ok: workspace zeroed instead of -inf: exit 1"
variant expr 'm["launches"][0]["args"][5]["scalar"] = "1 / sqrt(N + 1)"'
check "$out/expr" expr --no-speed
rc=$?
[ $rc -eq 1 ] || { tail -20 "$out/expr.log"; fail "float expression 1 / sqrt(N + 1): exit $rc, expected 1"; }
echo "ok: the float expression reaches the kernel (1 / sqrt(N + 1) instead: exit 1)"
