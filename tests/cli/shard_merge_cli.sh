#!/usr/bin/env bash
# kgate check --shard i/n and kgate merge on the cpu backend: two shards split three kernels
# (disjoint, together all of them), the merged report holds all three with the failing mutants'
# exit code, an empty shard writes an empty report and exits 0, and bad input exits 4 with a
# message naming it (a kernel in two shards, a malformed --shard, a file that is not a report).
# Usage: shard_merge_cli.sh KGATE OUT_DIR
set -u
kgate=$1
out=$2
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
kernels=(--kernel softmax_cpu --kernel mutant_softmax_cpu_tail_dropped --kernel mutant_softmax_cpu_writes_input)
check() {  # shard out-name
  "$kgate" check --backend cpu "${kernels[@]}" --cases 8 --no-speed --no-shrink --shard "$1" --out "$out/$2" \
    > "$out/$2.log" 2>&1
  echo $?
}
names() {  # report.json -> kernel names, one per line
  python3 -c "import json,sys; [print(k['name']) for k in json.load(open(sys.argv[1]))['kernels']]" "$1"
}

# Sorted by name: mutant_softmax_cpu_tail_dropped, mutant_softmax_cpu_writes_input, softmax_cpu;
# dealt round-robin: shard 1 gets the first and the third, shard 2 the second.
rc1=$(check 1/2 s1)
rc2=$(check 2/2 s2)
[ "$rc1" -eq 1 ] && [ "$rc2" -eq 1 ] || fail "shards exited $rc1 and $rc2, expected 1 and 1 (each holds a mutant)"
[ "$(names "$out/s1/report.json" | sort | tr '\n' ' ')" = "mutant_softmax_cpu_tail_dropped softmax_cpu " ] ||
  fail "shard 1/2 holds: $(names "$out/s1/report.json" | tr '\n' ' ')"
[ "$(names "$out/s2/report.json" | tr '\n' ' ')" = "mutant_softmax_cpu_writes_input " ] ||
  fail "shard 2/2 holds: $(names "$out/s2/report.json" | tr '\n' ' ')"
grep -q "shard 1/2: 2 of 3" "$out/s1.log" || fail "shard 1/2 does not say what it checks"

"$kgate" merge "$out/s1/report.json" "$out/s2/report.json" --out "$out/merged" > "$out/merged.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out/merged.log"; fail "merge exited $rc, expected 1 (mutants fail)"; }
[ "$(names "$out/merged/report.json" | sort | tr '\n' ' ')" = \
  "mutant_softmax_cpu_tail_dropped mutant_softmax_cpu_writes_input softmax_cpu " ] || fail "the merged report lacks kernels"
[ "$(grep -c '<testsuite ' "$out/merged/junit.xml")" -ge 3 ] || [ "$(grep -c '<testcase ' "$out/merged/junit.xml")" -ge 3 ] ||
  fail "junit.xml of the merge does not hold the three kernels"
grep -q "merged_from" "$out/merged/report.json" || fail "the merged report does not say what it was merged from"
[ -f "$out/merged/report.html" ] || fail "report.html was not written"
grep -q "mutant_softmax_cpu_writes_input" "$out/merged/report.html" || fail "report.html does not name the kernels"
! grep -qi "<script" "$out/merged/report.html" || fail "report.html holds a script"
grep -q "^softmax_cpu .* passed" "$out/merged.log" || { cat "$out/merged.log"; fail "no table row for softmax_cpu"; }

# The passing kernel's shard alone merges to exit 0; an empty shard (3 kernels, 4 shards) exits 0.
rc=$(check 4/4 s4)
[ "$rc" -eq 0 ] || { cat "$out/s4.log"; fail "an empty shard exited $rc, expected 0"; }
[ -z "$(names "$out/s4/report.json")" ] || fail "shard 4/4 of 3 kernels is not empty"
"$kgate" merge "$out/s4/report.json" --out "$out/empty" > /dev/null 2>&1 || fail "merging an empty shard failed"

# Bad input: exit 4 and a message naming it.
"$kgate" merge "$out/s1/report.json" "$out/s1/report.json" --out "$out/dup" > "$out/dup.log" 2>&1
[ $? -eq 4 ] || fail "a kernel in two shards should exit 4"
grep -q "is in both" "$out/dup.log" || { cat "$out/dup.log"; fail "the duplicate is not named"; }
for bad in 0/2 3/2 1/0 a/b 1/2/3 2; do
  "$kgate" check --backend cpu --kernel softmax_cpu --no-speed --shard "$bad" --out "$out/bad" > "$out/bad.log" 2>&1
  [ $? -eq 4 ] || fail "--shard $bad should exit 4"
  grep -q "expected i/n" "$out/bad.log" || { cat "$out/bad.log"; fail "--shard $bad: no message"; }
done
echo '{"schema": "something-else"}' > "$out/other.json"
"$kgate" merge "$out/other.json" --out "$out/other" > "$out/other.log" 2>&1
[ $? -eq 4 ] || fail "a file that is not a kgate report should exit 4"
grep -q "other.json" "$out/other.log" || { cat "$out/other.log"; fail "the bad file is not named"; }
echo "shard_merge_cli: all passed"
