#!/usr/bin/env bash
# kgate check --devices on the cpu backend (no GPU needed): kernels are dealt to one worker per
# device, two devices work at once, one device never runs two kernels at once, the report keeps the
# kernels' order and their verdicts are those of a run on one device; bad --devices values are exit 4.
#   devices_cli.sh KGATE OUT_DIR
set -uo pipefail
kgate=${1:?usage: devices_cli.sh KGATE OUT_DIR}
out=${2:?usage: devices_cli.sh KGATE OUT_DIR}
rm -rf "$out" && mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
kernels=(--kernel softmax_cpu --kernel mutant_softmax_cpu_tail_dropped --kernel mutant_softmax_cpu_segfault
         --kernel mutant_softmax_cpu_nondeterministic --kernel mutant_softmax_cpu_writes_input)

"$kgate" check --backend cpu --devices 0,1 "${kernels[@]}" --cases 8 --no-speed --out "$out/two" -q > "$out/two.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out/two.log"; fail "--devices 0,1 exited $rc, expected 1 (four mutants fail)"; }
"$kgate" check --backend cpu "${kernels[@]}" --cases 8 --no-speed --out "$out/one" -q > "$out/one.log" 2>&1
[ $? -eq 1 ] || { cat "$out/one.log"; fail "the run on one device exited $?, expected 1"; }
python3 - "$out/two/report.json" "$out/one/report.json" <<'PY' || { cat "$out/two.log"; fail "the two-device report is wrong"; }
import json, sys
two = json.load(open(sys.argv[1]))["kernels"]
one = json.load(open(sys.argv[2]))["kernels"]
names = ["softmax_cpu", "mutant_softmax_cpu_tail_dropped", "mutant_softmax_cpu_segfault",
         "mutant_softmax_cpu_nondeterministic", "mutant_softmax_cpu_writes_input"]
assert [k["name"] for k in two] == names, [k["name"] for k in two]  # the order asked for
for a, b in zip(two, one):  # the same verdicts, cases and failures as on one device
    assert (a["outcome"], a["correctness"]["cases"], a["correctness"]["failed"]) == \
           (b["outcome"], b["correctness"]["cases"], b["correctness"]["failed"]), (a["name"], a["outcome"], b["outcome"])
    assert b["worker"].get("ordinal", -1) == -1, b["worker"]
windows = {0: [], 1: []}
for k in two:
    w = k["worker"]
    assert w["ordinal"] in (0, 1) and w["end_s"] > w["start_s"], w
    windows[w["ordinal"]].append((w["start_s"], w["end_s"], k["name"]))
assert windows[0] and windows[1], windows  # both devices worked
for d, ws in windows.items():  # one kernel at a time per device
    ws.sort()
    for (s0, e0, n0), (s1, e1, n1) in zip(ws, ws[1:]):
        assert s1 >= e0, f"device {d} ran {n0} and {n1} at once"
overlap = any(a[0] < b[1] and b[0] < a[1] for a in windows[0] for b in windows[1])
assert overlap, windows  # the two devices worked at the same time
PY

# A GPU that becomes unusable is retired: the kernel it ran is lost (named, with the GPU), the others
# go to the GPU left with their usual verdicts; with every GPU retired, the rest are not run.
KGATE_TEST_UNUSABLE_DEVICES=1 "$kgate" check --backend cpu --devices 0,1 "${kernels[@]}" --cases 8 --no-speed \
  --out "$out/retire" -q > "$out/retire.log" 2>&1
[ $? -eq 1 ] || { cat "$out/retire.log"; fail "a run that lost a GPU exited $?, expected 1"; }
grep -q "GPU 1 became unusable while this kernel ran (KGATE_TEST_UNUSABLE_DEVICES lists it)" "$out/retire.log" ||
  { cat "$out/retire.log"; fail "the console does not name the lost kernel and its GPU"; }
