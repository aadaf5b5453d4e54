#!/usr/bin/env bash
# kgate sweep end to end on the cpu backend, with known answers:
#   - softmax_cpu at the default tolerance: exit 0, sweep.json / sweep.md written, the frontier
#     never grows with rtol and the pass rate never falls with atol;
#   - with rtol 0 the allclose margin of a case is max_abs / atol, so atol = 1.25 x the largest
#     max_abs of the first run gives a worst margin of 0.8: FRAGILE above --fragile-margin 0.7
#     (exit 0, exit 1 with --fail-on-fragile), ok at 0.9; atol = 0.5 x that max_abs fails (exit 1);
#   - kgate check on the same cases warns FRAGILE above the threshold only;
#   - a kernel that leaves its tail unwritten fails at every tolerance (hard failures, exit 1);
#   - bad usage exits 4.
# Usage: sweep_cli.sh KGATE OUT_DIR
set -u
kgate=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
sweep() {  # expected-exit name args...
  local expect=$1 name=$2
  shift 2
  "$kgate" sweep --backend cpu --kernel softmax_cpu --cases 24 --out "$out/$name" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  [ $rc -eq "$expect" ] || { cat "$out/$name.log"; fail "$name: kgate sweep exited $rc, expected $expect"; }
}
field() {  # json python-expression
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"
}

sweep 0 base
json="$out/base/sweep.json"
[ -f "$json" ] && [ -f "$out/base/sweep.md" ] || fail "sweep.json / sweep.md not written"
grep -q '"schema": "kgate-sweep/1"' "$json" || fail "sweep.json lacks its schema"
[ "$(field "$json" 'd["kernels"][0]["dtypes"][0]["verdict"]')" = ok ] || fail "softmax_cpu is not ok at its default tolerance"
[ "$(field "$json" 'd["kernels"][0]["dtypes"][0]["cases"]')" = 24 ] || fail "not 24 cases"
python3 - "$json" <<'PY' || fail "the frontier or the pass-rate grid is not monotone"
import json, sys
d = json.load(open(sys.argv[1]))["kernels"][0]["dtypes"][0]
front = [f["atol"] for f in d["frontier"]]  # rtols from large to small
assert all(a <= b for a, b in zip(front, front[1:])), front
for row in d["pass_rate"]["rate"]:  # atols from large to small
    assert all(a >= b for a, b in zip(row, row[1:])), row
assert d["frontier"][-1]["atol"] <= d["max_abs"]["max"] + 1e-30, (front, d["max_abs"])
PY
grep -q "^softmax_cpu  *f32  *allclose .* ok$" "$out/base.log" || { cat "$out/base.log"; fail "no table row"; }
grep -q "| rtol \\\\ atol |" "$out/base/sweep.md" || fail "sweep.md has no pass-rate grid"
html="$out/base/sweep.html"
[ -f "$html" ] || fail "sweep.html was not written"
[ "$(grep -o '<svg ' "$html" | wc -l)" -eq 2 ] || fail "sweep.html should hold 2 plots for one kernel x dtype"
grep -q "<h2>softmax_cpu f32" "$html" || fail "sweep.html does not name softmax_cpu f32"
! grep -qiE "<script|https?:" "$html" || fail "sweep.html holds a script or a URL"

max_abs=$(field "$json" 'd["kernels"][0]["dtypes"][0]["max_abs"]["max"]')
python3 -c "import sys; sys.exit(0 if float('$max_abs') > 0 else 1)" ||
  fail "softmax_cpu matched the reference exactly (max_abs $max_abs): no margin to test with"
atol=$(python3 -c "print(repr(1.25 * $max_abs))")
sweep 0 fragile --rtol 0 --atol "$atol" --fragile-margin 0.7
worst=$(field "$out/fragile/sweep.json" 'd["kernels"][0]["dtypes"][0]["worst_margin"]')
python3 -c "import sys; sys.exit(0 if abs($worst - 0.8) < 1e-9 else 1)" || fail "worst margin $worst, expected 0.8"
[ "$(field "$out/fragile/sweep.json" 'd["kernels"][0]["dtypes"][0]["verdict"]')" = FRAGILE ] || fail "margin 0.8 > 0.7 is not FRAGILE"
grep -q "FRAGILE (margin 0.8; threshold 0.7): kgate replay --kernel softmax_cpu" "$out/fragile.log" ||
  { cat "$out/fragile.log"; fail "the FRAGILE row does not name its closest case"; }
