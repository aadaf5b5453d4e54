#!/usr/bin/env bash
# Runs the Google Benchmark target of every kernel `kgate check` would check, writing one JSON output
# per kernel for `kgate check --benchmark-json` (which keeps them in report.json):
#   ci/google-benchmark.sh OUT_DIR [kgate check arguments...]
# Of those arguments only --backend, --kernel and --shard are read: they pick the kernels (default:
# the cuda backend when nvidia-smi lists a GPU, else cpu; every kernel but the mutants; --shard i/n
# keeps the same share as kgate check: names sorted, dealt round-robin). Writes
# OUT_DIR/NAME.json (and NAME.log) for each benchmark that ran; a kernel whose benchmark exits 77
# (no GPU, or a correctness twin, which is not timed) is skipped with its reason. Always exits 0:
# these numbers are informational, the gate decides from its own interleaved blocks.
# Quick by default: KGATE_BENCH_REPETITIONS (5), KGATE_BENCH_MIN_TIME (0.01 s per repetition),
# KGATE_BENCH_TIMEOUT (300 s per kernel).
set -uo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)  # (through symlinks)
out=${1:?usage: ci/google-benchmark.sh OUT_DIR [kgate check arguments...]}
shift
build=${KGATE_BUILD_DIR:-$here/build}
say() { echo "==> ci/google-benchmark.sh: $*" >&2; }

backend=""
shard=""
kernels=()
prev=""
for a in "$@"; do
  case $prev in
    --backend) backend=$a ;;
    --kernel) kernels+=("$a") ;;
    --shard) shard=$a ;;
  esac
  case $a in
    --backend=*) backend=${a#*=} ;;
    --kernel=*) kernels+=("${a#*=}") ;;
    --shard=*) shard=${a#*=} ;;
  esac
  prev=$a
done
if [ ${#kernels[@]} -eq 0 ]; then
  if [ -z "$backend" ]; then
    if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then backend=cuda; else backend=cpu; fi
  fi
  # `kgate list`: a header, then "name op backend dtypes source" per kernel (mutants left out).
  mapfile -t kernels < <("$build/bin/kgate" list | awk -v b="$backend" 'NR > 1 && $3 == b { print $1 }')
fi

# A malformed --shard is left to kgate check, which names it.
if [[ $shard =~ ^([0-9]+)/([0-9]+)$ ]] && [ "${BASH_REMATCH[2]}" -ge 1 ]; then
  mapfile -t sorted < <(printf '%s\n' "${kernels[@]}" | LC_ALL=C sort)
  kernels=()
  for i in "${!sorted[@]}"; do
    [ $((i % BASH_REMATCH[2])) -eq $((BASH_REMATCH[1] - 1)) ] && kernels+=("${sorted[$i]}")
  done
fi

# Build the benchmarks about to run (nothing to do where they are up to date). A target that does not
# exist (KGATE_BUILD_BENCHMARKS=OFF) or fails to build is named below and left out.
# KGATE_BENCH_BUILD=0 runs what is there.
if [ "${KGATE_BENCH_BUILD:-1}" != 0 ] && [ ${#kernels[@]} -gt 0 ] && [ -f "$build/CMakeCache.txt" ]; then
  targets=()
  for name in "${kernels[@]}"; do targets+=("kgate.kernel.$name.bench"); done
  say "building ${#targets[@]} benchmark executable(s)"
  if ! cmake --build "$build" -j "${KGATE_JOBS:-$(nproc)}" --target "${targets[@]}" > "$build/google-benchmark.build.log" 2>&1; then
    for t in "${targets[@]}"; do
      cmake --build "$build" --target "$t" >> "$build/google-benchmark.build.log" 2>&1 \
        || say "${t#kgate.kernel.}: its benchmark did not build (see $build/google-benchmark.build.log)"
    done
  fi
fi

rm -rf "$out"
mkdir -p "$out"
for name in "${kernels[@]}"; do
  bench=$build/bin/kgate.kernel.$name.bench
  if [ ! -x "$bench" ]; then
    say "$name: no benchmark target ($bench; built unless KGATE_BUILD_BENCHMARKS=OFF)"
    continue
  fi
  json=$out/$name.json
  timeout "${KGATE_BENCH_TIMEOUT:-300}" "$bench" \
    --benchmark_repetitions="${KGATE_BENCH_REPETITIONS:-5}" --benchmark_enable_random_interleaving=true \
    --benchmark_min_time="${KGATE_BENCH_MIN_TIME:-0.01}" \
    --benchmark_out="$json" --benchmark_out_format=json > "$out/$name.log" 2>&1
  rc=$?
  case $rc in
    0) say "$name: $json" ;;
    77) rm -f "$json"; say "$name: skipped: $(sed -n 's/^SKIPPED: //p' "$out/$name.log" | head -1)" ;;
    *) rm -f "$json"; say "$name: the benchmark exited $rc (see $out/$name.log); left out of the report" ;;
  esac
done
exit 0
