#!/usr/bin/env bash
# Workers started ahead (cli/worker.hpp), on the cpu backend: the kernels after the first are given
# a worker that loaded its libraries while the kernel before ran (report: worker.started_ahead_s),
# and get the verdicts, cases and failures of workers started for them (KGATE_NO_WORKERS_AHEAD=1),
# a crashing kernel's fresh workers included; no worker is left waiting after the run, nor after
# its parent is killed.
#   workers_ahead_cli.sh KGATE OUT_DIR
set -uo pipefail
kgate=${1:?usage: workers_ahead_cli.sh KGATE OUT_DIR}
out=${2:?usage: workers_ahead_cli.sh KGATE OUT_DIR}
rm -rf "$out" && mkdir -p "$out/ahead-cwd" "$out/killed-cwd"
out=$(cd "$out" && pwd)
kgate=$(realpath "$kgate")
fail() { echo "FAIL: $*"; exit 1; }
kernels=(--kernel softmax_cpu --kernel mutant_softmax_cpu_segfault --kernel mutant_softmax_cpu_tail_dropped)
# The processes waiting ahead whose working directory is $1 (each run has its own).
waiting_in() {
  local n=0 p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/cwd" 2>/dev/null)" = "$1" ] || continue
    tr '\0' ' ' < "$p/cmdline" 2>/dev/null | grep -q -- '--started-ahead' && n=$((n + 1))
  done
  echo $n
}

(cd "$out/ahead-cwd" && "$kgate" check --backend cpu "${kernels[@]}" --cases 8 --no-speed --seed 1 --cost \
  --out "$out/ahead" -q > "$out/ahead.log" 2>&1)
rc=$?
[ $rc -eq 1 ] || { cat "$out/ahead.log"; fail "the run with workers ahead exited $rc, expected 1 (two mutants fail)"; }
[ "$(waiting_in "$out/ahead-cwd")" -eq 0 ] || fail "a worker started ahead outlived its run"
grep -q "^  (2 of 3 workers were started ahead" "$out/ahead.log" || { cat "$out/ahead.log"; fail "--cost did not say which workers were started ahead"; }
KGATE_NO_WORKERS_AHEAD=1 "$kgate" check --backend cpu "${kernels[@]}" --cases 8 --no-speed --seed 1 --cost \
  --out "$out/fresh" -q > "$out/fresh.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out/fresh.log"; fail "the run without workers ahead exited $rc, expected 1"; }
python3 - "$out/ahead/report.json" "$out/fresh/report.json" <<'PY' || { cat "$out/ahead.log"; fail "the workers started ahead gave another result"; }
import json, sys
ahead, fresh = (json.load(open(p))["kernels"] for p in sys.argv[1:3])
key = lambda k: (k["name"], k["outcome"], k["correctness"]["cases"], k["correctness"]["failed"],
                 [f["case"]["id"] if isinstance(f.get("case"), dict) else f.get("case")
                  for f in k["correctness"].get("failures", [])],
                 (k["correctness"].get("minimal") or {}).get("case"))
assert [key(k) for k in ahead] == [key(k) for k in fresh], ([key(k) for k in ahead], [key(k) for k in fresh])
assert ahead[1]["correctness"]["failed"] > 0 and ahead[2]["correctness"]["failed"] > 0, ahead
assert "started_ahead_s" not in ahead[0]["worker"], ahead[0]["worker"]  # none to take yet
for k in ahead[1:]:  # each later kernel's worker was waiting, loaded, when its kernel came
    assert k["worker"].get("started_ahead_s", -1) >= 0, (k["name"], k["worker"])
assert all("started_ahead_s" not in k["worker"] for k in fresh), [k["worker"] for k in fresh]
for k in (ahead[0], ahead[2]):  # a startup is still counted, from when the worker got its kernel
    assert k["cost_s"].get("startup", -1) >= 0, k["cost_s"]
print("started ahead:", [round(k["worker"].get("started_ahead_s", -1), 3) for k in ahead])
PY

# The parent killed while a worker waits ahead: the worker reads the end of its stdin and exits.
(cd "$out/killed-cwd" && exec "$kgate" check --backend cpu "${kernels[@]}" --cases 8 --no-speed --seed 1 \
  --out "$out/killed" -q > "$out/killed.log" 2>&1) &
parent=$!
for _ in $(seq 1 300); do [ "$(waiting_in "$out/killed-cwd")" -gt 0 ] && break; sleep 0.1; done
[ "$(waiting_in "$out/killed-cwd")" -gt 0 ] || { kill -9 $parent; fail "no worker was started ahead in 30 s"; }
kill -9 $parent; wait $parent 2>/dev/null
for _ in $(seq 1 300); do [ "$(waiting_in "$out/killed-cwd")" -eq 0 ] && break; sleep 0.1; done
[ "$(waiting_in "$out/killed-cwd")" -eq 0 ] || fail "a worker started ahead outlived its killed parent by 30 s"
# Given something that is not a worker's arguments: a usage error; given nothing: ended quietly.
echo "not arguments" | "$kgate" --started-ahead > "$out/junk.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/junk.log"; fail "kgate --started-ahead given junk exited $rc, expected 4"; }
"$kgate" --started-ahead < /dev/null > "$out/nothing.log" 2>&1 || fail "kgate --started-ahead ended without work exited $?, expected 0"
# Typed by hand (stdin a terminal): a usage error, not a wait for ever.
if command -v script > /dev/null; then
  script -qec "$kgate --started-ahead" /dev/null > "$out/by-hand.log" 2>&1 < /dev/null
  rc=$?
  [ $rc -eq 4 ] || { cat "$out/by-hand.log"; fail "kgate --started-ahead on a terminal exited $rc, expected 4"; }
  grep -q "is kgate check's own" "$out/by-hand.log" || { cat "$out/by-hand.log"; fail "no usage message for --started-ahead on a terminal"; }
else
  echo "SKIPPED: the terminal case (no script(1) here)"
fi
echo "workers_ahead_cli: passed"
