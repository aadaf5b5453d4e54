#!/usr/bin/env bash
# run.sh SRC_ROOT OUT_DIR [KGATE]
#
# Builds the wrapped third-party packages (build-packages.sh SRC_ROOT OUT_DIR/packages), then, one
# package at a time and never stopping at a failure:
#   kgate validate OUT_DIR/packages/<package>                  -> OUT_DIR/logs/<package>.validate.log
#   kgate check    OUT_DIR/packages/<package> --out OUT_DIR/reports/<package>
#                                                               -> OUT_DIR/logs/<package>.check.log
# and prints a table (also OUT_DIR/table.txt): package, validate exit, check exit, verdict.
#
#   SRC_ROOT  one folder per repository, OWNER+NAME, holding the listed files (see build-packages.sh)
#   OUT_DIR   created; its packages/, logs/ and reports/ entries for these packages are replaced
#   KGATE     the kgate binary (default: build/bin/kgate under the repository root)
#
# The check uses kgate's defaults: 64 correctness cases, seed 1, up to 3 timed shapes with 3 s per
# comparison, flushed L2, 2% minimum effect. QUICK=1 times one shape for 1 s (--speed-cases 1
# --time-budget 1), for a first look. Each check runs under `timeout` (TIMEOUT seconds, default 240).
# Extra `kgate check` arguments may be given in CHECK_ARGS (word-split).
#
# Exit status: 0 when every package validated and checked with exit 0, else 1 (2 on a usage error).

set -u

usage() {
  echo "usage: $0 SRC_ROOT OUT_DIR [KGATE]" >&2
  exit 2
}
[ $# -ge 2 ] && [ $# -le 3 ] || usage
case "$1" in -h|--help) usage ;; esac

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SRC=$1
OUT=$2
KGATE=${3:-$ROOT/build/bin/kgate}
TIMEOUT=${TIMEOUT:-240}
read -r -a EXTRA <<<"${CHECK_ARGS:-}"
[ "${QUICK:-0}" = 1 ] && EXTRA=(--speed-cases 1 --time-budget 1 "${EXTRA[@]}")

[ -x "$KGATE" ] || { echo "$0: KGATE '$KGATE' is not an executable file" >&2; exit 2; }
case "$TIMEOUT" in ''|*[!0-9]*) echo "$0: TIMEOUT must be a whole number of seconds" >&2; exit 2 ;; esac
mkdir -p "$OUT/logs" "$OUT/reports" || { echo "$0: cannot create '$OUT'" >&2; exit 2; }

echo "==> building packages: $HERE/build-packages.sh $SRC $OUT/packages" >&2
"$HERE/build-packages.sh" "$SRC" "$OUT/packages" 2>&1 | tee "$OUT/logs/build-packages.log" >&2
build_rc=${PIPESTATUS[0]}
[ "$build_rc" -eq 2 ] && exit 2
[ "$build_rc" -ne 0 ] && echo "==> build-packages.sh exited $build_rc; checking the packages that were built" >&2

# The verdict of one check log: the result-table row of the package without its name (correctness,
# margin, speed), plus the first FAILED/REGRESSED line; else a timeout note; else kgate's last error.
verdict_of() {
  local name=$1 log=$2 rc=$3 row failed v
  row=$(grep -E "^$name[[:space:]]" "$log" | tail -n 1 | sed -E "s/^$name[[:space:]]+//; s/[[:space:]]+/ /g")
  failed=$(grep -E "^(FAILED|REGRESSED|INVALID|INCONCLUSIVE) " "$log" | head -n 1 | cut -c1-140)
  if [ "$rc" -eq 124 ] || [ "$rc" -eq 137 ]; then
    v="TIMEOUT after ${TIMEOUT}s${row:+ (last row: $row)}"
  elif [ -n "$row" ]; then
    v=$row
    [ -n "$failed" ] && v="$v | $failed"
  else
    v=$(grep -E "error|FAILED|problem" "$log" | tail -n 1 | cut -c1-160)
    [ -n "$v" ] || v=$(grep -v '^[[:space:]]*$' "$log" | tail -n 1 | cut -c1-160)
    [ -n "$v" ] || v="(no output)"
  fi
  printf '%s' "$v"
}

names=() vcodes=() ccodes=() verdicts=() secs=()
worst=0
[ "$build_rc" -ne 0 ] && worst=1
while IFS=$'\t' read -r pkg repo _commit _files _kernel _op; do
  [ "$pkg" = package ] && continue
  [ -n "$pkg" ] || continue
  # PACKAGES="a b": only those.
  [ -z "${PACKAGES:-}" ] || [[ " $PACKAGES " == *" $pkg "* ]] || continue
  dir=$OUT/packages/$pkg
  vlog=$OUT/logs/$pkg.validate.log
  clog=$OUT/logs/$pkg.check.log
  if [ ! -f "$dir/kgate.json" ]; then
    names+=("$pkg"); vcodes+=("-"); ccodes+=("-"); secs+=("-")
    verdicts+=("not built (see $OUT/logs/build-packages.log)"); worst=1
    continue
  fi
  echo "==> $pkg ($repo): validate" >&2
  "$KGATE" validate "$dir" >"$vlog" 2>&1
  vrc=$?
  echo "==> $pkg: $KGATE check $dir --out $OUT/reports/$pkg ${EXTRA[*]}" >&2
  rm -rf -- "${OUT:?}/reports/$pkg"
  start=$(date +%s)
  timeout --kill-after=15 "$TIMEOUT" "$KGATE" check "$dir" --out "$OUT/reports/$pkg" "${EXTRA[@]}" >"$clog" 2>&1
  crc=$?
  sec=$(( $(date +%s) - start ))
  v=$(verdict_of "$pkg" "$clog" "$crc")
  echo "    validate $vrc, check $crc in ${sec}s: $v" >&2
  names+=("$pkg"); vcodes+=("$vrc"); ccodes+=("$crc"); verdicts+=("$v"); secs+=("$sec")
  { [ "$vrc" -ne 0 ] || [ "$crc" -ne 0 ]; } && worst=1
done <"$HERE/kernels.tsv"

{
  printf '%-30s | %-8s | %-5s | %-4s | %s\n' package validate check secs "verdict (correctness, margin, speed vs eager)"
  printf '%-30s-+-%-8s-+-%-5s-+-%-4s-+-%s\n' "------------------------------" "--------" "-----" "----" "----------------------------------------------"
  for i in "${!names[@]}"; do
    printf '%-30s | %-8s | %-5s | %-4s | %s\n' "${names[$i]}" "${vcodes[$i]}" "${ccodes[$i]}" "${secs[$i]}" "${verdicts[$i]}"
  done
  echo "(check exit codes: 0 pass, 1 correctness failure, 2 speed regression, 3 inconclusive, 4 package error, 124 timeout)"
} | tee "$OUT/table.txt"
exit $worst
