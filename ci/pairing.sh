#!/usr/bin/env bash
# Pull-request pairing end to end (kgate check --baseline-build), with tests/pairing as the project:
# it is copied into a git repository of its own under OUT_DIR, its base commit built in a worktree,
# heads built beside it, each against kgate installed from KGATE_BUILD_DIR (default <repo>/build)
# into KGATE_INSTALL_PREFIX (default $build/install; `cmake --install` runs every time, and copies
# only what changed).
#   ci/pairing.sh cpu OUT_DIR            CI, no GPU (PAIR_CUDA=OFF builds): asserts what the report
#                                        says of a changed, an unchanged and a new kernel, of a base
#                                        that did not build, and that kgate merge refuses shards paired
#                                        with different bases. One line per assertion, PASS at the end;
#                                        FAIL: ... (exit 1) at the first that does not hold.
#   ci/pairing.sh gpu OUT_DIR [phase...] measurements (PAIR_CUDA=ON builds of the base commit):
#     build   base; same (the base commit again, another source and build directory); slow5, slow2,
#             slow1 (PAIR_EXTRA_EVERY_PAIR_ROWS_256=10, 25, 50 and PAIR_EXTRA_EVERY_PAIR_ROWS_1024=50:
#             about 5%, 2%, 1% more DRAM traffic); launch (PAIR_BLOCK_PAIR_ROWS_256=512); outside
#             (PAIR_TUNED_WARP_BLOCK=128: a file of the build, read at run time), in parallel
#     same    same vs base: every kernel UNCHANGED, not timed
#     slow5   slow5 vs base at delta 2%: exit 2, pair_rows_256 regressed against its base and not
#             against eager, the others unchanged
#     slow2   slow2 vs base at delta 0.5%: pair_rows_256 regressed against its base
#     launch  launch vs base: pair_rows_256 paired and timed, the others unchanged
#     outside outside vs base: pair_warp_rows's module code is the base's, but it launches other
#             blocks: paired and timed (base.launches names the difference), the others unchanged
#     fp      same vs base with --time-unchanged, a new --seed each run, until PAIR_FP_MIN base
#             comparisons per delta of PAIR_FP_DELTAS: how many are regressed (false positives)
#     calibrate (cuda) pilot heads with PAIR_PILOT_M (default "8 32") as M for both row kernels, each
#             timed against the base; per kernel, the slowdowns joined by lines from (0, 0) give M for 5%, 2% and 1%, and
#             slow5, slow2, slow1 are built again with them (OUT_DIR/gpu/calibrated.env)
#     power   slow1 vs base at delta 0.5%, PAIR_POWER_REPS runs: per kernel of PAIR_POWER_KERNELS,
#             the fraction of runs where every base comparison is regressed
#     Each run's decisions go to OUT_DIR/gpu/runs.jsonl; rates get Clopper-Pearson 95% intervals; a
#     table is printed last. KGATE_DEADLINE (seconds, default 540): a phase, or a run of fp or
#     power, that would start later than that is skipped and says so. PAIR_BACKEND=cpu is a dry run
#     of the same logic on the cpu kernels (pair_cpu_a slowed by PAIR_CPU_EXTRA_PASSES_A).
# Tunables (env): PAIR_CASES (8), PAIR_SPEED_CASES (gpu 2), PAIR_TIME_BUDGET (3), PAIR_FP_BUDGET (1),
# PAIR_POWER_BUDGET (3), PAIR_FP_MIN (300), PAIR_FP_DELTAS ("0.02 0.005"), PAIR_POWER_REPS (20),
# PAIR_POWER_DELTA (0.005), PAIR_POWER_RESERVE (seconds the fp phase leaves to power, 150),
# PAIR_SEED (first seed of fp and power, 1000), PAIR_FLAGS_<SLOW5|SLOW2|SLOW1|LAUNCH|OUTSIDE> (the variants'
# cmake -D flags), PAIR_SLOWED, PAIR_POWER_KERNELS, PAIR_SPEED_SHAPES (a JSON list that replaces the
# op file's speed_shapes in the copy; cpu mode: [{"B": 32, "N": 1024}], so that a cpu comparison
# takes a second, not twenty), PAIR_JOBS (build jobs; gpu: per build), PAIR_BUILD_VARIANTS (what the
# build phase builds), PAIR_PILOT_M, PAIR_PILOT_BUDGET (2), PAIR_CHECK_ARGS (more kgate check
# arguments for the fp and power runs, e.g. --fill-budget), PAIR_INJECT (extra: the slowed heads read
# more rows, PAIR_EXTRA_EVERY; spin: their blocks are held longer, PAIR_SPIN_CYCLES; for calibrate),
# PAIR_KGATE_PREFIX (an installed kgate to build
# the project against instead of installing KGATE_BUILD_DIR: the Debian package's /opt/kgate).
# The +1% power figure of docs/ci.md: PAIR_INJECT=spin PAIR_PILOT_M="150 300 600"
# PAIR_SPEED_SHAPES='[{"B": 4096, "N": 4096}]' ci/pairing.sh gpu OUT build calibrate power
set -uo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)  # (through symlinks)
mode=${1:?usage: ci/pairing.sh cpu|gpu OUT_DIR [phase...]}
out=${2:?usage: ci/pairing.sh cpu|gpu OUT_DIR [phase...]}
shift 2
case "$mode" in cpu|gpu) ;; *) echo "ci/pairing.sh: mode '$mode': cpu or gpu" >&2; exit 4 ;; esac
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=${KGATE_BUILD_DIR:-$here/build}
prefix=${KGATE_INSTALL_PREFIX:-$build/install}
deps=""
[ -f "$here/.deps-prefix" ] && deps=$(cat "$here/.deps-prefix")
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null | tail -1)
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
fail() { echo "FAIL: $*"; exit 1; }
field() {  # REPORT EXPR (d: the report; k(NAME): its kernel NAME, {} when absent)
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); K={k['name']: k for k in d['kernels']}
k=lambda n: K.get(n, {}); base=lambda n: k(n).get('base', {}); speed=lambda n: k(n).get('speed', [])
print($2)" "$1"
}

if [ -n "${PAIR_KGATE_PREFIX:-}" ]; then  # an installed kgate (the Debian package's /opt/kgate): no build
  prefix=$PAIR_KGATE_PREFIX
  [ -f "$prefix/lib/cmake/kgate/kgateConfig.cmake" ] || fail "PAIR_KGATE_PREFIX=$prefix holds no lib/cmake/kgate/kgateConfig.cmake"
  echo "==> ci/pairing.sh $mode: kgate installed in $prefix"
