#!/usr/bin/env bash
# The tile-edge mutants, each checked by `kgate check` at the default budget (64 cases) at five
# seeds: every mutant must be FAILED at every seed, with a minimal case at its edge, and every
# correct control passed. Forms: CMake kernels that declare their tile and that do not
# (tests/edges/rms_norm_edges.cu), packages made from tests/edges/package/, torch ops of
# tests/torch_op's library (kgate_test::rms_norm_edge_*, rms_norm_vec8).
#   tests/edges/edges_gpu.sh KGATE TORCH_OP_LIBRARY OUT_DIR [SEEDS...]   (default seeds 1 to 5)
# Exit 0 when every verdict is as expected, 1 otherwise, 77 without a GPU. Prints a table last.
set -uo pipefail
kgate=${1:?usage: edges_gpu.sh KGATE TORCH_OP_LIBRARY OUT_DIR [SEEDS...]}
library=${2:?}
out=${3:?}
shift 3
seeds=("$@")
[ ${#seeds[@]} -gt 0 ] || seeds=(1 2 3 4 5)  # 1: kgate check's default
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
nvidia-smi -L > /dev/null 2>&1 || { echo "SKIPPED: no GPU"; exit 77; }
rm -rf "$out"
mkdir -p "$out/packages"
# The packages: one per bug and tile, from the template, with the device code beside it.
packages=()
for tile in 256 1024; do
  vpt=$((tile / 256))
  for bug in 1:tail1 2:tailshort 3:whole 0:correct; do
    name=edge_pkg_${bug#*:}_$tile
    dir=$out/packages/$name
    mkdir -p "$dir"
    sed -e "s/@NAME@/$name/g" -e "s/@BUG@/${bug%%:*}/g" -e "s/@VPT@/$vpt/g" "$here/package/kgate.json.in" > "$dir/kgate.json"
    cp "$here/package/edge_pkg.cu" "$here/edge_rms_norm.cuh" "$here/../../kernels/common/kgate_device.cuh" "$dir/"
    packages+=("$dir")
  done
done
kernels=()
for form in declared found; do
  for tile in 256 1024; do
    for bug in tail1 tailshort whole; do kernels+=(--kernel "edge_${form}_${bug}_$tile"); done
    kernels+=(--kernel "edge_correct_${form}_$tile")
  done
done
kernels+=(--kernel edge_warp_tail1_128 --kernel edge_warp_correct_128)
ops=()
for op in rms_norm_edge_tail1_256 rms_norm_edge_tailshort_256 rms_norm_edge_whole_256 rms_norm_edge_tail1_1024 \
          rms_norm_edge_tailshort_1024 rms_norm_edge_whole_1024 rms_norm_vec8 rms_norm_edge_correct; do
  ops+=(--torch-op "cuda/kgate_test::$op=rms_norm")
done
# Each seed's three runs at once (one GPU holds them): the defaults but timing (the mutants fail
# before it; the edge kernels are untimed).
pids=()
for seed in "${seeds[@]}"; do
  "$kgate" check "${kernels[@]}" --seed "$seed" --no-speed --out "$out/cmake-$seed" > "$out/cmake-$seed.log" 2>&1 &
  pids+=($!)
  "$kgate" --torch-library "$library" "${ops[@]}" check --seed "$seed" --no-speed --out "$out/torch-$seed" \
    > "$out/torch-$seed.log" 2>&1 &
  pids+=($!)
  "$kgate" check "${packages[@]}" --seed "$seed" --no-speed --out "$out/package-$seed" > "$out/package-$seed.log" 2>&1 &
  pids+=($!)
done
for p in "${pids[@]}"; do wait "$p"; done
python3 - "$out" "${seeds[@]}" <<'PY'
import json, os, sys
out, seeds = sys.argv[1], sys.argv[2:]
rows, bad = {}, []
for seed in seeds:
    for form in ("cmake", "torch", "package"):
        path = os.path.join(out, f"{form}-{seed}", "report.json")
        try:
            kernels = json.load(open(path))["kernels"]
        except Exception as e:
            bad.append(f"{form} seed {seed}: no report ({e})"); continue
        for k in kernels:
            c = k["correctness"]
            m = c.get("minimal") or (c.get("failures") or [None])[0]
            n = dict(m["case"]["dims"]).get("N") if m else None
            left = len((c.get("coverage") or {}).get("left_out", []))
            sizes = ",".join(f"{s['size']}{s['origin'][0]}" for s in (c.get("coverage") or {}).get("tile_sizes", []))
            r = rows.setdefault(k["name"], {"outcomes": [], "minimal": [], "failed": [], "left": [], "sizes": sizes})
            r["outcomes"].append(k["outcome"]); r["minimal"].append(str(n)); r["failed"].append(f"{c['failed']}/{c['cases']}")
            r["left"].append(left)
            correct = "correct" in k["name"]
            if (k["outcome"] != "passed") if correct else (k["outcome"] != "failed"):
                bad.append(f"{k['name']} seed {seed}: {k['outcome']} ({c['failed']}/{c['cases']} failed)")
print(f"{'kernel':40s} {'outcomes':32s} {'failed':28s} {'minimal N':26s} sizes (d declared, m manifest, o observed)")
for name, r in sorted(rows.items()):
    print(f"{name:40s} {','.join(o[:4] for o in r['outcomes']):32s} {' '.join(r['failed']):28s} {','.join(r['minimal']):26s} {r['sizes']}")
for b in bad: print("UNEXPECTED:", b)
print("tile edges:", "PASS" if not bad and rows else "FAIL", f"({len(rows)} kernels x {len(seeds)} seeds)")
sys.exit(0 if not bad and rows else 1)
PY
