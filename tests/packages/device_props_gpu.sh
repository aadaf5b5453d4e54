#!/usr/bin/env bash
# Launches that depend on the device (kgate-package/1 device_* symbols, "max_dynamic_shared_mem",
# "carveout", "cluster"), on a GPU, with tests/packages/softmax_device_tiles:
#   device_props_gpu.sh KGATE PACKAGE_DIR OUT_DIR
#   1. as it is: every case passes; the report records the device's properties and, per case, the
#      launch it ran (the row cached in shared memory, in clusters of two, where it fits the block's
#      opt-in limit; the streamed kernel past it); no warning that kgate raised a limit;
#   2. on an H200, its properties equal kgate validate's "h200" preset;
#   3. without "max_dynamic_shared_mem": still correct, and a warning says that kgate raised the
#      kernel's dynamic shared memory limit, which its own host code must do (its timed case, a row
#      of 32768, needs 128 KiB: the correctness cases may stay under 48 KiB);
#   4. with the limit stated below what the launch needs: exit 4 or 1, naming max_dynamic_shared_mem.
# Exit 77 (SKIPPED) without a GPU.
set -u
kgate=$1 package=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
# shellcheck source=tests/packages/variant.sh
. "$(dirname "${BASH_SOURCE[0]}")/variant.sh"  # fail, variant
check() {  # DIR NAME [args]
  local dir=$1 name=$2
  shift 2
  "$kgate" check "$dir" --backend cuda --cases 32 --seed 3 --no-device-exit-code 77 --out "$out/$name" "$@" \
    > "$out/$name.log" 2>&1
}
check "$package" as-is --speed-cases 1 --time-budget 0.3
rc=$?
[ $rc -eq 77 ] && { echo "SKIPPED: no GPU"; exit 77; }
[ $rc -eq 0 ] || [ $rc -eq 2 ] || { tail -30 "$out/as-is.log"; fail "as it is: exit $rc"; }
"$kgate" validate "$package" --no-reference --device-props h200 --cases 4 > "$out/validate-h200.log" 2>&1 ||
  { cat "$out/validate-h200.log"; fail "kgate validate --device-props h200"; }
python3 - "$out/as-is/report.json" <<'PY' || exit 1
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
c, L = k["correctness"], k.get("launches") or {}
problems = []
if c["failed"] or c["passed"] == 0: problems.append(f"correctness {c['passed']} passed, {c['failed']} failed")
dev, cases = L.get("device") or {}, L.get("cases") or {}
if not dev.get("sms") or not dev.get("smem_per_block_optin"): problems.append(f"no device properties: {dev}")
ran = [l for ls in cases.values() for l in ls]
cached = [l for l in ran if l.startswith("launches[0] softmax_cached") and "cluster 2x1x1" in l]
streamed = [l for l in ran if l.startswith("launches[1] softmax_streamed")]
if not cached or not streamed: problems.append(f"expected both launches among the cases: {len(cached)} cached, {len(streamed)} streamed")
if any("raised" in w for w in c.get("warnings", [])): problems.append("a raised-limit warning with the limit stated")
if problems: print("FAIL: as it is: " + "; ".join(problems)); sys.exit(1)
print(f"ok: as it is: {c['passed']} cases passed on {dev.get('name')} (sm_{dev.get('arch')}, {dev.get('sms')} SMs, "
      f"{dev.get('smem_per_block_optin')} B opt-in); {len(cached)} cached launches in clusters, {len(streamed)} streamed")
h200 = {"arch": 90, "sms": 132, "smem_per_block": 49152, "smem_per_block_optin": 232448, "smem_per_sm": 233472,
        "regs_per_block": 65536, "regs_per_sm": 65536, "threads_per_block": 1024, "threads_per_sm": 2048,
        "l2_bytes": 62914560}
if "H200" in (dev.get("name") or ""):
    diff = {key: (dev.get(key), v) for key, v in h200.items() if dev.get(key) != v}
    if diff: print(f"FAIL: the h200 preset differs from this H200: {diff}"); sys.exit(1)
    print("ok: the h200 preset matches this H200")
PY
variant unstated 'del m["launches"][0]["max_dynamic_shared_mem"]'
check "$out/unstated" unstated --speed-cases 3 --time-budget 0.3
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 2 ] || { tail -20 "$out/unstated.log"; fail "without max_dynamic_shared_mem: exit $rc"; }
python3 - "$out/unstated/report.json" <<'PY' || exit 1
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
w = [x for x in k["correctness"].get("warnings", []) if "kgate raised" in x]
if not w: print("FAIL: without max_dynamic_shared_mem: no warning that kgate raised the limit"); sys.exit(1)
print("ok: without max_dynamic_shared_mem: " + w[0][:160])
PY
variant too-low 'm["launches"][0]["max_dynamic_shared_mem"] = "N * 2"'
check "$out/too-low" too-low --no-speed
rc=$?
{ [ $rc -eq 1 ] || [ $rc -eq 4 ]; } && grep -q "max_dynamic_shared_mem" "$out/too-low/report.json" "$out/too-low.log" ||
  { tail -20 "$out/too-low.log"; fail "limit below the launch's shared memory: exit $rc, or max_dynamic_shared_mem not named"; }
echo "ok: a stated limit below the launch's need: exit $rc, naming max_dynamic_shared_mem"
echo PASS