else
  echo "==> ci/pairing.sh $mode: installing kgate into $prefix"
  cmake --install "$build" --prefix "$prefix" --strip > "$out/install.log" 2>&1 ||
    { tail -20 "$out/install.log"; fail "cmake --install $build"; }
fi
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE="${KGATE_BUILD_TYPE:-RelWithDebInfo}"
            -DCMAKE_PREFIX_PATH="$prefix;$torch_prefix${deps:+;$deps}")
if command -v ccache > /dev/null 2>&1; then
  cmake_args+=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  export CCACHE_BASEDIR=$out  # (the worktrees and the repository share it)
fi

# The repository: tests/pairing as its first commit (the base), in $out/repo.
repo=$out/repo
git_() { git -C "$1" -c user.name=kgate -c user.email=kgate@localhost -c commit.gpgsign=false "${@:2}"; }
make_repo() {  # [speed shapes, JSON]
  rm -rf "$repo"
  mkdir -p "$repo"
  cp "$here"/tests/pairing/* "$repo/"
  if [ -n "${1:-}" ]; then
    python3 - "$repo/l2_normalize.op.json" "$1" <<'PY' || fail "PAIR_SPEED_SHAPES: not a JSON list of shapes: $1"
import json, sys
d = json.load(open(sys.argv[1]))
d["speed_shapes"] = json.loads(sys.argv[2])
assert isinstance(d["speed_shapes"], list) and d["speed_shapes"]
open(sys.argv[1], "w").write(json.dumps(d, indent=2) + "\n")
PY
  fi
  git_ "$repo" init -q -b main > /dev/null 2>&1 || git_ "$repo" init -q
  { git_ "$repo" add -A && git_ "$repo" commit -q -m "base: tests/pairing"; } || fail "could not commit the base"
  base_sha=$(git -C "$repo" rev-parse HEAD)
}
worktree() {  # DIR COMMIT
  rm -rf "$1"
  git -C "$repo" worktree add -q --detach "$1" "$2" > /dev/null 2>&1 || fail "git worktree add $1 $2"
}
build_project() {  # SOURCE BUILD_DIR [cmake flags...]: configure and build; the log is BUILD_DIR.log
  local src=$1 dir=$2
  shift 2
  rm -rf "$dir"
  { cmake -S "$src" -B "$dir" "${cmake_args[@]}" "$@" && cmake --build "$dir" -j "${PAIR_JOBS:-$(nproc)}"; } > "$dir.log" 2>&1
}

cpu_mode() {
  local t0=$SECONDS runs=$out/runs
  rm -rf "$runs" "$out"/build-* "$out"/*-src
  mkdir -p "$runs"
  local shapes='[{"B": 32, "N": 1024}]'
  make_repo "${PAIR_SPEED_SHAPES:-$shapes}"
  echo "base commit $base_sha"
  # The head: pair_cpu_a reads each row once more (real work), and a new kernel, pair_cpu_c.
  sed -i 's/kExtraPasses = PAIR_CPU_EXTRA_PASSES;/kExtraPasses = PAIR_CPU_EXTRA_PASSES + 1;/' "$repo/pair_cpu_a.cpp"
  grep -q 'PAIR_CPU_EXTRA_PASSES + 1;' "$repo/pair_cpu_a.cpp" || fail "pair_cpu_a.cpp: no kExtraPasses line to change"
  sed 's/pair_cpu_b/pair_cpu_c/g' "$repo/pair_cpu_b.cpp" > "$repo/pair_cpu_c.cpp"
  echo 'kgate_add_kernel(pair_cpu_c OP l2_normalize BACKEND cpu OP_FILE l2_normalize.op.json SOURCES pair_cpu_c.cpp)' \
    >> "$repo/CMakeLists.txt"
  { git_ "$repo" add -A && git_ "$repo" commit -q -m "head: pair_cpu_a reads each row twice; pair_cpu_c"; } ||
    fail "could not commit the head"
  # A base that does not build: the base commit with a syntax error in pair_cpu_b.
  worktree "$out/broken-src" "$base_sha"
  sed -i 's/^namespace {$/namespace {\nnot C++;/' "$out/broken-src/pair_cpu_b.cpp"
  git_ "$out/broken-src" commit -q -am "broken: a syntax error in pair_cpu_b" || fail "could not commit the broken base"
  local broken_sha
  broken_sha=$(git -C "$out/broken-src" rev-parse HEAD)
  worktree "$out/base-src" "$base_sha"

  local t1=$SECONDS
  build_project "$out/base-src" "$out/build-base" -DPAIR_CUDA=OFF || { tail -30 "$out/build-base.log"; fail "the base did not build"; }
  build_project "$repo" "$out/build-head" -DPAIR_CUDA=OFF || { tail -30 "$out/build-head.log"; fail "the head did not build"; }
  local base_error=""
  if build_project "$out/broken-src" "$out/build-broken" -DPAIR_CUDA=OFF; then
    fail "the broken base built"
  fi
  base_error="building the base ($broken_sha) failed: $(tail -5 "$out/build-broken.log" | tr '\n' ' ' | cut -c1-600)"
  echo "ok: base, head built; the broken base did not build ($((SECONDS - t1)) s for the three)"

  local head=$out/build-head rc json
  kcheck() {  # NAME ARGS...: the head's kgate check; the log and report under $runs; sets rc, json
    "$head/bin/kgate" check --backend cpu --cases 8 --family random --speed-cases 1 --time-budget 0.2 -q \
      --out "$runs/$1" "${@:2}" > "$runs/$1.log" 2>&1
    rc=$?
    json=$runs/$1/report.json
    [ -f "$json" ] || [ "$rc" -eq 4 ] || { tail -30 "$runs/$1.log"; fail "$1: exit $rc and no report"; }
  }
  # The exit code the report's outcomes call for (1 incorrect, 2 regressed, else 0).
  verdict() { field "$1" "1 if any(x['outcome'] == 'failed' for x in d['kernels']) else 2 if any(x['outcome'] == 'regressed' for x in d['kernels']) else 0"; }
  decisions() { field "$1" "'; '.join(x['name'] + ': ' + ', '.join(s['baseline'] + ' ' + s['decision'] for s in x['speed']) for x in d['kernels'])"; }

  # 1. The head against the base.
  KGATE_BASE_REF=main KGATE_BASE_SHA=$base_sha kcheck paired --baseline-build "$out/build-base"
  [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || { tail -30 "$runs/paired.log"; fail "head against base: exit $rc"; }
  [ "$rc" -eq "$(verdict "$json")" ] || fail "head against base: exit $rc, the report's outcomes call for $(verdict "$json")"
  echo "ok: head against base: exit $rc, as its outcomes say ($(decisions "$json"))"
  [ "$(field "$json" "base('pair_cpu_a').get('status')")" = paired ] || fail "pair_cpu_a: base $(field "$json" "base('pair_cpu_a')")"
  [ "$(field "$json" "sorted(s['baseline'] for s in speed('pair_cpu_a'))")" = "['eager', 'pair_cpu_a']" ] ||
    fail "pair_cpu_a: timed against $(field "$json" "[s['baseline'] for s in speed('pair_cpu_a')]")"
  [ "$(field "$json" "all(s['blocks'] > 0 for s in speed('pair_cpu_a'))")" = True ] || fail "pair_cpu_a: a comparison without blocks"
  echo "ok: pair_cpu_a (changed): paired, timed against its base and against eager"
  [ "$(field "$json" "base('pair_cpu_b').get('status')")" = unchanged ] || fail "pair_cpu_b: base $(field "$json" "base('pair_cpu_b')")"
  [ "$(field "$json" "[(s['decision'], s['gates'], s.get('blocks', 0)) for s in speed('pair_cpu_b')]")" = "[('unchanged', False, 0)]" ] ||
    fail "pair_cpu_b: speed $(field "$json" "[(s['baseline'], s['decision'], s['gates']) for s in speed('pair_cpu_b')]")"
  echo "ok: pair_cpu_b (the same code): unchanged, one speed entry, decision unchanged, gates false, not timed"
  [ "$(field "$json" "base('pair_cpu_c').get('status')")" = new ] || fail "pair_cpu_c: base $(field "$json" "base('pair_cpu_c')")"
  [ "$(field "$json" "[s['baseline'] for s in speed('pair_cpu_c')]")" = "['eager']" ] ||
    fail "pair_cpu_c: timed against $(field "$json" "[s['baseline'] for s in speed('pair_cpu_c')]")"
  echo "ok: pair_cpu_c (new in the head): new, timed against eager alone"
  [ "$(field "$json" "d['meta']['base']['error']")" = "" ] || fail "meta.base.error: $(field "$json" "d['meta']['base']['error']")"
  [ "$(field "$json" "bool(d['meta']['base'].get('build')) and bool(d['meta']['base'].get('head_build'))")" = True ] ||
    fail "meta.base: build or head_build missing: $(field "$json" "d['meta']['base']")"
  [ "$(field "$json" "d['meta']['base'].get('warnings')")" = "[]" ] || fail "meta.base.warnings: $(field "$json" "d['meta']['base']['warnings']")"
  [ "$(field "$json" "(d['meta']['base'].get('sha'), d['meta']['base'].get('ref'))")" = "('$base_sha', 'main')" ] ||
    fail "meta.base sha/ref: $(field "$json" "d['meta']['base']")"
  echo "ok: meta.base: error '', build and head_build recorded, no warnings, sha and ref from KGATE_BASE_SHA/REF"

  # 2. A base that did not build: every kernel gated against eager alone.
  KGATE_BASE_ERROR=$base_error kcheck failed_base --baseline-build "$out/build-broken"
  [ "$rc" -eq 0 ] || [ "$rc" -eq 2 ] || { tail -30 "$runs/failed_base.log"; fail "failed base: exit $rc"; }
  [ "$rc" -eq "$(verdict "$json")" ] || fail "failed base: exit $rc, the eager-only outcomes call for $(verdict "$json")"
  case "$(field "$json" "d['meta']['base']['error']")" in
    "building the base ($broken_sha) failed: "*) ;;
    *) fail "failed base: meta.base.error '$(field "$json" "d['meta']['base']['error']")'" ;;
  esac
  [ "$(field "$json" "sorted((x['name'], x['base'].get('status'), [s['baseline'] for s in x['speed']]) for x in d['kernels'])")" = \
    "[('pair_cpu_a', 'new', ['eager']), ('pair_cpu_b', 'new', ['eager']), ('pair_cpu_c', 'new', ['eager'])]" ] ||
    fail "failed base: not eager-only: $(field "$json" "[(x['name'], x.get('base'), [s['baseline'] for s in x['speed']]) for x in d['kernels']]")"
  echo "ok: a base that did not build: every kernel gated against eager alone, exit $rc (eager-only: $(decisions "$json"))"
  echo "    meta.base.error: $(field "$json" "d['meta']['base']['error'][:160]")..."
  KGATE_BASE_ERROR=$base_error kcheck failed_base_required --baseline-build "$out/build-broken" --require-base
  [ "$rc" -eq 4 ] || { tail -20 "$runs/failed_base_required.log"; fail "failed base, --require-base: exit $rc, expected 4"; }
  grep -q -- "--require-base: the base build cannot be used: building the base" "$runs/failed_base_required.log" ||
    { cat "$runs/failed_base_required.log"; fail "failed base, --require-base: the reason is not given"; }
  echo "ok: a base that did not build, --require-base: exit 4, with the reason"

  # 3. kgate merge: shards paired with different base commits are refused; with the same, joined.
  KGATE_BASE_SHA=$base_sha kcheck shard1 --baseline-build "$out/build-base" --shard 1/2 --no-speed
  [ "$rc" -eq 0 ] || { tail -20 "$runs/shard1.log"; fail "shard 1/2: exit $rc"; }
  KGATE_BASE_SHA=$broken_sha kcheck shard2_other --baseline-build "$out/build-base" --shard 2/2 --no-speed
  [ "$rc" -eq 0 ] || { tail -20 "$runs/shard2_other.log"; fail "shard 2/2: exit $rc"; }
  "$head/bin/kgate" merge "$runs/shard1/report.json" "$runs/shard2_other/report.json" --out "$runs/merged_other" \
    > "$runs/merge_other.log" 2>&1
  rc=$?
  [ "$rc" -ne 0 ] || { cat "$runs/merge_other.log"; fail "kgate merge of shards paired with different bases: exit 0"; }
  { grep -q "paired with base $broken_sha" "$runs/merge_other.log" && grep -q "$base_sha" "$runs/merge_other.log"; } ||
    { cat "$runs/merge_other.log"; fail "kgate merge: the bases are not named"; }
  echo "ok: kgate merge of shards paired with different bases: exit $rc, both bases named"
  KGATE_BASE_SHA=$base_sha kcheck shard2 --baseline-build "$out/build-base" --shard 2/2 --no-speed
  "$head/bin/kgate" merge "$runs/shard1/report.json" "$runs/shard2/report.json" --out "$runs/merged" > "$runs/merge.log" 2>&1
  rc=$?
  [ "$rc" -eq 0 ] || { cat "$runs/merge.log"; fail "kgate merge of shards paired with the same base: exit $rc"; }
  [ "$(field "$runs/merged/report.json" "sorted(x['name'] for x in d['kernels'])")" = "['pair_cpu_a', 'pair_cpu_b', 'pair_cpu_c']" ] ||
    fail "merged: $(field "$runs/merged/report.json" "[x['name'] for x in d['kernels']]")"
  echo "ok: kgate merge of shards paired with the same base: exit 0, all three kernels"

  # 4. A head whose op file differs from the base's (another eps, another summary): the report lists
  # the fields that define the op (not the summary); both sides are judged under the head's.
  worktree "$out/op-src" "$base_sha"
  sed -i 's/"eps": 1e-12/"eps": 1e-10/; s/"summary": "/"summary": "changed: /' "$out/op-src/l2_normalize.op.json"
  grep -q '"eps": 1e-10' "$out/op-src/l2_normalize.op.json" || fail "l2_normalize.op.json: no eps to change"
  build_project "$out/op-src" "$out/build-op" -DPAIR_CUDA=OFF || { tail -30 "$out/build-op.log"; fail "the op-file head did not build"; }
  "$out/build-op/bin/kgate" check --backend cpu --cases 8 --family random --no-speed --out "$runs/op" \
    --baseline-build "$out/build-base" > "$runs/op.log" 2>&1
  rc=$?
  json=$runs/op/report.json
  [ "$rc" -eq 0 ] || { tail -20 "$runs/op.log"; fail "op-file head against base: exit $rc"; }
  [ "$(field "$json" "[base(n).get('op_file_changed') for n in ('pair_cpu_a', 'pair_cpu_b')]")" = "[['attributes.eps'], ['attributes.eps']]" ] ||
    fail "op-file head: $(field "$json" "[x.get('base') for x in d['kernels']]")"
  grep -q "pair_cpu_a: the base's op file differs from the head's in attributes.eps; both are judged under the head's" "$runs/op.log" ||
    { cat "$runs/op.log"; fail "op-file head: the console does not say which fields differ"; }
  echo "ok: a head whose op file differs: base.op_file_changed lists attributes.eps (not the summary), said on the console"

  # 5. --require-sandbox with a base build: the workers read the base's modules inside their sandbox.
  if python3 -c 'import ctypes, sys; sys.exit(0 if ctypes.CDLL(None).syscall(444, None, 0, 1) >= 1 else 1)' 2>/dev/null; then
    "$head/bin/kgate" --require-sandbox check --backend cpu --cases 8 --family random --no-speed -q \
      --out "$runs/sandboxed" --baseline-build "$out/build-base" > "$runs/sandboxed.log" 2>&1
    rc=$?
    json=$runs/sandboxed/report.json
    [ "$rc" -eq 0 ] || { tail -20 "$runs/sandboxed.log"; fail "--require-sandbox with a base build: exit $rc"; }
    case "$(field "$json" "d['meta']['config'].get('sandbox', '')")" in
      landlock*|mount*) ;;
      *) fail "--require-sandbox with a base build: sandbox '$(field "$json" "d['meta']['config'].get('sandbox')")'" ;;
    esac
    [ "$(field "$json" "[base(n).get('status') for n in ('pair_cpu_a', 'pair_cpu_b', 'pair_cpu_c')]")" = "['paired', 'unchanged', 'new']" ] ||
      fail "--require-sandbox with a base build: $(field "$json" "[x.get('base') for x in d['kernels']]")"
    echo "ok: --require-sandbox with a base build: exit 0, workers sandboxed ($(field "$json" "d['meta']['config']['sandbox'][:40]")), paired/unchanged/new as before"
  else
    echo "SKIPPED (visibly): --require-sandbox with a base build: no Landlock on this machine"
  fi
  echo "took $((SECONDS - t0)) s"
  echo "PASS"
}

# ---- gpu mode ---------------------------------------------------------------------------------
gpu_mode() {
  local phases=("$@")
  [ ${#phases[@]} -gt 0 ] || phases=(build same slow5 slow2 launch outside fp power)
  local backend=${PAIR_BACKEND:-cuda}
  local gout=$out/gpu
  local deadline=${KGATE_DEADLINE:-540}
  local cases=${PAIR_CASES:-8} speed_cases=${PAIR_SPEED_CASES:-2}
  local budget=${PAIR_TIME_BUDGET:-3} fp_budget=${PAIR_FP_BUDGET:-1} power_budget=${PAIR_POWER_BUDGET:-3}
  local fp_min=${PAIR_FP_MIN:-300} fp_deltas=${PAIR_FP_DELTAS:-0.02 0.005}
  local power_reps=${PAIR_POWER_REPS:-20} power_delta=${PAIR_POWER_DELTA:-0.005} reserve=${PAIR_POWER_RESERVE:-150}
  local seed0=${PAIR_SEED:-1000}
  local cuda slowed power_kernels flags_slow5 flags_slow2 flags_slow1 flags_launch flags_outside outside_kernel
  if [ "$backend" = cuda ]; then
    cuda=${PAIR_CUDA:-ON}
    slowed=${PAIR_SLOWED:-pair_rows_256}
    power_kernels=${PAIR_POWER_KERNELS:-pair_rows_256 pair_rows_1024}
    flags_slow5=${PAIR_FLAGS_SLOW5:--DPAIR_EXTRA_EVERY_PAIR_ROWS_256=10}
    flags_slow2=${PAIR_FLAGS_SLOW2:--DPAIR_EXTRA_EVERY_PAIR_ROWS_256=25}
    flags_slow1=${PAIR_FLAGS_SLOW1:--DPAIR_EXTRA_EVERY_PAIR_ROWS_256=50 -DPAIR_EXTRA_EVERY_PAIR_ROWS_1024=50}
    flags_launch=${PAIR_FLAGS_LAUNCH:--DPAIR_BLOCK_PAIR_ROWS_256=512}
    flags_outside=${PAIR_FLAGS_OUTSIDE:--DPAIR_TUNED_WARP_BLOCK=128}
    outside_kernel=pair_warp_rows
  else  # a dry run: pair_cpu_a stands for the slowed kernels, one more read pass for each knob
    cuda=${PAIR_CUDA:-OFF}
    slowed=${PAIR_SLOWED:-pair_cpu_a}
    power_kernels=${PAIR_POWER_KERNELS:-pair_cpu_a}
    flags_slow5=${PAIR_FLAGS_SLOW5:--DPAIR_CPU_EXTRA_PASSES_A=1}
    flags_slow2=${PAIR_FLAGS_SLOW2:--DPAIR_CPU_EXTRA_PASSES_A=1}
    flags_slow1=${PAIR_FLAGS_SLOW1:--DPAIR_CPU_EXTRA_PASSES_A=1}
    flags_launch=${PAIR_FLAGS_LAUNCH:--DPAIR_CPU_EXTRA_PASSES_A=1}
    flags_outside=${PAIR_FLAGS_OUTSIDE:--DPAIR_CPU_EXTRA_PASSES_A=1}
    outside_kernel=pair_cpu_a
  fi
  mkdir -p "$gout"
  local summary=()
  note() { summary+=("$1"); echo "==> $1"; }
  has() { local s; for s in "${phases[@]}"; do [ "$s" = "$1" ] && return 0; done; return 1; }
  in_time() {  # PHASE SECONDS_IT_NEEDS [DEADLINE]
    local until=${3:-$deadline}
    if [ $((SECONDS + $2)) -gt "$until" ]; then note "$1: skipped (at ${SECONDS} s, needs ~$2 s, deadline $until s)"; return 1; fi
  }
  write_tools "$gout/pairing.py"
  local py=(python3 "$gout/pairing.py")

  if has build; then
    local t0=$SECONDS variant pids=() names=()
    rm -rf "$gout"/build-* "$gout"/base-src "$gout"/same-src "$gout/runs.jsonl" "$gout"/runs
    make_repo "${PAIR_SPEED_SHAPES:-}"
    worktree "$gout/base-src" "$base_sha"
    worktree "$gout/same-src" "$base_sha"
    local n jobs
    n=$(wc -w <<< "${PAIR_BUILD_VARIANTS:-base same slow5 slow2 slow1 launch outside}")
    jobs=${PAIR_JOBS:-$(( ($(nproc) + n - 1) / n + 1 ))}
    for variant in ${PAIR_BUILD_VARIANTS:-base same slow5 slow2 slow1 launch outside}; do
      local src=$repo flags=""
      case $variant in
        base) src=$gout/base-src ;;
        same) src=$gout/same-src ;;
        slow5) flags=$flags_slow5 ;;
        slow2) flags=$flags_slow2 ;;
        slow1) flags=$flags_slow1 ;;
        launch) flags=$flags_launch ;;
        outside) flags=$flags_outside ;;
      esac
      # shellcheck disable=SC2086
      PAIR_JOBS=$jobs build_project "$src" "$gout/build-$variant" -DPAIR_CUDA="$cuda" \
        -DCMAKE_CUDA_ARCHITECTURES="${KGATE_CUDA_ARCHS:-90}" $flags &
      pids+=($!)
      names+=("$variant")
    done
    local i rc=0
    for i in "${!pids[@]}"; do
      wait "${pids[$i]}" || { rc=1; tail -20 "$gout/build-${names[$i]}.log"; echo "build ${names[$i]} failed"; }
    done
    note "build: base $base_sha; ${PAIR_BUILD_VARIANTS:-base same slow5 slow2 slow1 launch outside} (PAIR_CUDA=$cuda, $jobs jobs each): exit $rc in $((SECONDS - t0)) s"
    [ $rc -eq 0 ] || exit 1
    echo "$base_sha" > "$gout/base_sha"
  fi
  [ -f "$gout/base_sha" ] || { echo "ci/pairing.sh: no builds in $gout (run the build phase)" >&2; exit 4; }
  local sha
  sha=$(cat "$gout/base_sha")
  mkdir -p "$gout/runs"

  # One kgate check of VARIANT against the base; its decisions go to runs.jsonl. Sets last_rc,
  # last_s (wall seconds).
  local last_rc=0 last_s=0
  pair_run() {  # PHASE VARIANT SEED ARGS...
    local phase=$1 variant=$2 seed=$3 name="$1-$2-seed$3" t0=$SECONDS
    shift 3
    # A variant the build phase did not build (PAIR_BUILD_VARIANTS) is no run to count.
    [ -x "$gout/build-$variant/bin/kgate" ] ||
      { echo "ci/pairing.sh: $phase needs the $variant build ($gout/build-$variant): add it to PAIR_BUILD_VARIANTS" >&2; exit 4; }
    KGATE_BASE_SHA=$sha KGATE_BASE_REF=base "$gout/build-$variant/bin/kgate" check --backend "$backend" \
      --baseline-build "$gout/build-base" --cases "$cases" --family random --speed-cases "$speed_cases" --seed "$seed" \
      -q --out "$gout/runs/$name" "$@" > "$gout/runs/$name.log" 2>&1
    last_rc=$?
    last_s=$((SECONDS - t0))
    "${py[@]}" record "$gout/runs.jsonl" "$gout/runs/$name/report.json" "$phase" "$variant" "$seed" "$last_rc" "$last_s"
  }

  # calibrate: the extra work's slowdown is not exactly 1/(2M) (the extra elements are read inside a row's
  # reduction, and tails matter): pilot heads with M in PAIR_PILOT_M, each timed against the base,
  # give each kernel's slowdown at each M; the curve through them (from no slowdown at no extra work)
  # gives the M of 5%, 2% and 1%, and slow5, slow2 and slow1 are built with them.
  # PAIR_INJECT=spin: the pilots and the heads hold each row kernel's blocks PAIR_PILOT_M SM cycles
  # longer instead (S cycles for 5%, 2%, 1% read off the same kind of curve).
  if has calibrate && [ "$backend" = cuda ] && in_time calibrate 240; then
    local t0=$SECONDS m pids=() pilots=${PAIR_PILOT_M:-8 32} jobs
    jobs=${PAIR_JOBS:-$(( ($(nproc) + 1) / 2 + 1 ))}
    local knob=PAIR_EXTRA_EVERY_
    [ "${PAIR_INJECT:-extra}" = spin ] && knob=PAIR_SPIN_CYCLES_
    for m in $pilots; do
      PAIR_JOBS=$jobs build_project "$repo" "$gout/build-pilot$m" -DPAIR_CUDA="$cuda" \
        -DCMAKE_CUDA_ARCHITECTURES="${KGATE_CUDA_ARCHS:-90}" -D${knob}PAIR_ROWS_256="$m" \
        -D${knob}PAIR_ROWS_1024="$m" &
      pids+=($!)
    done
    for m in "${pids[@]}"; do wait "$m" || { note "calibrate: a pilot build failed"; exit 1; }; done
    for m in $pilots; do pair_run "pilot-$m" "pilot$m" 1 --time-budget "${PAIR_PILOT_BUDGET:-2}"; done
    "${py[@]}" calibrate "$gout/runs.jsonl" "$pilots" "$slowed" "$power_kernels" "${PAIR_INJECT:-extra}" > "$gout/calibrated.env" ||
      { note "calibrate: $(cat "$gout/calibrated.env")"; exit 1; }
    # shellcheck disable=SC1091
    . "$gout/calibrated.env"
    flags_slow5=$PAIR_FLAGS_SLOW5 flags_slow2=$PAIR_FLAGS_SLOW2 flags_slow1=$PAIR_FLAGS_SLOW1
    pids=()
    local variant flags
    for variant in slow5 slow2 slow1; do
      case $variant in slow5) flags=$flags_slow5 ;; slow2) flags=$flags_slow2 ;; slow1) flags=$flags_slow1 ;; esac
      # shellcheck disable=SC2086
      PAIR_JOBS=$jobs build_project "$repo" "$gout/build-$variant" -DPAIR_CUDA="$cuda" \
        -DCMAKE_CUDA_ARCHITECTURES="${KGATE_CUDA_ARCHS:-90}" $flags &
      pids+=($!)
    done
    for m in "${pids[@]}"; do wait "$m" || { note "calibrate: a slowed build failed"; exit 1; }; done
    note "calibrate: pilots M=$pilots; $(grep '^# ' "$gout/calibrated.env" | sed 's/^# //' | tr '\n' ' ')-> slow5: $flags_slow5; slow2: $flags_slow2; slow1: $flags_slow1 ($((SECONDS - t0)) s)"
  fi

  if has same && in_time same 60; then
    pair_run same same 1 --time-budget "$budget"
    note "same vs base: exit $last_rc in $last_s s; $("${py[@]}" expect "$gout/runs.jsonl" same "$slowed")"
  fi
  if has slow5 && in_time slow5 90; then
    pair_run slow5 slow5 1 --delta 0.02 --time-budget "$budget"
    note "slow5 vs base (delta 2%): exit $last_rc in $last_s s; $("${py[@]}" expect "$gout/runs.jsonl" slow5 "$slowed")"
  fi
  if has slow2 && in_time slow2 90; then
    pair_run slow2 slow2 1 --delta 0.005 --time-budget "$budget"
    note "slow2 vs base (delta 0.5%): exit $last_rc in $last_s s; $("${py[@]}" expect "$gout/runs.jsonl" slow2 "$slowed")"
  fi
  if has launch && in_time launch 90; then
    pair_run launch launch 1 --time-budget "$budget"
    note "launch vs base: exit $last_rc in $last_s s; $("${py[@]}" expect "$gout/runs.jsonl" launch "$slowed")"
  fi

  if has outside && in_time outside 90; then
    pair_run outside outside 1 --time-budget "$budget"
    note "outside vs base (only a file the build writes and $outside_kernel reads differs): exit $last_rc in $last_s s; $("${py[@]}" expect "$gout/runs.jsonl" outside "$outside_kernel")"
  fi

  # fp and power go on from what runs.jsonl holds (a later call adds runs, with new seeds).
  if has fp; then
    # Each delta gets an equal share of the time up to the deadline, less what power keeps.
    local until=$deadline start=$SECONDS ndeltas=0 idx=0 delta
    has power && until=$((deadline - reserve))
    for delta in $fp_deltas; do ndeltas=$((ndeltas + 1)); done
    for delta in $fp_deltas; do
      idx=$((idx + 1))
      local share=$(( start + (until - start) * idx / ndeltas )) runs=0 need=30 seed got
      seed=$("${py[@]}" next_seed "$gout/runs.jsonl" "fp-$delta" "$seed0")
      got=$("${py[@]}" count "$gout/runs.jsonl" "fp-$delta")
      while [ "$got" -lt "$fp_min" ]; do
        in_time "fp delta $delta run $((runs + 1))" "$need" "$share" || break
        # shellcheck disable=SC2086
        pair_run "fp-$delta" same "$seed" --time-unchanged --delta "$delta" --time-budget "$fp_budget" ${PAIR_CHECK_ARGS:-}
        got=$("${py[@]}" count "$gout/runs.jsonl" "fp-$delta")
        runs=$((runs + 1))
        seed=$((seed + 1))
        need=$last_s
      done
      note "fp delta $delta: $runs runs now, $got base comparisons in all ($("${py[@]}" rate "$gout/runs.jsonl" "fp-$delta"))"
    done
  fi
  if has power; then
    local runs=0 need=30 seed done_runs
    seed=$("${py[@]}" next_seed "$gout/runs.jsonl" power "$seed0")
    done_runs=$("${py[@]}" runs "$gout/runs.jsonl" power)
    while [ $((done_runs + runs)) -lt "$power_reps" ]; do
      in_time "power run $((done_runs + runs + 1))" "$need" || break
      # shellcheck disable=SC2086
      pair_run power slow1 "$seed" --delta "$power_delta" --time-budget "$power_budget" ${PAIR_CHECK_ARGS:-}
      runs=$((runs + 1))
      seed=$((seed + 1))
      need=$last_s
    done
    note "power (slow1 vs base, delta $power_delta): $runs runs now, $((done_runs + runs)) in all"
  fi

  echo
  echo "== summary (${SECONDS} s; runs: $gout/runs.jsonl) =="
  printf '%s\n' "${summary[@]}"
  echo
  "${py[@]}" table "$gout/runs.jsonl" "$power_kernels"
}

# The gpu mode's report reading: record (a run's decisions as one JSON line), expect (a phase's
# expectations against its last run), count (a phase's base comparisons), runs, next_seed, rate, table.
write_tools() {
  cat > "$1" <<'PY'
import json, math, sys

def load(path):
    try:
        return [json.loads(line) for line in open(path)]
    except FileNotFoundError:
        return []

def record(jsonl, report, phase, variant, seed, rc, seconds):
    rec = {"phase": phase, "variant": variant, "seed": int(seed), "rc": int(rc), "seconds": int(seconds)}
    try:
        d = json.load(open(report))
    except Exception as e:
        rec["error"] = f"no report: {e}"
    else:
        c, base = d["meta"].get("config", {}), d["meta"].get("base", {})
        rec.update(backend=d["meta"].get("backend"), delta=c.get("delta"), alpha=c.get("alpha"), budget=c.get("time_budget_s"),
                   run_comparisons=c.get("run_comparisons"), base_error=base.get("error", ""), kernels={})
        # Holm's m: every speed entry but the skipped, invalid and unchanged ones (runtime/pipeline.cpp,
        # adjust_speed_decisions).
        rec["holm_m"] = sum(1 for k in d["kernels"] for s in k["speed"]
                            if s["decision"] not in ("skipped", "invalid", "unchanged"))
        rec["timed"] = sum(1 for k in d["kernels"] for s in k["speed"] if s.get("blocks", 0) > 0)
        for k in d["kernels"]:
            rec["kernels"][k["name"]] = {
                "outcome": k["outcome"], "status": (k.get("base") or {}).get("status"),
                "launches": (k.get("base") or {}).get("launches"),
                "speed": [{"baseline": s["baseline"], "against_base": s["baseline"] != "eager",
                           "case": (s.get("case") or {}).get("id", ""), "decision": s["decision"],
                           "gates": s.get("gates"), "ratio": s.get("ratio"), "lower": s.get("ratio_lower"),
                           "upper": s.get("ratio_upper"), "p": s.get("p_value"), "p_adjusted": s.get("p_adjusted"),
                           "delta": s.get("delta"), "alpha": s.get("alpha"), "blocks": s.get("blocks", 0),
                           "dropped": s.get("dropped_blocks", 0), "base_ns": s.get("baseline_median_ns"),
                           "head_ns": s.get("candidate_median_ns"), "seconds": s.get("seconds"),
                           "holm_demoted": "after Holm correction" in s.get("note", "")}
                          for s in k["speed"]]}
    with open(jsonl, "a") as f:
        f.write(json.dumps(rec) + "\n")

def last(jsonl, phase):
    runs = [r for r in load(jsonl) if r["phase"] == phase]
    return runs[-1] if runs else None

def base_entries(k):
    return [s for s in k["speed"] if s["against_base"]]

def case_key(s):  # "f32:B=4096,N=4096" (the case id less its op, layout, values and seed)
    parts = s["case"].split(":")
    return ":".join(parts[1:3]) if len(parts) > 2 else s["case"]

def num(v):
    return f"{v:.4f}" if isinstance(v, (int, float)) else str(v)

def entry(s):
    if not s["blocks"]:
        return f"{s['baseline']} {s['decision']}"
    return (f"{s['baseline']} {case_key(s)} {s['decision']} x{num(s['ratio'])} [{num(s['lower'])}, {num(s['upper'])}] "
            f"{s['blocks']} blocks")

def expect(jsonl, phase, slowed):
    r = last(jsonl, phase)
    if r is None or "error" in r:
        return f"UNEXPECTED: {r and r.get('error') or 'no run'}"
    ks, problems = r["kernels"], []
    others = [n for n in ks if n != slowed]
    def unchanged(n):
        k = ks[n]
        return k["status"] == "unchanged" and all(s["decision"] == "unchanged" and s["blocks"] == 0 for s in k["speed"])
    if phase == "same":
        problems += [f"{n} {ks[n]['status']}" for n in ks if not unchanged(n)]
        if r["rc"] != 0: problems.append(f"exit {r['rc']}")
        # On the GPU the launches were compared too, and found the same.
        problems += [f"{n} launches {ks[n].get('launches')}" for n in ks
                     if r.get("backend") == "cuda" and not (ks[n].get("launches") or {}).get("cases")]
    else:
        k = ks.get(slowed)
        if k is None:
            return f"UNEXPECTED: no {slowed} in the report"
        b = base_entries(k)
        if k["status"] != "paired" or not b or any(s["blocks"] == 0 for s in b):
            problems.append(f"{slowed} {k['status']}, {len(b)} base comparisons")
        if phase in ("slow5", "slow2") and not all(s["decision"] == "regressed" for s in b):
            problems.append(f"{slowed} against its base: {[s['decision'] for s in b]}")
        if phase == "outside" and r.get("backend") == "cuda" and "different" not in (k.get("launches") or {}):
            # (the launch lines compared, to see what the record held)
            problems.append(f"{slowed}: no launch difference recorded ({json.dumps(k.get('launches'))[:1500]})")
        if phase == "slow5":
            eager = [s["decision"] for s in k["speed"] if not s["against_base"]]
            if "regressed" in eager: problems.append(f"{slowed} against eager: {eager}")
            if r["rc"] != 2: problems.append(f"exit {r['rc']}, expected 2")
        problems += [f"{n} {ks[n]['status']}" for n in others if not unchanged(n)]
    decided = "".join(f"\n    {n}: {ks[n]['status']}: " + ", ".join(entry(s) for s in ks[n]["speed"]) for n in sorted(ks))
    return ("as expected" if not problems else "UNEXPECTED: " + "; ".join(problems)) + decided

def calibrate(jsonl, pilots, slowed, power_kernels, inject="extra"):
    # The slowdown is not linear in the knob (spin cycles hide under memory latency at first, extra
    # reads land in rows being reduced): per kernel, the pilots' slowdowns (the mean ratio - 1 of
    # their base comparisons) against x, the knob's dose (spin: S cycles; extra: 1/M), joined by
    # straight lines from (0, 0); the dose for a slowdown s is read off that curve (past the last
    # pilot, along its last segment). Pilots near the target make it exact.
    spin = inject == "spin"
    knob = "PAIR_SPIN_CYCLES_" if spin else "PAIR_EXTRA_EVERY_"
    points = {}  # kernel -> {dose: [slowdown, ...]}
    for m in pilots.split():
        r = last(jsonl, f"pilot-{m}")
        if r is None or "error" in r:
            print(f"no pilot run for M={m}"); sys.exit(1)
        dose = int(m) if spin else 1 / int(m)
        for name, k in r["kernels"].items():
            for s in base_entries(k):
                if s["blocks"] and isinstance(s["ratio"], (int, float)):
                    points.setdefault(name, {}).setdefault(dose, []).append(s["ratio"] - 1)
    curve = {n: [(0.0, 0.0)] + sorted((x, sum(v) / len(v)) for x, v in p.items()) for n, p in points.items()}
    def m_for(name, slowdown):
        pts = curve.get(name)
        if not pts or pts[-1][1] <= 0:
            print(f"no slowdown measured for {name}: {pts}"); sys.exit(1)
        x = None
        for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
            if y1 > y0 and y0 <= slowdown <= y1:
                x = x0 + (slowdown - y0) * (x1 - x0) / (y1 - y0)
                break
        if x is None:  # past the last pilot (or a non-increasing curve): the last rising segment
            seg = [(a, b) for a, b in zip(pts, pts[1:]) if b[1] > a[1]][-1]
            (x0, y0), (x1, y1) = seg
            x = x0 + (slowdown - y0) * (x1 - x0) / (y1 - y0)
        return max(1, round(x if spin else 1 / x))
    for name in sorted(curve):
        print(f"# {name}: " + ", ".join(f"{'S' if spin else 'M'}={round(x) if spin else round(1 / x)}: "
                                        f"{y * 100:+.2f}%" for x, y in curve[name][1:]))
    upper = lambda n: n.upper()
    print(f"PAIR_FLAGS_SLOW5='-D{knob}{upper(slowed)}={m_for(slowed, 0.05)}'")
    print(f"PAIR_FLAGS_SLOW2='-D{knob}{upper(slowed)}={m_for(slowed, 0.02)}'")
    print("PAIR_FLAGS_SLOW1='" + " ".join(f"-D{knob}{upper(n)}={m_for(n, 0.01)}"
                                          for n in power_kernels.split()) + "'")

def count(jsonl, phase):  # base comparisons over every run of the phase
    print(sum(len(base_entries(k)) for r in load(jsonl) if r["phase"] == phase and "error" not in r
              for k in r["kernels"].values()))

def runs(jsonl, phase):
    print(sum(1 for r in load(jsonl) if r["phase"] == phase))

def next_seed(jsonl, phase, first):
    print(max([int(first) - 1] + [r["seed"] for r in load(jsonl) if r["phase"] == phase]) + 1)

def binom_cdf(k, n, p):  # P(X <= k), X ~ Binomial(n, p)
    if k < 0: return 0.0
    if k >= n: return 1.0
    if p <= 0: return 1.0
    if p >= 1: return 0.0
    lp, lq, c = math.log(p), math.log1p(-p), math.lgamma(n + 1)
    return min(1.0, sum(math.exp(c - math.lgamma(j + 1) - math.lgamma(n - j + 1) + j * lp + (n - j) * lq)
                        for j in range(k + 1)))

def clopper_pearson(k, n, level=0.95):
    """Exact two-sided interval for k successes in n: the p where P(X >= k) and P(X <= k) are (1 - level) / 2,
    by bisection (the binomial tail is the regularized incomplete beta of the usual beta quantiles)."""
    if n == 0: return 0.0, 1.0
    tail = (1 - level) / 2
    def solve(f, target):  # f decreasing in p
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if f(mid) > target else (lo, mid)
        return (lo + hi) / 2
    lower = 0.0 if k == 0 else solve(lambda p: binom_cdf(k - 1, n, p), 1 - tail)
    upper = 1.0 if k == n else solve(lambda p: binom_cdf(k, n, p), tail)
    return lower, upper

def fmt_rate(k, n):
    lo, hi = clopper_pearson(k, n)
    return f"{k}/{n} = {k / n if n else 0:.4f} [{lo:.4f}, {hi:.4f}]"

def fp_counts(runs):
    entries = [s for r in runs if "error" not in r for k in r["kernels"].values() for s in base_entries(k)]
    regressed = sum(s["decision"] == "regressed" for s in entries)
    before_holm = sum(s["decision"] == "regressed" or s["holm_demoted"] for s in entries)
    return len(entries), regressed, before_holm

def fp_by_case(runs):  # {case key: (base comparisons, regressed)}
    out = {}
    for r in runs:
        for k in r.get("kernels", {}).values():
            for s in base_entries(k):
                n, reg = out.get(case_key(s), (0, 0))
                out[case_key(s)] = (n + 1, reg + (s["decision"] == "regressed"))
    return out

def rate(jsonl, phase):
    n, k, raw = fp_counts([r for r in load(jsonl) if r["phase"] == phase])
    print(f"regressed {fmt_rate(k, n)}; before Holm {raw}")

def settings(runs):
    def vals(key):
        return sorted({str(r.get(key)) for r in runs if "error" not in r})
    blocks = [s["blocks"] for r in runs if "error" not in r for k in r["kernels"].values() for s in k["speed"] if s["blocks"]]
    return (f"delta {','.join(vals('delta'))} alpha {','.join(vals('alpha'))} budget {','.join(vals('budget'))} s, "
            f"Holm m/run {','.join(vals('holm_m'))}, timed/run {','.join(vals('timed'))}, "
            f"blocks {min(blocks) if blocks else 0}-{max(blocks) if blocks else 0} (median "
            f"{sorted(blocks)[len(blocks) // 2] if blocks else 0}), run_comparisons {','.join(vals('run_comparisons'))}")

def table(jsonl, power_kernels):
    runs = load(jsonl)
    phases = []
    for r in runs:
        if r["phase"] not in phases: phases.append(r["phase"])
    print(f"{'phase':10s} {'runs':>4s} {'exit':>6s} {'s/run':>6s}  settings; result")
    for ph in phases:
        rs = [r for r in runs if r["phase"] == ph]
        exits = ",".join(sorted({str(r["rc"]) for r in rs}))
        secs = sum(r["seconds"] for r in rs) / len(rs)
        if ph.startswith("fp-"):
            n, k, raw = fp_counts(rs)
            lo, hi = clopper_pearson(raw, n)
            result = (f"\n    false positives: regressed {fmt_rate(k, n)}; before Holm {raw}/{n} [{lo:.4f}, {hi:.4f}]"
                      + "".join(f"\n    {key}: regressed {fmt_rate(kk, nn)}" for key, (nn, kk) in sorted(fp_by_case(rs).items())))
        elif ph == "power":
            lines = ["    power (a run counts when every base comparison of the kernel is regressed):"]
            for name in power_kernels.split():
                per_run, by_case = [], {}
                for r in rs:
                    b = base_entries(r.get("kernels", {}).get(name, {"speed": []}))
                    if not b: continue
                    per_run.append(all(s["decision"] == "regressed" for s in b))
                    for s in b: by_case.setdefault(case_key(s), []).append(s)
                lines.append(f"    {name}: {fmt_rate(sum(per_run), len(per_run))}")
                for key, ss in sorted(by_case.items()):
                    ratios = [s["ratio"] for s in ss if s["blocks"] and isinstance(s["ratio"], (int, float)) and s["ratio"] > 0]
                    pooled = math.exp(sum(map(math.log, ratios)) / len(ratios)) if ratios else float("nan")
                    med = lambda v: sorted(v)[len(v) // 2] / 1e3 if v else 0.0
                    lines.append(f"      {key}: regressed {fmt_rate(sum(s['decision'] == 'regressed' for s in ss), len(ss))}; "
                                 f"pooled ratio x{pooled:.4f} (geometric mean of {len(ratios)}); per launch head "
                                 f"{med([s['head_ns'] for s in ss if s['head_ns']]):.2f} us, base "
                                 f"{med([s['base_ns'] for s in ss if s['base_ns']]):.2f} us (medians)")
            result = "".join("\n" + line for line in lines)
        else:
            r = rs[-1]
            result = "".join(f"\n    {n}: {k['status']}: " + ", ".join(entry(s) for s in k["speed"])
                             for n, k in sorted(r.get("kernels", {}).items())) or r.get("error", "")
        print(f"{ph:10s} {len(rs):4d} {exits:>6s} {secs:6.1f}  {settings(rs)}{result}")

if __name__ == "__main__":
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "record": record(*args)
    elif cmd == "expect": print(expect(*args))
    elif cmd == "count": count(*args)
    elif cmd == "runs": runs(*args)
    elif cmd == "next_seed": next_seed(*args)
    elif cmd == "rate": rate(*args)
    elif cmd == "table": table(*args)
    elif cmd == "calibrate": calibrate(*args)
    elif cmd == "cp": print(fmt_rate(int(args[0]), int(args[1])))
    else: sys.exit(f"pairing.py: unknown command {cmd}")
PY
}

if [ "$mode" = cpu ]; then cpu_mode; else gpu_mode "$@"; fi
