#!/usr/bin/env bash
# The action's gate step: runs kgate-pr with the action's inputs (given as environment variables,
# never spliced into the script) and appends the Markdown summary to the job's summary.
set -uo pipefail
read -r -a cmake_args <<< "${CMAKE_ARGS:-}"
read -r -a check_args <<< "${CHECK_ARGS:-}"
opts=(--source "$SOURCE_DIR" --build "$BUILD_DIR")
[ -n "${BASE:-}" ] && opts+=(--base "$BASE")
[ "${REQUIRE_BASE:-false}" = true ] && opts+=(--require-base)
mkdir -p "$REPORTS"
reports=$(cd "$REPORTS" && pwd)
"$KGATE_PR" "${opts[@]}" ${cmake_args[@]+"${cmake_args[@]}"} -- --out "$reports" ${check_args[@]+"${check_args[@]}"}
rc=$?
{
  echo "exit-code=$rc"
  echo "report=$reports/report.json"
} >> "${GITHUB_OUTPUT:-/dev/null}"
if [ -f "$reports/summary.md" ] && [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
  cat "$reports/summary.md" >> "$GITHUB_STEP_SUMMARY"
fi
exit $rc
