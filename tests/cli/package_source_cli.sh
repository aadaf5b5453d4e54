#!/usr/bin/env bash
# kgate-package-source (kgate_add_kernel PACKAGE's build step): a broken manifest fails the build
# naming the file, field and kernel; a package one nvcc compile cannot give is refused by name; a good
# one gives a unit that includes its sources, takes each kernel's address and carries the
# manifest's bytes, rewritten only when it changes.
#   package_source_cli.sh KGATE_PACKAGE_SOURCE WORK_DIR
set -uo pipefail
tool=${1:?usage: package_source_cli.sh KGATE_PACKAGE_SOURCE WORK_DIR}
work=${2:?}
rm -rf "$work" && mkdir -p "$work/pkg"
fail() { echo "FAIL: $*" >&2; exit 1; }
cat > "$work/pkg/k.cu" <<'CU'
template <typename T> __global__ void k(const T* x, T* y, long long n) {}
CU
manifest() {  # manifest GRID [EXTRA_JSON]
  cat > "$work/pkg/kgate.json" <<JSON
{"format": "kgate-package/1", "name": "k_pkg", "version": "1.0.0", "op": "softmax",
 "sources": ["k.cu"], "include_dirs": ["../../shared_headers"], "symbols": {"B": ["x", 0], "N": ["x", 1]},
 "launches": [{"kernel": {"f32": "k<float>", "f16": "k<__half>"}, "grid": [$1], "block": [256],
               "args": [{"tensor": "x"}, {"tensor": "y"}, {"shape": "N", "type": "i64"}]}],
 "guard": {"dtypes": ["f32", "f16"], "ranks": [2]}$2}
JSON
}
run() { "$tool" --package "$work/pkg" --kernel my_kernel --source-name pkg --out "$work/out.cu" --tile-size 256 "$@" \
          > "$work/log" 2>&1; }

# A broken expression: exit 1, the file, the field, the kernel.
manifest '"ceil_div(B"' ''
run; rc=$?
[ $rc -eq 1 ] || { cat "$work/log"; fail "broken manifest: exit $rc, expected 1"; }
grep -q "pkg/kgate.json: launches\[0\].grid\[0\]" "$work/log" || { cat "$work/log"; fail "the field is not named"; }
grep -q "kgate_add_kernel(my_kernel PACKAGE" "$work/log" || { cat "$work/log"; fail "the kernel is not named"; }
[ ! -e "$work/out.cu" ] || fail "a unit was written for a broken manifest"
echo "PASS broken manifest: $(tail -1 "$work/log")"

# Options of one dtype's own: several translation units, refused by name.
manifest '"B"' ', "nvrtc_options_for_dtype": {"f16": ["-DHALF=1"]}'
run; rc=$?
[ $rc -eq 1 ] && grep -q "nvrtc_options_for_dtype" "$work/log" || { cat "$work/log"; fail "per-dtype options: exit $rc"; }
echo "PASS per-dtype options refused"

# A good package: its source included, each kernel's address taken, the manifest's bytes, the options.
manifest '"B"' ''
run --untimed --mutant || { cat "$work/log"; fail "good package: exit $?"; }
grep -q "#include \"$work/pkg/k.cu\"" "$work/out.cu" || fail "the source is not included"
grep -q '{"k<float>", reinterpret_cast<const void\*>(&k<float>)}' "$work/out.cu" || fail "k<float> has no entry"
grep -q '{"k<__half>", reinterpret_cast<const void\*>(&k<__half>)}' "$work/out.cu" || fail "k<__half> has no entry"
grep -q 'const int64_t kTiles\[\] = {256, 0};' "$work/out.cu" || fail "TILE_SIZES are not passed"
grep -q '"my_kernel", "softmax", "pkg"' "$work/out.cu" || fail "kernel, op and source name"
grep -q 'false, true, false, &::kgate::lookup_op' "$work/out.cu" || fail "untimed, mutant, not control"
bytes=$(wc -c < "$work/pkg/kgate.json")
grep -q "reinterpret_cast<const char\*>(kManifest), $bytes," "$work/out.cu" || fail "the manifest's $bytes bytes"
# Unchanged: not rewritten (nothing recompiles).
before=$(stat -c %Y.%N "$work/out.cu"); sleep 1
run --untimed --mutant || fail "second run"
[ "$(stat -c %Y.%N "$work/out.cu")" = "$before" ] || fail "an unchanged unit was rewritten"
echo "PASS good package: unit written once, $(grep -c reinterpret_cast "$work/out.cu") entries"
