#!/usr/bin/env bash
# kgate check --benchmark-json end to end on the cpu backend (no GPU needed):
#   a Google Benchmark JSON output -> exit 0; report.json "google_benchmark" holds it as written,
#                                     summary.md its table; kernel results as without it
#   in worker processes (default) and with --no-isolate, one file and two
#   kgate compare                  -> reads reports with and without the field
#   missing file, not JSON, JSON without "benchmarks" -> exit 4 naming the file, nothing run
# Usage: google_benchmark_cli.sh KGATE FIXTURE.json OUT_DIR
set -u
kgate=$1
fixture=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
run() {  # run NAME ARGS...: kgate check of softmax_cpu, output in $out/NAME.log, sets rc
  local name=$1
  shift
  "$kgate" check --backend cpu --kernel softmax_cpu --cases 8 --no-speed -q "$@" > "$out/$name.log" 2>&1
  rc=$?
}

run plain --out "$out/plain"
[ $rc -eq 0 ] || { cat "$out/plain.log"; fail "kgate check without --benchmark-json exited $rc, expected 0"; }
run one --benchmark-json "$fixture" --out "$out/one"
[ $rc -eq 0 ] || { cat "$out/one.log"; fail "kgate check --benchmark-json exited $rc, expected 0"; }
grep -q "google benchmark: 1 file(s), 14 entries kept in report.json" "$out/one.log" \
  || { cat "$out/one.log"; fail "the run does not say the output was kept"; }
run two --no-isolate --benchmark-json "$fixture" --benchmark-json "$fixture" --out "$out/two"
[ $rc -eq 0 ] || { cat "$out/two.log"; fail "kgate check --no-isolate with two --benchmark-json exited $rc, expected 0"; }

python3 - "$fixture" "$out" <<'PY' || fail "report.json does not keep the Google Benchmark output as written"
import json, sys
fixture, out = sys.argv[1], sys.argv[2]
raw = json.load(open(fixture))
plain = json.load(open(f"{out}/plain/report.json"))
assert "google_benchmark" not in plain, "a run without --benchmark-json has the field"
# The parent embeds it; the worker's own report does not carry a copy.
assert "google_benchmark" not in json.load(open(f"{out}/one/workers/softmax_cpu/report.json"))
# Wall times ("seconds") differ run to run; everything else must not.
untimed = lambda d: {x: v for x, v in d.items() if x != "seconds"}
same = lambda r: [{"name": k["name"], "outcome": k["outcome"], "correctness": untimed(k["correctness"]),
                   "speed": [untimed(s) for s in k["speed"]]} for k in r["kernels"]]
for run, files in (("one", 1), ("two", 2)):
    r = json.load(open(f"{out}/{run}/report.json"))
    assert r["schema"] == "kgate-report/1"
    g = r["google_benchmark"]
    assert len(g) == files, (run, len(g))
    for e in g:
        assert e["file"] == fixture, e["file"]
        assert e["context"] == raw["context"], run
        assert e["benchmarks"] == raw["benchmarks"], run
    # Decisions are those of the same run without it.
    assert r["exit_code"] == plain["exit_code"], run
    assert same(r) == same(plain), run
PY
grep -q '^### Google Benchmark' "$out/one/summary.md" || fail "summary.md has no Google Benchmark section"
grep -qF '| `softmax_cpu/f32/B:4096/N:1024/manual_time` | 2122 us (manual) | 2121 us | median of 3 |' \
  "$out/one/summary.md" || { cat "$out/one/summary.md"; fail "summary.md lacks the benchmark's row"; }

"$kgate" compare "$out/plain/report.json" "$out/one/report.json" > "$out/compare.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$out/compare.log"; fail "kgate compare on a report with google_benchmark exited $rc"; }
grep -q '^softmax_cpu ' "$out/compare.log" || { cat "$out/compare.log"; fail "kgate compare lost the kernel"; }
"$kgate" compare "$out/one/report.json" "$out/two/report.json" > /dev/null 2>&1 \
  || fail "kgate compare of two reports with google_benchmark failed"

hint="(--benchmark-json takes the file Google Benchmark writes with --benchmark_out=FILE --benchmark_out_format=json)"
printf 'this is not JSON\n' > "$out/not_json.json"
printf '{"context": {"date": "2025-11-30"}}\n' > "$out/no_benchmarks.json"
for bad in "missing.json:no such file" "not_json.json:not valid JSON (parse error on line 1)" \
           "no_benchmarks.json:not Google Benchmark JSON output: no \"benchmarks\" array at the top level"; do
  file=$out/${bad%%:*}
  what=${bad#*:}
  run bad --benchmark-json "$file" --out "$out/bad"
  [ $rc -eq 4 ] || { cat "$out/bad.log"; fail "--benchmark-json ${bad%%:*} exited $rc, expected 4"; }
  grep -qxF "kgate: error: $file: $what $hint" "$out/bad.log" \
    || { cat "$out/bad.log"; fail "--benchmark-json ${bad%%:*}: expected the message '$file: $what ...'"; }
  [ ! -e "$out/bad" ] || fail "--benchmark-json ${bad%%:*}: a report was written, the run should not have started"
done
echo "google_benchmark_cli: all passed"
