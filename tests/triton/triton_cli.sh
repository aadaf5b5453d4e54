#!/usr/bin/env bash
# Triton kernels' CUBINs as kgate packages (tests/triton, made by make_fixture.py):
#   cpu: the hand-written package (softmax_rows/): kgate validate passes (the CUBIN's 7 parameters:
#        5 visible, 2 scratch pointers Triton appends); a manifest that leaves the scratch pointers
#        out is refused naming the kernel's parameter sizes (exit 4).
#        kgate-triton-pack (tools/kgate_triton_pack.py) on the JIT cache entries (jit/): two
#        specializations of softmax_rows become one package dispatched by "when" (validate passes,
#        both launches run); one specialization's assumptions become guard.require, and a guard
#        without "N % 16 == 0" is refused by kgate validate naming that assumption (exit 4); a spec
#        that leaves a parameter unmapped is refused naming it (exit 4); kgate-pack.json records
#        the Triton version and each input's SHA-256. triton.tools.compile's C source (aot/): the
#        CUBIN from its hex array, the specialization from the entry point's suffix.
#   gpu: kgate check --no-speed of each package: the hand-written one and the produced ones pass, the
#        produced one with the tail bug fails (exit 1) on a row whose N is no multiple of 16; then
#        the hand-written one's speed against eager is printed, exit 0 or 2 (a plain Triton softmax:
#        on the H100 1.3x slower than eager at B=4096, N=1024, faster on smaller batches).
#        (exit 77, SKIPPED, without a GPU)
#   triton_cli.sh KGATE PACKAGE_DIR OUT_DIR cpu|gpu     (PACKAGE_DIR: tests/triton/softmax_rows)
set -u
kgate=$1 package=$2 out=$3 mode=$4
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out" && mkdir -p "$out"
here=$(cd "$(dirname "$package")" && pwd)
pack=$(dirname "$kgate")/kgate-triton-pack
[ -x "$pack" ] || pack="python3 $here/../../tools/kgate_triton_pack.py"
# spec_from ENTRY OUT_SPEC [B_MAX]: softmax_rows.kgate-triton.json with the one specialization
# jit/ENTRY (and its guard's B at most B_MAX).
spec_from() {
  python3 - "$here/softmax_rows.kgate-triton.json" "$2" "$here/jit/$1" "${3:-}" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["specializations"] = [{"from": sys.argv[3]}]
if sys.argv[4]:
    m["package"]["guard"]["shapes"]["B"]["max"] = int(sys.argv[4])
json.dump(m, open(sys.argv[2], "w"), indent=2)
PY
}
# passes PKG LABEL: kgate check --no-speed of PKG exits 0; its table is printed.
passes() {
  "$kgate" check "$1" --no-speed --out "$out/check-$2" > "$out/check-$2.log" 2>&1
  local rc=$?
  [ $rc -eq 0 ] || { cat "$out/check-$2.log"; fail "kgate check --no-speed of the $2 package: exit $rc"; }
  sed -n '/^kernel /,$p' "$out/check-$2.log"
}
if [ "$mode" = gpu ]; then
  nvidia-smi -L > /dev/null 2>&1 || { echo "SKIPPED: no GPU"; exit 77; }
  $pack "$here/softmax_rows.kgate-triton.json" "$out/jit_pkg" --kgate "$kgate" -q || fail "kgate-triton-pack softmax_rows"
  $pack "$here/softmax_rows_tail.kgate-triton.json" "$out/tail_pkg" --kgate "$kgate" -q || fail "kgate-triton-pack softmax_rows_tail"
  $pack "$here/softmax_rows_aot.kgate-triton.json" "$out/aot_pkg" --kgate "$kgate" -q || fail "kgate-triton-pack of an AOT C source"
  spec_from softmax_rows_pdl "$out/pdl.kgate-triton.json" 1024  # (a cooperative grid is resident at once)
  $pack "$out/pdl.kgate-triton.json" "$out/pdl_pkg" --kgate "$kgate" -q || fail "kgate-triton-pack of a PDL kernel"
  passes "$out/aot_pkg" AOT
  passes "$out/pdl_pkg" "cooperative PDL"
  passes "$out/jit_pkg" produced
  passes "$package" hand-written
  "$kgate" check "$out/tail_pkg" --no-speed --out "$out/tail" > "$out/tail.log" 2>&1
  rc=$?
  [ $rc -eq 1 ] || { cat "$out/tail.log"; fail "the Triton kernel with the tail bug: exit $rc, expected 1"; }
  python3 - "$out/tail/report.json" <<'PY' || fail "the tail bug's minimal case"