sweep 1 fragile_fails --rtol 0 --atol "$atol" --fragile-margin 0.7 --fail-on-fragile
sweep 0 not_fragile --rtol 0 --atol "$atol" --fragile-margin 0.9
[ "$(field "$out/not_fragile/sweep.json" 'd["kernels"][0]["dtypes"][0]["verdict"]')" = ok ] || fail "margin 0.8 <= 0.9 is not ok"
# kgate check on the same 24 cases warns (and still passes) above the threshold only.
"$kgate" check --backend cpu --kernel softmax_cpu --cases 24 --no-speed --no-isolate --rtol 0 --atol "$atol" \
  --fragile-margin 0.7 --out "$out/check_fragile" > "$out/check_fragile.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$out/check_fragile.log"; fail "kgate check of a FRAGILE kernel exited $rc, expected 0"; }
grep -q "warning (softmax_cpu): FRAGILE: passes with a worst margin of 0.8 .*threshold 0.7; closest case: kgate replay" \
  "$out/check_fragile.log" || { cat "$out/check_fragile.log"; fail "kgate check gave no FRAGILE warning"; }
grep -q "FRAGILE" "$out/check_fragile/summary.md" || fail "summary.md lacks the FRAGILE warning"
"$kgate" check --backend cpu --kernel softmax_cpu --cases 24 --no-speed --no-isolate --rtol 0 --atol "$atol" \
  --fragile-margin 0.9 --out "$out/check_ok" > "$out/check_ok.log" 2>&1
! grep -q "FRAGILE" "$out/check_ok.log" || fail "kgate check warned FRAGILE below the threshold"

half=$(python3 -c "print(repr(0.5 * $max_abs))")
sweep 1 too_tight --rtol 0 --atol "$half"
[ "$(field "$out/too_tight/sweep.json" 'd["kernels"][0]["dtypes"][0]["verdict"]')" = FAILED ] || fail "half the error is not FAILED"
[ "$(field "$out/too_tight/sweep.json" 'd["kernels"][0]["dtypes"][0]["hard_failures"]')" = 0 ] || fail "a tolerance failure counted as hard"

"$kgate" sweep --backend cpu --kernel mutant_softmax_cpu_tail_dropped --cases 24 --out "$out/mutant" > "$out/mutant.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out/mutant.log"; fail "the tail-dropping mutant exited $rc, expected 1"; }
hard=$(field "$out/mutant/sweep.json" 'd["kernels"][0]["dtypes"][0]["hard_failures"]')
[ "$hard" -gt 0 ] || fail "the tail-dropping mutant has no hard failures"

# Each kernel is swept in its own worker: one that crashes fails alone, and the kernel swept after
# it keeps its rows (in one process the crash would end the sweep).
"$kgate" sweep --backend cpu --kernel mutant_softmax_cpu_segfault --kernel softmax_cpu --cases 8 --out "$out/iso" \
  > "$out/iso.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out/iso.log"; fail "a sweep with a crashing kernel exited $rc, expected 1"; }
[ "$(field "$out/iso/sweep.json" 'd["kernels"][0]["dtypes"][0]["verdict"]')" = FAILED ] || fail "the crash is not FAILED"
field "$out/iso/sweep.json" 'd["kernels"][0]["dtypes"][0]["worst_case"]["message"]' | grep -q "crashed with signal 11" ||
  fail "the crash's row does not say why"
[ "$(field "$out/iso/sweep.json" 'd["kernels"][1]["dtypes"][0]["verdict"]')" = ok ] || { cat "$out/iso.log"; fail "softmax_cpu lost its rows to the crash before it"; }
[ "$(field "$out/iso/sweep.json" 'd["kernels"][1]["dtypes"][0]["cases"]')" = 8 ] || fail "softmax_cpu did not keep its 8 cases"

"$kgate" sweep --backend cpu --kernel no_such_kernel --out "$out/bad" > /dev/null 2>&1
[ $? -eq 4 ] || fail "an unknown kernel should exit 4"
"$kgate" sweep --backend cpu --fragile-margin 1.5 > /dev/null 2>&1
[ $? -eq 4 ] || fail "--fragile-margin 1.5 should exit 4"
echo "sweep_cli: all passed"
