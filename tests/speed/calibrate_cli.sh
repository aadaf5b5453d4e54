#!/usr/bin/env bash
# End-to-end check of `kgate calibrate` on the cpu backend (no GPU needed):
#   kgate calibrate --backend cpu --kernel softmax_cpu --comparisons 3 -> exit 0 (or 3 when no
#   comparison could decide anything valid), calibrate.json with the schema, 3 comparisons, a
#   false-positive interval, and the summary table on stdout; bad usage -> exit 4.
set -u
kgate=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

# A short time budget keeps the test quick: the figures are not the point here, the plumbing is.
"$kgate" calibrate --backend cpu --kernel softmax_cpu --comparisons 3 --speed-cases 1 \
  --time-budget 0.2 --out "$out/cal" > "$out/cal.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$out/cal.log"; fail "kgate calibrate exited $rc, expected 0"; }
json="$out/cal/calibrate.json"
[ -f "$json" ] || fail "calibrate.json was not written"
grep -q '"schema": "kgate-calibrate/1"' "$json" || fail "calibrate.json lacks the schema"
grep -q '"name": "softmax_cpu"' "$json" || fail "calibrate.json does not name the kernel"
[ "$(grep -c '"decision":' "$json")" -eq 3 ] || fail "calibrate.json does not hold 3 comparisons"
grep -q '"false_positive_interval"' "$json" || fail "calibrate.json lacks the false-positive interval"
grep -q '"delta_min"' "$json" || fail "calibrate.json lacks delta_min"
grep -q '"noise_floor"' "$json" || fail "calibrate.json lacks the noise floor"
grep -q '^softmax_cpu ' "$out/cal.log" || { cat "$out/cal.log"; fail "no table row for softmax_cpu"; }
grep -q 'false positives: [0-9]* of 3 valid A/A comparisons' "$out/cal.log" ||
  { cat "$out/cal.log"; fail "false-positive summary line missing"; }

# Each kernel calibrates in its own worker: a kernel that crashes loses its own rows only.
"$kgate" calibrate --backend cpu --kernel mutant_softmax_cpu_segfault --kernel softmax_cpu --comparisons 2 \
  --speed-cases 1 --time-budget 0.2 --out "$out/crash" > "$out/crash.log" 2>&1
rc=$?
[ $rc -eq 3 ] || { cat "$out/crash.log"; fail "a crashing kernel's calibration exited $rc, expected 3"; }
python3 - "$out/crash/calibrate.json" <<'PY' || { cat "$out/crash.log"; fail "the crash cost the other kernel its rows"; }
import json, sys
k = {x["name"]: x for x in json.load(open(sys.argv[1]))["kernels"]}
bad, good = k["mutant_softmax_cpu_segfault"], k["softmax_cpu"]
assert "crashed with signal 11" in bad["error"], bad
assert "error" not in good and len(good["cases"]) == 1 and len(good["cases"][0]["comparisons"]) == 2, good
print("crash isolated:", bad["error"][:100])
PY
grep -q "^softmax_cpu " "$out/crash.log" || { cat "$out/crash.log"; fail "no table row for softmax_cpu after the crash"; }

"$kgate" calibrate --backend cpu --kernel no_such_kernel --out "$out/bad" > "$out/bad.log" 2>&1
rc=$?
[ $rc -eq 4 ] || fail "an unknown kernel exited $rc, expected 4"
"$kgate" calibrate --backend cpu --comparisons 0 > /dev/null 2>&1
[ $? -eq 4 ] || fail "--comparisons 0 should be a usage error (exit 4)"
echo "calibrate_cli: all passed"
