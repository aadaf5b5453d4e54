#!/usr/bin/env bash
# Every GPU measurement in one command, for a GPU runner or a release check:
#   ci/gpu-report.sh OUT_DIR [stage...]
# Stages (default: build test gate mutants packages): build, test, gate, mutants, packages,
# sweep, sandbox, precompiled, allpkgs, lowprec, isolation, throughput, opfiles, newops, moreops, subdir, consumer, pr, torchops, calibrate,
# huge, sanitize, power, ncu. Logs and reports go under OUT_DIR; a short summary is printed last.
set -uo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)  # (through symlinks)
out=${1:?usage: ci/gpu-report.sh OUT_DIR [stage...]}
shift
stages=("$@")
[ ${#stages[@]} -gt 0 ] || stages=(build test gate mutants packages)
mkdir -p "$out"
build=${KGATE_BUILD_DIR:-$here/build}
kgate=$build/bin/kgate
summary=()
note() { summary+=("$1"); echo "==> $1"; }
has() { local s; for s in "${stages[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
# One line per kernel of a report: outcome, failures, the minimal case and its message.
mutant_lines() {
  python3 - "$1" <<'PY'
import json, sys
for k in json.load(open(sys.argv[1]))["kernels"]:
    c = k["correctness"]; m = c.get("minimal") or {}
    print(f"  {k['name']}: {k['outcome']}, failed {c['failed']}/{c['cases']}, minimal {m.get('case', {}).get('id', '-')}: {m.get('message', '')[:160]}")
PY
}

if has build; then
  "$here/ci/setup.sh" > "$out/setup.log" 2>&1 && "$here/ci/build.sh" > "$out/build.log" 2>&1
  rc=$?; note "build: exit $rc"; [ $rc -eq 0 ] || { tail -30 "$out/build.log"; exit 1; }
fi
if has test; then
  bash "$here/ci/test.sh" -LE mutants > "$out/test.log" 2>&1; rc=$?
  note "test: exit $rc; $(grep -E 'tests passed' "$out/test.log" | tail -1)"
  grep -E '\(Failed\)|\(Timeout\)' "$out/test.log" | head -20
fi
if has gate; then
  # Each kernel's Google Benchmark output (5 interleaved repetitions) goes into the gate's report.
  KGATE_BUILD_DIR=$build bash "$here/ci/google-benchmark.sh" "$out/gate-google-benchmark" > "$out/gate-google-benchmark.log" 2>&1
  gb_args=()
  for f in "$out/gate-google-benchmark"/*.json; do [ -f "$f" ] && gb_args+=(--benchmark-json "$f"); done
  "$kgate" check --out "$out/gate" "${gb_args[@]}" > "$out/gate.log" 2>&1; rc=$?
  note "gate (kgate check, all kernels; $(( ${#gb_args[@]} / 2 )) Google Benchmark outputs kept): exit $rc"
  sed -n '/^kernel /,$p' "$out/gate.log" | head -60
fi
if has mutants; then
  "$kgate" check --backend cuda --kernel mutant_softmax_tail_dropped --out "$out/mutant" > "$out/mutant.log" 2>&1
  note "broken softmax (tail dropped): exit $? (expected 1)"
  grep -A2 '^FAILED' "$out/mutant.log"
  KGATE_MUTANT_TABLE="$out/mutant_table.json" "$build/tests/gpu/kgate.test.gpu.mutants" > "$out/mutant_suite.log" 2>&1
  note "mutant suite: exit $?; $(grep -E '^\[  (PASSED|FAILED)' "$out/mutant_suite.log" | tr '\n' ' ')"
  grep -E '^(mutant|twin) |caught|MISSED' "$out/mutant_suite.log" | head -40
  # The kernel tests that must fail on their mutant (kernel.NAME.TEST.fails, label mutants).
  ctest --test-dir "$build" -L mutants --output-on-failure > "$out/mutant_fails.log" 2>&1
  note "mutant kernel tests that must fail: exit $?; $(grep -E 'tests passed' "$out/mutant_fails.log" | tail -1)"
fi
if has packages; then
  KGATE_CACHE_DIR="$out/nvrtc-cache" bash "$here/tests/packages/run_gpu_demo.sh" "$kgate" "$out/packages" > "$out/packages.log" 2>&1
  note "package demo: exit $?"
  sed -n '/^== 1\./,/^== 2\./p' "$out/packages.log" | sed '$d'
  sed -n '/^== 3\./,$p' "$out/packages.log"
fi
if has sweep; then
  # Tolerance sensitivity of every CUDA kernel, then of every in-tree package (their guard cases).
  "$kgate" sweep --backend cuda --out "$out/sweep" > "$out/sweep.log" 2>&1
  note "sweep (kgate sweep, all CUDA kernels): exit $?"
  sed -n '/^kernel /,$p' "$out/sweep.log" | head -60
  pkgs=()
  for d in "$build"/kernels/*/package*/; do [ -f "$d/kgate.json" ] && pkgs+=("$d"); done
  "$kgate" sweep "${pkgs[@]}" --out "$out/sweep-packages" > "$out/sweep-packages.log" 2>&1
  note "sweep (kgate sweep, ${#pkgs[@]} in-tree packages): exit $?"
  sed -n '/^kernel /,$p' "$out/sweep-packages.log" | head -60
fi
if has huge; then
  # The huge family alone (one case past 2^31 elements per kernel, no timing): every CUDA kernel and
  # every in-tree package, its cost, then the int32-offset mutant it must reject.
  pkgs=()
  for d in "$build"/kernels/*/package*/; do [ -f "$d/kgate.json" ] && pkgs+=("$d"); done
  "$kgate" check --backend cuda --family huge --no-speed --out "$out/huge" > "$out/huge.log" 2>&1
  note "huge family (every CUDA kernel, one case each, no timing): exit $?"
  "$kgate" check --backend cuda --family huge --no-speed "${pkgs[@]}" --out "$out/huge-packages" > "$out/huge-packages.log" 2>&1
  note "huge family (${#pkgs[@]} in-tree packages): exit $?"
  for r in "$out/huge/report.json" "$out/huge-packages/report.json"; do
    python3 - "$r" <<'PY'
import json, sys
try:
    ks = json.load(open(sys.argv[1]))["kernels"]
except Exception as e:
    print(f"  no report: {e}"); sys.exit(0)
for k in ks:
    c = k["correctness"]
    f = (c.get("failures") or [{}])[0]
    w = [x for x in c.get("warnings", []) if "huge" in x]
    print(f"  {k['name']:34s} {k['outcome']:8s} cases {c['cases']} passed {c['passed']} failed {c['failed']} "
          f"skipped {c.get('skipped', 0)} {c['seconds']:.2f} s {f.get('case', {}).get('id', '')} {(f.get('message') or '')[:100]} {' '.join(w)[:160]}")
PY
  done
  "$kgate" check --backend cuda --kernel mutant_softmax_int32_offset --family huge --no-speed --out "$out/huge-mutant" > "$out/huge-mutant.log" 2>&1
  note "int32-offset mutant, huge family: exit $? (expected 1)"
  mutant_lines "$out/huge-mutant/report.json"
fi
if has sanitize; then
  # --sanitize: compute-sanitizer on two good kernels (memcheck, racecheck) and on a kernel that
  # reads out of bounds (memcheck must name it).
  ls -l /usr/local/cuda/bin/compute-sanitizer 2>&1 | head -1
  for tool in memcheck racecheck; do
    "$kgate" check --backend cuda --kernel softmax_block --kernel rms_norm_block --no-speed --cases 16 \
      --sanitize $tool --sanitize-cases 2 --out "$out/sanitize-$tool" > "$out/sanitize-$tool.log" 2>&1
    note "sanitize $tool (softmax_block, rms_norm_block; 2 cases each): exit $?"
    grep -h "sanitize $tool" "$out/sanitize-$tool.log" | head -4
    python3 -c "import json,sys; [print('  ', k['name'], k['outcome'], [w[:300] for w in k['correctness']['warnings'] if 'sanitize' in w]) for k in json.load(open(sys.argv[1]))['kernels']]" "$out/sanitize-$tool/report.json"
  done
  "$kgate" check --backend cuda --kernel mutant_softmax_illegal_address --no-speed --cases 8 --no-shrink \
    --sanitize memcheck --sanitize-cases 1 --out "$out/sanitize-bad" > "$out/sanitize-bad.log" 2>&1
  note "sanitize memcheck on an out-of-bounds kernel: exit $? (expected 1)"
  python3 -c "import json,sys; [print('  ', k['name'], k['outcome'], [f['rule']+': '+f['message'][:300] for f in k['correctness']['failures'] if f['rule']=='memcheck'], [w[:200] for w in k['correctness']['warnings'] if 'sanitize' in w]) for k in json.load(open(sys.argv[1]))['kernels']]" "$out/sanitize-bad/report.json"
fi
if has isolation; then
  bash "$here/tests/cli/isolation_gpu.sh" "$kgate" "$out/isolation" > "$out/isolation.log" 2>&1
  note "isolation (illegal address in a worker): exit $?"
  tail -3 "$out/isolation.log"
fi
if has consumer; then
  # A project of its own against the installed kgate (examples/consumer): install, build, ctest.
  bash "$here/ci/consumer.sh" > "$out/consumer.log" 2>&1
  note "consumer project (ci/consumer.sh): exit $?; $(grep -E 'install tree|consumer configure|tests passed' "$out/consumer.log" | tr '\n' ' ')"
  grep -E '\(Failed\)|\(Timeout\)|Skipped' "$out/consumer.log" | head -20
  cp -r "$build/consumer/Testing" "$out/consumer-Testing" 2>/dev/null
fi
if has pr; then
  # kgate-pr as a consumer's GPU job runs it (ci/pr-gpu.sh): examples/consumer's heads (a README
  # change, l2_normalize_rows slowed by spin cycles) against their base, and a push of three commits.
  KGATE_BUILD_DIR=$build bash "$here/ci/pr-gpu.sh" "$out/pr" > "$out/pr.log" 2>&1
  note "kgate-pr on the GPU (ci/pr-gpu.sh): exit $?"
  grep -vE '^\[|^==>' "$out/pr.log" | tail -40
fi
if has torchops; then
  # PyTorch custom ops as candidates: tests/torch_op's library (a CUDA fused_add_rms_norm that writes
  # the residual in place and returns y; an out= softmax; a wrong out= softmax), gated with speed.
  lib=$build/tests/torch_op/libkgate_test_ops.so
  "$kgate" check --torch-library "$lib" --torch-op kgate_test::fused_add_rms_norm=fused_add_rms_norm \
    --torch-op kgate_test::softmax_out=softmax --out "$out/torchops" > "$out/torchops.log" 2>&1
  note "torch ops (fused_add_rms_norm in place + returned, softmax out=), with speed: exit $?"
  sed -n '/^kernel /,$p' "$out/torchops.log" | head -20
  "$kgate" check --torch-library "$lib" --torch-op kgate_test::softmax_tail_out=softmax --no-speed \
    --out "$out/torchops-wrong" > "$out/torchops-wrong.log" 2>&1
  note "torch op softmax_tail_out (wrong): exit $? (expected 1)"
  sed -n '/^kernel /,$p' "$out/torchops-wrong.log" | head -8
  "$build/tests/torch_op/kgate.test.torch_op" > "$out/torchops-gtest.log" 2>&1
  note "torch op tests (gtest, cpu): exit $?"
fi
if has newops; then
  # Ops from op files with their kernels, packages and mutants: rotary embedding (half-split and
  # interleaved, in place) and cross-entropy with ignore_index.
  "$kgate" check --kernel rotary_block --kernel rotary_interleaved_block --kernel cross_entropy_rows \
    --out "$out/newops" > "$out/newops.log" 2>&1
  note "rotary_block, rotary_interleaved_block, cross_entropy_rows (gate with speed): exit $?"
  sed -n '/^kernel /,$p' "$out/newops.log" | head -24
  "$kgate" check "$build/kernels/rotary_embedding/package_half_split" "$build/kernels/rotary_embedding/package_interleaved" \
    "$build/kernels/cross_entropy/package" --out "$out/newops-pkg" > "$out/newops-pkg.log" 2>&1
  note "their packages (kgate check PKG...): exit $?"
  sed -n '/^kernel /,/^$/p' "$out/newops-pkg.log" | head -8
  "$kgate" check --backend cuda --no-speed --kernel mutant_rotary_positions_int32 --kernel mutant_rotary_last_position \
    --kernel mutant_rotary_interleaved_as_half_split --kernel mutant_cross_entropy_ignored_counted \
    --kernel mutant_cross_entropy_no_max_sub --out "$out/newops-mutants" > "$out/newops-mutants.log" 2>&1
  note "their mutants: exit $? (expected 1)"
  mutant_lines "$out/newops-mutants/report.json"
  KGATE_MUTANT_TABLE="$out/newops-mutant-table.json" "$build/tests/gpu/kgate.test.gpu.mutants" \
    --gtest_filter='*rotary*:*cross_entropy*' > "$out/newops-mutant-suite.log" 2>&1
  note "mutant suite (rotary, cross_entropy): exit $?; $(grep -E '^\[  (PASSED|FAILED)' "$out/newops-mutant-suite.log" | tr '\n' ' ')"
fi
if has moreops; then
  # int8 quantization (i8 + f32 outputs), top-k (values + int64 indices, the index rule) and a GEMM
  # (tolerance growing with sqrt(K); its kernel is a correctness twin, not timed), with mutants.
  "$kgate" check --kernel quantize_int8_rows --kernel topk_rows --kernel matmul_tiled \
    --out "$out/moreops" > "$out/moreops.log" 2>&1
  note "quantize_int8_rows, topk_rows (gate with speed), matmul_tiled (twin): exit $?"
  sed -n '/^kernel /,$p' "$out/moreops.log" | head -24
  "$kgate" check --backend cuda --no-speed --kernel mutant_quantize_int8_truncates \
    --kernel mutant_quantize_int8_signed_max --kernel mutant_topk_tie_index_repeated --kernel mutant_topk_ties_skipped \
    --kernel mutant_topk_nan_low --kernel mutant_matmul_k_tail_dropped --kernel mutant_matmul_storage_accum \
    --out "$out/moreops-mutants" > "$out/moreops-mutants.log" 2>&1
  note "their mutants: exit $? (expected 1)"
  mutant_lines "$out/moreops-mutants/report.json"
  "$kgate" check "$build/kernels/quantize_int8/package" "$build/kernels/topk/package" --out "$out/moreops-pkg" \
    > "$out/moreops-pkg.log" 2>&1
  note "their packages (quantize, topk: gate with speed): exit $?"
  sed -n '/^kernel /,/^$/p' "$out/moreops-pkg.log" | head -6
  # The GEMM package is timed against eager (cuBLAS): its speed is measured, and a slower kernel
  # is REGRESSED (exit 2).
  "$kgate" check "$build/kernels/gemm/package" --out "$out/moreops-pkg-gemm" > "$out/moreops-pkg-gemm.log" 2>&1
  note "matmul_tiled_pkg with speed vs eager (cuBLAS): exit $?"
  sed -n '/^kernel /,/^$/p' "$out/moreops-pkg-gemm.log" | head -4
  grep -E "^  (speed|  f|  b)|x[0-9.]+ " "$out/moreops-pkg-gemm.log" | head -8
  KGATE_MUTANT_TABLE="$out/moreops-mutant-table.json" "$build/tests/gpu/kgate.test.gpu.mutants" \
    --gtest_filter='*quantize*:*topk*:*matmul*' > "$out/moreops-mutant-suite.log" 2>&1
  note "mutant suite (quantize, topk, matmul): exit $?; $(grep -E '^\[  (PASSED|FAILED)' "$out/moreops-mutant-suite.log" | tr '\n' ' ')"
fi
if has sandbox; then
  # Workers confine themselves with Landlock before they start CUDA: kernels, packages and references
  # must run as usual inside, and --require-sandbox must find the sandbox.
  KGATE_REQUIRE_SANDBOX=1 "$kgate" check --kernel softmax_block --kernel rms_norm_block --kernel topk_rows \
    "$build/kernels/quantize_int8/package" "$build/kernels/softmax/package" --out "$out/sandbox" > "$out/sandbox.log" 2>&1
  note "sandboxed workers (--require-sandbox; in-tree kernels, TorchScript references, a package): exit $?; $(grep -o '"sandbox": "[^"]*"' "$out/sandbox/report.json" | head -1)"
  sed -n '/^kernel /,/^$/p' "$out/sandbox.log" | head -8
  # A package typed and sized by macros: six translation units (three dtypes by two block sizes).
  "$kgate" check "$here/tests/packages/softmax_macro" --no-speed --out "$out/macro" > "$out/macro.log" 2>&1
  note "softmax_macro_pkg (per-dtype and per-launch -D, 6 CUBINs): exit $?; $(grep -E '^softmax_macro_pkg' "$out/macro.log" | head -1)"
  (cd "$build" && ctest -R 'cli.worker_sandbox' --output-on-failure > "$out/sandbox-ctest.log" 2>&1)
  note "cli.worker_sandbox: exit $?"
  "$build/tests/package/kgate.test.package" --gtest_filter='RunSandbox.*' > "$out/sandbox-gtest.log" 2>&1
  note "RunSandbox gtests: exit $?; $(grep -E '^\[  (PASSED|FAILED|SKIPPED)' "$out/sandbox-gtest.log" | tr '\n' ' ')"
fi
if has require; then
  # guard.require: the honest guard passes (row-padded views inside, the rest through the reference);
  # the same kernel with the row-stride predicate left out faults on padded rows and fails.
  "$kgate" check "$here/tests/packages/gelu_rows_vec" --no-speed --out "$out/require" > "$out/require.log" 2>&1
  note "gelu_rows_vec_pkg (guard.require stated): exit $? (expected 0); $(grep -E '^gelu_rows_vec_pkg' "$out/require.log" | head -1)"
  "$kgate" check "$here/tests/packages/gelu_rows_vec_unstated" --no-speed --out "$out/require-unstated" \
    > "$out/require-unstated.log" 2>&1
  note "gelu_rows_vec_unstated_pkg (row-stride predicate left out): exit $? (expected 1); $(grep -E '^gelu_rows_vec_unstated_pkg' "$out/require-unstated.log" | head -1)"
  grep -m3 -E 'minimal|misaligned' "$out/require-unstated.log"
fi
if has precompiled; then
  # Packages of kernels nvcc built ahead of time: a CUBIN for sm_90, PTX the driver compiles, a fatbin.
  "$kgate" check "$build/tests/precompiled/softmax_pre_cubin" "$build/tests/precompiled/softmax_pre_ptx" \
    "$build/tests/precompiled/softmax_pre_fatbin" \
    --out "$out/precompiled" > "$out/precompiled.log" 2>&1
  note "precompiled packages (CUBIN, PTX, fatbin; with speed): exit $?"
  sed -n '/^kernel /,/^$/p' "$out/precompiled.log" | head -6
fi
if has allpkgs; then
  # Every in-tree package and the test packages, correctness only. Each launch's parameters as the
  # driver reports them (cuFuncGetParamInfo) are compared with those kgate read from the CUBIN for
  # validate: a disagreement is an internal error ("please report this").
  pkgs=()
  for d in "$build"/kernels/*/package*/ "$here"/tests/packages/softmax_macro/ "$build"/tests/precompiled/softmax_pre_*/; do
    [ -f "$d/kgate.json" ] && pkgs+=("$d")
  done
  "$kgate" check "${pkgs[@]}" --no-speed --out "$out/allpkgs" > "$out/allpkgs.log" 2>&1
  note "all packages (${#pkgs[@]}, --no-speed): exit $?; parameter-table disagreements: $(grep -c 'please report' "$out/allpkgs.log")"
  sed -n '/^kernel /,/^$/p' "$out/allpkgs.log" | head -30
fi
if has lowprec; then
  # The f16/bf16 tolerance decision: every CUDA kernel swept under the old defaults (allclose for
  # every op but group_norm's ref_ratio) and under the new ones (eager_relative for f16 and bf16).
  printf '%s\n' '{"format": "kgate-config/1", "global": {"rule": "allclose"}, "ops": {"group_norm": {"rule": "ref_ratio"}}}' \
    > "$out/old-rules.json"
  "$kgate" sweep --backend cuda --config "$out/old-rules.json" --out "$out/sweep-before" > "$out/sweep-before.log" 2>&1
  note "sweep with the old rules: exit $?; $(grep -oE '[0-9]+ FRAGILE;' "$out/sweep-before.log" | tail -1 | tr -d ';') kernel x dtype rows"
  grep -E 'FRAGILE|FAILED' "$out/sweep-before.log" | head -20
  "$kgate" sweep --backend cuda --out "$out/sweep-after" > "$out/sweep-after.log" 2>&1
  note "sweep with the new default (eager_relative for f16/bf16): exit $?; $(grep -oE '[0-9]+ FRAGILE;' "$out/sweep-after.log" | tail -1 | tr -d ';') kernel x dtype rows"
  grep -E '^[a-z_0-9]+ +(f16|bf16|f32) ' "$out/sweep-after.log" | grep -E 'FRAGILE|FAILED|group_norm' | head -20
fi
if has subdir; then
  # kgate added to another project's build (add_subdirectory), that project's kernels gated: the
  # example consumer, built beside kgate in one tree.
  sub=$out/subdir-project; rm -rf "$sub" "$build-subdir"; mkdir -p "$sub"
  printf '%s\n' 'cmake_minimum_required(VERSION 3.25)' 'set(CMAKE_CUDA_ARCHITECTURES 90)' \
    'project(subdir_consumer LANGUAGES CXX CUDA)' 'enable_testing()' "add_subdirectory($here kgate)" \
    "add_subdirectory($here/examples/consumer consumer)" > "$sub/CMakeLists.txt"
  deps=""; [ -f "$here/.deps-prefix" ] && deps=$(cat "$here/.deps-prefix")
  tp=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null | tail -1)
  { cmake -S "$sub" -B "$build-subdir" -G Ninja -DKGATE_BUILD_BENCHMARKS=OFF -DCMAKE_PREFIX_PATH="$tp${deps:+;$deps}" &&
    cmake --build "$build-subdir" -j "${KGATE_JOBS:-$(nproc)}" --target kgate kgate.kernel.l2_normalize_rows.test \
      kgate.kernel.l2_normalize_cpu.test kgate.kernel.l2_normalize_rows_tail_dropped.test \
      kgate.kernel.l2_normalize_cpu_tail_dropped.test &&
    ctest --test-dir "$build-subdir/consumer" -j 4 --timeout 300 --no-tests=error; } > "$out/subdir.log" 2>&1
  note "consumer via add_subdirectory(kgate): exit $?; $(grep -E 'tests passed' "$out/subdir.log" | tail -1)"
  grep -E '\(Failed\)|\(Timeout\)' "$out/subdir.log" | head
fi
if has opfiles; then
  # Op files: the equivalence with the built-in ops (every kernel and mutant on the GPU), the new
  # op fused_add_rms_norm (kernel gated with speed, its mutants with their minimal cases), and the
  # op-file reference's cost against the built-in one.
  "$build/tests/kgate.test.op_files.equivalence" > "$out/opfiles_equivalence.log" 2>&1
  note "op files equivalence (gtest): exit $?; $(grep -E '^\[  (PASSED|FAILED)' "$out/opfiles_equivalence.log" | tr '\n' ' ')"
  grep -E '^\[ (inputs|verdicts) \]' "$out/opfiles_equivalence.log" | head -60
  "$kgate" check --kernel fused_add_rms_norm_block --out "$out/opfiles-gate" > "$out/opfiles-gate.log" 2>&1
  note "fused_add_rms_norm_block (op file op, gate with speed): exit $?"
  sed -n '/^kernel /,$p' "$out/opfiles-gate.log" | head -20
  "$kgate" check --backend cuda --no-speed --kernel mutant_fused_add_rms_norm_tail_dropped \
    --kernel mutant_fused_add_rms_norm_norms_x --out "$out/opfiles-mutants" > "$out/opfiles-mutants.log" 2>&1
  note "fused_add_rms_norm mutants: exit $? (expected 1)"
  mutant_lines "$out/opfiles-mutants/report.json"
  # The package of the new op, copied out of the tree (it carries its op file), gated with speed.
  rm -rf "$out/opfiles-pkg" && cp -r "$build/kernels/fused_add_rms_norm/package" "$out/opfiles-pkg"
  "$kgate" check "$out/opfiles-pkg" --out "$out/opfiles-pkg-report" > "$out/opfiles-pkg.log" 2>&1
  note "fused_add_rms_norm package copied out of the tree (kgate check PKG): exit $?"
  sed -n '/^kernel /,$p' "$out/opfiles-pkg.log" | head -12
  KGATE_THROUGHPUT_CASES=${KGATE_THROUGHPUT_CASES:-500} "$build/bin/kgate.bench.case_throughput" \
    --benchmark_filter='rms_norm|softmax_block|op_file_compile' --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true > "$out/opfiles_throughput.log" 2>&1
  note "op-file reference vs built-in (case_throughput): exit $?"
  grep -E '_median|_mean' "$out/opfiles_throughput.log" | tr -s ' ' | head -30
fi
if has throughput; then
  # Correctness cases per second for softmax: the engine alone (Google Benchmark over check_case),
  # then the whole `kgate check` (plus behaviour checks, null-kernel calibration, report writing).
  KGATE_THROUGHPUT_CASES=${KGATE_THROUGHPUT_CASES:-2000} "$build/bin/kgate.bench.case_throughput" \
    --benchmark_filter=softmax_block --benchmark_repetitions="${KGATE_THROUGHPUT_REPS:-3}" \
    --benchmark_out="$out/case_throughput.json" --benchmark_out_format=json > "$out/case_throughput.log" 2>&1
  note "throughput benchmark (check_case, softmax_block, ${KGATE_THROUGHPUT_REPS:-3} repetitions): exit $?"
  grep -E '^case_throughput' "$out/case_throughput.log" | tr -s ' ' 
  "$kgate" check --backend cuda --kernel softmax_block --cases "${KGATE_THROUGHPUT_CASES:-2000}" --no-speed \
    --no-isolate -q --out "$out/throughput" > "$out/throughput.log" 2>&1
  rc=$?
  rate=$(python3 -c "import json,sys; k=json.load(open(sys.argv[1]))['kernels'][0]; c=k['correctness']; print(f\"{c['cases']} cases ({c['failed']} failed, {c['behaviour_checks']} behaviour checks) in {k['seconds']:.2f} s = {c['cases']/k['seconds']:.0f} cases/s\")" "$out/throughput/report.json")
  note "throughput (kgate check, softmax_block): exit $rc; $rate"
fi
if has calibrate; then
  "$kgate" calibrate --backend cuda --kernel softmax_block --comparisons "${KGATE_AA_COMPARISONS:-50}" --out "$out/calibrate" \
    > "$out/calibrate.log" 2>&1
  note "calibrate (A/A softmax_block): exit $?"
  tail -15 "$out/calibrate.log"
fi
if has power; then
  timeout 420 "$build/bin/kgate.bench.speed_power" --csv "$out/power.csv" ${KGATE_POWER_ARGS:-} > "$out/power.log" 2>&1
  note "speed power study: exit $?"
  grep -v '^\[' "$out/power.log" | tail -40
fi
if has ncu; then
  # Default: the stream kernels with the default read flush, the same with the memset (write)
  # flush, compute kernels (no memory traffic: no cache effect at all), and compute kernels launched
  # on a GPU idle for 2 ms, as ncu's serialized replay leaves it.
  # KGATE_NCU_VARIANTS replaces them: one variant per line, "label|ncu options|speed_power options".
  variants=${KGATE_NCU_VARIANTS:-"stream read||--kind stream --flush read
stream write||--kind stream --flush write
compute read||--kind compute --flush read
compute idle 2ms||--kind compute --flush read --launch-gap 2000"}
  while IFS='|' read -r label ncu_args power_args; do
    [ -n "$label" ] || continue
    log="$out/ncu-${label// /-}.log"
    # shellcheck disable=SC2086
    NCU_ARGS=$ncu_args bash "$here/bench/ncu_compare.sh" "$build/bin/kgate.bench.speed_power" $power_args < /dev/null > "$log" 2>&1
    note "CUPTI vs ncu ($label): exit $?; $(grep -E '^(largest|fixed|work)' "$log" | tr '\n' ' ')"
    grep -E '^(ncu-kernels:|kernel|kgate_power)' "$log"
  done <<< "$variants"
fi
echo
echo "== summary =="
printf '%s\n' "${summary[@]}"
