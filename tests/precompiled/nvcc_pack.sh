#!/usr/bin/env bash
# A package whose sources only nvcc compiles (tests/precompiled/nvcc_norm: a header-only template
# library including <vector>, <numeric> and <iostream>, with a host class), built at pack time:
#   cpu: the unpacked package is refused, naming "build" and kgate pack          -> exit 4
#        kgate pack runs nvcc into a fatbin; the packed manifest records the command and the
#        versions of nvcc and the host compiler                                   -> exit 0
#        validate resolves "mylib::norm::RmsNormKernel<8, half>" (and "__half", "8u", extra
#        spaces) to its mangled symbol in the fatbin                              -> exit 0
#        a missing instance lists the candidates by C++ name                      -> exit 4
#        an overloaded name is ambiguous, both signatures listed                  -> exit 4
#        an argument of the wrong size for the fatbin kernel's parameter          -> exit 4
#   gpu: kgate check on the packed package (SKIPPED, exit 77, without a GPU)
# Usage: nvcc_pack.sh KGATE SRC_PACKAGE OUT_DIR cpu|gpu
set -u
kgate=$1 src=$2 out=$3 mode=${4:-cpu}
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out" && mkdir -p "$out"
export KGATE_CACHE_DIR="$out/cache"
nvcc=${CUDA_HOME:-/usr/local/cuda}/bin/nvcc
[ -x "$nvcc" ] || { echo "SKIPPED: no nvcc at $nvcc (kgate pack needs the toolkit's nvcc)"; exit 77; }

if [ "$mode" = gpu ]; then
  "$kgate" pack "$src" "$out/packed" -q > "$out/pack.log" 2>&1 || { cat "$out/pack.log"; fail "kgate pack failed"; }
  "$kgate" check "$out/packed" --backend cuda --cases 32 --no-speed --out "$out/report" --no-device-exit-code 77 > "$out/check.log" 2>&1
  rc=$?
  [ $rc -eq 77 ] && { tail -3 "$out/check.log"; echo "SKIPPED: no GPU"; exit 77; }
  [ $rc -eq 0 ] || { tail -40 "$out/check.log"; fail "kgate check of the nvcc-built package: exit $rc"; }
  echo "ok: $(grep -m1 -E 'PASS|FAIL' "$out/check.log")"
  exit 0
fi

"$kgate" validate "$src" > "$out/unpacked.log" 2>&1
rc=$?
[ $rc -eq 4 ] && grep -q 'build: .*kgate pack' "$out/unpacked.log" \
  || { cat "$out/unpacked.log"; fail "the unpacked nvcc package: exit $rc, expected 4 naming build and kgate pack"; }
echo "ok: unpacked -> $(grep -o 'build: .*' "$out/unpacked.log" | head -c 120)..."

"$kgate" pack "$src" "$out/packed" > "$out/pack.log" 2>&1 || { cat "$out/pack.log"; fail "kgate pack failed"; }
grep -q "precompiled fatbin _built/nvcc_norm.fatbin" "$out/pack.log" || { cat "$out/pack.log"; fail "the packed package does not load its fatbin"; }
[ -s "$out/packed/_built/nvcc_norm.fatbin" ] || fail "no fatbin in the packed package"
python3 - "$out/packed/kgate.json" <<'PY' || fail "the packed manifest does not record the build"
import json, sys
m = json.load(open(sys.argv[1]))
r = m["build"]["record"]
assert m["fatbin"] == "_built/nvcc_norm.fatbin", m["fatbin"]
cmd = r["command"]
assert cmd[0].endswith("/nvcc") and "-fatbin" in cmd and "-gencode=arch=compute_90,code=sm_90" in cmd, cmd
assert cmd[-3:] == ["-o", "_built/nvcc_norm.fatbin", "_built/kgate_build.cu"], cmd
assert "-std=c++17" in cmd and "-Iinclude" in cmd, cmd
assert "release" in r["nvcc_version"], r["nvcc_version"]
assert r["host_compiler"] and r["host_compiler_version"], r
assert r["kernels"] == ["mylib::norm::RmsNormKernel<8, float>", "mylib::norm::RmsNormKernel<8, half>"], r["kernels"]
print("ok: recorded", " ".join(cmd), "|", r["nvcc_version"], "|", r["host_compiler_version"])
PY
grep -q '&mylib::norm::RmsNormKernel<8, half>;' "$out/packed/_built/kgate_build.cu" || fail "the generated unit does not instantiate the kernels"

variant() {  # variant NAME SED_EXPRESSION: a copy of the packed package with its manifest edited
  rm -rf "$out/$1" && cp -r "$out/packed" "$out/$1" && sed -i "$2" "$out/$1/kgate.json"
  "$kgate" validate "$out/$1" > "$out/$1.log" 2>&1
}
variant spelled 's/"mylib::norm::RmsNormKernel<8, half>"/"mylib::norm::RmsNormKernel< 8u , __half >"/'
[ $? -eq 0 ] || { cat "$out/spelled.log"; fail "\"RmsNormKernel< 8u , __half >\" did not resolve"; }
echo "ok: other spellings resolve"
variant missing 's/"mylib::norm::RmsNormKernel<8, float>"/"mylib::norm::RmsNormKernel<4, float>"/'
rc=$?
[ $rc -eq 4 ] && grep -q 'kernel "mylib::norm::RmsNormKernel<4, float>" is not in "_built/nvcc_norm.fatbin"; did you mean "mylib::norm::RmsNormKernel<8, float>"?' "$out/missing.log" \
  && grep -q '"mylib::norm::RmsNormKernel<8, __half>"' "$out/missing.log" \
  || { cat "$out/missing.log"; fail "a missing instance: exit $rc, expected 4 listing the candidates"; }
echo "ok: missing -> $(grep -o 'kernel "mylib.*' "$out/missing.log" | head -c 200)..."
variant ambiguous 's/"mylib::norm::RmsNormKernel<8, float>"/"mylib::norm::Fill<float>"/'
rc=$?
[ $rc -eq 4 ] && grep -q 'kernel "mylib::norm::Fill<float>" names 2 kernels of "_built/nvcc_norm.fatbin"' "$out/ambiguous.log" \
  || { cat "$out/ambiguous.log"; fail "an overloaded name: exit $rc, expected 4 naming both"; }
echo "ok: ambiguous -> $(grep -o 'kernel "mylib::norm::Fill.*' "$out/ambiguous.log" | head -c 240)..."
# The fatbin's CUBIN gives each kernel's parameter table: a scalar of the wrong size is refused.
rm -rf "$out/badargs" && cp -r "$out/packed" "$out/badargs"
python3 - "$out/badargs/kgate.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
for a in m["launches"][0]["args"]:
    if a.get("attribute") == "eps":
        a["type"] = "f64"
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
"$kgate" validate "$out/badargs" > "$out/badargs.log" 2>&1
rc=$?
[ $rc -eq 4 ] && grep -q 'launches\[0\].args\[4\]: is 8 bytes (f64), but parameter 4 of kernel "mylib::norm::RmsNormKernel<8, float>" (f32) is 4 bytes' "$out/badargs.log" \
  || { cat "$out/badargs.log"; fail "an f64 argument for a float parameter of a fatbin kernel: exit $rc, expected 4"; }
echo "ok: the fatbin's parameter tables check the arguments"
