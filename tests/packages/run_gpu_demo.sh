#!/usr/bin/env bash
# GPU demonstration of exported kernel packages (needs a GPU; run by hand or by the lead):
#   1. NVRTC compile, cold vs cache hit (the demo packages and every packed kernels/*/package*):
#      `kgate validate` twice per package with a fresh
#      KGATE_CACHE_DIR, printing the seconds from the summary line and the wall time;
#   2. `kgate check tests/packages/softmax_v2_{fast,slow,wrong} --baseline-package softmax_v1`
#      (and kernels/softmax/package without a baseline), each into OUT_DIR/<name>/;
#   3. a table of verdicts (correctness, fallback cases, worst speed vs eager and vs v1, workload
#      speedups) and exit codes against the expected ones (fast 0, slow 2, wrong 1);
#   4. the wrong package's minimal case replayed with `kgate replay --package` (exit 1 expected).
# Usage: run_gpu_demo.sh KGATE OUT_DIR [extra kgate check arguments, e.g. --time-budget 5]
# Exit status: 0 when every exit code was the expected one, 1 otherwise, 77 without a GPU.
set -u
if [ $# -lt 2 ]; then
  echo "usage: $0 KGATE OUT_DIR [extra kgate check arguments]" >&2
  exit 4
fi
kgate=$(realpath "$1")
out=$2
shift 2
extra=("$@")
here=$(cd "$(dirname "$0")" && pwd)
# The in-tree packages as the build packs them (KGATE in BUILD/bin/: BUILD/kernels/<op>/package*).
packed=${KGATE_BUILD_DIR:-$(dirname "$(dirname "$kgate")")}/kernels
mkdir -p "$out"
out=$(cd "$out" && pwd)
export KGATE_CACHE_DIR="$out/nvrtc-cache"
rm -rf "$KGATE_CACHE_DIR"
run_limit() {  # run_limit SECONDS cmd...: with timeout(1) when there is one
  local s=$1
  shift
  if command -v timeout > /dev/null; then timeout "$s" "$@"; else "$@"; fi
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

echo "== kgate: $("$kgate" --version 2>&1)"
command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | sed 's/^/== GPU: /'

echo
echo "== 1. NVRTC compile: cold (fresh KGATE_CACHE_DIR=$KGATE_CACHE_DIR) vs cache hit"
echo "   (seconds: NVRTC / cache look-up from kgate validate's summary; wall: the whole process, LibTorch load included)"
printf "%-32s %-12s %-10s %-12s %-10s\n" "package" "cold (s)" "wall (s)" "cached (s)" "wall (s)"
for pkg in "$here/softmax_v1" "$here/softmax_v2_fast" "$here/softmax_v2_slow" "$here/softmax_v2_wrong" \
           "$packed"/*/package*; do
  label=$(sed -n 's/^ *"name": "\([^"]*\)".*/\1/p' "$pkg/kgate.json" | head -1)
  t0=$(now)
  cold=$("$kgate" validate "$pkg" 2>&1)
  rc1=$?
  t1=$(now)
  warm=$("$kgate" validate "$pkg" 2>&1)
  rc2=$?
  t2=$(now)
  if [ $rc1 -ne 0 ] || [ $rc2 -ne 0 ]; then
    echo "validate $pkg failed (exit $rc1 / $rc2):"
    echo "$cold"
    continue
  fi
  cold_s=$(echo "$cold" | sed -n 's/.*compiled for sm_[0-9a-z]* in \([0-9.]*\) s.*/\1/p')
  warm_s=$(echo "$warm" | sed -n 's/.*cached CUBIN for sm_[0-9a-z]* (\([0-9.]*\) s).*/\1/p')
  printf "%-32s %-12s %-10s %-12s %-10s\n" "${label:-$pkg}" "${cold_s:-?}" "$(elapsed "$t0" "$t1")" \
         "${warm_s:-?}" "$(elapsed "$t1" "$t2")"
  [ -n "$warm_s" ] || echo "  (second validate was not a cache hit: $warm)"
done

echo
echo "== 2. kgate check (each against --baseline-package softmax_v1; kernels/softmax/package alone)"
declare -a names dirs expects baselines
names+=(softmax_v2_fast);   dirs+=("$here/softmax_v2_fast");   expects+=(0); baselines+=(yes)
names+=(softmax_v2_slow);   dirs+=("$here/softmax_v2_slow");   expects+=(2); baselines+=(yes)
names+=(softmax_v2_wrong);  dirs+=("$here/softmax_v2_wrong");  expects+=(1); baselines+=(yes)
names+=(softmax_block_pkg); dirs+=("$packed/softmax/package"); expects+=(0); baselines+=(no)
declare -a codes
for i in "${!names[@]}"; do
  name=${names[$i]}
  args=("${dirs[$i]}" --backend cuda --no-device-exit-code 77 --out "$out/$name")
  [ "${baselines[$i]}" = yes ] && args+=(--baseline-package "$here/softmax_v1")
  echo "-- kgate check ${args[*]} ${extra[*]:-}"
  t0=$(now)
  run_limit 900 "$kgate" check "${args[@]}" ${extra[@]+"${extra[@]}"} > "$out/$name.log" 2>&1
  rc=$?
  codes[$i]=$rc
  echo "   exit $rc after $(elapsed "$t0" "$(now)") s; log: $out/$name.log"
  if [ $rc -eq 77 ]; then
    grep SKIPPED "$out/$name.log"
    echo "no GPU: the demo needs one"
    exit 77
  fi
  sed -n '/^kernel /,/^reports:/p' "$out/$name.log" | sed 's/^/   | /'
done

echo
echo "== 3. verdicts"
summary() {  # summary REPORT_JSON NAME -> one table row (python3 reads the kgate-report/1 JSON)
  python3 - "$1" "$2" << 'PY' 2> /dev/null || echo "$2 (report unreadable: see the log)"
import json, sys
path, name = sys.argv[1], sys.argv[2]
r = json.load(open(path))
k = r["kernels"][0]
c = k["correctness"]
def worst(against):
    xs = [s for s in k["speed"] if (s["baseline"] == "eager") == (against == "eager") and s["decision"] != "skipped"]
    if not xs: return "-"
    w = max(xs, key=lambda s: s["ratio"] if isinstance(s["ratio"], (int, float)) else 0)
    r = w["ratio"]
    return "%.3fx %s %s" % (1 / r if r < 1 else r, "faster" if r < 1 else "slower", w["decision"])
wl = k.get("workload", {})
f = lambda v: "-" if v is None else ("%.3fx faster" % v if v >= 1 else "%.3fx slower" % (1 / v))
print("%-18s %-9s %-14s %-9s %-28s %-28s %-14s %-14s" % (
    k["name"], k["outcome"], "%d/%d" % (c["passed"], c["cases"]), c.get("fallback", 0), worst("eager"),
    worst("baseline") if k.get("baseline") else "-", f(wl.get("speedup_vs_eager")), f(wl.get("speedup_vs_baseline"))))
m = c.get("minimal")
if m: print("    minimal failing case: %s\n    %s" % (m["repro"], m["message"]))
PY
}
printf "%-18s %-9s %-14s %-9s %-28s %-28s %-14s %-14s %-6s %s\n" "package" "outcome" "correctness" "fallback" \
       "vs eager (worst)" "vs v1 (worst)" "wl/eager" "wl/v1" "exit" "expected"
status=0
for i in "${!names[@]}"; do
  name=${names[$i]}
  row=$(summary "$out/$name/report.json" "$(basename "${dirs[$i]}")")
  ok="as expected"
  [[ "${codes[$i]}" =~ ^(${expects[$i]})$ ]] || { ok="UNEXPECTED (expected ${expects[$i]})"; status=1; }
  printf "%s %-6s %s\n" "$(echo "$row" | head -1)" "${codes[$i]}" "$ok"
  echo "$row" | tail -n +2
done
echo "(wl = call-weighted workload speed over the guard's variants; vs v1 = against the baseline)"

echo
echo "== 4. replaying the wrong package's minimal case"
repro=$(sed -n 's/^  repro: \(kgate replay --package .*\)$/\1/p' "$out/softmax_v2_wrong.log" | head -1)
if [ -n "$repro" ]; then
  id=$(echo "$repro" | sed -n "s/.* '\([^']*\)'$/\1/p")
  echo "-- $repro"
  "$kgate" replay --package "$here/softmax_v2_wrong" "$id" 2>&1 | sed 's/^/   | /'
  rc=${PIPESTATUS[0]}
  echo "   exit $rc (expected 1)"
  [ "$rc" -eq 1 ] || status=1
else
  echo "no repro line in $out/softmax_v2_wrong.log"
  status=1
fi
echo
echo "demo: $([ $status -eq 0 ] && echo "every exit code as expected" || echo "SOME EXIT CODES UNEXPECTED") — reports under $out/"
exit $status
