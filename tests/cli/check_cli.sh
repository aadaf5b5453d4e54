#!/usr/bin/env bash
# End-to-end checks of the kgate command on the cpu backend (no GPU needed):
#   kgate check --backend cpu --out DIR  -> exit 2: softmax_cpu, a plain loop about 20x slower than
#                                           eager, is REGRESSED even on a 1 s budget (the gate runs
#                                           the blocks a decision needs); report.json, junit.xml
#   a mutant                             -> exit 1 with the failing case and repro printed
#   kgate list --ops                     -> one op per line: name, signature, dtypes, origin
#   bad usage                            -> exit 4
set -u
kgate=$1
out=$2
rm -rf "$out"
fail() { echo "FAIL: $*"; exit 1; }

"$kgate" check --backend cpu --cases 16 --speed-cases 1 --time-budget 2 --out "$out/ok" -q > "$out.ok.log" 2>&1
rc=$?
[ $rc -eq 2 ] || { cat "$out.ok.log"; fail "kgate check --backend cpu exited $rc, expected 2 (softmax_cpu is ~20x slower than eager)"; }
python3 - "$out/ok/report.json" <<'PY' || { cat "$out.ok.log"; fail "softmax_cpu's speed verdict is wrong"; }
import json, sys
k = {x["name"]: x for x in json.load(open(sys.argv[1]))["kernels"]}["softmax_cpu"]
assert k["correctness"]["failed"] == 0, k["correctness"]
s = k["speed"][0]
# (eager, ATen's threaded softmax, slows more than the loop on a loaded 2-core machine: 4.7x there)
assert s["decision"] == "regressed" and s["ratio"] > 2, s
print(f"softmax_cpu: {s['ratio']:.1f}x slower than eager, {s['blocks']} blocks on a 1 s budget: {s['decision']}")
PY
grep -q '"schema": "kgate-report/1"' "$out/ok/report.json" || fail "report.json lacks the schema"
grep -q '<testsuites name="kgate"' "$out/ok/junit.xml" || fail "junit.xml missing"
grep -q 'softmax_cpu' "$out/ok/summary.md" || fail "summary.md does not name the kernel"

"$kgate" check --backend cpu --kernel mutant_softmax_cpu_tail_dropped --cases 16 --out "$out/bad" -q > "$out.bad.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out.bad.log"; fail "a broken kernel exited $rc, expected 1"; }
grep -q "minimal case: softmax:f32:B=1,N=1:contiguous:normal:" "$out.bad.log" || { cat "$out.bad.log"; fail "minimal case not printed"; }
grep -q "repro: kgate replay --kernel mutant_softmax_cpu_tail_dropped" "$out.bad.log" || fail "repro not printed"

id=$(sed -n 's/.*minimal case: \(softmax:[^ ]*\).*/\1/p' "$out.bad.log" | head -1)
"$kgate" replay --kernel mutant_softmax_cpu_tail_dropped "$id" > "$out.replay.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out.replay.log"; fail "replay of the minimal case exited $rc, expected 1"; }
"$kgate" replay --kernel mutant_softmax_cpu_tail_dropped "$out/bad/report.json" > /dev/null 2>&1
[ $? -eq 1 ] || fail "replay from report.json did not reproduce the failure"
# kgate compare: a new failing kernel and a kernel missing from the new report count (exit 1), and
# passed -> invalid does (exit 3); the same report against itself is 0.
"$kgate" compare "$out/ok/report.json" "$out/bad/report.json" > "$out.compare.log" 2>&1
[ $? -eq 1 ] && grep -q "missing from the new report" "$out.compare.log" && grep -q "new, not passing" "$out.compare.log" ||
  { cat "$out.compare.log"; fail "compare: a missing kernel and a new failing one must exit 1"; }
python3 - "$out/ok/report.json" "$out/passed.json" "$out/invalid.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for outcome, path in (("passed", sys.argv[2]), ("invalid", sys.argv[3])):
    r["kernels"][0]["outcome"] = outcome; json.dump(r, open(path, "w"))
