#!/usr/bin/env bash
# Liger-Kernel's three Triton kernels made packages without a GPU (make_liger.py --mode cpu: the
# launchers' calls specialized by Triton's own rule, compiled for sm_90) and validated by kgate:
# every launch's arguments against its CUBIN, every case inside the guard against its assumptions,
# the op's reference on the CPU. SKIPPED (exit 77) where the pinned files were not fetched
# (tests/external/fetch.sh needs the mirrors) or Triton is missing.
#   liger_cpu.sh KGATE OUT_DIR
kgate=$1 out=$2
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
root=$(cd "$here/../../.." && pwd)
[ -f "$root/.thirdparty/external/liger/src/liger_kernel/ops/rms_norm.py" ] ||
  { echo "SKIPPED: the pinned Liger-Kernel files are not fetched (tests/external/fetch.sh)"; exit 77; }
python3 -c "import triton" 2> /dev/null || { echo "SKIPPED: no Triton in python3"; exit 77; }
rm -rf "$out" && mkdir -p "$out"
python3 "$here/make_liger.py" "$out" --mode cpu --kgate "$kgate" > "$out/make.log" 2>&1
rc=$?
grep -E "^[a-z_0-9]+: _|^== |^launches|kgate-triton-pack:" "$out/make.log"
[ $rc -eq 0 ] || { tail -30 "$out/make.log"; echo "FAIL: make_liger.py exit $rc"; exit 1; }
python3 - "$out/pkg" <<'PY' || { echo "FAIL: the packages' specializations"; exit 1; }
import json, sys
want = {"rms_norm": 4, "swiglu": 2, "rope": 3}
for name, n in want.items():
    m = json.load(open(f"{sys.argv[1]}/{name}/kgate.json"))
    got = len(m["launches"])
    assert got == n, f"{name}: {got} launches, expected {n}"
    assert len({l["cubin"]["sm_90"] for l in m["launches"]}) == n, f"{name}: a CUBIN shared"
rope = json.load(open(f"{sys.argv[1]}/rope/kgate.json"))["launches"]
assert "S == 1" in rope[1]["assumes"] and len(rope[1]["args"]) == 10, rope[1]  # decoding: sl is a constant
rms = json.load(open(f"{sys.argv[1]}/rms_norm/kgate.json"))["launches"]
assert "stride_w_0 == 1" in rms[0]["assumes"] and "N % 16 == 0" in rms[0]["assumes"], rms[0]["assumes"]
assert "N % 16 == 0" not in rms[1]["assumes"], rms[1]["assumes"]
print("packages: rms_norm 4 launches, swiglu 2, rope 3 (decoding's sl a constant: S == 1)")
PY
echo "liger_cpu: PASS"
