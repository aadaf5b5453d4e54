#!/usr/bin/env bash
# --format chooses the files a verb writes under --out, the same way for check, merge, sweep and
# calibrate (report/writers.hpp lists each verb's formats), on the cpu backend:
#   - without it each verb writes what it always has (check and merge: report.json, junit.xml,
#     summary.md, report.html; sweep: sweep.json, sweep.md, sweep.html; calibrate: calibrate.json);
#   - a comma list or a repeated option writes those files only, and the closing line names them;
#     kgate check's isolated workers still hand their report.json to the parent;
#   - an unknown format, one the verb does not write, or an empty item is a usage error (exit 4)
#     that names the verb's formats, before anything runs or is written.
# Usage: format_cli.sh KGATE OUT_DIR
set -u
kgate=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

# files DIR NAME...: DIR holds exactly these files (workers/ aside).
files() {
  local dir=$1
  shift
  local want got
  want=$(printf '%s\n' "$@" | sort | tr '\n' ' ')
  got=$(cd "$dir" && find . -maxdepth 1 -type f -printf '%f\n' | sort | tr '\n' ' ')
  [ "$got" = "$want" ] || fail "$dir holds '$got', expected '$want'"
}
# run EXPECTED-EXIT NAME VERB ARGS...
run() {
  local expect=$1 name=$2
  shift 2
  "$kgate" "$@" --out "$out/$name" > "$out/$name.log" 2>&1
  local rc=$?
  [ $rc -eq "$expect" ] || { cat "$out/$name.log"; fail "kgate $*: exit $rc, expected $expect"; }
}

check=(check --backend cpu --kernel softmax_cpu --cases 6 --no-speed -q)
run 0 check_all "${check[@]}"
files "$out/check_all" report.json junit.xml summary.md report.html
grep -qF "reports: $out/check_all/report.json, junit.xml, summary.md, report.html — exit 0" \
  "$out/check_all.log" || { cat "$out/check_all.log"; fail "check's closing line changed"; }

# Isolated (the default): the worker's report.json reaches the parent whatever the parent writes.
run 0 check_md "${check[@]}" --format md,html
files "$out/check_md" summary.md report.html
grep -q "softmax_cpu" "$out/check_md/summary.md" || fail "summary.md of --format md,html lacks the kernel"
grep -qF "reports: $out/check_md/summary.md, report.html — exit 0" "$out/check_md.log" ||
  { cat "$out/check_md.log"; fail "the closing line does not name the files written"; }
run 0 check_repeated "${check[@]}" --no-isolate --format junit --format json
files "$out/check_repeated" report.json junit.xml

run 0 merge_all merge "$out/check_all/report.json"
files "$out/merge_all" report.json junit.xml summary.md report.html
run 0 merge_junit merge "$out/check_all/report.json" --format junit
files "$out/merge_junit" junit.xml
cmp -s "$out/merge_all/junit.xml" "$out/merge_junit/junit.xml" || fail "merge's junit.xml differs with --format junit"

sweep=(sweep --backend cpu --kernel softmax_cpu --cases 6 -q)
run 0 sweep_all "${sweep[@]}"
files "$out/sweep_all" sweep.json sweep.md sweep.html
grep -q "grids in $out/sweep_all/sweep.md, curves in sweep.html, all figures in $out/sweep_all/sweep.json" \
  "$out/sweep_all.log" || { cat "$out/sweep_all.log"; fail "sweep's closing line changed"; }
run 0 sweep_html "${sweep[@]}" --format html
files "$out/sweep_html" sweep.html
cmp -s "$out/sweep_all/sweep.html" "$out/sweep_html/sweep.html" || fail "sweep.html differs with --format html"
grep -q "written: $out/sweep_html/sweep.html" "$out/sweep_html.log" ||
  { cat "$out/sweep_html.log"; fail "sweep's closing line does not name the file written"; }
run 0 sweep_md_noiso "${sweep[@]}" --no-isolate --format md
files "$out/sweep_md_noiso" sweep.md
cmp -s "$out/sweep_all/sweep.md" "$out/sweep_md_noiso/sweep.md" || fail "sweep.md differs with --format md"

calibrate=(calibrate --backend cpu --kernel softmax_cpu --comparisons 1 --speed-cases 1 --time-budget 0.05 -q)
run 0 calibrate_json "${calibrate[@]}" --format json
files "$out/calibrate_json" calibrate.json

# refused "MESSAGE" VERB ARGS...: exit 4, MESSAGE on stderr, nothing written.
n=0
refused() {
  local message=$1
  shift
  n=$((n + 1))
  local dir="$out/refused$n"
  "$kgate" "$@" --out "$dir" > "$out/refused$n.log" 2>&1
  local rc=$?
  [ $rc -eq 4 ] || { cat "$out/refused$n.log"; fail "kgate $*: exit $rc, expected 4"; }
  grep -qF -- "$message" "$out/refused$n.log" ||
    { cat "$out/refused$n.log"; fail "kgate $*: the message does not say: $message"; }
  [ ! -e "$dir" ] || fail "kgate $*: wrote $dir before the usage error"
}
refused "--format: unknown report format 'pdf'; expected json, junit, md or html" "${check[@]}" --format pdf
refused "--format: unknown report format 'junit'; expected json, md or html" "${sweep[@]}" --format json,junit
refused "--format: unknown report format 'md'; expected json" "${calibrate[@]}" --format md
refused "--format: an empty format name in 'json,,md'; expected json, junit, md or html" \
  merge "$out/check_all/report.json" --format json,,md
echo "PASS: --format writes the chosen files of check, merge, sweep and calibrate; the default is unchanged"