PY
"$kgate" compare "$out/passed.json" "$out/invalid.json" > "$out.compare-invalid.log" 2>&1
[ $? -eq 3 ] || { cat "$out.compare-invalid.log"; fail "compare: passed -> invalid must exit 3"; }
"$kgate" compare "$out/ok/report.json" "$out/ok/report.json" > /dev/null 2>&1 || fail "compare of a report with itself must exit 0"
# A passing report holds no case to replay: a usage error that says so, not an internal error.
"$kgate" replay --kernel softmax_cpu "$out/ok/report.json" > "$out.replay-pass.log" 2>&1
[ $? -eq 4 ] && grep -q "holds no failing case to replay" "$out.replay-pass.log" ||
  { cat "$out.replay-pass.log"; fail "replay of a passing report.json is not a clear usage error"; }

# replay also runs the behaviour checks: a determinism failure (each single run passes) reproduces.
nd_case='softmax:f32:B=8,N=4096:contiguous:normal:0000000000000001'
"$kgate" replay --kernel mutant_softmax_cpu_nondeterministic "$nd_case" > "$out.replay-nd.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out.replay-nd.log"; fail "replay of a nondeterministic kernel exited $rc, expected 1"; }
grep -q "^determinism (bitwise, two runs) check: failed" "$out.replay-nd.log" || { cat "$out.replay-nd.log"; fail "replay did not report the determinism failure"; }
"$kgate" replay --kernel softmax_cpu "$nd_case" > "$out.replay-ok.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$out.replay-ok.log"; fail "replay of softmax_cpu exited $rc, expected 0"; }
grep -q "^stale-output check: passed" "$out.replay-ok.log" || { cat "$out.replay-ok.log"; fail "replay did not run the stale-output check"; }

[ "$("$kgate" list --ops | grep -c '^softmax .*built-in$')" -eq 1 ] || fail "kgate list --ops does not list softmax on its own line"
"$kgate" list | grep -q softmax_cpu || fail "kgate list does not list softmax_cpu"

# Op files: --ops adds them to the catalogue (with where they come from); a bad one is exit 4 naming
# file and field; a case of a file op is refused on a kernel of another op.
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
"$kgate" --ops "$src/tests/ops" list --ops | grep -q "^softmax_script .*tests/ops/softmax.json$" ||
  fail "kgate --ops tests/ops list --ops does not list softmax_script with its file"
printf '{"format": "kgate-op/1", "name": "half_done", "dtypes": ["f32"]}\n' > "$out.bad_op.json"
"$kgate" --ops "$out.bad_op.json" list --ops > "$out.bad_op.log" 2>&1
rc=$?
[ $rc -eq 4 ] || fail "an invalid op file exited $rc, expected 4"
grep -qF "$out.bad_op.json: symbols: missing; expected an array of shape symbols" "$out.bad_op.log" || { cat "$out.bad_op.log"; fail "op file problem not named by file and field"; }
# A config file names op files too (relative to itself).
cp "$out.bad_op.json" "$(dirname "$out")/bad_op_cfg.json"
printf '{"format": "kgate-config/1", "op_files": ["bad_op_cfg.json"]}\n' > "$(dirname "$out")/kgate-config.json"
"$kgate" check --backend cpu --config "$(dirname "$out")/kgate-config.json" --kernel softmax_cpu --cases 2 --no-speed > "$out.cfg_op.log" 2>&1
rc=$?
[ $rc -eq 4 ] && grep -qF "bad_op_cfg.json: symbols: missing; expected an array of shape symbols" "$out.cfg_op.log" || { cat "$out.cfg_op.log"; fail "a config's invalid op file exited $rc, expected 4 naming it"; }

# A package carries the op file of an op kgate does not build in; a copy outside the tree is the
# same op, a copy whose op file differs is refused by name.
rm -rf "$out.pkg" && "$kgate" pack --no-compile -q "$src/kernels/fused_add_rms_norm/package" "$out.pkg" > "$out.pack.log" 2>&1 ||
  { cat "$out.pack.log"; fail "kgate pack of the fused_add_rms_norm source package failed"; }
