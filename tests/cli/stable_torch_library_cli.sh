#!/usr/bin/env bash
# A library registered with STABLE_TORCH_LIBRARY, on the cpu backend, as a TORCH_LIBRARY one:
#   1. checked (its schema's Tensor? weight bound by name): PASS;
#   2. paired with a copy of itself (--baseline-torch-library, the copy loaded under a renamed
#      namespace): UNCHANGED, not timed;
#   3. timing forced: both sides run, the base is the op of the renamed namespace.
# Usage: stable_torch_library_cli.sh KGATE LIBRARY OUT_DIR
set -u
kgate=$1
library=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
field() {  # json python-expression (d: the report, k: its first kernel)
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); k=(d['kernels'] or [{}])[0]; print($2)" "$1"
}
run() {  # expected-exit name [args...]
  local expect=$1 name=$2
  shift 2
  "$kgate" check --backend cpu --torch-library "$library" --torch-op cpu/kgate_stable::rms_norm=rms_norm \
    --cases 4 --family random --speed-cases 1 --time-budget 0.2 -q --out "$out/$name" "$@" \
    > "$out/$name.log" 2>&1
  local rc=$?
  [ "$expect" = any ] || [ $rc -eq "$expect" ] || { tail -30 "$out/$name.log"; fail "$name: exit $rc, expected $expect"; }
}

run 0 alone --no-speed
json="$out/alone/report.json"
[ "$(field "$json" "k['outcome']")" = passed ] || fail "alone: $(field "$json" "k['outcome']")"
[ "$(field "$json" "k['correctness']['failed'] == 0 and k['correctness']['cases'] > 0")" = True ] ||
  fail "alone: $(field "$json" "k['correctness']")"
echo "alone: PASS, $(field "$json" "k['correctness']['cases']") cases"

cp "$library" "$out/same.so"
run 0 same --baseline-torch-library "$out/same.so"
json="$out/same/report.json"
[ "$(field "$json" "k['base']['status']")" = unchanged ] || fail "same library: base $(field "$json" "k['base']")"
echo "same library: UNCHANGED"

echo '{"format": "kgate-config/1", "global": {"gate_against_eager": false}}' > "$out/config.json"
run any forced --baseline-torch-library "$out/same.so" --time-unchanged --config "$out/config.json"
json="$out/forced/report.json"
[ "$(field "$json" "k['base']['status']")" = paired ] || fail "--time-unchanged: base $(field "$json" "k['base']")"
case "$(field "$json" "k['base']['source']")" in
  "base torch op kgate_stabl"?"::rms_norm("*) ;;
  *) fail "the base's source: $(field "$json" "k['base']['source']")" ;;
esac
echo "--time-unchanged: paired with $(field "$json" "k['base']['source']")"
echo "PASS"
