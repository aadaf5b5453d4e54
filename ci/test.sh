#!/usr/bin/env bash
# The test command: set up, build, run every CTest test. GPU tests show as SKIPPED without a GPU.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$here/ci/setup.sh"
"$here/ci/build.sh"
build=${KGATE_BUILD_DIR:-$here/build}
echo "==> ci/test.sh: ctest"
cd "$build"
ctest --output-on-failure -j "${KGATE_TEST_JOBS:-2}" --timeout 900 "$@"