"$kgate" validate --no-compile "$out.pkg" > "$out.pkg.log" 2>&1 || { cat "$out.pkg.log"; fail "a copy of the fused_add_rms_norm package is not valid"; }
sed -i 's/"eps": 1e-6/"eps": 1e-5/' "$out.pkg/fused_add_rms_norm.op.json"
"$kgate" validate --no-compile "$out.pkg" > "$out.pkg.log" 2>&1
[ $? -eq 4 ] && grep -q "op_file: op file .*: op 'fused_add_rms_norm' is already defined by .*, and the two differ in attributes.eps" "$out.pkg.log" ||
  { cat "$out.pkg.log"; fail "a package redefining an op was not refused, naming the field"; }
# ... and that is its one problem: nothing follows about the attributes of an op that did not load.
grep -q "1 problem(s)" "$out.pkg.log" && ! grep -q "attribute" <(grep -v "op_file:" "$out.pkg.log") ||
  { cat "$out.pkg.log"; fail "a package redefining an op got more problems than that one"; }
# Another summary is the same op.
sed -i 's/"eps": 1e-5/"eps": 1e-6/; s/"summary": "/"summary": "a copy: /' "$out.pkg/fused_add_rms_norm.op.json"
"$kgate" validate --no-compile "$out.pkg" > "$out.pkg.log" 2>&1 || { cat "$out.pkg.log"; fail "a copy whose op file differs in its summary alone is not the same op"; }
# --ops on a package directory reads the op file its manifest names.
"$kgate" --ops "$out.pkg" list --ops > "$out.pkg_ops.log" 2>&1 && grep -q "fused_add_rms_norm" "$out.pkg_ops.log" ||
  { cat "$out.pkg_ops.log"; fail "kgate --ops PACKAGE_DIR list --ops"; }
"$kgate" --ops "$src/tests/ops" replay --kernel softmax_cpu 'softmax_script:f32:B=4,N=33:contiguous:normal:0000000000000001' > "$out.op_mismatch.log" 2>&1
[ $? -eq 4 ] && grep -q "is for op 'softmax_script' but kernel 'softmax_cpu' implements 'softmax'" "$out.op_mismatch.log" ||
  { cat "$out.op_mismatch.log"; fail "a case of another op was not refused"; }

"$kgate" check --backend cpu --kernel no_such_kernel > "$out.usage.log" 2>&1
rc=$?
[ $rc -eq 4 ] || fail "an unknown kernel exited $rc, expected 4"
grep -q "unknown kernel 'no_such_kernel'" "$out.usage.log" || fail "unknown kernel message missing"
grep -q "mutant_" "$out.usage.log" && fail "the unknown-kernel message lists the mutants"
"$kgate" check --backend cpu --kernel softmax_cpu --sanitize memcheck > "$out.san.log" 2>&1
[ $? -eq 4 ] && grep -q "needs the cuda backend" "$out.san.log" || { cat "$out.san.log"; fail "--sanitize on the cpu backend is not refused"; }
"$kgate" check --backend cpu --kernel softmax_cpu --sanitize memchek > "$out.san2.log" 2>&1
[ $? -eq 4 ] && grep -q "memcheck" "$out.san2.log" || { cat "$out.san2.log"; fail "an unknown --sanitize tool is not refused"; }
"$kgate" bogus > "$out.verb.log" 2>&1
[ $? -eq 4 ] && grep -q "unknown verb 'bogus'; verbs: list, check" "$out.verb.log" || { cat "$out.verb.log"; fail "a mistyped verb is not named"; }
"$kgate" check --help | grep -q -- "--no-shrink{" && fail "the help shows --no-shrink{false}"
"$kgate" check --backend cpu --kernel softmax_cpv > "$out.typo.log" 2>&1
[ $? -eq 4 ] && grep -q "did you mean 'softmax_cpu'?" "$out.typo.log" || { cat "$out.typo.log"; fail "no did-you-mean for a typo"; }
"$kgate" check --backend cpu softmax_cpu > "$out.positional.log" 2>&1
[ $? -eq 4 ] && grep -q "'softmax_cpu' is a kernel, not a package directory: check it with --kernel softmax_cpu" "$out.positional.log" ||
  { cat "$out.positional.log"; fail "a kernel name given as a package directory got no hint"; }
