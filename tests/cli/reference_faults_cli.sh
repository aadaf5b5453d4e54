#!/usr/bin/env bash
# A reference that fails is the reference's error, never the kernel's, end to end on the cpu
# backend (CI has no GPU): control_softmax_ref_faults_cpu, a correct softmax, under
# tests/ops/reference_faults/softmax_ref_faults.op.json, whose TorchScript reference raises on
# rows of N=7 and indexes 2^40 past the row on rows of N=13 (an exception on the CPU; on CUDA a
# device-side assert, which control_softmax_ref_faults meets on a GPU). Under kgate's defaults
# (64 cases, 4 of them such rows):
#   - kgate check exits 0 (an invalid verdict does not fail the gate) and 3 with
#     --inconclusive-fails;
#   - report.json says outcome "invalid", failed 0, reference_errors > 0, every other case passed,
#     and a warning names the op file;
#   - the reference refuses padded rows: those cases are judged on contiguous copies, and a warning
#     lists them.
# Usage: reference_faults_cli.sh KGATE OUT_DIR
set -u
kgate=$1
out=$2
kernel=control_softmax_ref_faults_cpu
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
field() {  # json python-expression
  python3 -c "import json,sys; k=json.load(open(sys.argv[1]))['kernels'][0]; c=k['correctness']; print($2)" "$1"
}
check() {  # expected-exit name [args...]
  local expect=$1 name=$2
  shift 2
  "$kgate" check --backend cpu --kernel "$kernel" --no-speed -q --out "$out/$name" "$@" \
    > "$out/$name.log" 2>&1
  local rc=$?
  [ $rc -eq "$expect" ] || { tail -30 "$out/$name.log"; fail "$name: exit $rc, expected $expect"; }
}

check 0 default
json="$out/default/report.json"
outcome=$(field "$json" "k['outcome']")
failed=$(field "$json" "c['failed']")
errors=$(field "$json" "c['reference_errors']")
passed=$(field "$json" "c['passed']")
cases=$(field "$json" "c['cases']")
[ "$outcome" = invalid ] || fail "outcome $outcome, expected invalid"
[ "$failed" = 0 ] || fail "$failed failed cases: the reference's errors were blamed on the kernel"
[ "$errors" -gt 0 ] || fail "no reference error: the default cases no longer hit N=7 or N=13"
[ $((passed + errors)) -eq "$cases" ] || fail "passed $passed + reference errors $errors != cases $cases"
named=$(field "$json" "any('softmax_ref_faults.op.json' in w for w in c['warnings'])")
[ "$named" = True ] || fail "no warning names the op file: $(field "$json" "c['warnings']")"
copies=$(field "$json" "[w for w in c['warnings'] if 'judged on contiguous copies' in w]")
[ "$copies" != "[]" ] || fail "no warning names the views the reference refused: $(field "$json" "c['warnings']")"
echo "default: outcome invalid, $passed of $cases passed, $errors reference errors, 0 failed; $copies"

check 3 inconclusive_fails --inconclusive-fails
outcome=$(field "$out/inconclusive_fails/report.json" "k['outcome']")
[ "$outcome" = invalid ] || fail "--inconclusive-fails: outcome $outcome, expected invalid"
echo "--inconclusive-fails: exit 3"
echo "PASS"
