#!/usr/bin/env bash
# kgate validate --cases: the cases kgate check would make, listed without a GPU.
#   validate_cases.sh KGATE PACKAGE_DIR OUT_DIR cpu   the listing: deterministic per seed, another seed
#                                                     lists other cases, the guard's both sides shown,
#                                                     --no-compile refused (exit 4)
#   validate_cases.sh KGATE PACKAGE_DIR OUT_DIR gpu   against a real check with the same options: the
#                                                     same number of cases, of fallbacks, and the same
#                                                     timed case ids (exit 77, SKIPPED, without a GPU)
set -u
kgate=$1 package=$2 out=$3 mode=$4
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out" && mkdir -p "$out"
list() {  # SEED FILE
  "$kgate" validate "$package" --cases 8 --seed "$1" > "$2" 2>&1 || { cat "$2"; fail "validate --cases 8 --seed $1: exit $?"; }
}
list 3 "$out/seed3.txt"
if [ "$mode" = cpu ]; then
  list 3 "$out/seed3-again.txt"
  # (the first line, "valid: ...", says how long the compile took)
  cmp -s <(tail -n +2 "$out/seed3.txt") <(tail -n +2 "$out/seed3-again.txt") || fail "two listings with --seed 3 differ"
  list 4 "$out/seed4.txt"
  cmp -s <(grep '^  [a-z]' "$out/seed3.txt") <(grep '^  [a-z]' "$out/seed4.txt") && fail "--seed 3 and --seed 4 list the same cases"
  header=$(grep -o '[0-9]* correctness, [0-9]* timed' "$out/seed3.txt") || fail "no count line: $(cat "$out/seed3.txt")"
  n=${header%% correctness*}
  listed=$(grep -c -E '  (inside the guard|outside the guard, the fallback runs: .*)$' "$out/seed3.txt")
  [ "$n" -eq "$listed" ] || fail "the count says $n cases, $listed are listed"
  grep -q "  inside the guard$" "$out/seed3.txt" || fail "no case inside the guard"
  grep -q "outside the guard, the fallback runs: " "$out/seed3.txt" || fail "no case outside the guard"
  grep -q "^  timed  " "$out/seed3.txt" || fail "no timed case"
  "$kgate" validate "$package" --no-compile --cases 8 > "$out/nocompile.txt" 2>&1
  rc=$?
  [ $rc -eq 4 ] && grep -q "drop --no-compile" "$out/nocompile.txt" || { cat "$out/nocompile.txt"; fail "--no-compile --cases: exit $rc"; }
  echo "ok: $n cases listed ($(grep -c 'outside the guard' "$out/seed3.txt") outside the guard), deterministic per seed; --no-compile refused"
  exit 0
fi
"$kgate" check "$package" --backend cuda --cases 8 --seed 3 --time-budget 0.2 --no-device-exit-code 77 --out "$out/check" \
  > "$out/check.log" 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "SKIPPED: no GPU"; exit 77; }
[ -f "$out/check/report.json" ] || { cat "$out/check.log"; fail "kgate check: exit $rc, no report"; }
python3 - "$out/check/report.json" "$out/seed3.txt" <<'PY' || exit 1
import json, re, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
text = open(sys.argv[2]).read()
n, timed = map(int, re.search(r"(\d+) correctness, (\d+) timed", text).groups())
outside = len(re.findall(r"outside the guard, the fallback runs: ", text))
listed_timed = re.findall(r"^  timed  (\S+)", text, re.M)
checked_timed = [s["case"]["id"] for s in k["speed"] if s["baseline"] == "eager"]
problems = []
if k["correctness"]["cases"] != n: problems.append(f"check ran {k['correctness']['cases']} cases, the listing has {n}")
if k["correctness"].get("fallback", 0) != outside:
    problems.append(f"check's fallback count {k['correctness'].get('fallback')}, the listing's {outside}")
if sorted(checked_timed) != sorted(listed_timed): problems.append(f"timed: check {checked_timed}, listing {listed_timed}")
if problems:
    print("FAIL: " + "; ".join(problems)); sys.exit(1)
print(f"ok: kgate check ran the {n} cases listed ({outside} fallbacks) and timed the {timed} listed")
PY
