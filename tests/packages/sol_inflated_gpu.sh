#!/usr/bin/env bash
# Speed of light on a GPU: a correct package whose op declares a floor 64 times too high must get an
# INVALID comparison ("faster than the hardware allows"), exit 3 with --inconclusive-fails, and every
# timed case must report its fraction of the copy bandwidth. Exit 77 (SKIPPED) without a GPU.
#   sol_inflated_gpu.sh KGATE PACKAGE_DIR OUT_DIR
set -u
kgate=$1
package=$2
out=$3
rm -rf "$out"
"$kgate" check "$package" --backend cuda --cases 8 --inconclusive-fails --no-device-exit-code 77 --out "$out" \
  > "$out.log" 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "SKIPPED: no GPU"; exit 77; }
[ $rc -eq 3 ] || { cat "$out.log"; echo "FAIL: exit $rc, expected 3 (INVALID)"; exit 1; }
python3 - "$out/report.json" <<'PY' || { cat "$out.log"; exit 1; }
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
assert k["correctness"]["failed"] == 0, k["correctness"]
speed = k["speed"]
assert speed, "no timed case"
for s in speed:
    assert s["decision"] == "invalid", s["decision"]
    assert "faster than the hardware allows" in s["note"], s["note"]
    light = s["speed_of_light"]
    assert light["enforced"] and light["ceiling_bytes_per_s"] > 1e11, light
    assert light["candidate_fraction"] > 1.5, light
    print("sol_inflated_gpu:", s["case"]["id"] if isinstance(s["case"], dict) else s["case"], "fraction", round(light["candidate_fraction"], 2),
          "of", round(light["ceiling_bytes_per_s"] / 1e9), "GB/s:", s["note"][:160])
PY
