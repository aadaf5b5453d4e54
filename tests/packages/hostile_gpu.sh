#!/usr/bin/env bash
# Hostile packages beside a good one, in one `kgate check` on the GPU (issue: faults and hostile
# packages). Made at run time from tests/packages/softmax_v1 into a scratch directory (never in the
# repository):
#   good      softmax_v1 as it is                          -> must PASS
#   trap      traps on its first block                     -> FAILED alone (a device fault)
#   hang      spins for ever                               -> FAILED alone (hung, worker killed)
#   flood     device printf, 64 lines per row              -> its own verdict; kgate's log stays small
#   poisoned  softmax_v1 whose cache entry was replaced by the trap's CUBIN, metadata made to match
#             (an attacker with write access to a shared cache, without the key) -> must PASS
#   twin      a second package named like `good`           -> the run is refused up front (exit 4)
# Usage: hostile_gpu.sh KGATE SOURCE_DIR OUT_DIR
set -u
kgate=$1
src=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export KGATE_CACHE_DIR="$out/nvrtc-cache"
v1=$src/tests/packages/softmax_v1

# make NAME LINE: a copy of softmax_v1 named NAME with LINE inserted at the top of the kernel body.
make() {
  local name=$1 line=$2
  cp -r "$v1" "$work/$name"
  sed -i "s/\"name\": \"softmax_v1\"/\"name\": \"softmax_$name\"/" "$work/$name/kgate.json"
  [ -n "$line" ] && sed -i "s|__shared__ float scratch\[32\];|__shared__ float scratch[32];\n  $line|" "$work/$name/softmax_v1.cu"
  return 0
}
make good ''
make trap 'if (blockIdx.x == 0 \&\& threadIdx.x == 0) asm volatile("trap;");'
make hang 'while (*(volatile const int*)(const void*)x != 0x7fc00001) {}'
make flood 'if (threadIdx.x == 0) for (int i = 0; i < 64; ++i) printf("row %d line %d: progress nobody reads\\n", blockIdx.x, i);'
make poisoned ''

# Poison: compile both, then put the trap's CUBIN in the poisoned package's entry, digest fixed.
"$kgate" validate "$work/trap" > "$out/validate-trap.log" 2>&1
"$kgate" validate "$work/poisoned" > "$out/validate-poisoned.log" 2>&1
python3 - "$KGATE_CACHE_DIR" "$out" <<'PY'
import glob, hashlib, json, os, sys
cache, out = sys.argv[1], sys.argv[2]
entries = {}
for meta in glob.glob(os.path.join(cache, "nvrtc", "*", "*.json")):
    m = json.load(open(meta))
    entries[m["package"]] = (meta, m)
tmeta, t = entries["softmax_trap"]
pmeta, p = entries["softmax_poisoned"]
cubin = open(tmeta[:-5] + ".cubin", "rb").read()
open(pmeta[:-5] + ".cubin", "wb").write(cubin)
p["cubin_sha256"] = hashlib.sha256(cubin).hexdigest()
p["lowered_names"] = t["lowered_names"]
json.dump(p, open(pmeta, "w"), indent=2)
print("poisoned the cache entry of softmax_poisoned with softmax_trap's CUBIN")
PY

start=$SECONDS
"$kgate" check "$work/good" "$work/trap" "$work/hang" "$work/flood" "$work/poisoned" --no-speed --cases 32 \
  --kernel-timeout 30 --out "$out/combined" > "$out/combined.log" 2>&1
rc=$?
echo "combined run: exit $rc in $((SECONDS - start)) s; kgate's log: $(wc -c < "$out/combined.log") bytes"
sed -n '/^kernel /,/^$/p' "$out/combined.log"
python3 - "$out/combined/report.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
want = {"softmax_good": "passed", "softmax_poisoned": "passed", "softmax_trap": "failed", "softmax_hang": "failed"}
bad = 0
for k in r["kernels"]:
    w = k.get("worker_output", {})
    print(f'{k["name"]:18} {k["outcome"]:8} output {w.get("bytes", 0)} B ({w.get("dropped_bytes", 0)} dropped)  {k["message"][:110]}')
    c = k["correctness"]
    if c.get("faulted"):
        m = c.get("minimal") or {}
        print(f'  {len(c["faulted"])} cases faulted (each in its own worker), {c["passed"]} passed, {c.get("not_run", 0)} not run; '
              f'minimal {m.get("case", {}).get("id", "-")} [{m.get("rule", "")}]')
        if m.get("rule") not in ("fault", "crash", "hang"):
            print("  UNEXPECTED: the minimal case is not a case that faulted"); bad += 1
    if k["name"] in want and k["outcome"] != want[k["name"]]:
        print(f'  UNEXPECTED: expected {want[k["name"]]}'); bad += 1
sys.exit(1 if bad else 0)
PY
verdicts=$?

cp -r "$work/good" "$work/twin"
"$kgate" check "$work/good" "$work/twin" --no-speed --out "$out/twins" > "$out/twins.log" 2>&1
trc=$?
echo "same-name run: exit $trc (expected 4): $(grep -o 'two packages are named.*' "$out/twins.log" | head -1 | cut -c1-160)"
[ $verdicts -eq 0 ] && [ $trc -eq 4 ]