"$kgate" check --cases 0 > "$out.cases0.log" 2>&1
[ $? -eq 4 ] || fail "--cases 0 should be a usage error (exit 4)"
grep -q "must be above 0, found 0" "$out.cases0.log" || { cat "$out.cases0.log"; fail "--cases 0 is not explained"; }
# Isolation: a kernel that crashes and one that hangs fail alone; the correct kernel's result is kept.
# The random family's small cases: softmax_cpu's worker then takes about 1 s (its start included)
# where 4 cases of all families took ~3 s (a long row of 262144); 12 s leaves it room on a loaded CI
# machine, and the hang is waited out in 12 s, not 30.
"$kgate" check --backend cpu --kernel softmax_cpu --kernel mutant_softmax_cpu_segfault --kernel mutant_softmax_cpu_hang \
  --kernel-timeout 12 --family random --cases 4 --no-speed --out "$out/iso" > "$out.iso.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out.iso.log"; fail "crash/hang run exited $rc, expected 1"; }
python3 - "$out/iso/report.json" <<'PY' || { cat "$out.iso.log"; fail "isolation report is wrong"; }
import json, sys
r = json.load(open(sys.argv[1]))
k = {x["name"]: x for x in r["kernels"]}
assert k["softmax_cpu"]["outcome"] == "passed" and k["softmax_cpu"]["correctness"]["passed"] == 4, k["softmax_cpu"]
assert k["mutant_softmax_cpu_segfault"]["outcome"] == "failed"
assert "crashed with signal 11" in k["mutant_softmax_cpu_segfault"]["message"], k["mutant_softmax_cpu_segfault"]["message"]
assert k["mutant_softmax_cpu_hang"]["outcome"] == "failed"
assert k["mutant_softmax_cpu_hang"]["message"].startswith("hung: no result after 12 s"), k["mutant_softmax_cpu_hang"]["message"]
# Each crash is the case it happened on; a fresh worker went on with the next one.
seg = k["mutant_softmax_cpu_segfault"]["correctness"]
assert seg["failed"] == 4 and len(seg["faulted"]) == 4 and seg["failures"][0]["rule"] == "crash", seg
hang = k["mutant_softmax_cpu_hang"]["correctness"]
assert hang["failures"][0]["rule"] == "hang" and hang.get("not_run") == 3, hang
PY
# The per-case bound: a hung case is killed after --case-timeout (no slower case came before it), long
# before --kernel-timeout, and the case it hung on is named.
start=$SECONDS
"$kgate" check --backend cpu --kernel mutant_softmax_cpu_hang --case-timeout 2 --cases 4 --no-speed \
  --out "$out/case-hang" > "$out.case-hang.log" 2>&1
[ $? -eq 1 ] || { cat "$out.case-hang.log"; fail "the hung case should fail the run"; }
[ $((SECONDS - start)) -lt 60 ] || fail "--case-timeout 2 took $((SECONDS - start)) s to kill a hung case"
python3 - "$out/case-hang/report.json" <<'PY' || { cat "$out.case-hang.log"; fail "the per-case hang report is wrong"; }
import json, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
assert k["message"].startswith("hung: case softmax:") and "--case-timeout 2 s" in k["message"], k["message"]
c = k["correctness"]
assert c["failures"][0]["rule"] == "hang" and c["minimal"]["rule"] == "hang" and c["not_run"] == 3, c
PY
# A kernel that crashes its process on some shapes only: a fresh worker goes on after each crash,
# the other cases pass, each crash names its case, and the minimal case is a crashing case that ran.
"$kgate" check --backend cpu --kernel mutant_softmax_cpu_crash_some --cases 24 --no-speed --out "$out/some" \
  > "$out.some.log" 2>&1
