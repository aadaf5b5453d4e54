#!/usr/bin/env bash
# kgate pack SRC OUT (no GPU needed: NVRTC compiles on the host):
#   an in-tree source package (include_dirs ../../common)   -> exit 0, the headers copied to
#       _packed/common/, the manifest rewritten, hashes in kgate-pack.json, "valid: ... compiled"
#   two include directories outside (gelu_tanh: a sibling package's and common/) -> both packed
#   a packed package edited afterwards                       -> still valid, a note names the file
#   packing again into the same OUT                          -> replaced, exit 0, no note
#   a package of a project of its own, outside this tree     -> packed and valid
#   OUT is a directory of other files / OUT inside SRC       -> exit 4, nothing touched
#   a source file outside the package, an absolute include dir, a missing include dir -> exit 4 naming
#       the field; a failed pack, or one that fails its validation, leaves the earlier pack as it was
# Usage: pack_cli.sh KGATE SOURCE_DIR OUT_DIR
set -u
kgate=$1
src=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
export KGATE_CACHE_DIR="$out/nvrtc-cache"
fail() { echo "FAIL: $*"; exit 1; }

# The in-tree softmax package, compiled.
"$kgate" pack "$src/kernels/softmax/package" "$out/softmax" > "$out/softmax.log" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$out/softmax.log"; fail "kgate pack of kernels/softmax/package exited $rc"; }
grep -q '^packed: .* -> .*softmax (.* files, hashes in kgate-pack.json)' "$out/softmax.log" &&
  grep -q 'include_dirs\[1\]: ../../common -> _packed/common' "$out/softmax.log" &&
  grep -q '^valid: softmax_block_pkg .*compiled for sm_' "$out/softmax.log" ||
  { cat "$out/softmax.log"; fail "kgate pack did not say what it packed and that the result is valid"; }
cmp -s "$src/kernels/common/kgate_device.cuh" "$out/softmax/_packed/common/kgate_device.cuh" ||
  fail "_packed/common/kgate_device.cuh is not a copy of kernels/common/kgate_device.cuh"
python3 - "$out/softmax" "$src/kernels/softmax/package" <<'EOF' || fail "the packed manifest or kgate-pack.json is wrong"
import hashlib, json, os, sys
out, source = sys.argv[1], sys.argv[2]
m = json.load(open(os.path.join(out, "kgate.json")))
assert m["include_dirs"] == [".", "_packed/common"], m["include_dirs"]
assert m["name"] == "softmax_block_pkg"
rec = json.load(open(os.path.join(out, "kgate-pack.json")))
assert rec["format"] == "kgate-pack/1", rec["format"]
assert os.path.samefile(rec["source"], source), rec["source"]
paths = {f["path"]: f for f in rec["files"]}
for p in ("kgate.json", "softmax_block_pkg.cu", "softmax_rows.cuh", "_packed/common/kgate_device.cuh"):
    assert p in paths, (p, sorted(paths))
assert paths["_packed/common/kgate_device.cuh"]["from"] == "../../common/kgate_device.cuh"
for p, f in paths.items():
    digest = hashlib.sha256(open(os.path.join(out, p), "rb").read()).hexdigest()
    assert digest == f["sha256"], (p, digest, f["sha256"])
# Every file of the packed package is recorded, and nothing else is there.
on_disk = {os.path.relpath(os.path.join(d, n), out) for d, _, ns in os.walk(out) for n in ns}
assert on_disk == set(paths) | {"kgate-pack.json"}, on_disk ^ (set(paths) | {"kgate-pack.json"})
EOF
echo "ok: $(head -1 "$out/softmax.log")"

# Two include directories outside the package.
"$kgate" pack "$src/kernels/gelu/package_gelu_tanh_elementwise" "$out/gelu_tanh" > "$out/gelu_tanh.log" 2>&1 ||
  { cat "$out/gelu_tanh.log"; fail "kgate pack of package_gelu_tanh_elementwise failed"; }
grep -q 'include_dirs\[1\]: ../package_gelu_elementwise -> _packed/package_gelu_elementwise' "$out/gelu_tanh.log" &&
  grep -q 'include_dirs\[2\]: ../../common -> _packed/common' "$out/gelu_tanh.log" &&
  [ -f "$out/gelu_tanh/_packed/package_gelu_elementwise/gelu_kernels.cuh" ] ||
  { cat "$out/gelu_tanh.log"; fail "both outside include directories should be packed"; }
echo "ok: gelu_tanh packed with two outside include directories"

