#!/usr/bin/env bash
# kgate check --baseline-build on the cpu backend (CI has no GPU), with this build as its own base:
#   1. the same build: softmax_cpu is paired with itself, UNCHANGED, not timed (exit 0);
#   2. --time-unchanged: timed against its base and against eager, base status "paired";
#   3. a changed base (a copy of the modules whose softmax_cpu module differs in one string): the
#      digests differ, so it is timed against its base;
#   4. no base build: meta.base.error says why, the kernel is gated against eager alone (exit 0);
#      with --require-base, exit 4;
#   5. a module record of another kgate version: refused, naming both versions;
#   6. --pair with an unknown base kernel: exit 4;
#   7. kgate merge refuses shards paired with different base commits.
# Usage: baseline_build_cli.sh KGATE BUILD_DIR OUT_DIR
set -u
kgate=$1
build=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
field() {  # json python-expression (d: the report, k: its first kernel)
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); k=(d['kernels'] or [{}])[0]; print($2)" "$1"
}
check() {  # expected-exit name [args...]
  local expect=$1 name=$2
  shift 2
  "$kgate" check --backend cpu --kernel softmax_cpu --cases 4 --family random --speed-cases 1 --time-budget 0.2 -q \
    --out "$out/$name" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  [ $rc -eq "$expect" ] || { tail -30 "$out/$name.log"; fail "$name: exit $rc, expected $expect"; }
}
[ -f "$build/kgate-modules/softmax_cpu.kgate-module.json" ] || fail "no module record of softmax_cpu in $build/kgate-modules"

# 1. The same build: UNCHANGED.
check 0 same --baseline-build "$build"
json="$out/same/report.json"
[ "$(field "$json" "k['base']['status']")" = unchanged ] || fail "same build: base $(field "$json" "k['base']")"
[ "$(field "$json" "[s['decision'] for s in k['speed']]")" = "['unchanged']" ] ||
  fail "same build: speed $(field "$json" "[(s['baseline'], s['decision']) for s in k['speed']]")"
[ "$(field "$json" "k['speed'][0]['gates']")" = False ] || fail "an UNCHANGED entry gates"
[ "$(field "$json" "d['meta']['base']['error']")" = "" ] || fail "meta.base.error: $(field "$json" "d['meta']['base']")"
echo "same build: UNCHANGED, not timed ($(field "$json" "k['speed'][0]['note']"))"

# 2. Timing forced.
check 0 forced --baseline-build "$build" --time-unchanged
json="$out/forced/report.json"
[ "$(field "$json" "k['base']['status']")" = paired ] || fail "--time-unchanged: base $(field "$json" "k['base']")"
[ "$(field "$json" "sorted(s['baseline'] for s in k['speed'])")" = "['eager', 'softmax_cpu']" ] ||
  fail "--time-unchanged: timed against $(field "$json" "[s['baseline'] for s in k['speed']]")"
echo "--time-unchanged: timed against $(field "$json" "[(s['baseline'], s['decision']) for s in k['speed']]")"

