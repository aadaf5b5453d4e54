#!/usr/bin/env bash
# The negative-control corpus as packages: packs every tests/packages/corpus/*/ (their shared header
# lives beside them), then either validates them (--validate: NVRTC compile and the kernels'
# parameters, no GPU needed) or checks them on the GPU with timing and compares each verdict with
# expected.txt. Exit 0 when every package got its expected verdict, 1 otherwise, 77 without a GPU.
#   run_corpus.sh KGATE OUT_DIR [--validate]
set -u
kgate=${1:?usage: run_corpus.sh KGATE OUT_DIR [--validate]}
out=${2:?usage: run_corpus.sh KGATE OUT_DIR [--validate]}
mode=${3:-check}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$out" && mkdir -p "$out/packed"
fail() { echo "FAIL: $*"; exit 1; }
names=()
while read -r name _; do
  case "$name" in ''|'#'*) continue ;; esac
  names+=("$name")
  "$kgate" pack --no-compile -q "$here/$name" "$out/packed/$name" > "$out/pack-$name.log" 2>&1 ||
    { cat "$out/pack-$name.log"; fail "kgate pack $name"; }
done < "$here/expected.txt"
[ ${#names[@]} -ge 10 ] || fail "expected.txt lists ${#names[@]} packages"
if [ "$mode" = --validate ]; then
  for name in "${names[@]}"; do
    "$kgate" validate "$out/packed/$name" > "$out/validate-$name.log" 2>&1 ||
      { cat "$out/validate-$name.log"; fail "kgate validate $name"; }
    grep -q "^valid: corpus_$name " "$out/validate-$name.log" || { cat "$out/validate-$name.log"; fail "no valid: line for $name"; }
  done
  echo "run_corpus: ${#names[@]} corpus packages packed and valid"
  exit 0
fi
pkgs=()
for name in "${names[@]}"; do pkgs+=("$out/packed/$name"); done
"$kgate" check "${pkgs[@]}" --backend cuda --cases 32 --speed-cases 1 --time-budget 2 --no-shrink \
  --no-device-exit-code 77 --out "$out/run" > "$out/run.log" 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "SKIPPED: no GPU"; exit 77; }
python3 - "$out/run/report.json" "$here/expected.txt" <<'PY'
import json, sys
report = {k["name"]: k for k in json.load(open(sys.argv[1]))["kernels"]}
bad = 0
for line in open(sys.argv[2]):
    if not line.strip() or line.startswith("#"):
        continue
    name, expected, rules = line.split()[:3]
    k = report.get("corpus_" + name)
    if k is None:
        print(f"| {name} | {expected} | missing from the report | |"); bad += 1; continue
    c = k["correctness"]
    f = c.get("minimal") or (c.get("failures") or [{}])[0]
    rule = f.get("rule", "")
    speed = k.get("speed") or []
    wwt = [s for s in speed if s.get("wrong_while_timed")]
    if wwt and not rule:
        rule = "wrong_while_timed"
    got = k["outcome"]
    ok = (got != "failed") if expected == "passed" else (got == "failed" and rule in rules.split(","))
    evidence = (f.get("case", {}) or {}).get("id", "") + ": " + (f.get("message", "") or "")[:140]
    if expected == "passed" and speed:
        s = speed[0]
        evidence = f"timed {s['case']['id']}: x{s['ratio']:.3f} vs eager, {s['blocks']} blocks, {len(s.get('checked_launches', []))} checked launches, {s['decision']}"
    print(f"| corpus_{name} | {expected} | {got} {rule} | {evidence} |{'' if ok else '  <-- NOT AS EXPECTED'}")
    bad += 0 if ok else 1
sys.exit(1 if bad else 0)
PY