# Edited after packing: still valid, with a note naming the file; packing again clears it.
echo "// edited" >> "$out/softmax/_packed/common/kgate_device.cuh"
rm "$out/softmax/softmax_rows.cuh" && cp "$src/kernels/softmax/package/softmax_rows.cuh" "$out/softmax/"  # same bytes
"$kgate" validate --no-compile "$out/softmax" > "$out/drift.log" 2>&1 || { cat "$out/drift.log"; fail "an edited packed package is still valid"; }
grep -q "note: .*softmax differs from its kgate-pack.json (edited after kgate pack): _packed/common/kgate_device.cuh (changed); pack it again" "$out/drift.log" &&
  ! grep -q "softmax_rows.cuh" "$out/drift.log" || { cat "$out/drift.log"; fail "validate did not name the one edited file"; }
echo "ok: $(grep note: "$out/drift.log")"

# Again into the same OUT: replaced.
echo stale > "$out/softmax/_packed/common/stale.cuh"
"$kgate" pack --no-compile -q "$src/kernels/softmax/package" "$out/softmax" > "$out/again.log" 2>&1 ||
  { cat "$out/again.log"; fail "packing again into an earlier pack failed"; }
[ ! -e "$out/softmax/_packed/common/stale.cuh" ] || fail "packing again kept a file of the earlier pack"
leftover=$(ls -A "$out" | grep -E '^\.softmax\.(packing|replaced)-' || true)
[ -z "$leftover" ] || fail "packing again left $leftover beside the pack"
"$kgate" validate --no-compile "$out/softmax" > "$out/drift2.log" 2>&1 && ! grep -q "note:" "$out/drift2.log" ||
  { cat "$out/drift2.log"; fail "a fresh pack is not as recorded"; }
grep -q '^packed:' "$out/again.log" && fail "--quiet still printed the packed: line"

# A project of its own, outside this tree: shared headers beside its packages.
mkdir -p "$out/project/shared" "$out/project/pkgs/mine"
cp "$src/kernels/common/kgate_device.cuh" "$out/project/shared/"
cp "$src/kernels/softmax/package/softmax_block_pkg.cu" "$src/kernels/softmax/package/softmax_rows.cuh" "$out/project/pkgs/mine/"
sed -e 's|"../../common"|"../../shared"|' -e 's|"softmax_block_pkg"|"mine_pkg"|' \
  "$src/kernels/softmax/package/kgate.json" > "$out/project/pkgs/mine/kgate.json"
"$kgate" pack "$out/project/pkgs/mine" "$out/project/packed/mine" > "$out/project.log" 2>&1 ||
  { cat "$out/project.log"; fail "a project's own source package did not pack"; }
grep -q 'include_dirs\[1\]: ../../shared -> _packed/shared' "$out/project.log" &&
  grep -q '^valid: mine_pkg' "$out/project.log" || { cat "$out/project.log"; fail "the project's package: wrong pack output"; }
echo "ok: a project's package outside this tree"

expect4() {  # expect4 NAME PATTERN kgate-args...: exit 4 and PATTERN in the output
  local name=$1 pattern=$2
  shift 2
  "$kgate" "$@" > "$out/$name.log" 2>&1
  local rc=$?
  [ $rc -eq 4 ] && grep -q -- "$pattern" "$out/$name.log" ||
    { cat "$out/$name.log"; fail "$name: exit $rc, expected 4 with '$pattern'"; }
  echo "ok: $name: $(grep -m1 -- "$pattern" "$out/$name.log")"
}

# OUT holds other files: refused, untouched.
mkdir -p "$out/taken" && echo keep > "$out/taken/notes.txt"
expect4 taken "exists and is not a packed package" pack --no-compile "$src/kernels/softmax/package" "$out/taken"
[ "$(cat "$out/taken/notes.txt")" = keep ] || fail "a refused OUT was changed"
# OUT inside SRC.
cp -r "$out/project/pkgs/mine" "$out/mine_copy"
expect4 inside "must not contain one another" pack --no-compile "$out/mine_copy" "$out/mine_copy/packed"
[ ! -e "$out/mine_copy/packed" ] || fail "OUT inside SRC was written"

