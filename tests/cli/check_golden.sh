#!/usr/bin/env bash
# Restructuring must not change what kgate says. Against tests/cli/golden/check/:
#   check_cpu.json     `kgate check --backend cpu --no-speed --seed 1` (every cpu kernel): report.json
#                      without what varies between runs and machines (times, the command line, the
#                      commit, the worker sandbox, workers' output, paths of the source tree and the
#                      build), numbers to 4 significant digits (LibTorch's own summation order may
#                      move a margin's last digits)
#   validate.txt       `kgate validate` of every package under tests/packages (exit code and output,
#                      without compile times and the kind of sandbox)
# KGATE_UPDATE_GOLDEN=1 writes them anew (after a change that is meant to change them).
# Usage: check_golden.sh KGATE SOURCE_DIR OUT_DIR
set -u
kgate=$1
src=$(cd "$2" && pwd)
out=$3
golden=$src/tests/cli/golden/check
build=$(cd "$(dirname "$kgate")/.." && pwd)
rm -rf "$out" && mkdir -p "$out"
export KGATE_CACHE_DIR=$out/nvrtc-cache  # cold every time (a cached compile says so)
status=0
compare() {  # NAME TEXT_FILE
  if [ "${KGATE_UPDATE_GOLDEN:-0}" = 1 ]; then
    cp "$2" "$golden/$1"
  elif ! diff -u "$golden/$1" "$2" > "$out/$1.diff"; then
    echo "FAIL: $3 differs from $golden/$1:"
    head -80 "$out/$1.diff"
    status=1
  fi
}

"$kgate" check --backend cpu --no-speed --seed 1 --quiet --out "$out/check" > "$out/check.log" 2>&1
echo "kgate check --backend cpu --no-speed --seed 1: exit $?" > "$out/check_cpu.json"
python3 - "$out/check/report.json" "$src" "$build" >> "$out/check_cpu.json" <<'PY' || status=1
import json, sys
sys.path.insert(0, sys.argv[2] + "/ci")
from report_clean import clean  # ci/report_clean.py: what varies, 4 significant digits
report, src, build = json.load(open(sys.argv[1])), sys.argv[2], sys.argv[3]
print(json.dumps(clean(report, replace=((build, "<build>"), (src, "<src>"))), indent=1, sort_keys=True))
PY
compare check_cpu.json "$out/check_cpu.json" "kgate check's report.json"

: > "$out/validate.txt"
for pkg in "$src"/tests/packages/*/; do
  [ -f "$pkg/kgate.json" ] || continue
  text=$("$kgate" validate "$pkg" 2>&1)
  rc=$?
  { echo "== validate tests/packages/$(basename "$pkg"): exit $rc"; printf '%s\n' "$text" |
    sed -E "s#$build#<build>#g; s#$src#<src>#g; s/ in [0-9.]+ s/ in <t> s/g; s/(\(|; )sandbox: [a-z-]+/\1sandbox: <s>/g"; } >> "$out/validate.txt"
done
compare validate.txt "$out/validate.txt" "kgate validate over tests/packages"
[ $status -eq 0 ] && echo "PASS: kgate check's report and kgate validate's output match their goldens"
exit $status
