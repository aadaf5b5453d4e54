#!/usr/bin/env bash
# Captured inputs on the cpu backend (no GPU needed): a safetensors file of one call's inputs runs
# as a fixed case beside the generated ones, reported under its file name (console, report.json,
# summary.md); it replays from its case id; a file that fits no kernel, or not the op, is exit 4
# naming the tensor; a package's captured_inputs are checked by kgate validate.
#   captured_cli.sh KGATE OUT_DIR
set -uo pipefail
kgate=${1:?usage: captured_cli.sh KGATE OUT_DIR}
out=${2:?usage: captured_cli.sh KGATE OUT_DIR}
src=$(cd "$(dirname "$0")/../.." && pwd)
kgate=$(cd "$(dirname "$kgate")" && pwd)/$(basename "$kgate")  # the script works in $out
rm -rf "$out" && mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }

# safetensors written the way the format says (8-byte header length, JSON header, raw bytes).
python3 - "$out" <<'PY' || fail "could not write the safetensors files"
import json, random, struct, sys
out = sys.argv[1]
def write(name, tensors, meta=None):
    header, data = {}, b""
    if meta: header["__metadata__"] = meta
    for tname, dtype, shape, raw in tensors:
        header[tname] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    h = json.dumps(header).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    open(f"{out}/{name}", "wb").write(struct.pack("<Q", len(h)) + h + data)
random.seed(7)
x = [random.gauss(0, 3) for _ in range(4 * 37)]
f32 = struct.pack("<%df" % len(x), *x)
write("llama_b4.safetensors", [("x", "F32", [4, 37], f32)], {"op": "softmax"})
write("norm_only.safetensors", [("x", "F32", [4, 37], f32)], {"op": "layer_norm"})
write("misnamed.safetensors", [("logits", "F32", [4, 37], f32)])
PY

cd "$out" || exit 1
# A correct kernel passes its captured case; a kernel that drops a row's tail fails on it.
"$kgate" check --backend cpu --kernel softmax_cpu --kernel mutant_softmax_cpu_tail_dropped --captured llama_b4.safetensors \
  --cases 4 --no-speed --out run > run.log 2>&1
rc=$?
[ $rc -eq 1 ] || { cat run.log; fail "softmax_cpu and its tail-dropping mutant with captured inputs exited $rc, expected 1"; }
grep -q "softmax_cpu: captured inputs llama_b4.safetensors: passed (margin" run.log ||
  { cat run.log; fail "the console does not report the captured case under its file name"; }
grep -q "mutant_softmax_cpu_tail_dropped: captured inputs llama_b4.safetensors: failed \[memory\]" run.log ||
  { cat run.log; fail "the mutant's captured case did not fail by name"; }
python3 - run/report.json <<'PY' || { cat run.log; fail "report.json does not hold the captured cases"; }
import json, sys
r = json.load(open(sys.argv[1]))
by = {k["name"]: k["correctness"] for k in r["kernels"]}
for name, outcome in (("softmax_cpu", "passed"), ("mutant_softmax_cpu_tail_dropped", "failed")):
    cap = by[name]["captured"]
    assert len(cap) == 1, cap
    c = cap[0]["case"]
    assert c["values"] == "captured" and c["captured"] == "llama_b4.safetensors", c
    assert c["dims"] == {"B": 4, "N": 37} and c["dtype"] == "f32", c
    assert cap[0]["outcome"] == outcome, cap[0]
    assert ":captured=llama_b4.safetensors:" in c["id"], c
assert by["softmax_cpu"]["cases"] == 5, by["softmax_cpu"]["cases"]  # 4 generated + 1 captured
PY
grep -q "captured inputs \`llama_b4.safetensors\`: failed" run/summary.md || fail "summary.md does not name the captured case"

# The captured case replays from its id (the file found by its name, from where check ran).
id=$(python3 -c "import json;print(json.load(open('run/report.json'))['kernels'][1]['correctness']['captured'][0]['case']['id'])")
"$kgate" replay --kernel mutant_softmax_cpu_tail_dropped "$id" > replay.log 2>&1
rc=$?
[ $rc -eq 1 ] && grep -q "failed mutant_softmax_cpu_tail_dropped on $id" replay.log ||
  { cat replay.log; fail "replay of the captured case exited $rc, expected 1"; }
"$kgate" replay --kernel softmax_cpu "$id" > replay-ok.log 2>&1 || { cat replay-ok.log; fail "softmax_cpu's captured case does not replay as passed"; }

# A file for an op no kernel of the run implements, and one whose tensor is misnamed: exit 4, named.
"$kgate" check --backend cpu --kernel softmax_cpu --captured norm_only.safetensors --no-speed --out none > none.log 2>&1
[ $? -eq 4 ] && grep -q "names op 'layer_norm', which no kernel of this run implements" none.log ||
  { cat none.log; fail "a captured file for another op was not refused"; }
"$kgate" check --backend cpu --kernel softmax_cpu --captured misnamed.safetensors --no-speed --out misnamed > misnamed.log 2>&1
[ $? -eq 4 ] && grep -q "captured inputs \"misnamed.safetensors\": holds no tensor \"x\"; op softmax takes x" misnamed.log ||
  { cat misnamed.log; fail "a captured file without the op's input was not refused by name"; }

# A package lists its captured inputs; kgate validate checks that each fits the op.
"$kgate" pack --no-compile -q "$src/kernels/softmax/package" pkg > pack.log 2>&1 || { cat pack.log; fail "kgate pack of the softmax package failed"; }
mkdir -p pkg/captured && cp llama_b4.safetensors misnamed.safetensors pkg/captured/
python3 - pkg/kgate.json <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["captured_inputs"] = ["captured/llama_b4.safetensors"]
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
"$kgate" validate --no-compile pkg > validate.log 2>&1 || { cat validate.log; fail "a package with a fitting captured file is not valid"; }
# kgate pack carries a source package's captured files along.
mkdir -p tree/kernels/softmax && cp -r "$src/kernels/common" tree/kernels/ && cp -r "$src/kernels/softmax/package" tree/kernels/softmax/ &&
  mkdir -p tree/kernels/softmax/package/captured && cp llama_b4.safetensors tree/kernels/softmax/package/captured/ || fail "could not copy the softmax source package"
python3 - tree/kernels/softmax/package/kgate.json <<'PY'
import json, sys
m = json.load(open(sys.argv[1])); m["captured_inputs"] = ["captured/llama_b4.safetensors"]
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
"$kgate" pack --no-compile -q tree/kernels/softmax/package packed > pack2.log 2>&1 &&
  cmp -s llama_b4.safetensors packed/captured/llama_b4.safetensors || { cat pack2.log; fail "kgate pack did not copy the captured inputs"; }
"$kgate" validate --no-compile packed > validate-packed.log 2>&1 || { cat validate-packed.log; fail "the packed copy is not valid"; }
python3 - pkg/kgate.json <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["captured_inputs"] = ["captured/llama_b4.safetensors", "captured/misnamed.safetensors", "captured/none.safetensors"]
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
"$kgate" validate --no-compile pkg > validate-bad.log 2>&1
[ $? -eq 4 ] || { cat validate-bad.log; fail "a package with a misnamed captured file was valid"; }
grep -q "captured_inputs\[1\].*holds no tensor \"x\"" validate-bad.log &&
  grep -q "captured_inputs\[2\].*does not exist in the package directory" validate-bad.log ||
  { cat validate-bad.log; fail "kgate validate does not name the bad captured_inputs entries"; }
echo "captured_cli: all passed"