# A source outside the package; an absolute include directory; a missing one (after a good pack:
# the earlier pack survives).
mkdir -p "$out/bad"
cp -r "$out/project/pkgs/mine" "$out/bad/src_out" && cp "$out/bad/src_out/softmax_block_pkg.cu" "$out/bad/"
sed -i 's|"sources": \["softmax_block_pkg.cu"\]|"sources": ["../softmax_block_pkg.cu"]|' "$out/bad/src_out/kgate.json"
expect4 source_outside 'sources\[0\]: .*only include_dirs may reach outside' pack --no-compile "$out/bad/src_out" "$out/bad/o1"
cp -r "$out/project/pkgs/mine" "$out/bad/absolute"
sed -i "s|\"../../shared\"|\"$out/project/shared\"|" "$out/bad/absolute/kgate.json"
expect4 absolute 'include_dirs\[1\]: .* is an absolute path' pack --no-compile "$out/bad/absolute" "$out/bad/o2"
mkdir -p "$out/project/pkgs/gone"
cp "$out/project/pkgs/mine/"* "$out/project/pkgs/gone/"
"$kgate" pack --no-compile -q "$out/project/pkgs/gone" "$out/project/packed/gone" > /dev/null 2>&1 || fail "first pack of 'gone' failed"
sed -i 's|"../../shared"|"../../missing"|' "$out/project/pkgs/gone/kgate.json"
expect4 missing 'include_dirs\[1\]: "../../missing" is not a directory' pack --no-compile "$out/project/pkgs/gone" "$out/project/packed/gone"
grep -q '"from": "../../shared/kgate_device.cuh"' "$out/project/packed/gone/kgate-pack.json" ||
  fail "a failed pack lost the earlier pack"
[ -z "$(ls -A "$out/project/packed" | grep packing)" ] || fail "a failed pack left its temporary directory"
# A launch that no case runs is named (kgate check would not check its code).
cp -r "$out/project/pkgs/mine" "$out/project/pkgs/unreached"
python3 - "$out/project/pkgs/unreached/kgate.json" <<'PY' || fail "the test could not add a launch"
import json, sys
m = json.load(open(sys.argv[1]))
extra = json.loads(json.dumps(m["launches"][5]))  # a copy of the last, for a batch no case has
extra["when"] = {"if": "N > 49152 && B == 123457"}
m["launches"].append(extra)
json.dump(m, open(sys.argv[1], "w"), indent=2)
PY
"$kgate" pack "$out/project/pkgs/unreached" "$out/project/packed/unreached" > "$out/unreached.log" 2>&1 ||
  { cat "$out/unreached.log"; fail "pack of 'unreached' failed"; }
grep -q "warning: launches\[6\] runs on none of these cases" "$out/unreached.log" ||
  { cat "$out/unreached.log"; fail "a launch no case runs was not named"; }
# (launches[2] and [3], the vectorized rows of N in (16384, 49152], are reached by the case kgate
# adds for a launch no generated case runs: N=49152, contiguous and offset.)
! grep -q "warning: launches\[[0-5]\] runs on none" "$out/unreached.log" "$out/project.log" ||
  fail "a launch that a case can reach was named as unreached"
# A license beside the manifest travels with the package.
echo "Copyright, terms." > "$out/project/pkgs/mine/LICENSE"
"$kgate" pack --no-compile -q "$out/project/pkgs/mine" "$out/project/packed/licensed" > "$out/licensed.log" 2>&1 ||
  { cat "$out/licensed.log"; fail "pack with a LICENSE failed"; }
cmp -s "$out/project/pkgs/mine/LICENSE" "$out/project/packed/licensed/LICENSE" || fail "LICENSE was not packed"
grep -q '"path": "LICENSE"' "$out/project/packed/licensed/kgate-pack.json" || fail "LICENSE is not in kgate-pack.json"
rm "$out/project/pkgs/mine/LICENSE"
# A pack that fails its validation (the source no longer compiles) keeps the earlier pack too.
mkdir -p "$out/project/pkgs/breaks"
cp "$out/project/pkgs/mine/"* "$out/project/pkgs/breaks/"
"$kgate" pack -q "$out/project/pkgs/breaks" "$out/project/packed/breaks" > "$out/breaks-good.log" 2>&1 ||
  { cat "$out/breaks-good.log"; fail "first pack of 'breaks' failed"; }
sed -i '1i #error this source no longer compiles' "$out/project/pkgs/breaks/softmax_block_pkg.cu"
"$kgate" pack "$out/project/pkgs/breaks" "$out/project/packed/breaks" > "$out/breaks-bad.log" 2>&1
rc=$?
[ $rc -ne 0 ] || { cat "$out/breaks-bad.log"; fail "a package that does not compile was packed (exit 0)"; }
grep -q "did not validate (above): the earlier package there is kept" "$out/breaks-bad.log" ||
  { cat "$out/breaks-bad.log"; fail "a failed validation did not say the earlier pack is kept"; }
! grep -q "#error" "$out/project/packed/breaks/softmax_block_pkg.cu" ||
  fail "a pack that failed its validation replaced the earlier pack"
[ -z "$(ls -A "$out/project/packed" | grep -E 'packing|replaced')" ] || fail "a failed pack left a directory behind"
echo "pack_cli: all checks passed"
