#!/usr/bin/env bash
# Cross-checks kgate's CUPTI launch timer against Nsight Compute: the power study's base kernels
# (kgate.bench.speed_power --ncu-kernels) are timed once with CUPTI (no profiler attached), then
# run with exactly the same work under `ncu --clock-control none --metrics gpu__time_duration.sum`
# (no CUPTI in the process); prints, per kernel, the CUPTI median, the ncu median and their
# difference in %. Goal: within 1%. An empty kernel is timed both ways too: the difference of its
# medians is the fixed cost per launch that ncu's gpu__time_duration includes and CUPTI's kernel
# record does not (about 1 us on the H200), and a last column gives each difference net of it. A
# last line compares the increments between sizes (the fixed parts cancel) and fits
# ncu = a + b x CUPTI: b near 1 means the two agree on the work, a is the per-launch offset.
#
# usage: bench/ncu_compare.sh BIN [speed_power options: --kind stream|compute --sizes 3,30,300
#                                  --launches K --warm]
#   BIN  the kgate.bench.speed_power executable (e.g. build/bin/kgate.bench.speed_power)
#   NCU=/path/to/ncu picks the profiler (default: ncu on PATH, then /usr/local/cuda/bin/ncu);
#   NCU_COMPARE_DIR=DIR keeps the intermediate files there (default: a temporary directory);
#   NCU_ARGS="..." adds options to ncu (e.g. --cache-control none, to pair with --warm).
# Both runs also report the SM clock (NVML after the CUPTI timing; ncu's sm__cycles_elapsed rate).
# Exit codes: 0 every kernel within 1%, 2 some kernel differs by more, 1 a run failed,
#             3 ncu or python3 missing, 4 bad usage.
set -u

die() { echo "ncu_compare: $1" >&2; exit "${2:-1}"; }

