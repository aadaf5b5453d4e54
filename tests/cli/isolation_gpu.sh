#!/usr/bin/env bash
# GPU isolation: a kernel that writes to an illegal address (its CUDA context dies) fails alone,
# and the correct kernel checked in the same run keeps its result. Exit 77 (SKIPPED) without a GPU.
set -u
kgate=$1
out=$2
rm -rf "$out"
"$kgate" check --backend cuda --kernel softmax_block --kernel mutant_softmax_illegal_address --cases 8 --no-speed \
  --no-device-exit-code 77 --out "$out" > "$out.log" 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "SKIPPED: no GPU"; exit 77; }
[ $rc -eq 1 ] || { cat "$out.log"; echo "FAIL: exit $rc, expected 1"; exit 1; }
python3 - "$out/report.json" <<'PY' || { cat "$out.log"; exit 1; }
import json, sys
k = {x["name"]: x for x in json.load(open(sys.argv[1]))["kernels"]}
assert k["softmax_block"]["outcome"] == "passed", k["softmax_block"]
bad = k["mutant_softmax_illegal_address"]
assert bad["outcome"] == "failed", bad
msg = json.dumps(bad)
assert "illegal" in msg.lower() or "fault" in msg.lower(), msg[:2000]
print("isolation_gpu: the faulting kernel failed alone:", bad["correctness"]["failures"][0]["message"][:200] if bad["correctness"]["failures"] else bad["message"][:200])
PY
# A kernel that faults on some cases only: after each fault a fresh worker goes on with the rest,
# the other cases pass, every fault is named, and the minimal case is one that ran and faulted.
"$kgate" check --backend cuda --kernel mutant_softmax_fault_some --cases 24 --no-speed --out "$out.some" \
  > "$out.some.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out.some.log"; echo "FAIL: fault_some exit $rc, expected 1"; exit 1; }
python3 - "$out.some/report.json" <<'PY' || { cat "$out.some.log"; exit 1; }
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
c = k["correctness"]
faulted = c.get("faulted", [])
assert faulted, c
assert all(int(f.split(":")[2].split(",")[1].split("=")[1]) % 5 == 0 for f in faulted), faulted
assert c["failed"] == len(faulted), (c["failed"], faulted)
assert c["passed"] + c["failed"] == c["cases"], c
assert c["passed"] > 0 and not c.get("not_run"), c
m = c["minimal"]
assert m["rule"] == "fault", m
assert int(m["case"]["id"].split(":")[2].split(",")[1].split("=")[1]) % 5 == 0, m
assert "not run" not in json.dumps(c), c
print(f"isolation_gpu: fault_some: {len(faulted)} faulting cases, {c['passed']} passed, minimal {m['case']['id']}")
PY
