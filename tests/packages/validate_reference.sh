#!/usr/bin/env bash
# kgate validate runs the op's reference on one small case on the CPU, in a sandboxed worker:
#   validate_reference.sh KGATE PACKAGE_DIR OUT_DIR   (PACKAGE_DIR: a package with an op file)
# the package as it is: exit 0 and "reference: ... ran on"; its op file's reference returning
# another shape, or throwing: exit 4, the message naming the output or the line; --no-reference
# skips it.
set -u
kgate=$1 package=$2 out=$3
fail() { echo "FAIL: $*"; exit 1; }
rm -rf "$out" && mkdir -p "$out"
"$kgate" validate "$package" > "$out/ok.log" 2>&1 || { cat "$out/ok.log"; fail "the package as it is: exit $?"; }
grep -q "^reference: op '.*' ran on .* on the CPU (eager and float64 oracle; sandbox: " "$out/ok.log" ||
  { cat "$out/ok.log"; fail "no reference line"; }
broken() {  # NAME REFERENCE_LINE: a copy whose op file's reference returns that line
  cp -r "$package" "$out/$1"
  python3 - "$out/$1" "$2" <<'PY'
import glob, json, sys
path = glob.glob(sys.argv[1] + "/*.op.json")[0]
d = json.load(open(path))
d["reference"] = [d["reference"][0], "    return " + sys.argv[2]]
json.dump(d, open(path, "w"), indent=1)
PY
  "$kgate" validate "$out/$1" > "$out/$1.log" 2>&1
}
broken shape "torch.cat([x, x], 0)"
rc=$?
[ $rc -eq 4 ] && grep -q "of the reference has shape \[2\], the op declares \[1\] for this case" "$out/shape.log" ||
  { cat "$out/shape.log"; fail "a reference of another shape: exit $rc"; }
broken throws "x.view(-1, 2).view(-1)"
rc=$?
[ $rc -eq 4 ] && grep -q "shape '\[-1, 2\]' is invalid" "$out/throws.log" && grep -q "fix it in its op file" "$out/throws.log" ||
  { cat "$out/throws.log"; fail "a reference that throws: exit $rc"; }
"$kgate" validate "$out/shape" --no-reference > "$out/skipped.log" 2>&1 || { cat "$out/skipped.log"; fail "--no-reference: exit $?"; }
grep -q "^reference:" "$out/skipped.log" && fail "--no-reference ran the reference"
echo "ok: the reference ran in a sandboxed worker; another shape and a throw are exit 4 before any GPU run"
