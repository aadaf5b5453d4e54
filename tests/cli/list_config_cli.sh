#!/usr/bin/env bash
# kgate list --config FILE: a config's torch libraries and ops bound without a GPU (a dry run of
# kgate check --config's binding): each op listed under its kernel name, its cases listed with
# --cases, and an argument that binds nothing named with the mapping that would bind it (exit 4).
#   list_config_cli.sh KGATE SCHEMA_OPS_LIBRARY OUT_DIR
set -u
kgate=$1
library=$2
out=$3
rm -rf "$out" && mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
cat > "$out/ops.kgate.json" <<JSON
{"format": "kgate-config/1", "torch_libraries": ["$library"],
 "torch_ops": ["cpu/kgate_schema::rms_norm=rms_norm,input=x,epsilon=eps",
               "cpu/kgate_schema::rms_norm=rms_norm,input=x,epsilon=1e-3"]}
JSON
"$kgate" list --config "$out/ops.kgate.json" > "$out/list.log" 2>&1 || { cat "$out/list.log"; fail "kgate list --config exited $?"; }
for name in 'kgate_schema.rms_norm.cpu\[epsilon=eps\]' 'kgate_schema.rms_norm.cpu\[epsilon=1e-3\]'; do
  grep -q "^$name .*kgate_schema::rms_norm(Tensor input, Tensor? weight, float epsilon)" "$out/list.log" ||
    { cat "$out/list.log"; fail "kgate list --config does not list $name with its schema"; }
done
"$kgate" list --config "$out/ops.kgate.json" --cases 4 --kernel 'kgate_schema.rms_norm.cpu[epsilon=eps]' > "$out/cases.log" 2>&1 ||
  { cat "$out/cases.log"; fail "kgate list --config --cases exited $?"; }
grep -q "^cases of kgate_schema.rms_norm.cpu\[epsilon=eps\]" "$out/cases.log" || { cat "$out/cases.log"; fail "no cases listed"; }
cat > "$out/unbound.kgate.json" <<JSON
{"format": "kgate-config/1", "torch_libraries": ["$library"],
 "torch_ops": ["cpu/kgate_schema::rms_norm_sized=rms_norm"]}
JSON
"$kgate" list --config "$out/unbound.kgate.json" > "$out/unbound.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/unbound.log"; fail "an argument that binds nothing: exit $rc, expected 4"; }
grep -q "hidden_size" "$out/unbound.log" && grep -q "bind it with ,hidden_size=" "$out/unbound.log" ||
  { cat "$out/unbound.log"; fail "the unbound argument and its mapping are not named"; }
echo "list_config_cli: all checks passed"
