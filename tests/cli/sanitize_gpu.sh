#!/usr/bin/env bash
# kgate check --sanitize memcheck on the GPU: correct kernels of each kind (a host launcher, a
# package compiled into the build, a package compiled at run time) run their cases under
# compute-sanitizer with no error, and a kernel that writes to an illegal address is named by it.
# Exit 77 (SKIPPED) without a GPU or without compute-sanitizer.
set -u
kgate=$1
package=$2
out=$3
rm -rf "$out" "$out".*
"$kgate" check --backend cuda --kernel softmax_block --kernel rms_norm_block "$package" \
  --sanitize memcheck --sanitize-cases 2 --cases 4 --no-speed --no-device-exit-code 77 --out "$out" > "$out.log" 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "SKIPPED: no GPU"; exit 77; }
grep -q "compute-sanitizer was not found" "$out.log" && { echo "SKIPPED: no compute-sanitizer"; exit 77; }
[ $rc -eq 0 ] || { cat "$out.log"; echo "FAIL: exit $rc, expected 0"; exit 1; }
python3 - "$out/report.json" <<'PY' || { cat "$out.log"; exit 1; }
import json, sys
kernels = json.load(open(sys.argv[1]))["kernels"]
assert len(kernels) == 3, [k["name"] for k in kernels]
for k in kernels:
    said = [w for w in k["correctness"].get("warnings", []) if w.startswith("sanitize memcheck")]
    assert k["outcome"] == "passed", (k["name"], k["outcome"], said)
    assert said and "2 case(s) under compute-sanitizer, 0 with errors" in said[0], (k["name"], said)
    print(f"sanitize_gpu: {k['name']}: {said[0][:120]}")
PY
"$kgate" check --backend cuda --kernel mutant_softmax_illegal_address --sanitize memcheck --sanitize-cases 1 --cases 4 \
  --no-speed --out "$out.bad" > "$out.bad.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out.bad.log"; echo "FAIL: the illegal-address mutant: exit $rc, expected 1"; exit 1; }
grep -q "sanitize memcheck: 1 case(s) under compute-sanitizer, 1 with errors" "$out.bad.log" || {
  cat "$out.bad.log"; echo "FAIL: compute-sanitizer named no error of the illegal-address mutant"; exit 1; }
echo "sanitize_gpu: the illegal-address mutant: $(grep -o 'sanitize memcheck: 1 case(s) under compute-sanitizer, 1 with errors ([^)]*)' "$out.bad.log" | head -1)"