[ $# -ge 1 ] || { sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 4; }
bin=$1
shift
[ -x "$bin" ] || die "'$bin' is not an executable: build it with 'ninja kgate.bench.speed_power'" 4

ncu=${NCU:-}
[ -n "$ncu" ] || ncu=$(command -v ncu 2>/dev/null || true)
[ -n "$ncu" ] || { [ -x /usr/local/cuda/bin/ncu ] && ncu=/usr/local/cuda/bin/ncu; }
if [ -z "$ncu" ] || [ ! -x "$ncu" ]; then
  die "Nsight Compute (ncu) was not found on PATH nor at /usr/local/cuda/bin/ncu: install the \
toolkit's nsight-compute component or set NCU=/path/to/ncu" 3
fi
command -v python3 > /dev/null 2>&1 || die "python3 is needed to parse ncu's CSV output" 3

if [ -n "${NCU_COMPARE_DIR:-}" ]; then
  work=$NCU_COMPARE_DIR
  mkdir -p "$work" || die "cannot create $work" 4
else
  work=$(mktemp -d) || die "mktemp failed"
  trap 'rm -rf "$work"' EXIT
fi

# 1. CUPTI, no profiler: sizes the kernels, prints their medians and the units used.
echo "ncu_compare: timing with CUPTI: $bin --ncu-kernels $*" >&2
"$bin" --ncu-kernels "$@" > "$work/cupti.txt" 2> "$work/cupti.err"
rc=$?
if [ $rc -ne 0 ]; then
  cat "$work/cupti.err" >&2
  die "the CUPTI run exited $rc"
fi
units=$(sed -n 's/^sizing: --units //p' "$work/cupti.txt" | tail -n 1)
[ -n "$units" ] || die "the CUPTI run printed no 'sizing: --units' line (see $work/cupti.txt)"

# 2. ncu with the same work; the program times nothing itself (--timer none), so CUPTI and the
#    profiler never share the process. Later options win, so ours come after the caller's.
echo "ncu_compare: profiling with $ncu (units $units)" >&2
metrics=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second
# shellcheck disable=SC2086  # NCU_ARGS is a list of options
"$ncu" --clock-control none ${NCU_ARGS:-} --metrics "$metrics" --kernel-name "regex:^kgate_power_" \
  --export "$work/profile" --force-overwrite \
  "$bin" --ncu-kernels "$@" --timer none --units "$units" > "$work/ncu.log" 2>&1
rc=$?
if [ $rc -ne 0 ] || [ ! -f "$work/profile.ncu-rep" ]; then
  tail -n 25 "$work/ncu.log" >&2
  if grep -q "ERR_NVGPUCTRPERM" "$work/ncu.log"; then
    echo "ncu_compare: hint: this user may not read GPU performance counters; run as root or set" \
         "the driver option NVreg_RestrictProfilingToAdminUsers=0" >&2
  fi
  die "ncu exited $rc (no report written)"
fi
"$ncu" --import "$work/profile.ncu-rep" --csv --page raw --metrics "$metrics" \
  > "$work/ncu.csv" 2> "$work/import.err" || { cat "$work/import.err" >&2; die "ncu --import failed"; }

grep -m 1 '^ncu-kernels:' "$work/cupti.txt"
[ -z "${NCU_ARGS:-}" ] || echo "ncu options: --clock-control none $NCU_ARGS"

# 3. Per kernel: CUPTI median vs ncu median.
python3 - "$work/cupti.txt" "$work/ncu.csv" <<'PY'
import csv, statistics, sys

cupti_path, ncu_path = sys.argv[1], sys.argv[2]
SCALE = {"nsecond": 1.0, "ns": 1.0, "usecond": 1e3, "us": 1e3, "msecond": 1e6, "ms": 1e6,
         "second": 1e9, "s": 1e9}
# Clock rates to MHz.
RATE = {"cycle/nsecond": 1e3, "cycle/usecond": 1.0, "cycle/msecond": 1e-3, "cycle/second": 1e-6,
        "ghz": 1e3, "mhz": 1.0, "khz": 1e-3, "hz": 1e-6}

cupti = {}  # name -> (fields)
for line in open(cupti_path):
    if not line.startswith("ncu-kernel "):
        continue
    fields = dict(item.split("=", 1) for item in line.split()[1:])
    cupti[fields["name"]] = fields

rows = [r for r in csv.reader(l for l in open(ncu_path) if l.startswith('"'))]
if not rows:
    sys.exit("ncu_compare: ncu's CSV holds no rows (no kgate_power_ kernel was profiled?)")
header = rows[0]
try:
    name_col = header.index("Kernel Name")
    metric_col = header.index("gpu__time_duration.sum")
except ValueError as e:
    sys.exit("ncu_compare: unexpected ncu CSV header (%s): %s" % (e, header[:12]))
clock_col = header.index("sm__cycles_elapsed.avg.per_second") if "sm__cycles_elapsed.avg.per_second" in header else None
scale, rate, ncu, ncu_clock = 1.0, 1.0, {}, {}
for r in rows[1:]:
    if len(r) <= max(name_col, metric_col):
        continue
    value = r[metric_col].replace(",", "").strip()
    try:
        ns = float(value)
    except ValueError:
        # The units row: e.g. "nsecond" under the metric's column.
        if value in SCALE:
            scale = SCALE[value]
        if clock_col is not None and r[clock_col].strip().lower() in RATE:
            rate = RATE[r[clock_col].strip().lower()]
        continue
    name = r[name_col].split("(")[0].strip()
    ncu.setdefault(name, []).append(ns * scale)
    if clock_col is not None:
        try:
            ncu_clock.setdefault(name, []).append(float(r[clock_col].replace(",", "")) * rate)
        except ValueError:
            pass

# The empty kernel's two medians give the fixed cost per launch that ncu's gpu__time_duration counts
# and CUPTI's kernel record does not; the last column compares the work-proportional part.
offset = None
f = cupti.get("kgate_power_empty")
if f and f.get("cupti_median_ns", "-") != "-" and ncu.get("kgate_power_empty"):
    offset = statistics.median(ncu["kgate_power_empty"]) - float(f["cupti_median_ns"])

print("%-24s %8s %12s %9s %9s %16s %14s %8s %14s %10s %10s" % (
    "kernel", "target", "units", "cupti n", "ncu n", "CUPTI median ns", "ncu median ns", "diff %",
    "- offset diff %", "NVML MHz", "ncu MHz"))
worst, worst_net, missing = 0.0, 0.0, []
for name in sorted(cupti):
    f = cupti[name]
    c = f.get("cupti_median_ns", "-")
    samples = ncu.get(name, [])
    if c == "-" or not samples:
        missing.append(name)
        print("%-24s %8s %12s %9s %9d %16s %14s %8s" % (name, f["target_us"] + "us", f["units"],
                                                       f["launches"], len(samples), c, "-", "-"))
        continue
    m = statistics.median(samples)
    diff = 100.0 * (float(c) - m) / m
    net = "-"
    if name != "kgate_power_empty":
        worst = max(worst, abs(diff))
        if offset is not None and m - offset > 0:
            d = 100.0 * (float(c) - (m - offset)) / (m - offset)
            worst_net = max(worst_net, abs(d))
            net = "%+.2f%%" % d
    clock = "%.0f" % statistics.median(ncu_clock[name]) if ncu_clock.get(name) else "-"
    print("%-24s %8s %12s %9s %9d %16.1f %14.1f %+7.2f%% %14s %10s %10s" % (
        name, f["target_us"] + "us", f["units"], f["launches"], len(samples), float(c), m, diff, net,
        f.get("sm_clock_mhz", "-"), clock))
if missing:
    sys.exit("ncu_compare: no comparison for %s" % ", ".join(missing))
if offset is not None:
    print("fixed offset (ncu - CUPTI on an empty kernel): %.0f ns; largest difference net of it %.2f%%"
          % (offset, worst_net))
# The same comparison without any assumption about the empty kernel: between consecutive sizes of the
# same kind the fixed per-launch parts cancel, so the ratio of the two tools' increments says whether
# they agree on the work itself; a least-squares line ncu = a + b * CUPTI gives the per-launch offset.
points = sorted((float(cupti[n]["cupti_median_ns"]), statistics.median(ncu[n])) for n in cupti
                if n != "kgate_power_empty" and cupti[n].get("cupti_median_ns", "-") != "-" and ncu.get(n))
if len(points) >= 2:
    slopes = ["%.4f" % ((y1 - y0) / (x1 - x0)) for (x0, y0), (x1, y1) in zip(points, points[1:]) if x1 > x0]
    mx = statistics.fmean(x for x, _ in points)
    my = statistics.fmean(y for _, y in points)
    sxx = sum((x - mx) ** 2 for x, _ in points)
    b = sum((x - mx) * (y - my) for x, y in points) / sxx if sxx > 0 else float("nan")
    print("work agreement: ncu/CUPTI increments between consecutive sizes %s; least squares "
          "ncu = %.0f ns + %.4f x CUPTI" % (", ".join(slopes), my - b * mx, b))
print("largest difference %.2f%% (goal: within 1%%): %s" % (worst, "ok" if worst <= 1 else "OVER"))
sys.exit(0 if worst <= 1 else 2)
PY
