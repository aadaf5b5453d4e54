#!/usr/bin/env bash
# A torch custom op whose own kernel faults on large calls, where the fault surfaces inside ATen (a
# c10::Error from a later call of the op's host code) instead of at kgate's synchronize: the case
# is a fault of the kernel, named with its CUDA error; the worker does not die of it ("internal
# error", exit 5); a fresh worker goes on; and the minimal case is the smallest wrong-valued case,
# not the fault. Exit 77 (SKIPPED) without a GPU.
set -u
kgate=$1
library=$2
out=$3
rm -rf "$out"
"$kgate" check --backend cuda --torch-library "$library" --torch-op kgate_test::softmax_faults_late_out=softmax \
  --cases 64 --no-speed --no-device-exit-code 77 --out "$out" > "$out.log" 2>&1
rc=$?
[ $rc -eq 77 ] && { echo "SKIPPED: no GPU"; exit 77; }
[ $rc -eq 1 ] || { cat "$out.log"; echo "FAIL: exit $rc, expected 1"; exit 1; }
python3 - "$out/report.json" <<'PY' || { cat "$out.log"; exit 1; }
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
c = k["correctness"]
numel = lambda cid: eval("*".join(p.split("=")[1] for p in cid.split(":")[2].split(",")))
assert k["outcome"] == "failed", k["outcome"]
assert "without writing a report" not in k.get("message", "") and "internal error" not in json.dumps(k), k.get("message")
faulted = c.get("faulted", [])
assert faulted and all(numel(f) >= 1 << 18 for f in faulted), faulted
faults = [f for f in c["failures"] if f["rule"] == "fault"]
assert faults and all("misaligned address" in f["message"] and "faulted on the GPU" in f["message"] for f in faults), faults
# Cases left unrun only past kgate's cap of 16 workers per kernel (the long family holds many
# calls of 2^18 elements and more, each a fault), and said in a warning.
if c.get("not_run"):
    assert any("starts at most 16 workers per kernel" in w for w in c["warnings"]), c["warnings"]
    assert len(faulted) == 16, faulted
assert c["passed"] > 0 and c["passed"] + c["failed"] + c.get("not_run", 0) == c["cases"], c
m = c["minimal"]
assert m["rule"] not in ("fault", "crash") and numel(m["case"]["id"]) < 4096, m
print(f"torch_op_fault_gpu: {len(faulted)} faults named ({faults[0]['message'][:160]}), "
      f"{c['failed']} failed, {c['passed']} passed, minimal {m['case']['id']} ({m['rule']})")
PY
