#!/usr/bin/env bash
# A failure that looks like a tolerance problem says so (issue 48 item 5), end to end on the cpu
# backend (docs/gates.md, "A failure as accurate as eager says so"):
#   - correct kernels failing an elementwise rule: softmax_cpu under --atol 0 --rtol 1e-9 (allclose)
#     and a GEMM summing in blocks of 64 under eager_relative (the op's conditioning overridden, as
#     an op file without one is judged) fail (exit 1), and the FAILED line on the console, summary.md,
#     junit.xml and the report's minimal case say that the kernel is as accurate as eager against
#     the float64 oracle and name the fix (the op's conditioning, docs/gates.md's section);
#   - wrong kernels (f32 GEMMs on inputs rounded to bf16 or TF32 under allclose and eager_relative,
#     a softmax that leaves its row's tail unwritten under the tight tolerance) fail without it;
#   - kgate sweep counts the failing cases as accurate as eager (sweep.json's
#     failed_as_accurate_as_eager, a line under the FAILED row, sweep.md), and none for a mutant.
# Usage: as_accurate_as_eager_cli.sh KGATE OUT_DIR
set -u
kgate=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
note="as accurate as eager against the float64 oracle"
anchor="docs/gates.md#sums-of-products-the-conditioned-rule"
minimal() {  # report.json field-of-the-minimal-case
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['kernels'][0]['correctness']['minimal'][sys.argv[2]])" "$1" "$2"
}
check() {  # name kernel cases [kgate check options]
  local name=$1 k=$2 cases=$3
  shift 3
  "$kgate" check --backend cpu --kernel "$k" --cases "$cases" --no-speed -q --out "$out/$name" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 1 ] || { tail -30 "$out/$name.log"; fail "$name: kgate check exited $rc, expected 1"; }
}

# Correct kernels: the hint, everywhere the failure is shown.
for spec in "tight softmax_cpu 16 --atol 0 --rtol 1e-9" \
            "gemm control_matmul_cpu_blocked 200 --rule eager_relative"; do
  set -- $spec
  name=$1
  check "$@"
  line=$(grep "^FAILED" "$out/$name.log")
  case "$line" in *"$note"*"$anchor"*) ;; *) cat "$out/$name.log"; fail "$name: the FAILED line lacks the hint";; esac
  case "$line" in *"declare the op's \`conditioning\`"*"\`magnitude\`"*) ;; *) fail "$name: the hint names no fix: $line";; esac
  grep -q "$note" "$out/$name/summary.md" || fail "$name: summary.md lacks the hint"
  grep -q "$note" "$out/$name/junit.xml" || fail "$name: junit.xml lacks the hint"
  rule=$(minimal "$out/$name/report.json" rule)
  case "$rule" in allclose|eager_relative) ;; *) fail "$name: minimal case failed '$rule', expected a tolerance";; esac
  [ "$(minimal "$out/$name/report.json" outcome)" = failed ] || fail "$name: the verdict is not failed"
  echo "correct $name ($rule): ${line:0:160}..."
done

# Wrong kernels: no hint.
for spec in "bf16 mutant_matmul_cpu_bf16_inputs 64 --rule allclose" \
            "tf32 mutant_matmul_cpu_tf32 64 --rule eager_relative" \
            "tail mutant_softmax_cpu_tail_dropped 64 --atol 0 --rtol 1e-9"; do
  set -- $spec
  name=$1
  check "$@"
  line=$(grep "^FAILED" "$out/$name.log")
  [ -n "$line" ] || { cat "$out/$name.log"; fail "$name: no FAILED line"; }
  case "$line" in *"as accurate as eager"*) fail "$name: a wrong kernel got the hint: $line";; esac
  grep -q "as accurate as eager" "$out/$name/summary.md" && fail "$name: summary.md gives a wrong kernel the hint"
  grep -q "as accurate as eager" "$out/$name/junit.xml" && fail "$name: junit.xml gives a wrong kernel the hint"
  echo "wrong $name ($(minimal "$out/$name/report.json" rule)): no hint"
done

# kgate sweep: the failing cases as accurate as eager, counted and said.
sweep() {  # name kernel
  "$kgate" sweep --backend cpu --kernel "$2" --rule eager_relative --cases 64 -q --out "$out/sweep-$1" > "$out/sweep-$1.log" 2>&1
  local rc=$?
  [ $rc -eq 1 ] || { cat "$out/sweep-$1.log"; fail "sweep $1: exited $rc, expected 1"; }
  python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['kernels'][0]['dtypes'][0]['failed_as_accurate_as_eager'])" \
    "$out/sweep-$1/sweep.json"
}
n=$(sweep gemm control_matmul_cpu_reverse) || exit 1
[ "$n" -ge 1 ] || { cat "$out/sweep-gemm.log"; fail "sweep: no failing case of a correct GEMM is as accurate as eager"; }
grep -q "failing case(s) are $note" "$out/sweep-gemm.log" || { cat "$out/sweep-gemm.log"; fail "sweep: no note under the FAILED row"; }
grep -q "failing case(s) are $note" "$out/sweep-gemm/sweep.md" || fail "sweep: sweep.md lacks the note"
echo "sweep control_matmul_cpu_reverse: $n failing case(s) as accurate as eager"
n=$(sweep tf32 mutant_matmul_cpu_tf32) || exit 1
[ "$n" = 0 ] || fail "sweep: $n failing case(s) of a TF32 GEMM counted as accurate as eager"
grep -q "as accurate as eager" "$out/sweep-tf32.log" && fail "sweep: a wrong kernel got the note"
echo "sweep mutant_matmul_cpu_tf32: none as accurate as eager"
echo "PASS"
