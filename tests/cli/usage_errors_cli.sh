#!/usr/bin/env bash
# Nonsense on the command line or in a config file is a usage error (exit 4) before anything runs
# (issue 48: no vacuous pass, no nonsense accepted), for every verb that takes the setting:
#   - an unknown case family, or an empty item of a comma list;
#   - a negative or non-finite --atol / --rtol, a --delta not above 0, an --alpha outside (0, 0.5)
#     (the speed gate's decision needs alpha < 0.5), a negative --time-budget, a --kernel-timeout
#     not above 0, a --fragile-margin outside (0, 1] — with --no-speed too (--alpha 2 --no-speed
#     used to make the worker exit 5, reported as a correctness failure);
#   - the same settings in a kgate-config/1 file, named by file and field.
# Each message names the option, the value and what is accepted; no report is written, no worker
# starts. And what is accepted runs: --family random,ragged is --family random --family ragged.
# Usage: usage_errors_cli.sh KGATE OUT_DIR
set -u
kgate=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
n=0

# refused "MESSAGE" VERB ARGS...: exit 4, MESSAGE (a fixed string) on stderr, nothing run or written.
refused() {
  local message=$1
  shift
  n=$((n + 1))
  local dir="$out/refused$n"
  local start=$SECONDS
  "$kgate" "$@" --out "$dir" > "$out/refused$n.log" 2>&1
  local rc=$?
  [ $rc -eq 4 ] || { cat "$out/refused$n.log"; fail "kgate $*: exit $rc, expected 4"; }
  grep -qF -- "$message" "$out/refused$n.log" ||
    { cat "$out/refused$n.log"; fail "kgate $*: the message does not say: $message"; }
  [ ! -e "$dir" ] || fail "kgate $*: wrote $dir: something ran before the usage error"
  ! grep -q '^\[1/' "$out/refused$n.log" || fail "kgate $*: a kernel started before the usage error"
  [ $((SECONDS - start)) -le 10 ] || fail "kgate $*: took $((SECONDS - start)) s to refuse"
}

families="expected random, ragged, extreme, special, layout, long or huge"
check=(check --backend cpu --kernel softmax_cpu --cases 4)
refused "--family: unknown case family 'bogus'; $families" "${check[@]}" --family bogus
refused "--family: unknown case family 'bogus'; $families" "${check[@]}" --family random,bogus
refused "--family: an empty family name in 'random,,ragged'; $families" "${check[@]}" --family random,,ragged
refused "--family: an empty family name in 'random,'" "${check[@]}" --family random,
refused "--family: an empty family name in ''" "${check[@]}" --family ''
refused "--atol: expected a finite number >= 0, found '-1'" "${check[@]}" --atol -1
refused "--atol: expected a finite number >= 0, found 'inf'" "${check[@]}" --atol inf
refused "--rtol: expected a finite number >= 0, found 'nan'" "${check[@]}" --rtol nan
refused "--delta: expected a finite number > 0, found '-0.5'" "${check[@]}" --delta -0.5
refused "--delta: expected a finite number > 0, found '0'" "${check[@]}" --delta 0
refused "--delta: expected a finite number > 0, found 'inf'" "${check[@]}" --delta inf
refused "--alpha: expected a finite number in (0, 0.5), found '2'" "${check[@]}" --alpha 2 --no-speed
refused "--alpha: expected a finite number in (0, 0.5), found '0.5'" "${check[@]}" --alpha 0.5
refused "--alpha: expected a finite number in (0, 0.5), found '0'" "${check[@]}" --alpha 0
refused "--time-budget: expected a finite number >= 0, found '-1'" "${check[@]}" --time-budget -1
refused "--time-budget: expected a finite number >= 0, found 'nan'" "${check[@]}" --time-budget nan
refused "--kernel-timeout: expected a finite number > 0, found '0'" "${check[@]}" --kernel-timeout 0
refused "--speed-cases: must be above 0, found 0" "${check[@]}" --speed-cases 0
refused "--fragile-margin: expected a finite number in (0, 1], found 'nan'" "${check[@]}" --fragile-margin nan

