#!/usr/bin/env bash
# The test command: set up, build, run every CTest test. GPU tests show as SKIPPED without a GPU.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)  # (through symlinks)
# Each step's wall time, printed last (and on failure, as far as it got).
steps=() t_step=$SECONDS
step() { steps+=("$1 $((SECONDS - t_step)) s"); t_step=$SECONDS; }
trap 'echo "==> ci/test.sh: times: ${steps[*]:-} (total $SECONDS s)"' EXIT
# Tests run two at a time on a 2-core runner, and torch's OpenMP threads busy-wait by default: two
# test processes' thread pools spinning against each other made tests up to 6x slower
# (Pipeline.CorrectCpuKernelPassesAndIsTimed: 6 s alone, 40 s beside another, 7.6 s with passive
# waiting). Passive waiting keeps the thread count, and so every result.
export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-PASSIVE}
"$here/ci/setup.sh"
step setup
"$here/ci/build.sh"
step build
build=${KGATE_BUILD_DIR:-$here/build}
echo "==> ci/test.sh: ctest"
cd "$build"
# With GPUs, tests that declare RESOURCE_GROUPS gpus:1 (kernel tests, speed gates) get one GPU each,
# so timing tests never share a GPU with another test.
resources=()
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
# Ids are CUDA ordinals as the tests see them: within CUDA_VISIBLE_DEVICES when it is set. Each test
# takes the GPU CTest assigns it (CTEST_RESOURCE_GROUP_0_GPUS, read by kgate before CUDA starts).
if [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && [ "${gpus:-0}" -gt 0 ]; then
  gpus=$(tr ',' '\n' <<< "$CUDA_VISIBLE_DEVICES" | grep -c .)
fi
if [ "${gpus:-0}" -gt 0 ]; then
  spec="$build/ctest-resources.json"
  { printf '{"version": {"major": 1, "minor": 0}, "local": [{"gpus": ['
    for ((i = 0; i < gpus; i++)); do printf '%s{"id": "%d", "slots": 1}' "$([ $i -gt 0 ] && echo ,)" "$i"; done
    printf ']}]}\n'; } > "$spec"
  resources=(--resource-spec-file "$spec")
  echo "==> ci/test.sh: $gpus GPU(s): $spec"
fi
# The longest tests start first, so that the run does not end on one long test while the other
# core idles: CTest orders by its cost data (Testing/Temporary/CTestCostData.txt, which it keeps up
# to date), seeded on a fresh build from ci/ctest-costs.txt.
costs="$build/Testing/Temporary/CTestCostData.txt"
if [ ! -s "$costs" ]; then
  mkdir -p "$(dirname "$costs")"
  { awk '!/^#/ && NF == 2 {print $1, 1, $2}' "$here/ci/ctest-costs.txt"; echo "---"; } > "$costs"
fi
# JUnit (build/ctest-junit.xml) for the workflow's test report.
ctest --output-on-failure -j "${KGATE_TEST_JOBS:-2}" --timeout 900 --output-junit "$build/ctest-junit.xml" \
  "${resources[@]}" "$@"
step ctest
# After the tests, three checks of what a user installs. Without a GPU they run in two lanes at once
# (each keeps about one core busy: serially 118 s on 2 cores, 61 s of it the first lane); with one,
# one after another, so that nothing builds beside the consumer's GPU timing. Each lane's output
# is printed whole when it ends.
times="$build/ci-post-times.txt"
: > "$times"
consumer_and_package() {
  local t=$SECONDS
  # A project of its own, against the installed kgate (find_package), with its tests.
  "$here/ci/consumer.sh" "${resources[@]}" || return 1
  echo "consumer $((SECONDS - t)) s" >> "$times"; t=$SECONDS
  # The Debian package (an install without a build): built, unpacked, run, and built against.
  "$here/ci/package.sh" "$build" "$build/deb" || return 1
  "$here/ci/package.sh" --test "$(ls "$build"/deb/kgate_*_amd64.deb | head -1)" "$build/deb/test" || return 1
  echo "package $((SECONDS - t)) s" >> "$times"
}
pairing() {
  local t=$SECONDS
  # Pull requests against an install of this build (kgate check --baseline-build): a changed, an
  # unchanged and a new kernel, a base that does not build, shards of different bases
  # (tests/pairing, cpu backend). Its own install prefix: the consumer's lane reinstalls its own.
  KGATE_INSTALL_PREFIX="$build/install-pairing" "$here/ci/pairing.sh" cpu "$build/pairing" || return 1
  echo "pairing $((SECONDS - t)) s" >> "$times"
}
post_rc=0
if [ "${gpus:-0}" -gt 0 ]; then
  consumer_and_package || post_rc=1
  [ $post_rc -eq 0 ] && { pairing || post_rc=1; }
else
  echo "==> ci/test.sh: consumer and package | pairing, in two lanes (output when each ends)"
  consumer_and_package > "$build/ci-consumer-package.log" 2>&1 &
  lane1=$!
  pairing > "$build/ci-pairing.log" 2>&1 &
  lane2=$!
  rc1=0 rc2=0
  wait $lane1 || rc1=$?
  echo "==> ci/test.sh: consumer and package lane: exit $rc1"; cat "$build/ci-consumer-package.log"
  wait $lane2 || rc2=$?
  echo "==> ci/test.sh: pairing lane: exit $rc2"; cat "$build/ci-pairing.log"
  [ $rc1 -eq 0 ] && [ $rc2 -eq 0 ] || post_rc=1
fi
while read -r line; do steps+=("$line"); done < "$times"
step "after-tests-wall"
[ $post_rc -eq 0 ] || { echo "ci/test.sh: a check after the tests failed (its output is above)" >&2; exit 1; }