import json, re, sys
k = json.load(open(sys.argv[1]))["kernels"][0]
m = k["correctness"]["minimal"]["case"]
n = m["dims"]["N"] if isinstance(m, dict) else int(re.search(r"N=(\d+)", m).group(1))
print(f"tail bug caught: {k['correctness']['failed']} of {k['correctness']['cases']} cases failed; minimal N={n}")
sys.exit(0 if n % 16 else 1)
PY
  "$kgate" check "$package" --out "$out/speed" > "$out/speed.log" 2>&1
  rc=$?
  [ $rc -eq 0 ] || [ $rc -eq 2 ] || { cat "$out/speed.log"; fail "kgate check of the Triton CUBIN package with its speed: exit $rc"; }
  sed -n '/^kernel /,$p' "$out/speed.log"
  echo "triton_cli gpu: PASS"
  exit 0
fi
"$kgate" validate "$package" > "$out/validate.log" 2>&1 || { cat "$out/validate.log"; fail "kgate validate: exit $?"; }
grep -q "precompiled cubin softmax_rows.cubin for sm_90" "$out/validate.log" || { cat "$out/validate.log"; fail "the CUBIN was not read"; }
cp -r "$package" "$out/no_scratch"
python3 - "$out/no_scratch/kgate.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["launches"][0]["args"] = m["launches"][0]["args"][:5]  # the scratch pointers left out
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
"$kgate" validate "$out/no_scratch" > "$out/no_scratch.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/no_scratch.log"; fail "a launch without Triton's scratch pointers: exit $rc, expected 4"; }
grep -q 'takes 7 parameter(s) of 8, 8, 4, 4, 4, 8, 8 bytes, but "args" lists 5' "$out/no_scratch.log" ||
  { cat "$out/no_scratch.log"; fail "the refusal does not name the kernel's parameters"; }
# kgate-triton-pack on the JIT cache entries.
$pack "$here/softmax_rows.kgate-triton.json" "$out/jit_pkg" --kgate "$kgate" > "$out/jit_pkg.log" 2>&1 ||
  { cat "$out/jit_pkg.log"; fail "kgate-triton-pack of two specializations"; }
grep -q "runs a launch (launches\[0\] [1-9][0-9]*, launches\[1\] [1-9][0-9]*)" "$out/jit_pkg.log" ||
  { cat "$out/jit_pkg.log"; fail "the two specializations' launches do not both run"; }
python3 - "$out/jit_pkg" <<'PY' || fail "the produced package's record"
import json, sys
d = sys.argv[1]
m = json.load(open(d + "/kgate.json"))
r = json.load(open(d + "/kgate-pack.json"))
s = r["producer"]["specializations"]
assert [l["cubin"]["sm_90"] for l in m["launches"]] == ["softmax_rows.0.sm_90.cubin", "softmax_rows.1.sm_90.cubin"]
assert m["launches"][0]["assumes"] == ["align_x >= 16", "align_y >= 16", "N % 16 == 0", "stride_x_0 % 16 == 0", "stride_y_0 % 16 == 0"], m["launches"][0]["assumes"]
assert "assumes" not in m["launches"][1]
assert all(x["triton_version"] == "3.6.0" and len(x["inputs"]) == 3 for x in s), s
assert all(len(h) == 64 for x in s for h in x["inputs"].values())
print("produced: 2 launches, assumptions of the first:", ", ".join(m["launches"][0]["assumes"]))
PY
# kgate pack of the produced package copies each launch's own CUBIN.
"$kgate" pack "$out/jit_pkg" "$out/jit_packed" -q > "$out/jit_packed.log" 2>&1 ||
  { cat "$out/jit_packed.log"; fail "kgate pack of a package whose launches have CUBINs of their own"; }
for f in softmax_rows.0.sm_90.cubin softmax_rows.1.sm_90.cubin; do
  cmp -s "$out/jit_pkg/$f" "$out/jit_packed/$f" || fail "kgate pack did not copy $f"
done
# triton.tools.compile's C source: the CUBIN from its hex array, the specialization from its suffix
# ("0d1d23d4d5": both pointers and both row strides divisible by 16, n_cols not).
$pack "$here/softmax_rows_aot.kgate-triton.json" "$out/aot_pkg" --kgate "$kgate" -q || fail "kgate-triton-pack of an AOT C source"
python3 - "$out/aot_pkg" "$here/aot" <<'PY' || fail "the AOT package"
import glob, json, re, sys
m = json.load(open(sys.argv[1] + "/kgate.json"))
req = m["guard"]["require"]
assert all(a in req for a in ("align_x >= 16", "align_y >= 16", "stride_x_0 % 16 == 0", "stride_y_0 % 16 == 0")), req
assert "N % 16 == 0" not in req, req
c = open(glob.glob(sys.argv[2] + "/*.c")[0]).read()
size = int(re.search(r"CUBIN_NAME\[(\d+)\]", c).group(1))
cubin = open(sys.argv[1] + "/" + m["cubin"]["sm_90"], "rb").read()
assert len(cubin) == size and cubin[:4] == b"\x7fELF", (len(cubin), size)
assert m["launches"][0]["block"] == [128] and m["launches"][0]["shared_mem"] == 16
print("AOT: the CUBIN of", size, "bytes, guard", ", ".join(req[2:]))
PY
# Without the spec's "grid", the AOT source's --grid is the launch's (here "1,1,1").
python3 - "$here/softmax_rows_aot.kgate-triton.json" "$out/aot_grid.kgate-triton.json" "$here" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
del m["grid"]
m["specializations"][0]["from"] = sys.argv[3] + "/" + m["specializations"][0]["from"]
json.dump(m, open(sys.argv[2], "w"), indent=2)
PY
$pack "$out/aot_grid.kgate-triton.json" "$out/aot_grid_pkg" --no-validate -q || fail "kgate-triton-pack with the AOT grid"
python3 -c "import json,sys; g=json.load(open(sys.argv[1]))['launches'][0]['grid']; sys.exit(0 if g == [1, 1, 1] else 1)" \
  "$out/aot_grid_pkg/kgate.json" || fail "the AOT source's --grid was not the launch's grid"
