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
#
# --against REF (a pull request's base: a branch, tag or commit): the check is ci/kgate-pr.sh's, the
# command any project that uses kgate runs (docs/ci.md): REF is checked out in a worktree that later
# runs reuse (.kgate-pr/base, or under KGATE_BASE_DIR), configured as this build is, built with the
# same ccache (CCACHE_BASEDIR is the repository and CCACHE_NOHASHDIR is set, so the other directory
# still hits; the hits are printed), and `kgate check` pairs every kernel with its version there
# (--baseline-build). When REF cannot be fetched or built, every kernel is gated against eager
# alone, report.json's meta.base.error says why, and the exit code is the eager-only one;
# --require-base makes that exit 4. --against-event: the base of the GitHub event that runs the job
# (GITHUB_EVENT_NAME, GITHUB_EVENT_PATH; kgate-pr says which: a pull request's base, a push's
# previous head, a new branch's merge base with the default branch).
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)  # (through symlinks)
# Each step's wall time is printed at the end ("==> ci/gate.sh: took ...").
steps=()
mark() { steps+=("$1 ${SECONDS}s"); SECONDS=0; }
SECONDS=0
against=""
against_event=0
pass=()
while [ $# -gt 0 ]; do
  case "$1" in
    --against) against=${2:?ci/gate.sh: --against needs a ref}; shift 2 ;;
    --against=*) against=${1#--against=}; shift ;;
    --against-event) against_event=1; shift ;;
    *) pass+=("$1"); shift ;;
  esac
done
set -- ${pass[@]+"${pass[@]}"}
base_opts=()
[ -n "$against" ] && base_opts=(--base "$against")
[ "$against_event" = 1 ] && against=event
"$here/ci/setup.sh"
mark setup
if [ -n "$against" ]; then
  # One ccache for both trees: paths under the repository are made relative; the working directory
  # is not hashed (with -g it would be, so no object of one tree could serve the other); and the
  # modules' -ffile-prefix-map flags, which map each tree to the same "." and "build", are left out
  # of the hash.
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$here}
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  export CCACHE_IGNOREOPTIONS=${CCACHE_IGNOREOPTIONS:-"-ffile-prefix-map=* -Xcompiler=-ffile-prefix-map=*"}
fi
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
set +e
if [ -n "$against" ]; then
  # The base and the paired check: kgate-pr, as in any project that uses kgate (it reuses this
  # build's configuration; its log says how long the base took).
  KGATE_BUILD_DIR=$build "$here/ci/kgate-pr.sh" --source "$here" --build "$build" \
    --work-dir "${KGATE_BASE_DIR:-$here/.kgate-pr}" ${base_opts[@]+"${base_opts[@]}"} -- --out "$out" \
    ${backend_args[@]+"${backend_args[@]}"} ${gb_args[@]+"${gb_args[@]}"} "$@"
  rc=$?
  mark "base and kgate check"
else
  echo "==> ci/gate.sh: kgate check --out $out ${backend_args[*]} ${gb_args[*]} $*"
  "$build/bin/kgate" check --out "$out" ${backend_args[@]+"${backend_args[@]}"} ${gb_args[@]+"${gb_args[@]}"} "$@"
  rc=$?
  mark "kgate check"
fi
set -e
echo "==> ci/gate.sh: kgate exited $rc (reports in $out); took: $(IFS=,; echo "${steps[*]}" | sed 's/,/, /g')"
exit $rc
