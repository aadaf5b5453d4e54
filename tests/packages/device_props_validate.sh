#!/usr/bin/env bash
# Launches that depend on the device, without a GPU (kgate validate --device-props), with
# tests/packages/softmax_device_tiles:
#   device_props_validate.sh KGATE PACKAGE_DIR OUT_DIR
# Every preset of sm_90 runs both launches; an A100 (sm_80) only the streamed one; a launch that
# would start a cluster on an A100, a stated limit below what the launch needs, a cluster of 16
# blocks, a guard that reads the device and a symbol named like a device property are refused,
# each naming the field; --device-props files with a missing or unknown key are refused naming it;
# --cases shows the launches a timed case runs.
set -u
kgate=$1 package=$2 out=$3
rm -rf "$out" && mkdir -p "$out"
# shellcheck source=tests/packages/variant.sh
. "$(dirname "${BASH_SOURCE[0]}")/variant.sh"  # fail, variant
validate() {  # NAME DIR [args]: exit code in rc, output in OUT/NAME.log
  local name=$1 dir=$2
  shift 2
  "$kgate" validate "$dir" --no-reference "$@" > "$out/$name.log" 2>&1
  rc=$?
}
expect() {  # NAME RC PATTERN...: the exit code and each pattern in the log
  local name=$1 want=$2
  shift 2
  [ "$rc" -eq "$want" ] || { cat "$out/$name.log"; fail "$name: exit $rc, expected $want"; }
  for p in "$@"; do grep -q -- "$p" "$out/$name.log" || { cat "$out/$name.log"; fail "$name: no \"$p\""; }; done
  echo "ok: $name (exit $rc)"
}

validate presets "$package"
expect presets 0 "launches on h100-pcie (sm_90, 114 SMs" "launches on h200 (sm_90, 132 SMs" "launches\[0\] [0-9]*, launches\[1\] [0-9]*"
validate a100 "$package" --device-props a100-sxm --arch sm_80
expect a100 0 "launches on a100-sxm (sm_80, 108 SMs"
grep "launches on a100" "$out/a100.log" | grep -q "launches\[0\]" && fail "a100: the cached launch ran on sm_80"
validate cases "$package" --device-props h200 --cases 2
expect cases 0 "launches\[[01]\] softmax_[a-z]*: grid [0-9]*x1x1, block 256x1x1"

variant any-arch 'l = m["launches"]; l[0]["when"]["if"] = "N * 4 <= device_smem_per_block_optin - 1024"; l[1]["when"]["if"] = "N * 4 > device_smem_per_block_optin - 1024"'
validate any-arch "$out/any-arch" --device-props a100-sxm --arch sm_80
expect any-arch 4 "launches on a100-sxm" "a thread-block cluster, which needs sm_90 or later; the device is sm_80"
validate any-arch-h200 "$out/any-arch"
expect any-arch-h200 0 "launches on h200"

printf '{"name": "half-card", "arch": 90, "sms": 66}\n' > "$out/half.json"
validate props-missing "$package" --device-props "$out/half.json"
expect props-missing 4 "missing smem_per_block, smem_per_block_optin"
printf '{"arch": 90, "sms": 66, "smem_per_block": 49152, "smem_per_block_optin": 101376, "smem_per_sm": 102400, "regs_per_block": 65536, "regs_per_sm": 65536, "threads_per_block": 1024, "threads_per_sm": 2048, "l2_bytes": 1048576, "clock": 1}\n' > "$out/extra.json"
validate props-unknown "$package" --device-props "$out/extra.json"
expect props-unknown 4 'unknown key "clock"'
sed -i 's/, "clock": 1//' "$out/extra.json"
validate props-file "$package" --device-props "$out/extra.json"
expect props-file 0 "sm_90, 66 SMs, 99 KiB"
validate props-name "$package" --device-props h300
expect props-name 4 "neither a preset (a100-sxm" "h200"

variant low-limit 'm["launches"][0]["shared_mem"] = 65536; m["launches"][0]["max_dynamic_shared_mem"] = 49152'
validate low-limit "$out/low-limit" --no-compile
expect low-limit 4 "launches\[0\].max_dynamic_shared_mem: is 49152 bytes, below the launch's shared_mem of 65536"
variant big-cluster 'm["launches"][0]["cluster"] = [4, 4]'
validate big-cluster "$out/big-cluster" --no-compile
expect big-cluster 4 "launches\[0\].cluster: a cluster holds at most 8 blocks"
variant guard-device 'm["guard"]["require"] = ["device_sms >= 100"]'
validate guard-device "$out/guard-device" --no-compile
expect guard-device 4 'guard.require\[0\]: "device_sms >= 100" reads a device property'
variant symbol-device 'm["symbols"]["device_sms"] = ["x", 0]'
validate symbol-device "$out/symbol-device" --no-compile
expect symbol-device 4 '"device_sms" is a built-in symbol'
variant bad-carveout 'm["launches"][0]["carveout"] = 101'
validate bad-carveout "$out/bad-carveout" --no-compile
expect bad-carveout 4 "launches\[0\].carveout"
echo PASS
