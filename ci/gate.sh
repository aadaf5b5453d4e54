#!/usr/bin/env bash
# The main job: set up, build, run `kgate check` over the repository's kernels, write reports under
# reports/ (report.json, junit.xml, summary.md). Uses the cuda backend when a GPU is present,
# otherwise says so and runs the cpu backend; with KGATE_EXPECT_GPU=1 (the GPU workflow job sets it)
# the cuda backend is required, so a runner whose GPU or driver is missing fails with exit 4 instead
# of passing on the cpu backend. Exits with kgate's exit code (0 pass, 1 incorrect,
# 2 slower, 3 inconclusive with --inconclusive-fails, 4 usage). Extra arguments go to `kgate check`.
# Before it, each kernel's Google Benchmark target runs (ci/google-benchmark.sh; a few quick
# repetitions, skipped without a GPU) and its JSON is kept in report.json; it decides nothing.
# KGATE_GOOGLE_BENCHMARK=0 leaves that out.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)  # (through symlinks)
"$here/ci/setup.sh"
"$here/ci/build.sh"
build=${KGATE_BUILD_DIR:-$here/build}
out=${KGATE_REPORTS:-$here/reports}
gb_args=()
if [ "${KGATE_GOOGLE_BENCHMARK:-1}" != 0 ]; then
  gb_dir=$out/google-benchmark
  KGATE_BUILD_DIR=$build "$here/ci/google-benchmark.sh" "$gb_dir" "$@"
  for f in "$gb_dir"/*.json; do
    [ -f "$f" ] && gb_args+=(--benchmark-json "$f")
  done
fi
backend_args=()
if [ "${KGATE_EXPECT_GPU:-0}" = 1 ] && [[ " $* " != *" --backend "* ]]; then
  backend_args=(--backend cuda)
fi
echo "==> ci/gate.sh: kgate check --out $out ${backend_args[*]} ${gb_args[*]} $*"
set +e
"$build/bin/kgate" check --out "$out" "${backend_args[@]}" "${gb_args[@]}" "$@"
rc=$?
set -e
echo "==> ci/gate.sh: kgate exited $rc (reports in $out)"
exit $rc
