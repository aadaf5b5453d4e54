#!/usr/bin/env bash
# Cross-checks kgate's CUPTI launch timer against Nsight Compute: the power study's base kernels
# (kgate.bench.speed_power --ncu-kernels) are timed once with CUPTI (no profiler attached), then
# run with exactly the same work under `ncu --clock-control none --metrics gpu__time_duration.sum`
# (no CUPTI in the process); prints, per kernel, the CUPTI median, the ncu median and their
# difference in %. Goal: within 1%. An empty kernel is timed both ways too: the difference of its
# medians is the fixed cost per launch that ncu's gpu__time_duration includes and CUPTI's kernel
# record does not (about 1 us on the H200), and a last column gives each difference net of it. A
# last line compares the increments between sizes (the fixed parts cancel) and fits
# ncu = a + b x CUPTI: b near 1 means the two agree on the work, a is the per-launch offset. The
# "ncu SM-active" column is the part of each ncu duration during which an SM was active
# (gpu__time_duration x sm__cycles_active.max / sm__cycles_elapsed.max): ncu's own launch overhead
# taken out, launch by launch; CUPTI's kernel record lies between the two.
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
metrics=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,sm__cycles_active.max,sm__cycles_elapsed.max
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
if "Kernel Name" not in header or "gpu__time_duration.sum" not in header:
    sys.exit("ncu_compare: unexpected ncu CSV header (no Kernel Name or gpu__time_duration.sum): %s"
             % header[:12])
name_col = header.index("Kernel Name")
# Per metric column, the factor from the units row to: ns, MHz, cycles.
UNITS = dict(SCALE, **RATE, **{"cycle": 1.0, "kcycle": 1e3, "mcycle": 1e6, "gcycle": 1e9})
METRICS = ["gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "sm__cycles_active.max",
           "sm__cycles_elapsed.max"]
cols = {m: header.index(m) for m in METRICS if m in header}
factor = {m: 1.0 for m in cols}
per_kernel = {}  # name -> list of {metric: value}
for r in rows[1:]:
    if len(r) <= max(cols.values()):
        continue
    values = {}
    for m, c in cols.items():
        text = r[c].replace(",", "").strip()
        try:
            values[m] = float(text) * factor[m]
        except ValueError:
            if text.lower() in UNITS or text in UNITS:  # the units row, e.g. "nsecond"
                factor[m] = UNITS.get(text, UNITS.get(text.lower()))
    if "gpu__time_duration.sum" not in values:
        continue
    per_kernel.setdefault(r[name_col].split("(")[0].strip(), []).append(values)

def medians(name, fn):
    out = []
    for v in per_kernel.get(name, []):
        try:
            out.append(fn(v))
        except (KeyError, ZeroDivisionError):
            pass
    return statistics.median(out) if out else None

ncu = {n: [v["gpu__time_duration.sum"] for v in vs] for n, vs in per_kernel.items()}
# The part of ncu's duration during which an SM was active: gpu__time_duration scaled by
# sm__cycles_active.max / sm__cycles_elapsed.max. ncu starts and stops its timer with commands around
# the launch, so its duration also holds the front end's work before the first block runs and after
# the last one ends; this removes it, launch by launch.
def sm_active(v):
    return v["gpu__time_duration.sum"] * v["sm__cycles_active.max"] / v["sm__cycles_elapsed.max"]

# The empty kernel's two medians give the fixed cost per launch that ncu's gpu__time_duration counts
# and CUPTI's kernel record does not; a column compares what is left.
offset = None
f = cupti.get("kgate_power_empty")
if f and f.get("cupti_median_ns", "-") != "-" and ncu.get("kgate_power_empty"):
    offset = statistics.median(ncu["kgate_power_empty"]) - float(f["cupti_median_ns"])

print("%-22s %7s %10s %7s %14s %13s %8s %13s %9s %12s %8s %8s" % (
    "kernel", "target", "units", "n c/ncu", "CUPTI median", "ncu median", "diff %", "ncu SM-active",
    "diff %", "-offset diff", "NVML MHz", "ncu MHz"))
worst, worst_net, worst_active, missing = 0.0, 0.0, None, []
for name in sorted(cupti):
    f = cupti[name]
    c = f.get("cupti_median_ns", "-")
    samples = ncu.get(name, [])
    n = "%s/%d" % (f["launches"], len(samples))
    if c == "-" or not samples:
        missing.append(name)
        print("%-22s %7s %10s %7s %14s %13s" % (name, f["target_us"] + "us", f["units"], n, c, "-"))
        continue
    c = float(c)
    m = statistics.median(samples)
    diff = 100.0 * (c - m) / m
    active = medians(name, sm_active)
    active_text, active_diff = "-", "-"
    if active:
        active_text = "%.1f" % active
        active_diff = "%+.2f%%" % (100.0 * (c - active) / active)
    net = "-"
    if name != "kgate_power_empty":
        worst = max(worst, abs(diff))
        if active:
            worst_active = max(worst_active or 0.0, abs(100.0 * (c - active) / active))
        if offset is not None and m - offset > 0:
            d = 100.0 * (c - (m - offset)) / (m - offset)
            worst_net = max(worst_net, abs(d))
            net = "%+.2f%%" % d
    clock = medians(name, lambda v: v["sm__cycles_elapsed.avg.per_second"])
    print("%-22s %7s %10s %7s %14.1f %13.1f %+7.2f%% %13s %9s %12s %8s %8s" % (
        name, f["target_us"] + "us", f["units"], n, c, m, diff, active_text, active_diff, net,
        f.get("sm_clock_mhz", "-"), "%.0f" % clock if clock else "-"))
if missing:
    sys.exit("ncu_compare: no comparison for %s" % ", ".join(missing))
if offset is not None:
    print("fixed offset (ncu - CUPTI on an empty kernel): %.0f ns; largest difference net of it %.2f%%"
          % (offset, worst_net))
if worst_active is not None:
    print("SM-active part of ncu's duration: largest difference %.2f%% (within 1%%: %s)"
          % (worst_active, "yes" if worst_active <= 1 else "no"))

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
