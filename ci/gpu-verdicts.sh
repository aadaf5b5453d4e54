#!/usr/bin/env bash
# The measurements of the conditioned rule and of verdicts a team can trust, on a GPU, in one command:
#   ci/gpu-verdicts.sh OUT_DIR [phase...]
# Phases (default: all, in this order):
#   build     ci/setup.sh and ci/build.sh; with KGATE_BEFORE_SRC (a source tree of an earlier
#             commit), that tree's kgate too, built beside it
#   mutants   the precision mutants at the default 64 cases: minimal case, error over allowance
#   edges     the tile-edge mutants (tests/edges/edges_gpu.sh): CMake kernels, packages and torch
#             ops, each at the defaults at five seeds; minimal cases and the sizes found
#   faults    cli.torch_op_fault_gpu, cli.isolation_gpu (ctest)
#   controls  every CUDA control (KGATE_CONTROLS: those named) and the GEMM control packages at
#             KGATE_CONTROL_CASES (1000) cases
#   time      kgate check --no-speed --seed 1 over the in-tree kernels, twice, head and before
#   cost      kgate check --cost over the in-tree kernels, with speed (the gate) and without: the
#             seconds of each phase (startup, compile, probe, generate, kernel, reference, oracle,
#             judge, behaviour, base, shrink, warmup, timing), summed over the kernels
#   jobs      the in-tree gate (kgate check, defaults) with --jobs 1 and --jobs 4 (KGATE_JOBS_N): wall
#             time, the same correctness verdicts, no comparison made INVALID by the run's own
#             workers, the waits (--cost); KGATE_JOBS_FUSED=1: a third run, --jobs 4 under
#             KGATE_JUDGE=fused
#   same      with KGATE_BEFORE_SRC: kgate check --no-speed --seed 1 over the in-tree kernels and over
#             the in-tree packages (as built), head and before, compared (ci/same-verdicts.py:
#             outcomes, case ids, margins, the cleaned report.json)
#   engines   the judge's one pass against its ATen chain (KGATE_JUDGE) on this GPU: the test
#             references.judge_engines, kgate.bench.case_throughput under each, the memory mutants
#             under each, and kgate check --no-speed --seed 1 over the in-tree kernels and packages
#             under each, compared (KGATE_ENGINE_PACKAGES=0: the kernels only)
#   sweep     kgate sweep --seed 1, head and before: worst margins and FRAGILE rows
#   suite     the mutant suite and the gaming corpus (tests/packages/corpus)
#   nvccpkg   a package whose sources only nvcc compiles (tests/precompiled/nvcc_norm): kgate pack
#             builds its fatbin with nvcc, kgate check runs it (C++ kernel names, f32 and f16)
#   timing    kgate check with speed on two kernels (checked timing end to end)
#   base      kgate check --baseline-build with this build as its own base: UNCHANGED, then timed
#             head against base (--time-unchanged), the CUDA modules loaded beside the head
#   torchpair --baseline-torch-library: tests/torch_op's library built twice (two build directories
#             of a small project), its CUDA ops UNCHANGED, then timed A/A, then against a changed copy
#   pkgpair   --baseline-packages: tests/packages' softmax packages against a copy of their tree
#             (UNCHANGED), then against a tree where one package's launch changed (timed)
#   against   ci/gate.sh --against KGATE_AGAINST_REF (HEAD) in a fresh build directory: head and base builds with a
#             cold ccache, then the base build again with a cold and with a warm ccache (hit rates);
#             ccache from KGATE_CCACHE_BUNDLE (.deb files, unpacked) when it is not installed
# KGATE_DEADLINE (seconds, default 560): a phase that would start later than this is skipped and
# says so. Logs and reports go under OUT_DIR; a table is printed last.
set -uo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
out=${1:?usage: ci/gpu-verdicts.sh OUT_DIR [phase...]}
shift
phases=("$@")
[ ${#phases[@]} -gt 0 ] || phases=(build edges mutants faults controls time jobs same engines sweep suite nvccpkg timing base torchpair pkgpair against)
mkdir -p "$out"
build=${KGATE_BUILD_DIR:-$here/build}
kgate=$build/bin/kgate
before=${KGATE_BEFORE_SRC:-}
deadline=${KGATE_DEADLINE:-560}
cases=${KGATE_CONTROL_CASES:-1000}
summary=()
note() { summary+=("$1"); echo "==> $1"; }
has() { local s; for s in "${phases[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
in_time() {  # in_time PHASE SECONDS_IT_NEEDS
  if [ $((SECONDS + $2)) -gt "$deadline" ]; then note "$1: skipped (at ${SECONDS} s, needs ~$2 s, deadline $deadline s)"; return 1; fi
}
# One line per kernel of a report: outcome, cases, worst margin, minimal case, its error / allowance.
report_lines() {
  python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    try:
        ks = json.load(open(path))["kernels"]
    except Exception as e:
        print(f"  {path}: no report ({e})"); continue
    for k in ks:
        c = k["correctness"]; m = c.get("minimal") or (c.get("failures") or [None])[0]
        line = (f"  {k['name']:38s} {k['outcome']:8s} cases {c['cases']:5d} passed {c['passed']:5d} failed {c['failed']:4d} "
                f"ref-err {c.get('reference_errors', 0)} ref-faults {len(c.get('reference_faulted', []))} "
                f"faults {len(c.get('faulted', []))} fallback {c.get('fallback', 0)} worst {c.get('worst_margin', 0):.3f} "
                f"{c.get('seconds', 0):.1f} s")
        if m:
            line += (f"\n      minimal {m['case']['id']} rule {m.get('rule')} error {m.get('observed', 0):.4g} "
                     f"allowed {m.get('allowed', 0):.4g} = {m.get('margin', 0):.2f}x: {m.get('message', '')[:200]}")
        for w in c.get("warnings", [])[:3]:
            line += f"\n      warning: {w[:220]}"
        print(line)
PY
}

if has build; then
  start=$SECONDS
  "$here/ci/setup.sh" > "$out/setup.log" 2>&1 || { tail -20 "$out/setup.log"; note "setup failed"; exit 1; }
  pids=()
  KGATE_JOBS=${KGATE_JOBS:-12} "$here/ci/build.sh" > "$out/build.log" 2>&1 &
  pids+=($!)
  if [ -n "$before" ]; then
    cp "$here/.deps-prefix" "$before/" 2>/dev/null
    KGATE_BUILD_DIR="$before/build" KGATE_BUILD_TARGETS=kgate KGATE_JOBS=${KGATE_BEFORE_JOBS:-6} \
      "$before/ci/build.sh" > "$out/build-before.log" 2>&1 &
    pids+=($!)
  fi
  rc=0
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  note "build: exit $rc in $((SECONDS - start)) s (before tree: ${before:-none})"
  [ $rc -eq 0 ] || { tail -30 "$out/build.log"; [ -n "$before" ] && tail -30 "$out/build-before.log"; exit 1; }
fi

if has mutants && in_time mutants 60; then
  # Item 2's precision mutants (each must fail at the domain's longest rows, with its minimal case)
  # and the fused_add_rms_norm mutant whose bf16 sum of squares fails only on long rows.
  "$kgate" check --backend cuda --no-speed --kernel mutant_matmul_bf16_inputs --kernel mutant_matmul_tf32 \
    --kernel mutant_rms_norm_f16_sum --kernel mutant_rms_norm_half_accum --out "$out/mutants" > "$out/mutants.log" 2>&1
  note "precision mutants (64 cases each): exit $? (expected 1)"
  report_lines "$out/mutants/report.json"
  "$kgate" check --kernel mutant_fused_add_rms_norm_bf16_sumsq --out "$out/fused-mutant" > "$out/fused-mutant.log" 2>&1
  note "kgate check --kernel mutant_fused_add_rms_norm_bf16_sumsq (defaults): exit $? (expected 1)"
  report_lines "$out/fused-mutant/report.json"
fi

if has edges && in_time edges 150; then
  t0=$SECONDS
  bash "$here/tests/edges/edges_gpu.sh" "$kgate" "$build/tests/torch_op/libkgate_test_ops.so" "$out/edges" \
    > "$out/edges.log" 2>&1
  note "tile-edge mutants (5 seeds, defaults): exit $? in $((SECONDS - t0)) s"
  tail -40 "$out/edges.log"
fi

if has faults && in_time faults 90; then
  (cd "$build" && ctest -R "${KGATE_FAULT_TESTS:-cli\.(torch_op_fault_gpu|isolation_gpu|reference_faults_cpu)\$|package\.controls_gpu}" \
     --timeout 150 --output-on-failure > "$out/faults-ctest.log" 2>&1)
  note "ctest torch_op_fault_gpu, isolation_gpu, reference_faults_cpu, package.controls_gpu: exit $?; $(grep -E 'tests passed' "$out/faults-ctest.log")"
  grep -E '^ *[0-9]+/[0-9]+ Test' "$out/faults-ctest.log"
fi

if has controls; then
  # The control corpus, one kernel per run (a report each, so a slow one loses nothing else).
  # KGATE_CONTROLS="a b": those alone (default: every CUDA control).
  if [ -n "${KGATE_CONTROLS:-}" ]; then read -ra controls <<< "$KGATE_CONTROLS"
  else mapfile -t controls < <("$kgate" list --all 2>/dev/null | awk '$3 == "cuda" && /control: must pass/ {print $1}'); fi
  per=$(( cases / 40 + 5 ))
  # KGATE_CONTROL_JOBS > 1: that many at once (one GPU holds several; no timing runs beside them).
  jobs=${KGATE_CONTROL_JOBS:-1}
  if [ "$jobs" -gt 1 ]; then
    t0=$SECONDS
    printf '%s\n' "${controls[@]}" | xargs -P "$jobs" -I{} sh -c \
      "'$kgate' check --backend cuda --no-speed --cases $cases --kernel {} --out '$out/controls/{}' > '$out/controls-{}.log' 2>&1; echo \"control {}: exit \$?\"" \
      > "$out/controls-exits.txt"
    note "controls (${#controls[@]}, $cases cases, $jobs at once): $(grep -c 'exit 0' "$out/controls-exits.txt") exit 0 in $((SECONDS - t0)) s"
    grep -v 'exit 0' "$out/controls-exits.txt"
    for k in "${controls[@]}"; do report_lines "$out/controls/$k/report.json"; done
    controls=()
  fi
  for k in "${controls[@]}"; do
    in_time "control $k" "$per" || continue
    t0=$SECONDS
    timeout $(( deadline - SECONDS + 30 )) "$kgate" check --backend cuda --no-speed --cases "$cases" --kernel "$k" \
      --out "$out/controls/$k" > "$out/controls-$k.log" 2>&1
    rc=$?
    note "control $k ($cases cases): exit $rc in $((SECONDS - t0)) s"
    report_lines "$out/controls/$k/report.json"
  done
  if [ -z "${KGATE_CONTROLS:-}" ] && in_time "control packages" 120; then
    t0=$SECONDS
    bash "$here/tests/controls/packages/run_controls.sh" "$kgate" "$out/control-packages" --cases "$cases" \
      > "$out/control-packages.log" 2>&1
    note "GEMM control packages (NVRTC, $cases cases): exit $? in $((SECONDS - t0)) s"
    cat "$out/control-packages.log"
  fi
fi

# kgate check --no-speed --seed 1 over the in-tree kernels (the default selection), with BIN.
time_check() {  # time_check LABEL BIN
  local t0=$SECONDS
  "$2" check --no-speed --seed 1 -q --out "$out/time-$1" > "$out/time-$1.log" 2>&1
  local rc=$?
  python3 - "$out/time-$1/report.json" "$1" "$rc" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print(f"  {sys.argv[2]}: no report ({e})"); sys.exit(0)
ks = r["kernels"]
cases = sum(k["correctness"]["cases"] for k in ks)
secs = sum(k["correctness"].get("seconds", 0) for k in ks)
bad = [k["name"] + ":" + k["outcome"] for k in ks if k["outcome"] != "passed"]
print(f"  {sys.argv[2]}: exit {sys.argv[3]}, {len(ks)} kernels, {cases} cases, correctness seconds {secs:.1f}, "
      f"wall {r.get('meta', {}).get('seconds', 0):.1f} s; not passed: {' '.join(bad) or 'none'}")
PY
  note "time $1: $((SECONDS - t0)) s wall"
}
# The gate's cost per phase (kgate check --cost): the in-tree gate as ci/gate.sh runs it (defaults,
# speed on), and the same with --no-speed; each table is the sum over the kernels.
if has cost && in_time cost 150; then
  for mode in gate no-speed; do
    args=(); [ "$mode" = no-speed ] && args=(--no-speed)
    t0=$SECONDS
    "$kgate" check --cost ${args[@]+"${args[@]}"} --out "$out/cost-$mode" > "$out/cost-$mode.log" 2>&1
    note "cost ($mode): exit $? in $((SECONDS - t0)) s"
    sed -n '/^cost per phase/,/^$/p' "$out/cost-$mode.log"
  done
fi

if has jobs && in_time jobs 200; then
  for n in 1 "${KGATE_JOBS_N:-4}"; do
    t0=$SECONDS
    "$kgate" check --cost --jobs "$n" --out "$out/jobs-$n" > "$out/jobs-$n.log" 2>&1
    note "jobs $n: the in-tree gate: exit $? in $((SECONDS - t0)) s"
  done
  if [ "${KGATE_JOBS_FUSED:-0}" = 1 ]; then  # and with the judge's one pass (KGATE_JUDGE=fused)
    t0=$SECONDS
    KGATE_JUDGE=fused "$kgate" check --cost --jobs "${KGATE_JOBS_N:-4}" --out "$out/jobs-fused" \
      > "$out/jobs-fused.log" 2>&1
    note "jobs ${KGATE_JOBS_N:-4}, KGATE_JUDGE=fused: the in-tree gate: exit $? in $((SECONDS - t0)) s"
  fi
  python3 - "$out/jobs-1/report.json" "$out/jobs-${KGATE_JOBS_N:-4}/report.json" <<'PY' | tee "$out/jobs.txt"
import json, sys
one, many = (json.load(open(p)) for p in sys.argv[1:3])
print(f"run seconds: {one['meta']['seconds']:.1f} (--jobs 1) vs {many['meta']['seconds']:.1f}")
diff = 0
for a, b in zip(one["kernels"], many["kernels"]):
    ca, cb = a["correctness"], b["correctness"]
    if (a["name"], ca["cases"], ca["passed"], ca["failed"]) != (b["name"], cb["cases"], cb["passed"], cb["failed"]):
        diff += 1
        print(f"  correctness differs: {a['name']}: {ca['passed']}/{ca['cases']} vs {cb['passed']}/{cb['cases']}")
    for s in b.get("speed", []):
        if s.get("decision") == "invalid":
            print(f"  INVALID under --jobs: {b['name']}: {s.get('note', '')[:160]}")
    da = [s.get("decision") for s in a.get("speed", [])]
    db = [s.get("decision") for s in b.get("speed", [])]
    print(f"  {a['name']:28s} speed {da} vs {db}; wait {b.get('cost_s', {}).get('wait', 0):.2f} s")
print(f"kernels whose correctness differs: {diff}")
PY
fi

if has time; then
  # Alternating, so that a drift of the machine falls on both.
  for round in $(seq 1 "${KGATE_TIME_ROUNDS:-2}"); do
    in_time "time head-$round" 60 && time_check "head-$round" "$kgate"
    [ -n "$before" ] && in_time "time before-$round" 60 && time_check "before-$round" "$before/build/bin/kgate"
  done
  # Each in-tree kernel's coverage: the edges tried, those left out, the sizes and where from.
  python3 - "$out/time-head-1/report.json" > "$out/coverage.txt" 2>&1 <<'PY'
import json, sys
for k in json.load(open(sys.argv[1]))["kernels"]:
    c = k["correctness"].get("coverage") or {}
    sizes = ", ".join(f"{s['size']} {s['origin']}" for s in c.get("tile_sizes", [])) or "none"
    tried = " ".join(str(e["size"]) for e in c.get("tried", []) if e["origin"] not in ("small",))
    left = " ".join(str(e["size"]) for e in c.get("left_out", []))
    probe = (c.get("probe") or {}).get("note", "")
    print(f"{k['name']:34s} {c.get('symbol', '-'):3s} sizes [{sizes}] tried [{tried}] left out [{left}] "
          f"spread {c.get('spread', {}).get('tried', 0)}/{c.get('spread', {}).get('total', 0)} {probe}")
PY
  note "coverage of the in-tree kernels: $out/coverage.txt"
  cat "$out/coverage.txt"
fi

if has same && [ -n "$before" ] && in_time same 200; then
  # The same verdicts before and after a restructuring: in-tree kernels, then in-tree packages.
  mapfile -t pkgs < <(ls -d "$build"/kernels/*/package*/)
  for what in kernels packages; do
    args=(); [ $what = packages ] && args=("${pkgs[@]}")
    for side in head before; do
      bin=$kgate; [ $side = before ] && bin=$before/build/bin/kgate
      t0=$SECONDS
      "$bin" check --no-speed --seed 1 -q --out "$out/same-$what-$side" "${args[@]}" > "$out/same-$what-$side.log" 2>&1
      note "same $what ($side): kgate check --no-speed --seed 1: exit $? in $((SECONDS - t0)) s"
    done
    mkdir -p "$out/same-$what"
    python3 "$here/ci/same-verdicts.py" "$out/same-$what-head/report.json" "$out/same-$what-before/report.json" \
      "$out/same-$what" | tee "$out/same-$what.txt"
    note "same $what: $(grep -E '^kernels:' "$out/same-$what.txt"); $(grep -oE '[0-9]+ differing lines' "$out/same-$what.txt")"
  done
fi

if has engines && in_time engines 200; then
  # The judge's one pass against the ATen operators it restates, on this GPU.
  (cd "$build" && ctest -R 'references.judge_engines' -V > "$out/engines-ctest.log" 2>&1)
  note "engines: references.judge_engines (GPU half included): exit $?; $(grep -E 'compared [0-9]+' "$out/engines-ctest.log" | tr '\n' ' ')"
  for e in aten fused; do
    KGATE_JUDGE=$e "$build/bin/kgate.bench.case_throughput" --benchmark_filter='softmax_block/|rms_norm_block/' \
      > "$out/engines-throughput-$e.log" 2>&1
    note "engines: case_throughput ($e): $(grep -oE '^case_throughput/[a-z_]+/|cases/s=[0-9.]+' "$out/engines-throughput-$e.log" | paste -sd' ')"
  done
  # The memory checks (inputs changed, guard bands) under each: the memory mutants fail both.
  for e in fused aten; do
    KGATE_JUDGE=$e "$kgate" check --no-speed --seed 1 -q --kernel mutant_silu_and_mul_write_past_end \
      --kernel mutant_gelu_writes_input --out "$out/engine-memory-$e" > "$out/engine-memory-$e.log" 2>&1
    note "engines: memory mutants under $e: exit $? (1 expected); $(grep -cE 'FAILED .*(guard|modified its input)' "$out/engine-memory-$e.log") of 2 named"
  done
  mapfile -t pkgs < <(ls -d "$build"/kernels/*/package*/)
  whats=(kernels packages); [ "${KGATE_ENGINE_PACKAGES:-1}" = 0 ] && whats=(kernels)
  for what in "${whats[@]}"; do
    args=(); [ $what = packages ] && args=("${pkgs[@]}")
    for e in fused aten; do
      t0=$SECONDS
      KGATE_JUDGE=$e "$kgate" check --no-speed --seed 1 -q --out "$out/engine-$what-$e" "${args[@]}" \
        > "$out/engine-$what-$e.log" 2>&1
      note "engines: $what under $e: kgate check --no-speed --seed 1: exit $? in $((SECONDS - t0)) s"
    done
    mkdir -p "$out/engine-$what"
    python3 "$here/ci/same-verdicts.py" "$out/engine-$what-fused/report.json" "$out/engine-$what-aten/report.json" \
      "$out/engine-$what" | tee "$out/engine-$what.txt"
    note "engines $what: $(grep -E '^kernels:' "$out/engine-$what.txt"); $(grep -oE '[0-9]+ differing lines' "$out/engine-$what.txt")"
  done
fi

if has sweep && in_time sweep 200; then
  t0=$SECONDS
  "$kgate" sweep --backend cuda --seed 1 --out "$out/sweep-head" > "$out/sweep-head.log" 2>&1
  note "sweep head: exit $? in $((SECONDS - t0)) s; $(grep -oE '[0-9]+ FRAGILE' "$out/sweep-head.log" | tail -1)"
  grep -E 'FRAGILE|FAILED' "$out/sweep-head.log" | head -20
  if [ -n "$before" ] && in_time sweep-before 150; then
    t0=$SECONDS
    "$before/build/bin/kgate" sweep --backend cuda --seed 1 --out "$out/sweep-before" > "$out/sweep-before.log" 2>&1
    note "sweep before: exit $? in $((SECONDS - t0)) s; $(grep -oE '[0-9]+ FRAGILE' "$out/sweep-before.log" | tail -1)"
    grep -E 'FRAGILE|FAILED' "$out/sweep-before.log" | head -20
  fi
fi

if has suite && in_time suite 150; then
  t0=$SECONDS
  KGATE_MUTANT_TABLE="$out/mutant_table.json" timeout $(( deadline - SECONDS + 20 )) \
    "$build/tests/gpu/kgate.test.gpu.mutants" > "$out/mutant_suite.log" 2>&1
  note "mutant suite: exit $? in $((SECONDS - t0)) s; $(grep -E '^\[  (PASSED|FAILED)' "$out/mutant_suite.log" | tr '\n' ' ')"
  grep -E 'MISSED|^\[  FAILED' "$out/mutant_suite.log" | head -20
  if in_time corpus 60; then
    bash "$here/tests/packages/corpus/run_corpus.sh" "$kgate" "$out/corpus" > "$out/corpus.log" 2>&1
    note "gaming corpus: exit $?"
    tail -20 "$out/corpus.log"
  fi
fi

if has nvccpkg && in_time nvccpkg 90; then
  t0=$SECONDS
  bash "$here/tests/precompiled/nvcc_pack.sh" "$kgate" "$here/tests/precompiled/nvcc_norm" "$out/nvccpkg" gpu \
    > "$out/nvccpkg.log" 2>&1
  note "nvcc-built package (tests/precompiled/nvcc_norm, packed by nvcc, checked from its fatbin): exit $? in $((SECONDS - t0)) s"
  tail -5 "$out/nvccpkg.log"
fi

if has timing && in_time timing 90; then
  t0=$SECONDS
  "$kgate" check --kernel softmax_block --kernel rms_norm_block --speed-cases 2 --out "$out/timing" > "$out/timing.log" 2>&1
  note "timing (softmax_block, rms_norm_block, with speed): exit $? in $((SECONDS - t0)) s"
  sed -n '/^kernel /,$p' "$out/timing.log" | head -12
fi

if has base && in_time base 120; then
  t0=$SECONDS
  "$kgate" check --kernel softmax_block --kernel rms_norm_block --speed-cases 1 --baseline-build "$build" \
    --out "$out/base-same" > "$out/base-same.log" 2>&1
  note "baseline-build, the same build: exit $? in $((SECONDS - t0)) s"
  python3 - "$out/base-same/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print("  meta.base:", json.dumps(r["meta"].get("base"))[:300])
for k in r["kernels"]:
    print(f"  {k['name']}: {k['outcome']}, base {json.dumps(k.get('base'))[:200]}, speed {[(s['baseline'], s['decision'], round(s['ratio'], 4)) for s in k['speed']]}")
PY
  t0=$SECONDS
  "$kgate" check --kernel softmax_block --kernel rms_norm_block --speed-cases 2 --baseline-build "$build" --time-unchanged \
    --delta 0.02 --out "$out/base-timed" > "$out/base-timed.log" 2>&1
  note "baseline-build, timed head against base (A/A, --time-unchanged): exit $? in $((SECONDS - t0)) s"
  python3 - "$out/base-timed/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for k in r["kernels"]:
    print(f"  {k['name']}: {k['outcome']}, base status {(k.get('base') or {}).get('status')}")
    for s in k["speed"]:
        print(f"    vs {s['baseline']:16s} {s['kcase']['id'] if 'kcase' in s else s['case']['id'][:60]:60s} x{s['ratio']:.4f} [{s['ratio_lower']:.4f}, {s['ratio_upper']:.4f}] {s['decision']} blocks {s['blocks']} gates {s.get('gates')}")
PY
  sed -n '/^### Against/,/^$/p' "$out/base-timed/summary.md" | head -10
fi

# One line per kernel of a paired run: base status and each speed comparison.
pair_lines() {
  python3 - "$@" <<'PY'
import json, sys
for path in sys.argv[1:]:
    try:
        r = json.load(open(path))
    except Exception as e:
        print(f"  {path}: no report ({e})"); continue
    b = r["meta"].get("base") or {}
    print(f"  {path.split('/')[-2]}: base error '{b.get('error', '')[:200]}', comparisons (Holm m) "
          f"{r['meta']['config'].get('run_comparisons', '?')}")
    for k in r["kernels"]:
        print(f"  {k['name']:34s} {k['outcome']:9s} base {(k.get('base') or {}).get('status')}")
        for s in k["speed"]:
            cid = (s.get("case") or {}).get("id", "")[:56]
            print(f"    vs {s['baseline'][:30]:30s} {cid:56s} x{s.get('ratio', 0):.4f} "
                  f"[{s.get('ratio_lower', 0):.4f}, {s.get('ratio_upper', 0):.4f}] {s['decision']} "
                  f"blocks {s.get('blocks')} gates {s.get('gates')}")
PY
}

if has torchpair && in_time torchpair 150; then
  # The library of tests/torch_op built twice, each from its own copy of the sources at another
  # path (as a base worktree is): its anonymous namespaces get other names, the code is the same.
  proj=$out/torchlib
  for side in head base/deeper; do
    src=$proj/src-$side
    mkdir -p "$src"
    cp "$here"/tests/torch_op/test_ops.cpp "$here"/tests/torch_op/test_ops_cuda.cu "$here"/tests/edges/edge_rms_norm.cuh \
       "$here"/kernels/common/*.cuh "$here"/kernels/fused_add_rms_norm/package/*.cuh "$src/"
    cat > "$src/CMakeLists.txt" <<'CMK'
cmake_minimum_required(VERSION 3.25)
project(kgate_test_ops_twice LANGUAGES CXX CUDA)
set(CMAKE_CUDA_ARCHITECTURES 90)
set(CMAKE_CXX_STANDARD 17)
set(CMAKE_CUDA_STANDARD 17)
find_package(Torch REQUIRED)
find_package(CUDAToolkit REQUIRED)
add_library(kgate_test_ops SHARED test_ops.cpp test_ops_cuda.cu)
target_include_directories(kgate_test_ops PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(kgate_test_ops PRIVATE torch CUDA::cudart)
set_target_properties(kgate_test_ops PROPERTIES CUDA_RUNTIME_LIBRARY Shared)
# What docs/ci.md asks of a torch library for UNCHANGED to hold (kgate_reproducible_paths does it
# in a project that uses kgate's CMake package): the source tree mapped out of __FILE__.
target_compile_options(kgate_test_ops PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-ffile-prefix-map=${CMAKE_SOURCE_DIR}=.>
                                              $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-ffile-prefix-map=${CMAKE_SOURCE_DIR}=.>)
CMK
  done
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' | tail -1)
  t0=$SECONDS
  for side in head base; do
    srcdir=$proj/src-head
    [ "$side" = base ] && srcdir=$proj/src-base/deeper
    (cmake -S "$srcdir" -B "$proj/$side" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_PREFIX_PATH="$torch_prefix" \
       > "$proj/$side.log" 2>&1 && cmake --build "$proj/$side" >> "$proj/$side.log" 2>&1) &
  done
  wait
  note "torchpair: the library built twice in $((SECONDS - t0)) s"
  lib=$proj/head/libkgate_test_ops.so
  ops=(--torch-library "$lib" --torch-op kgate_test::fused_add_rms_norm=fused_add_rms_norm
       --torch-op kgate_test::softmax_out=softmax --cases 16 --speed-cases 2)
  if [ -f "$lib" ] && [ -f "$proj/base/libkgate_test_ops.so" ]; then
    "$kgate" check "${ops[@]}" --baseline-torch-library "$proj/base/libkgate_test_ops.so" --out "$out/torch-same" \
      > "$out/torch-same.log" 2>&1
    note "torchpair: built twice, paired: exit $?"
    "$kgate" check "${ops[@]}" --baseline-torch-library "$proj/base/libkgate_test_ops.so" --time-unchanged \
      --out "$out/torch-timed" > "$out/torch-timed.log" 2>&1
    note "torchpair: built twice, timed A/A (--time-unchanged): exit $?"
    python3 - "$proj/base/libkgate_test_ops.so" "$proj/changed.so" <<'PY'
import sys
d = open(sys.argv[1], "rb").read()
open(sys.argv[2], "wb").write(d.replace(b"KGATE_TEST_SNOOP_FILE", b"KGATE_TEST_SNOOP_FILF"))
PY
    "$kgate" check "${ops[@]}" --baseline-torch-library "$proj/changed.so" --out "$out/torch-changed" \
      > "$out/torch-changed.log" 2>&1
    note "torchpair: a changed base: exit $?"
    pair_lines "$out/torch-same/report.json" "$out/torch-timed/report.json" "$out/torch-changed/report.json"
  else
    note "torchpair: the library did not build (logs: $proj/*.log)"; tail -20 "$proj/head.log"
  fi
fi

if has pkgpair && in_time pkgpair 120; then
  # A tree of packages against a copy of itself, then against one whose softmax_v1 launches
  # another block size.
  tree=$out/pkgtree
  rm -rf "$tree" && mkdir -p "$tree"
  cp -r "$here/tests/packages/softmax_v1" "$here/tests/packages/softmax_v2_fast" "$tree/"
  "$kgate" check "$here/tests/packages/softmax_v1" "$here/tests/packages/softmax_v2_fast" --baseline-packages "$tree" \
    --cases 16 --speed-cases 2 --out "$out/pkg-same" > "$out/pkg-same.log" 2>&1
  note "pkgpair: the same tree: exit $?"
  "$kgate" check "$here/tests/packages/softmax_v1" "$here/tests/packages/softmax_v2_fast" --baseline-packages "$tree" \
    --time-unchanged --cases 16 --speed-cases 2 --out "$out/pkg-timed" > "$out/pkg-timed.log" 2>&1
  note "pkgpair: the same tree, timed A/A: exit $?"
  pair_lines "$out/pkg-same/report.json" "$out/pkg-timed/report.json"
fi

if has against && in_time against 400; then
  # What --against adds to ci/gate.sh: a fresh build directory, so the head builds too.
  if ! command -v ccache > /dev/null 2>&1 && [ -n "${KGATE_CCACHE_BUNDLE:-}" ]; then
    mkdir -p /tmp/kgate-ccache-root
    for d in "$KGATE_CCACHE_BUNDLE"/*.deb; do dpkg -x "$d" /tmp/kgate-ccache-root; done
    export PATH=/tmp/kgate-ccache-root/usr/bin:$PATH
    export LD_LIBRARY_PATH=/tmp/kgate-ccache-root/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
  note "against: ccache $(ccache --version 2>/dev/null | head -1 || echo 'not found')"
  export CCACHE_DIR=$out/ccache
  ccache -C > /dev/null 2>&1
  gate() {  # name: one ci/gate.sh --against run, its steps' times
    KGATE_BUILD_DIR=$here/build-against KGATE_REPORTS=$out/against-$1 KGATE_GOOGLE_BENCHMARK=0 KGATE_JOBS=16 \
      bash "$here/ci/gate.sh" --against "$against_ref" --kernel softmax_block --kernel rms_norm_block --cases 16 \
      --speed-cases 1 > "$out/against-$1.log" 2>&1
    note "against ($1): exit $?; $(grep -E 'base build ccache' "$out/against-$1.log" | tail -1 | cut -c1-200)"
    note "  $(grep -E 'took:' "$out/against-$1.log" | tail -1 | sed 's/.*took: //')"
  }
  # This tree as a commit of its own, so that HEAD is what is built (the copy's history may lag).
  git -C "$here" add -A > /dev/null 2>&1
  git -C "$here" -c user.name=kgate -c user.email=kgate@localhost commit -q -m "the tree under test" > /dev/null 2>&1
  against_ref=${KGATE_AGAINST_REF:-HEAD}
  gate cold-both           # the head compiled into a cold ccache; the base (the same sources) hits it
  rm -rf "$here/.kgate-base/build"; ccache -C > /dev/null 2>&1
  gate cold-base           # the head built already; the base with an empty ccache
  rm -rf "$here/.kgate-base/build"
  gate warm-base           # the base again, its objects in ccache
  pair_lines "$out/against-warm-base/report.json"
fi

echo
echo "== summary (${SECONDS} s) =="
printf '%s\n' "${summary[@]}"
