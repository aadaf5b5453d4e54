#!/usr/bin/env bash
# The main job: set up, build, run `kgate check` over the repository's kernels, write reports under
# reports/ (report.json, junit.xml, summary.md). Uses the cuda backend when a GPU is present,
# otherwise says so and runs the cpu backend. Exits with kgate's exit code (0 pass, 1 incorrect,
# 2 slower, 3 inconclusive with --inconclusive-fails, 4 usage). Extra arguments go to `kgate check`.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$here/ci/setup.sh"
"$here/ci/build.sh"
build=${KGATE_BUILD_DIR:-$here/build}
out=${KGATE_REPORTS:-$here/reports}
echo "==> ci/gate.sh: kgate check --out $out $*"
set +e
"$build/bin/kgate" check --out "$out" "$@"
rc=$?
set -e
echo "==> ci/gate.sh: kgate exited $rc (reports in $out)"
exit $rc