# 3. A changed base: one string of the module (an error message, stored as immediates in .text)
#    differs, so its code digest does.
mkdir -p "$out/changed"
cp -r "$build/kgate-modules" "$out/changed/"
python3 - "$out/changed/kgate-modules" <<'PY' || fail "could not make a changed module"
import json, pathlib, sys
d = pathlib.Path(sys.argv[1])
module = d / json.load(open(d / "softmax_cpu.kgate-module.json"))["module"]
data = module.read_bytes()
assert data.count(b"softmax_cpu: onl") == 1, "the error message of softmax_cpu is not in its module"
module.write_bytes(data.replace(b"softmax_cpu: onl", b"softmax_cpu: ONL"))  # an immediate in .text
PY
# ... and says it was built with other flags: a warning (an error with --require-base).
sed -i 's/"cxx_flags": "[^"]*"/"cxx_flags": "-O3 -ffast-math"/' "$out"/changed/kgate-modules/*.kgate-module.json
check 0 changed_run --baseline-build "$out/changed"
json="$out/changed_run/report.json"
[ "$(field "$json" "any('cxx_flags' in w for w in d['meta']['base']['warnings'])")" = True ] ||
  fail "changed base: no warning about its flags: $(field "$json" "d['meta']['base']")"
check 4 changed_required --baseline-build "$out/changed" --require-base
grep -q "built differently from the head: cxx_flags" "$out/changed_required.log" || fail "--require-base: flags not named"
[ "$(field "$json" "k['base']['status']")" = paired ] || fail "changed base: base $(field "$json" "k['base']")"
[ "$(field "$json" "k['base']['digest'] != '' and len(k['speed']) == 2")" = True ] ||
  fail "changed base: speed $(field "$json" "[(s['baseline'], s['decision']) for s in k['speed']]")"
echo "changed base: timed against $(field "$json" "[(s['baseline'], s['decision']) for s in k['speed']]")"

# 4. No base build.
check 0 missing --baseline-build "$out/no-such-build"
json="$out/missing/report.json"
err=$(field "$json" "d['meta']['base']['error']")
case "$err" in *"no kgate-modules directory"*) ;; *) fail "missing base: meta.base.error '$err'" ;; esac
[ "$(field "$json" "[s['baseline'] for s in k['speed']]")" = "['eager']" ] || fail "missing base: not eager-only"
check 4 missing_required --baseline-build "$out/no-such-build" --require-base
grep -q "require-base" "$out/missing_required.log" || fail "--require-base: no message"
echo "no base build: eager only ($err); --require-base: exit 4"

# 5. Another kgate version.
mkdir -p "$out/other/kgate-modules"
cp "$build/kgate-modules/"softmax_cpu* "$out/other/kgate-modules/"
sed -i 's/"kgate_version": "[^"]*"/"kgate_version": "0.0.1-other"/' "$out/other/kgate-modules/softmax_cpu.kgate-module.json"
check 4 other_version --baseline-build "$out/other" --require-base
grep -q "built against kgate 0.0.1-other, and this is kgate" "$out/other_version.log" ||
  { cat "$out/other_version.log"; fail "another version: not named"; }
echo "another kgate version: refused ($(grep -o 'built against kgate [^:]*' "$out/other_version.log" | head -1))"
# The same version with another kernel ABI (KernelInfo's layout): refused before it is loaded.
own=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['kgate_version'])" "$build/kgate-modules/softmax_cpu.kgate-module.json")
case "$own" in *+kernel-abi.[0-9]*) ;; *) fail "the module record's version carries no kernel ABI: '$own'" ;; esac
sed -i "s/\"kgate_version\": \"[^\"]*\"/\"kgate_version\": \"${own%%+*}+kernel-abi.1\"/" "$out/other/kgate-modules/softmax_cpu.kgate-module.json"
check 4 other_abi --baseline-build "$out/other" --require-base
grep -q "built against kgate ${own%%+*}+kernel-abi.1, and this is kgate $own" "$out/other_abi.log" ||
  { cat "$out/other_abi.log"; fail "another kernel ABI: not named"; }
echo "another kernel ABI: refused ($own against ${own%%+*}+kernel-abi.1)"

# 6. --pair with an unknown base kernel.
check 4 bad_pair --baseline-build "$build" --pair softmax_cpu=no_such_kernel
grep -q "the base build has no kernel 'no_such_kernel'" "$out/bad_pair.log" || fail "--pair: not named"

# 7. Shards paired with different bases are not one run.
KGATE_BASE_SHA=aaaa "$kgate" check --backend cpu --kernel softmax_cpu --cases 4 --no-speed -q --baseline-build "$build" \
  --out "$out/shard_a" > /dev/null 2>&1
KGATE_BASE_SHA=bbbb "$kgate" check --backend cpu --kernel softmax_cpu --cases 4 --no-speed -q --baseline-build "$build" \
  --out "$out/shard_b" > /dev/null 2>&1
"$kgate" merge "$out/shard_a/report.json" "$out/shard_b/report.json" --out "$out/merged" > "$out/merge.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/merge.log"; fail "merge of shards with different bases: exit $rc"; }
grep -q "share their base build" "$out/merge.log" || { cat "$out/merge.log"; fail "merge: no reason given"; }
echo "merge: shards of different bases refused"
echo "PASS"
