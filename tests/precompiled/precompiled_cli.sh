#!/usr/bin/env bash
# Packages that ship precompiled kernels instead of sources (no GPU needed):
#   the CUBIN, PTX and fatbin packages validate (exit 0), naming the file they load
#   the CUBIN package for another architecture (--arch sm_80)       -> exit 4, the fix named
#   a misspelled kernel name                                         -> exit 4, did-you-mean from the CUBIN's symbols
#   a PTX file listed as a CUBIN                                     -> exit 4, "is not a CUBIN"
#   a PTX package for sm_80 still validates (the driver compiles PTX for any newer GPU)
# Usage: precompiled_cli.sh KGATE BUILD_DIR OUT_DIR
set -u
kgate=$1 pre=$2 out=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out" && mkdir -p "$out"
export KGATE_CACHE_DIR="$out/cache"

"$kgate" validate "$pre/softmax_pre_cubin" > "$out/cubin.log" 2>&1 || { cat "$out/cubin.log"; fail "the CUBIN package did not validate"; }
grep -q "precompiled cubin softmax_pre.sm_90.cubin for sm_90" "$out/cubin.log" || { cat "$out/cubin.log"; fail "validate does not name the CUBIN"; }
"$kgate" validate "$pre/softmax_pre_ptx" > "$out/ptx.log" 2>&1 || { cat "$out/ptx.log"; fail "the PTX package did not validate"; }
grep -q "precompiled PTX softmax_pre.compute_90.ptx" "$out/ptx.log" || { cat "$out/ptx.log"; fail "validate does not name the PTX"; }
"$kgate" validate "$pre/softmax_pre_ptx" --arch sm_100 > "$out/ptx100.log" 2>&1 || { cat "$out/ptx100.log"; fail "PTX must serve newer GPUs too"; }
"$kgate" validate "$pre/softmax_pre_fatbin" > "$out/fatbin.log" 2>&1 || { cat "$out/fatbin.log"; fail "the fatbin package did not validate"; }
grep -q "precompiled fatbin softmax_pre.fatbin" "$out/fatbin.log" || { cat "$out/fatbin.log"; fail "validate does not name the fatbin"; }
echo "ok: $(cat "$out/cubin.log")"
echo "ok: $(cat "$out/fatbin.log")"
echo "ok: $(cat "$out/ptx.log")"

"$kgate" validate "$pre/softmax_pre_cubin" --arch sm_80 > "$out/arch.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/arch.log"; fail "a CUBIN for sm_90 validated for sm_80 (exit $rc, expected 4)"; }
grep -q 'cubin: the package ships CUBINs for sm_90 only.*this GPU is sm_80.*add "sm_80" to "cubin"' "$out/arch.log" \
  || { cat "$out/arch.log"; fail "the architecture mismatch does not name the fix"; }
echo "ok: $(grep -o 'cubin: the package ships.*' "$out/arch.log" | head -c 160)..."

rm -rf "$out/typo" && cp -r "$pre/softmax_pre_cubin" "$out/typo"
sed -i 's/"f16": "softmax_pre_f16"/"f16": "softmax_pre_fp16"/' "$out/typo/kgate.json"
"$kgate" validate "$out/typo" > "$out/typo.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/typo.log"; fail "a misspelled kernel validated (exit $rc)"; }
grep -q 'kernel "softmax_pre_fp16" is not in "softmax_pre.sm_90.cubin"; did you mean "softmax_pre_f16"?' "$out/typo.log" \
  || { cat "$out/typo.log"; fail "no did-you-mean over the CUBIN's symbols"; }
echo "ok: misspelled kernel -> did you mean softmax_pre_f16"

rm -rf "$out/notcubin" && cp -r "$pre/softmax_pre_ptx" "$out/notcubin"
sed -i 's/"ptx": "softmax_pre.compute_90.ptx"/"cubin": {"sm_90": "softmax_pre.compute_90.ptx"}/' "$out/notcubin/kgate.json"
"$kgate" validate "$out/notcubin" > "$out/notcubin.log" 2>&1
rc=$?
[ $rc -eq 4 ] && grep -q "is not a CUBIN" "$out/notcubin.log" || { cat "$out/notcubin.log"; fail "PTX as a CUBIN: exit $rc"; }
echo "ok: PTX listed as a CUBIN is refused"
