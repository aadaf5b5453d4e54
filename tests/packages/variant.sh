# Sourced by the package test scripts (start_values_gpu.sh, device_props_gpu.sh,
# device_props_validate.sh), with $package and $out set:
#   fail MESSAGE          prints FAIL: MESSAGE and exits 1
#   variant NAME EDIT     copies $package to $out/NAME and runs the Python EDIT on its manifest, `m`
fail() { echo "FAIL: $*"; exit 1; }
variant() {
  cp -r "$package" "$out/$1"
  python3 - "$out/$1/kgate.json" "$2" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
exec(sys.argv[2])
json.dump(m, open(sys.argv[1], "w"), indent=1)
PY
}