python3 - "$out/retire/report.json" "$out/one/report.json" <<'PY' || { cat "$out/retire.log"; fail "the report of a run that lost a GPU is wrong"; }
import json, sys
r = json.load(open(sys.argv[1]))
one = {k["name"]: k for k in json.load(open(sys.argv[2]))["kernels"]}
retired = r["meta"]["config"]["retired_devices"]
assert len(retired) == 1 and retired[0]["ordinal"] == 1, retired
lost = [k for k in r["kernels"] if "became unusable" in k.get("message", "")]
assert len(lost) == 1 and lost[0]["name"] == retired[0]["kernel"] and lost[0]["outcome"] == "failed", lost
assert lost[0]["worker"]["ordinal"] == 1, lost[0]["worker"]
for k in r["kernels"]:
    if k is lost[0]:
        continue
    assert k["worker"]["ordinal"] == 0, (k["name"], k["worker"])  # the rest on the GPU left
    b = one[k["name"]]
    assert (k["outcome"], k["correctness"]["cases"], k["correctness"]["failed"]) == \
           (b["outcome"], b["correctness"]["cases"], b["correctness"]["failed"]), k["name"]
assert len(r["kernels"]) == 5, [k["name"] for k in r["kernels"]]
PY
KGATE_TEST_UNUSABLE_DEVICES=0,1 "$kgate" check --backend cpu --devices 0,1 "${kernels[@]}" --cases 8 --no-speed \
  --out "$out/retire-all" -q > "$out/retire-all.log" 2>&1
[ $? -eq 1 ] || { cat "$out/retire-all.log"; fail "a run that lost every GPU exited $?, expected 1"; }
python3 - "$out/retire-all/report.json" <<'PY' || { cat "$out/retire-all.log"; fail "the report of a run that lost every GPU is wrong"; }
import json, sys
r = json.load(open(sys.argv[1]))
assert sorted(d["ordinal"] for d in r["meta"]["config"]["retired_devices"]) == [0, 1], r["meta"]["config"]
ks = r["kernels"]
assert len(ks) == 5 and all(k["outcome"] == "failed" for k in ks), [(k["name"], k["outcome"]) for k in ks]
assert sum("became unusable while this kernel ran" in k["message"] for k in ks) == 2, [k["message"] for k in ks]
assert sum(k["message"].startswith("not run: every GPU of --devices became unusable") for k in ks) == 3, [k["message"] for k in ks]
PY

# Bad values: exit 4, named.
"$kgate" check --backend cpu --devices 0,0 --kernel softmax_cpu --out "$out/bad" > "$out/twice.log" 2>&1
[ $? -eq 4 ] && grep -q -- "--devices 0,0: device 0 is listed twice" "$out/twice.log" || { cat "$out/twice.log"; fail "a device listed twice was not refused"; }
"$kgate" check --backend cpu --devices 0,x --kernel softmax_cpu --out "$out/bad" > "$out/x.log" 2>&1
[ $? -eq 4 ] && grep -q -- "'x' is not a device ordinal" "$out/x.log" || { cat "$out/x.log"; fail "a bad ordinal was not refused"; }
"$kgate" check --backend cpu --device 0 --devices 0,1 --kernel softmax_cpu --out "$out/bad" > "$out/both.log" 2>&1
[ $? -eq 4 ] && grep -q -- "--device and --devices: give one of them" "$out/both.log" || { cat "$out/both.log"; fail "--device with --devices was not refused"; }
CUDA_VISIBLE_DEVICES=0 "$kgate" check --backend cpu --devices 0,1 --kernel softmax_cpu --out "$out/bad" > "$out/visible.log" 2>&1
[ $? -eq 4 ] && grep -q -- "sees 1 device(s) (CUDA_VISIBLE_DEVICES=0)" "$out/visible.log" || { cat "$out/visible.log"; fail "a device outside CUDA_VISIBLE_DEVICES was not refused"; }
"$kgate" check --backend cpu --devices 0,1 --no-isolate --kernel softmax_cpu --out "$out/bad" > "$out/noisolate.log" 2>&1
[ $? -eq 4 ] && grep -q -- "--devices runs one worker process per GPU: leave out --no-isolate" "$out/noisolate.log" ||
  { cat "$out/noisolate.log"; fail "--devices with --no-isolate was not refused"; }
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
  "$kgate" check --devices all --kernel softmax_cpu --out "$out/bad" > "$out/all.log" 2>&1
  [ $? -eq 4 ] && grep -q -- "--devices all: this process sees no CUDA device" "$out/all.log" || { cat "$out/all.log"; fail "--devices all without a GPU was not refused"; }
fi
echo "devices_cli: all passed"
