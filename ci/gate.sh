#!/usr/bin/env bash
# The main job: set up, build, run `kgate check` over the repository's kernels, write reports under
# reports/ (report.json, junit.xml, summary.md). Uses the cuda backend when a GPU is present,
# otherwise says so and runs the cpu backend; with KGATE_EXPECT_GPU=1 (the GPU workflow job sets it)
# the cuda backend is required, so a runner whose GPU or driver is missing fails with exit 4 instead
# of passing on the cpu backend. Exits with kgate's exit code (0 pass, 1 incorrect,
# 2 slower, 3 inconclusive with --inconclusive-fails, 4 usage). Extra arguments go to `kgate check`.
# Before it, each kernel's Google Benchmark target is built and runs (ci/google-benchmark.sh; a few
# quick repetitions) and its JSON is kept in report.json; it decides nothing.
# KGATE_GOOGLE_BENCHMARK=0 leaves that out.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)  # (through symlinks)
# Each step's wall time is printed at the end ("==> ci/gate.sh: took ...").
steps=()
mark() { steps+=("$1 ${SECONDS}s"); SECONDS=0; }
SECONDS=0
"$here/ci/setup.sh"
mark setup
# Only what the gate runs: the kgate command (and its package compiler); ci/google-benchmark.sh
# builds the benchmark executables it runs. KGATE_BUILD_TARGETS="" builds everything.
KGATE_BUILD_TARGETS=${KGATE_BUILD_TARGETS-kgate} "$here/ci/build.sh"
mark build
build=${KGATE_BUILD_DIR:-$here/build}
out=${KGATE_REPORTS:-$here/reports}
gb_args=()
if [ "${KGATE_GOOGLE_BENCHMARK:-1}" != 0 ]; then
  gb_dir=$out/google-benchmark
  KGATE_BUILD_DIR=$build "$here/ci/google-benchmark.sh" "$gb_dir" "$@"
  for f in "$gb_dir"/*.json; do
    [ -f "$f" ] && gb_args+=(--benchmark-json "$f")
  done
  mark google-benchmark
fi
backend_args=()
if [ "${KGATE_EXPECT_GPU:-0}" = 1 ] && [[ " $* " != *" --backend "* ]]; then
  backend_args=(--backend cuda)
fi
# Every GPU of the runner at once (--devices all: one kernel per GPU at a time), unless the arguments
# pick the devices or KGATE_DEVICES says otherwise (KGATE_DEVICES=0 keeps to one GPU).
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && [ "${gpus:-0}" -gt 0 ]; then gpus=$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .); fi
if [[ " $* " != *" --device"* ]] && [[ " $* " != *" --backend cpu "* ]]; then
  if [ -n "${KGATE_DEVICES:-}" ]; then
    [ "$KGATE_DEVICES" = 0 ] || backend_args+=(--devices "$KGATE_DEVICES")
  elif [ "${gpus:-0}" -gt 1 ]; then
    backend_args+=(--devices all)
  fi
fi
echo "==> ci/gate.sh: kgate check --out $out ${backend_args[*]} ${gb_args[*]} $*"
set +e
"$build/bin/kgate" check --out "$out" "${backend_args[@]}" "${gb_args[@]}" "$@"
rc=$?
set -e
mark "kgate check"
echo "==> ci/gate.sh: kgate exited $rc (reports in $out); took: $(IFS=,; echo "${steps[*]}" | sed 's/,/, /g')"
exit $rc
