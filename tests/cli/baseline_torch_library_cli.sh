#!/usr/bin/env bash
# kgate check --baseline-torch-library on the cpu backend: a torch custom-op library paired with its
# own base build, both in one process (the base loaded under a renamed namespace):
#   1. a copy of the same library: each --torch-op is UNCHANGED, not timed;
#   2. --time-unchanged: timed against its base (the op of the renamed namespace) and against eager;
#      with gate_against_eager false in the config, the eager comparison is informational (this cpu
#      op is slower than eager) and the exit code is the base comparison's;
#   3. a changed base (one string of the library differs): paired, timed against its base;
#   4. the head's own file as its base: refused (exit 4);
#   5. a base that does not spell the namespace: gated against eager alone, meta.base.error says why;
#      with --require-base, exit 4.
# Usage: baseline_torch_library_cli.sh KGATE LIBRARY OUT_DIR
set -u
kgate=$1
library=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
field() {  # json python-expression (d: the report, k: its first kernel)
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); k=(d['kernels'] or [{}])[0]; print($2)" "$1"
}
check() {  # expected-exit name base [args...]
  local expect=$1 name=$2 base=$3
  shift 3
  "$kgate" check --backend cpu --torch-library "$library" --torch-op cpu/kgate_test::softmax_out=softmax \
    --baseline-torch-library "$base" --cases 4 --family random --speed-cases 1 --time-budget 0.2 -q \
    --out "$out/$name" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  [ "$expect" = any ] || [ $rc -eq "$expect" ] || { tail -30 "$out/$name.log"; fail "$name: exit $rc, expected $expect"; }
}
patched() {  # patched FROM TO OUT: the library with one string replaced (same length)
  python3 - "$library" "$1" "$2" "$3" <<'PY' || fail "could not patch $1"
import sys
data = open(sys.argv[1], "rb").read()
old, new = sys.argv[2].encode(), sys.argv[3].encode()
assert len(old) == len(new) and old in data, old
open(sys.argv[4], "wb").write(data.replace(old, new))
PY
}

# 1. The same library, another path: UNCHANGED.
cp "$library" "$out/same.so"
check 0 same "$out/same.so"
json="$out/same/report.json"
[ "$(field "$json" "k['base']['status']")" = unchanged ] || fail "same library: base $(field "$json" "k['base']")"
[ "$(field "$json" "[s['decision'] for s in k['speed']]")" = "['unchanged']" ] ||
  fail "same library: speed $(field "$json" "[(s['baseline'], s['decision']) for s in k['speed']]")"
[ "$(field "$json" "d['meta']['base']['torch_libraries'][0].endswith('same.so')")" = True ] ||
  fail "meta.base.torch_libraries: $(field "$json" "d['meta']['base']")"
echo "same library: UNCHANGED, not timed"

# 2. Timing forced: both sides run, the base under a renamed namespace; the eager comparison is
#    informational under gate_against_eager false.
echo '{"format": "kgate-config/1", "global": {"gate_against_eager": false}}' > "$out/config.json"
check any forced "$out/same.so" --time-unchanged --config "$out/config.json"
json="$out/forced/report.json"
[ "$(field "$json" "k['base']['status']")" = paired ] || fail "--time-unchanged: base $(field "$json" "k['base']")"
[ "$(field "$json" "sorted((s['baseline'], s['gates']) for s in k['speed'])")" = \
  "[('eager', False), ('kgate_test.softmax_out.cpu', True)]" ] ||
  fail "--time-unchanged: timed against $(field "$json" "[(s['baseline'], s['gates']) for s in k['speed']]")"
case "$(field "$json" "k['base']['source']")" in
  "base torch op kgate_tes"?"::softmax_out("*) ;;
  *) fail "the base's source: $(field "$json" "k['base']['source']")" ;;
esac
expect=0
[ "$(field "$json" "[s['decision'] for s in k['speed'] if s['baseline'] != 'eager'][0]")" = regressed ] && expect=2
[ "$(field "$json" "k['outcome']")" = "$([ $expect = 0 ] && echo passed || echo regressed)" ] ||
  fail "--time-unchanged: outcome $(field "$json" "k['outcome']") from $(field "$json" "[(s['baseline'], s['decision'], s['gates']) for s in k['speed']]")"
echo "--time-unchanged: $(field "$json" "k['base']['source']"); eager informational: $(field "$json" "[(s['baseline'], s['decision'], s['gates']) for s in k['speed']]")"

# 3. A changed base: paired and timed.
patched KGATE_TEST_SNOOP_FILE KGATE_TEST_SNOOP_FILF "$out/changed.so"
check any changed "$out/changed.so"
json="$out/changed/report.json"
[ "$(field "$json" "k['base']['status']")" = paired ] || fail "changed library: base $(field "$json" "k['base']")"
[ "$(field "$json" "len(k['speed'])")" = 2 ] || fail "changed library: $(field "$json" "k['speed']")"
echo "changed library: paired, timed against $(field "$json" "[s['baseline'] for s in k['speed']]")"

# 4. The head's own file.
check 4 own "$library"
grep -q "is the head's library" "$out/own.log" || { cat "$out/own.log"; fail "the head's own file: no message"; }
echo "the head's own library as base: exit 4"

# 5. A base whose namespace is spelled otherwise: no base, eager alone; --require-base: exit 4.
patched "kgate_test" "kgate_tesx" "$out/renamed.so"
check 0 renamed "$out/renamed.so" --no-speed
err=$(field "$out/renamed/report.json" "d['meta']['base']['error']")
case "$err" in *"none of the namespaces kgate_test"*) ;; *) fail "renamed namespace: meta.base.error '$err'" ;; esac
[ "$(field "$out/renamed/report.json" "k['base']['status']")" = new ] || fail "renamed: $(field "$out/renamed/report.json" "k['base']")"
check 4 renamed_required "$out/renamed.so" --require-base --no-speed
echo "a base without the namespace: eager alone ($err); --require-base: exit 4"
echo PASS
