#!/usr/bin/env bash
# bench/ncu_compare.sh on the CPU, with a stand-in for kgate.bench.speed_power and for ncu: the
# script's parsing of both outputs, the fixed-offset and work-agreement lines, and its exit codes
# (0 every kernel within 1%, 2 some kernel over, 1 a kernel missing from the profile).
# Usage: ncu_compare_cli.sh SOURCE_DIR
set -u
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $1"; fails=$((fails + 1)); }

# The stand-in benchmark prints CUPTI medians from $FAKE_CUPTI ("name=ns ..."), the profiler writes
# a report and, on --import, a CSV whose medians are $FAKE_NCU (name=us, in microseconds).
cat > "$work/bench" <<'SH'
#!/usr/bin/env bash
echo "ncu-kernels: Fake GPU, timer cupti, read-flushed L2, 3 launches per kernel"
echo "sizing: --units 10,20,30"
for pair in $FAKE_CUPTI; do
  echo "ncu-kernel name=${pair%%=*} target_us=1 units=10 launches=3 cupti_median_ns=${pair#*=} sm_clock_mhz=1980"
done
SH
cat > "$work/ncu" <<'SH'
#!/usr/bin/env bash
if [ "$1" = "--import" ]; then
  echo '"ID","Kernel Name","gpu__time_duration.sum","sm__cycles_elapsed.avg.per_second","sm__cycles_active.max","sm__cycles_elapsed.max"'
  echo '"","","usecond","cycle/nsecond","cycle","Kcycle"'
  id=0
  for pair in $FAKE_NCU; do
    name=${pair%%=*}
    active=1000
    for a in ${FAKE_ACTIVE:-}; do [ "${a%%=*}" = "$name" ] && active=${a#*=}; done
    for k in 1 2 3; do
      echo "\"$id\",\"$name()\",\"${pair#*=}\",\"1.95\",\"$active\",\"1\""
      id=$((id + 1))
    done
  done
  exit 0
fi
while [ $# -gt 0 ]; do
  [ "$1" = "--export" ] && touch "$2.ncu-rep"
  shift
done
SH
chmod +x "$work/bench" "$work/ncu"

run() {  # expected-exit label
  NCU="$work/ncu" bash "$src/bench/ncu_compare.sh" "$work/bench" > "$work/out.txt" 2>&1
  local rc=$?
  [ $rc -eq "$1" ] || { fail "$2: exit $rc, expected $1"; cat "$work/out.txt"; }
}

# A fixed 900 ns more per launch under ncu: over 1% on the short kernel, none net of the offset, and
# the increments agree exactly; the SM-active part of ncu's durations (active cycles out of 1 Kcycle
# elapsed) equals CUPTI's.
export FAKE_CUPTI="kgate_power_empty=600 kgate_power_stream_0=3000 kgate_power_stream_1=30000 kgate_power_stream_2=300000"
export FAKE_NCU="kgate_power_empty=1.5 kgate_power_stream_0=3.9 kgate_power_stream_1=30.9 kgate_power_stream_2=300.9"
export FAKE_ACTIVE="kgate_power_empty=400 kgate_power_stream_0=769.2307692 kgate_power_stream_1=970.8737864 kgate_power_stream_2=997.0089731"
run 2 "a fixed offset"
grep -q "SM-active part of ncu's duration: largest difference 0.00% (within 1%: yes)" "$work/out.txt" ||
  fail "the SM-active line is wrong: $(grep SM-active "$work/out.txt")"
unset FAKE_ACTIVE
grep -q "fixed offset (ncu - CUPTI on an empty kernel): 900 ns; largest difference net of it 0.00%" "$work/out.txt" ||
  fail "the fixed offset line is wrong: $(grep fixed "$work/out.txt")"
grep -q "increments between consecutive sizes 1.0000, 1.0000; least squares ncu = 900 ns + 1.0000 x CUPTI" "$work/out.txt" ||
  fail "the work agreement line is wrong: $(grep work "$work/out.txt")"
grep -q "largest difference 23.08% (goal: within 1%): OVER" "$work/out.txt" ||
  fail "the verdict line is wrong: $(grep largest "$work/out.txt")"
grep -Eq "^kgate_power_stream_0 .* 1950 *$" "$work/out.txt" || fail "ncu's clock (1.95 cycle/ns) is not shown as 1950 MHz"

# ncu 0.5% above CUPTI everywhere: within the goal.
export FAKE_NCU="kgate_power_empty=0.603 kgate_power_stream_0=3.015 kgate_power_stream_1=30.15 kgate_power_stream_2=301.5"
run 0 "within 1%"
grep -q "largest difference 0.50% (goal: within 1%): ok" "$work/out.txt" || fail "0.5% not reported as ok"
# Every SM active for all of ncu's duration: the SM-active part is ncu's whole duration, 0.50% off.
grep -q "SM-active part of ncu's duration: largest difference 0.50% (within 1%: yes)" "$work/out.txt" ||
  fail "the SM-active line is wrong: $(grep SM-active "$work/out.txt")"

# A kernel the profile lacks: no comparison, exit 1.
export FAKE_NCU="kgate_power_empty=0.6 kgate_power_stream_0=3.0 kgate_power_stream_1=30.0"
run 1 "a missing kernel"
grep -q "no comparison for kgate_power_stream_2" "$work/out.txt" || fail "the missing kernel is not named"

# A benchmark that fails: its exit is reported, exit 1.
printf '#!/usr/bin/env bash\necho boom >&2\nexit 4\n' > "$work/bench"
run 1 "a failing benchmark"
grep -q "the CUPTI run exited 4" "$work/out.txt" || fail "the failing benchmark's exit is not reported"

[ $fails -eq 0 ] || exit 1
echo "ncu_compare: 4 scenarios passed"
