#!/usr/bin/env bash
# ci/same-verdicts.py, as the GPU measurement uses it (ci/gpu-verdicts.sh same): two reports of one
# kgate check --no-speed --seed 1 are the same (exit 0); a margin moved is named (exit 1); a missing
# report is exit 1. Usage: same_verdicts.sh KGATE SOURCE_DIR OUT_DIR
set -u
kgate=$1 src=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
for run in a b; do
  "$kgate" check --backend cpu --kernel softmax_cpu --kernel mutant_softmax_cpu_tail_dropped --no-speed --seed 1 \
    --cases 8 -q --out "$out/$run" > "$out/$run.log" 2>&1
  [ -f "$out/$run/report.json" ] || { cat "$out/$run.log"; fail "kgate check wrote no report"; }
done
python3 "$src/ci/same-verdicts.py" "$out/a/report.json" "$out/b/report.json" "$out" > "$out/same.txt" ||
  { cat "$out/same.txt"; fail "two runs of one command differ"; }
grep -q "identical outcome/cases/margins/failure ids: 2" "$out/same.txt" || { cat "$out/same.txt"; fail "not both kernels compared"; }
python3 - "$out/b/report.json" "$out/moved.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
r["kernels"][0]["correctness"]["worst_margin"] *= 1.5
json.dump(r, open(sys.argv[2], "w"))
PY
python3 "$src/ci/same-verdicts.py" "$out/moved.json" "$out/a/report.json" "$out" > "$out/moved.txt" &&
  fail "a moved margin was not found"
grep -q "DIFFERS softmax_cpu" "$out/moved.txt" || { cat "$out/moved.txt"; fail "the kernel that differs is not named"; }
python3 "$src/ci/same-verdicts.py" "$out/none.json" "$out/a/report.json" "$out" > /dev/null && fail "a missing report is not exit 1"
echo "PASS: same reports agree, a moved margin is named, a missing report fails"