[ $? -eq 1 ] || { cat "$out.some.log"; fail "crash_some run should exit 1"; }
python3 - "$out/some/report.json" <<'PY' || { cat "$out.some.log"; fail "crash_some report is wrong"; }
import json, sys
c = json.load(open(sys.argv[1]))["kernels"][0]["correctness"]
n_of = lambda case_id: int(case_id.split(":")[2].split(",")[1].split("=")[1])
assert c["faulted"] and all(n_of(f) % 5 == 0 for f in c["faulted"]), c
assert c["failed"] == len(c["faulted"]) and c["passed"] + c["failed"] == c["cases"] == 24, c
assert not c.get("not_run"), c
assert c["minimal"]["rule"] == "crash" and n_of(c["minimal"]["case"]["id"]) % 5 == 0, c["minimal"]
print("crash_some:", len(c["faulted"]), "crashing cases,", c["passed"], "passed, minimal", c["minimal"]["case"]["id"])
PY
# A kernel that prints ~280 KB per launch (its values right): it passes, kgate's own log stays small,
# and the report keeps the first and last lines with the dropped byte count.
"$kgate" check --backend cpu --kernel softmax_cpu --kernel mutant_softmax_cpu_printf_flood --cases 4 --no-speed \
  --out "$out/flood" > "$out.flood.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { tail -40 "$out.flood.log"; fail "the printf flood run exited $rc, expected 0"; }
size=$(wc -c < "$out.flood.log")
[ "$size" -lt 200000 ] || fail "kgate's log of a printf flood is $size bytes"
grep -q "mutant_softmax_cpu_printf_flood printed [0-9]* bytes; [0-9]* of them are not shown" "$out.flood.log" \
  || { tail -40 "$out.flood.log"; fail "the dropped output is not said"; }
python3 - "$out/flood/report.json" <<'PY' || { tail -40 "$out.flood.log"; fail "the flood's report is wrong"; }
import json, sys
r = json.load(open(sys.argv[1]))
k = {x["name"]: x for x in r["kernels"]}
f = k["mutant_softmax_cpu_printf_flood"]
assert f["outcome"] == "passed", f["outcome"]
w = f["worker_output"]
assert w["bytes"] > 2_000_000 and w["dropped_bytes"] > w["bytes"] - 40_000, (w["bytes"], w["dropped_bytes"])
assert "\nflood line 0:" in w["text"] and "lines) of output dropped" in w["text"] and len(w["text"]) < 40_000, w["text"][:200]
assert k["softmax_cpu"]["outcome"] == "passed"
PY
# Without a driver, --backend cuda (what ci/gate.sh passes with KGATE_EXPECT_GPU=1) is exit 4, and
# the message says there is no driver rather than "insufficient driver".
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda.so.1 '; then
  "$kgate" check --backend cuda --cases 4 --out "$out/nogpu" > "$out.nogpu.log" 2>&1
  rc=$?
  [ $rc -eq 4 ] || { cat "$out.nogpu.log"; fail "--backend cuda without a driver exited $rc, expected 4"; }
  grep -q "no NVIDIA driver is installed (libcuda.so.1 cannot be loaded)" "$out.nogpu.log" \
    || { cat "$out.nogpu.log"; fail "the missing driver is not named"; }
  # --device asks for a GPU: no fallback to the cpu backend, and the message names the selection.
  "$kgate" check --device 1 --cases 4 --out "$out/nogpu-device" > "$out.nogpu-device.log" 2>&1
  rc=$?
  [ $rc -eq 4 ] || { cat "$out.nogpu-device.log"; fail "--device 1 without a GPU exited $rc, expected 4"; }
  grep -q "device 1 was selected, with --device or by CTest; CUDA_VISIBLE_DEVICES=1" "$out.nogpu-device.log" \
    || { cat "$out.nogpu-device.log"; fail "the selected device is not named"; }
fi
# A device past CUDA_VISIBLE_DEVICES is a usage error before anything runs.
CUDA_VISIBLE_DEVICES=0 "$kgate" check --device 2 --backend cpu --out "$out/device2" > "$out.device2.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out.device2.log"; fail "--device 2 with one visible device exited $rc, expected 4"; }
grep -q -- "--device 2: this process sees 1 device(s) (CUDA_VISIBLE_DEVICES=0)" "$out.device2.log" \
  || { cat "$out.device2.log"; fail "--device 2's message"; }
echo "check_cli: all passed"