# kgate sweep takes the families it sweeps (not huge: the sweep leaves that case out).
sweep=(sweep --backend cpu --kernel softmax_cpu --cases 4)
refused "--family: unknown case family 'huge'; expected random, ragged, extreme, special, layout or long" \
  "${sweep[@]}" --family random,huge
refused "--atol: expected a finite number >= 0, found '-1e-5'" "${sweep[@]}" --atol -1e-5
refused "--rtol: expected a finite number >= 0, found 'inf'" "${sweep[@]}" --rtol inf
refused "--fragile-margin: expected a finite number in (0, 1], found '0'" "${sweep[@]}" --fragile-margin 0
refused "--kernel-timeout: expected a finite number > 0, found '-1'" "${sweep[@]}" --kernel-timeout -1

calibrate=(calibrate --backend cpu --kernel softmax_cpu --comparisons 1)
refused "--delta: expected a finite number > 0, found '0'" "${calibrate[@]}" --delta 0
refused "--alpha: expected a finite number in (0, 0.5), found '1'" "${calibrate[@]}" --alpha 1
refused "--time-budget: expected a finite number >= 0, found '-inf'" "${calibrate[@]}" --time-budget -inf
refused "--kernel-timeout: expected a finite number > 0, found '0'" "${calibrate[@]}" --kernel-timeout 0

# kgate validate --cases lists what check would make: its families are check's.
refused "--family: unknown case family 'bogus'; $families" validate tests/packages/softmax_as_written \
  --no-compile --cases 4 --family layout,bogus
# kgate replay judges one case under --atol / --rtol.
refused "--rtol: expected a finite number >= 0, found '-0.001'" replay --kernel softmax_cpu --rtol -0.001 \
  'softmax:f32:B=1,N=1:contiguous:normal:0'

# The same settings from a config file: the file and the field are named.
config() {  # name json
  printf '{"format": "kgate-config/1", %s}\n' "$2" > "$out/$1.json"
}
config alpha '"global": {"alpha": 0.5}'
refused "$out/alpha.json: global.alpha: expected a number in (0, 0.5), found 0.5" "${check[@]}" --no-speed \
  --config "$out/alpha.json"
config delta '"kernels": {"softmax_cpu": {"delta": 0}}'
refused "$out/delta.json: kernels.softmax_cpu.delta: expected a number in (0, 10], found 0" "${check[@]}" \
  --config "$out/delta.json"
config family '"ops": {"softmax": {"families": ["random", "bogus"]}}'
refused "$out/family.json: ops.softmax.families: unknown family \"bogus\"; $families" "${sweep[@]}" \
  --config "$out/family.json"
config atol '"global": {"atol": -1}'
refused "$out/atol.json: global.atol: expected a number in [0, 1e+30], found -1" "${sweep[@]}" \
  --config "$out/atol.json"
config budget '"global": {"time_budget_s": -1}'
refused "$out/budget.json: global.time_budget_s: expected a number in [0, 86400], found -1" "${check[@]}" \
  --config "$out/budget.json"
# An environment setting the runner cannot use: said by the parent, before any worker starts.
KGATE_JUDGE=bogus refused "KGATE_JUDGE='bogus' is not an engine: fused or aten" "${check[@]}"

# Accepted: a comma list is the families repeated; 0 tolerances and budget are settings too.
"$kgate" check --backend cpu --kernel softmax_cpu --cases 6 --no-speed --family random,ragged --family extreme \
  --atol 0 --time-budget 0 -q --out "$out/accepted" > "$out/accepted.log" 2>&1
rc=$?
[ $rc -eq 0 ] || [ $rc -eq 1 ] || { cat "$out/accepted.log"; fail "--family random,ragged --family extreme: exit $rc"; }
python3 - "$out/accepted/report.json" <<'PY' || { cat "$out/accepted.log"; fail "the families are not random, ragged, extreme"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert r["meta"]["config"]["families"] == ["random", "ragged", "extreme"], r["meta"]["config"]["families"]
PY
echo "PASS: $n usage errors refused before anything ran (exit 4, option, value and what is accepted named); --family random,ragged accepted"
