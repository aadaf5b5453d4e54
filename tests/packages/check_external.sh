#!/usr/bin/env bash
# check_external.sh KGATE OUT_DIR [EXTRA kgate check ARGS...]
#
# Checks every package under PACKAGES_DIR (default .thirdparty/packages/, a git-ignored folder for
# packages wrapped around kernels that are not kgate's, kept out of the repository; one with a
# "build" is packed with nvcc first, into OUT_DIR/packed/) with `kgate check`
# (correctness over the default cases, then speed against the op's eager reference), one kgate run
# per package, each under `timeout` so that no package can stall the sweep. Never stops at the
# first failure; prints a table at the end: package | exit code | verdict summary | seconds.
#
# Run from the repository root on the GPU machine, e.g.
#   tests/packages/check_external.sh build/bin/kgate reports/thirdparty
# Per package it writes OUT_DIR/<package>/ (report.json, junit.xml, summary.md, report.html) and
# OUT_DIR/<package>.log (kgate's stdout + stderr); the table is also saved as OUT_DIR/table.txt.
#
# Environment: TIMEOUT (seconds per package, default 120), PACKAGES_DIR (default
# .thirdparty/packages). Arguments after OUT_DIR go to every `kgate check` (e.g. --cases 32
# --speed-cases 1 --no-speed --backend cuda).
#
# Exit status: 0 when every package exited 0, else 1 (2 on a usage error).

set -u

usage() {
  echo "usage: $0 KGATE OUT_DIR [extra kgate check args...]" >&2
  echo "  KGATE    path to the kgate binary (e.g. build/bin/kgate)" >&2
  echo "  OUT_DIR  directory for the per-package reports and logs (created)" >&2
  exit 2
}

[ $# -ge 2 ] || usage
case "$1" in -h|--help) usage ;; esac
KGATE=$1
OUT=$2
shift 2
EXTRA=("$@")
TIMEOUT=${TIMEOUT:-120}
PACKAGES_DIR=${PACKAGES_DIR:-.thirdparty/packages}

if [ ! -x "$KGATE" ]; then
  echo "$0: KGATE '$KGATE' is not an executable file" >&2
  exit 2
fi
if [ ! -d "$PACKAGES_DIR" ]; then
  echo "$0: no package directory '$PACKAGES_DIR' (run from the repository root, or set PACKAGES_DIR)" >&2
  exit 2
fi
case "$TIMEOUT" in ''|*[!0-9]*) echo "$0: TIMEOUT must be a whole number of seconds" >&2; exit 2 ;; esac
mkdir -p "$OUT" || { echo "$0: cannot create '$OUT'" >&2; exit 2; }

names=()
codes=()
verdicts=()
secs=()

for dir in "$PACKAGES_DIR"/*/; do
  dir=${dir%/}
  [ -f "$dir/kgate.json" ] || continue
  name=$(basename "$dir")
  log="$OUT/$name.log"
  start=$(date +%s.%N)
  # A package whose sources only nvcc compiles ("build" in its manifest) is packed first: kgate pack
  # runs nvcc into its fatbin, and the packed copy is what is checked.
  target=$dir
  rc=0
  if grep -q '"build"' "$dir/kgate.json"; then
    target=$OUT/packed/$name
    echo "=== $name: $KGATE pack $dir $target" >&2
    "$KGATE" pack -q "$dir" "$target" >"$log" 2>&1 || rc=$?
  fi
  if [ "$rc" -eq 0 ]; then
    echo "=== $name: $KGATE check $target --out $OUT/$name ${EXTRA[*]}" >&2
    timeout --kill-after=10 "$TIMEOUT" "$KGATE" check "$target" --out "$OUT/$name" "${EXTRA[@]}" >>"$log" 2>&1
    rc=$?
  fi
  end=$(date +%s.%N)
  sec=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')

  # The verdict: the result-table row of this package (kernel column = package name) without the
  # name column; else, for a timeout, that; else kgate's last error or last line.
  row=$(grep -E "^$name[[:space:]]" "$log" | tail -n 1 | sed -E "s/^$name[[:space:]]+//; s/[[:space:]]+/ /g")
  failed=$(grep -E "^(FAILED|REGRESSED|INVALID) " "$log" | head -n 1 | cut -c1-160)
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    verdict="TIMEOUT after ${TIMEOUT}s${row:+ (last row: $row)}"
  elif [ -n "$row" ]; then
    verdict=$row
    [ -n "$failed" ] && verdict="$verdict | $failed"
  else
    verdict=$(grep -E "error|FAILED" "$log" | tail -n 1 | cut -c1-200)
    [ -n "$verdict" ] || verdict=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-200)
    [ -n "$verdict" ] || verdict="(no output)"
  fi
  echo "    exit $rc in ${sec}s: $verdict" >&2

  names+=("$name")
  codes+=("$rc")
  verdicts+=("$verdict")
  secs+=("$sec")
done

if [ ${#names[@]} -eq 0 ]; then
  echo "$0: no package (a directory with kgate.json) under $PACKAGES_DIR" >&2
  exit 2
fi

worst=0
for c in "${codes[@]}"; do [ "$c" -ne 0 ] && worst=1; done
{
  w=15
  for v in "${verdicts[@]}"; do [ ${#v} -gt $w ] && w=${#v}; done
  printf "%-32s | %-4s | %-${w}s | %s\n" "package" "exit" "verdict summary" "seconds"
  printf "%-32s-+-%-4s-+-%-${w}s-+-%s\n" "$(printf '%032d' 0 | tr 0 -)" "----" "$(printf "%0${w}d" 0 | tr 0 -)" "-------"
  for i in "${!names[@]}"; do
    printf "%-32s | %-4s | %-${w}s | %s\n" "${names[$i]}" "${codes[$i]}" "${verdicts[$i]}" "${secs[$i]}"
  done
} | tee "$OUT/table.txt"
exit $worst
