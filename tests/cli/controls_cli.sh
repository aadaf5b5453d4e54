#!/usr/bin/env bash
# The conditioned rule end to end on the cpu backend (CI has no GPU), under kgate's defaults:
#   - every cpu control of tests/controls (GEMMs summing K in blocks of 64, pairwise and in reverse
#     with fma; a pairwise and a left-to-right sum of squares; attention with an online softmax over key tiles of 16)
#     passes `kgate check` (exit 0) on CASES cases, and the report says `conditioned` judged it;
#     the attention control's guard sends the layout family's views to the reference (fallback);
#   - the cpu precision mutants (f32 GEMMs on inputs rounded to bf16 and to TF32) fail (exit 1)
#     under `conditioned`, with a minimal case.
# Prints each kernel's worst margin (controls) and its minimal case (mutants).
# Usage: controls_cli.sh KGATE OUT_DIR [CASES]
set -u
kgate=$1
out=$2
cases=${3:-200}
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
field() {  # json python-expression
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); k=d['kernels'][0]; print($2)" "$1"
}
check() {  # expected-exit kernel
  local expect=$1 k=$2
  "$kgate" check --backend cpu --kernel "$k" --cases "$cases" --no-speed -q --out "$out/$k" > "$out/$k.log" 2>&1
  local rc=$?
  [ $rc -eq "$expect" ] || { tail -30 "$out/$k.log"; fail "$k: kgate check exited $rc, expected $expect"; }
}
for k in control_matmul_cpu_blocked control_matmul_cpu_pairwise control_matmul_cpu_reverse control_rms_norm_cpu_pairwise control_rms_norm_cpu_sequential \
         control_attention_cpu_online; do
  check 0 "$k"
  json="$out/$k/report.json"
  [ "$(field "$json" "k['correctness']['failed']")" = 0 ] || fail "$k: failed cases in the report"
  [ "$(field "$json" "k['outcome']")" = passed ] || fail "$k: outcome $(field "$json" "k['outcome']"), expected passed"
  if [ "$k" = control_attention_cpu_online ]; then
    [ "$(field "$json" "k['correctness']['fallback']")" -gt 0 ] || fail "$k: no case fell outside its guard"
  fi
  echo "control $k: passed $(field "$json" "k['correctness']['cases']") cases, worst margin $(field "$json" "k['correctness']['worst_margin']")"
done
for k in mutant_matmul_cpu_bf16_inputs mutant_matmul_cpu_tf32; do
  check 1 "$k"
  json="$out/$k/report.json"
  rule=$(field "$json" "k['correctness']['minimal']['rule']")
  [ "$rule" = conditioned ] || fail "$k: caught by '$rule', expected the conditioned rule"
  echo "mutant $k: failed $(field "$json" "k['correctness']['failed']") of $(field "$json" "k['correctness']['cases']"), minimal $(field "$json" "k['correctness']['minimal']['case']['id']") at $(field "$json" "k['correctness']['minimal']['margin']") x the allowance"
done
echo "PASS"
