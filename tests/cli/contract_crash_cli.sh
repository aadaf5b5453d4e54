#!/usr/bin/env bash
# A torch op that crashes its worker on a strided input (kgate_schema::rms_norm_strided_crashes):
#   contract without strided layouts      -> the crash is the finding outside the contract (exit 1,
#                                            the case's outside_contract set, the message says so)
#   the same with outside_contract: warn  -> a warning, the kernel passes (exit 0)
#   no contract                           -> a crash inside: exit 1, no outside_contract
#   contract_crash_cli.sh KGATE SCHEMA_OPS_LIBRARY OUT_DIR
set -u
kgate=$1
library=$2
out=$3
rm -rf "$out" && mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
spec="cpu/kgate_schema::rms_norm_strided_crashes=rms_norm"
kernel="kgate_schema.rms_norm_strided_crashes.cpu"
config() {  # NAME SETTINGS
  cat > "$out/$1.kgate.json" <<JSON
{"format": "kgate-config/1", "torch_libraries": ["$library"], "torch_ops": ["$spec"],
 "kernels": {"$kernel": $2}}
JSON
}
run() {  # NAME
  "$kgate" check --backend cpu --config "$out/$1.kgate.json" --cases 16 --family random,layout --no-speed \
    --out "$out/$1" > "$out/$1.log" 2>&1
}
config contract '{"contract": {"layouts": ["contiguous", "offset"]}}'
run contract
rc=$?
[ $rc -eq 1 ] || { cat "$out/contract.log"; fail "a crash outside the contract: exit $rc, expected 1"; }
python3 - "$out/contract/report.json" <<'PY' || fail "the crash is not the finding outside the contract"
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
fs = [f for f in k["correctness"]["failures"] if f.get("rule") == "crash"]
assert fs, "no crash among the failures"
assert all(f.get("outside_contract") for f in fs), fs
assert "faults on inputs outside its contract" in fs[0]["message"], fs[0]["message"]
PY
grep -q "^FAILED $kernel: faults on inputs outside its contract" "$out/contract.log" ||
  { cat "$out/contract.log"; fail "the minimal (shrunk) crash is not worded as outside the contract"; }
config warn '{"contract": {"layouts": ["contiguous", "offset"]}, "outside_contract": "warn"}'
run warn
rc=$?
[ $rc -eq 0 ] || { cat "$out/warn.log"; fail "a crash outside the contract under outside_contract warn: exit $rc, expected 0"; }
grep -q "faults on inputs outside its contract" "$out/warn.log" || { cat "$out/warn.log"; fail "no warning for the crash"; }
config none '{}'
run none
rc=$?
[ $rc -eq 1 ] || { cat "$out/none.log"; fail "a crash without a contract: exit $rc, expected 1"; }
echo "contract_crash_cli: all checks passed"
