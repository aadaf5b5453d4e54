#!/usr/bin/env bash
# kgate check --jobs on the cpu backend (no GPU needed): three workers at once on one device, their
# verdicts those of a run one worker at a time, some of them side by side, and the timed kernel's
# timing alone (KGATE_TEST_SHARE_LOG, in the share's directory, which the sandboxed workers may
# write: no hold of another worker overlaps one held alone); a kernel's correctness seconds leave out its
# waits (--cost: the cases by family too); a worker that crashes releases its hold; --jobs with --no-isolate, or out of range, is exit 4.
#   jobs_cli.sh KGATE OUT_DIR
set -uo pipefail
kgate=${1:?usage: jobs_cli.sh KGATE OUT_DIR}
out=${2:?usage: jobs_cli.sh KGATE OUT_DIR}
rm -rf "$out" && mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
kernels=(--kernel softmax_cpu --kernel mutant_softmax_cpu_tail_dropped --kernel mutant_softmax_cpu_segfault
         --kernel mutant_softmax_cpu_nondeterministic --kernel mutant_softmax_cpu_writes_input)
speed=(--speed-cases 1 --time-budget 1 --budget-growth 0)

KGATE_TEST_SHARE_LOG="$out/three/workers/.device-0/holds.log" "$kgate" check --backend cpu --jobs 3 "${kernels[@]}" --cases 8 "${speed[@]}" \
  --cost --out "$out/three" -q > "$out/three.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out/three.log"; fail "--jobs 3 exited $rc, expected 1 (four mutants fail)"; }
"$kgate" check --backend cpu "${kernels[@]}" --cases 8 "${speed[@]}" --out "$out/one" -q > "$out/one.log" 2>&1
[ $? -eq 1 ] || { cat "$out/one.log"; fail "the run one worker at a time exited $?, expected 1"; }
python3 - "$out/three/report.json" "$out/one/report.json" "$out/three/workers/.device-0/holds.log" <<'PY' || { cat "$out/three.log"; fail "the --jobs 3 run is wrong"; }
import json, sys
three = json.load(open(sys.argv[1]))["kernels"]
one = json.load(open(sys.argv[2]))["kernels"]
names = ["softmax_cpu", "mutant_softmax_cpu_tail_dropped", "mutant_softmax_cpu_segfault",
         "mutant_softmax_cpu_nondeterministic", "mutant_softmax_cpu_writes_input"]
assert [k["name"] for k in three] == names, [k["name"] for k in three]  # the order asked for
for a, b in zip(three, one):  # the same verdicts, cases, failures and failing case ids
    key = lambda k: (k["outcome"], k["correctness"]["cases"], k["correctness"]["failed"],
                     [f["case"]["id"] if isinstance(f.get("case"), dict) else f.get("case") for f in k["correctness"].get("failures", [])])
    assert key(a) == key(b), (a["name"], key(a), key(b))
assert three[0]["speed"] and all(s["decision"] in ("passed", "regressed", "inconclusive") for s in three[0]["speed"]), three[0]["speed"]
w = [(k["worker"]["start_s"], k["worker"]["end_s"], k["name"]) for k in three]
overlap = any(a[0] < b[1] and b[0] < a[1] for i, a in enumerate(w) for b in w[i + 1:])
assert overlap, w  # workers ran side by side
holds = [l.split() for l in open(sys.argv[3]) if l.strip()]
alone = [(int(p), float(f), float(t)) for p, kind, f, t in holds if kind == "alone"]
shared = [(int(p), float(f), float(t)) for p, kind, f, t in holds if kind == "shared"]
assert alone, "no hold alone: the timing did not ask for the device alone"
assert len({p for p, _, _ in shared}) >= 3, "fewer than three workers shared the device"
exits = {int(p) for p, kind, f, t in holds if kind == "exit"}  # a worker's end shares the device
assert len(exits) >= 4, f"{len(exits)} workers shared the device at their end, expected one per kernel not crashed"
for p, f, t in alone:
    for q, g, u in alone + shared:
        if (q, g, u) != (p, f, t) and g < t and f < u:
            raise AssertionError(f"worker {q} held the device ({g:.3f}-{u:.3f}) while {p} had it alone ({f:.3f}-{t:.3f})")
for k in three:  # a kernel's correctness seconds leave out its waits for the device (--cost: wait)
    wait = k.get("cost_s", {}).get("wait", 0)
    assert k["correctness"]["seconds"] + wait <= k["seconds"] + 0.05, (k["name"], k["correctness"]["seconds"], wait, k["seconds"])
fam = three[0].get("cost_family_s", {})  # --cost: the correctness cases by family, each counted once
assert sum(f["cases"] for f in fam.values()) == three[0]["correctness"]["cases"], (fam, three[0]["correctness"])
assert "random" in fam and all(f["seconds"] > 0 for f in fam.values()), fam
assert "(behaviour checks)" in fam and "(null calibration)" in fam, fam  # whole, no case count
assert {"startup", "context", "generate", "judge"} <= set(three[0]["cost_s"]), three[0]["cost_s"]
print(f"holds: {len(shared)} shared by {len({p for p, _, _ in shared})} workers, {len(alone)} alone")
PY
grep -q "^correctness cases by family, and the checks" "$out/three.log" || { cat "$out/three.log"; fail "--cost printed no table by case family"; }
[ -f "$out/three/workers/.device-0/share.lock" ] || fail "no device lock under --out's workers/.device-0/"

"$kgate" check --backend cpu --jobs 2 --no-isolate --kernel softmax_cpu --out "$out/bad" > "$out/bad.log" 2>&1
[ $? -eq 4 ] || { cat "$out/bad.log"; fail "--jobs 2 --no-isolate did not exit 4"; }
grep -q -- "--jobs runs several worker processes at once: leave out --no-isolate" "$out/bad.log" ||
  { cat "$out/bad.log"; fail "--jobs --no-isolate: no clear message"; }
"$kgate" check --backend cpu --jobs 0 --kernel softmax_cpu --out "$out/bad0" > "$out/bad0.log" 2>&1
[ $? -eq 4 ] || { cat "$out/bad0.log"; fail "--jobs 0 did not exit 4"; }
echo "PASS: --jobs"