# A kernel compiled for a cooperative launch with PDL: its launch says so; a GPU before sm_90 cannot
# launch it (validate names the attribute).
spec_from softmax_rows_pdl "$out/pdl.kgate-triton.json" 1024
$pack "$out/pdl.kgate-triton.json" "$out/pdl_pkg" --kgate "$kgate" -q || fail "kgate-triton-pack of a PDL kernel"
python3 -c "import json,sys; l=json.load(open(sys.argv[1]))['launches'][0]; sys.exit(0 if l.get('pdl') is True and l.get('cooperative') is True else 1)" \
  "$out/pdl_pkg/kgate.json" || fail "the PDL kernel's launch has no \"pdl\"/\"cooperative\""
"$kgate" validate "$out/pdl_pkg" --device-props a100-sxm > "$out/pdl_a100.log" 2>&1
rc=$?
[ $rc -eq 4 ] && grep -q 'a programmatic dependent launch ("pdl"), which needs sm_90 or later' "$out/pdl_a100.log" ||
  { cat "$out/pdl_a100.log"; fail "a PDL launch on an sm_80 device: exit $rc, expected 4 naming \"pdl\""; }
# One specialization: its assumptions are the guard's; without the integer ones validate refuses.
spec_from softmax_rows_d16 "$out/d16.kgate-triton.json"
$pack "$out/d16.kgate-triton.json" "$out/d16_pkg" --kgate "$kgate" -q || fail "kgate-triton-pack of one specialization"
python3 - "$out/d16_pkg/kgate.json" <<'PY' || fail "the guard of one specialization"
import json, sys
m = json.load(open(sys.argv[1]))
req = m["guard"]["require"]
assert "N % 16 == 0" in req and "align_x >= 16" in req, req
# The integer ":16" assumptions left out (the row strides' imply N's on contiguous rows).
for a in ("N % 16 == 0", "stride_x_0 % 16 == 0", "stride_y_0 % 16 == 0"):
    req.remove(a)
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
"$kgate" validate "$out/d16_pkg" > "$out/d16_wide.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/d16_wide.log"; fail "a guard wider than the specialization: exit $rc, expected 4"; }
grep -q 'launches\[0\].assumes\[2\] "N % 16 == 0" is 0 (N=[0-9]*): the guard is wider than the specialization' "$out/d16_wide.log" ||
  { cat "$out/d16_wide.log"; fail "the refusal does not name the assumption"; }
# A parameter left unmapped: refused, named.
python3 - "$here/softmax_rows.kgate-triton.json" "$out/unmapped.kgate-triton.json" "$here" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["params"] = [p for p in m["params"] if p["name"] != "y_row_stride"]
m["specializations"] = [{"from": sys.argv[3] + "/jit/softmax_rows_any"}]
json.dump(m, open(sys.argv[2], "w"), indent=2)
PY
$pack "$out/unmapped.kgate-triton.json" "$out/unmapped_pkg" --kgate "$kgate" > "$out/unmapped.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/unmapped.log"; fail "an unmapped parameter: exit $rc, expected 4"; }
grep -q "takes parameter 'y_row_stride', which \"params\" does not map" "$out/unmapped.log" ||
  { cat "$out/unmapped.log"; fail "the refusal does not name the parameter"; }
[ ! -e "$out/unmapped_pkg" ] || fail "a refused spec left a package behind"
# A misspelt key is refused, named (never ignored).
python3 - "$here/softmax_rows.kgate-triton.json" "$out/typo.kgate-triton.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["grids"] = m.pop("grid")
json.dump(m, open(sys.argv[2], "w"), indent=2)
PY
$pack "$out/typo.kgate-triton.json" "$out/typo_pkg" --kgate "$kgate" > "$out/typo.log" 2>&1
rc=$?
[ $rc -eq 4 ] && grep -q 'unknown key "grids"' "$out/typo.log" || { cat "$out/typo.log"; fail "a misspelt spec key: exit $rc, expected 4 naming it"; }
echo "triton_cli cpu: PASS"
