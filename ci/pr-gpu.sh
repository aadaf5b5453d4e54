#!/usr/bin/env bash
# kgate-pr on a GPU machine, as a consumer project's GPU job runs it: examples/consumer (its two cuda
# kernels and its cpu kernel, made a timed one here) as a git repository of its own under OUT_DIR,
# kgate installed from KGATE_BUILD_DIR (default <repo>/build), one workspace (a depth-2 clone of a
# local origin) reused by every run.
#   ci/pr-gpu.sh OUT_DIR
# Heads, each one commit on the base, checked out and gated with `kgate-pr --base BASE`:
#   docs     a README change: every kernel UNCHANGED, not timed (exit 0)
#   same     the docs head against itself: the same commit built in two directories (the worktree
#            and the workspace), UNCHANGED, l2_normalize_warp's anonymous namespace included
#   spinS    l2_normalize_rows holds each block S more SM cycles before its last loop
#            (PR_GPU_SPINS, default "40 100 400": on the H200, 400 cycles made the op file's speed
#            shapes 2.5%, 19% and 4% slower against eager; the measured ratios are printed)
#   launch   the package's block of 512 threads instead of 256 (same values, timed)
#   ragged   the tail of rows not a multiple of 4 dropped (FAILED, exit 1)
#   cpu20    l2_normalize_cpu reads 2/5 of each row once more (about 20% slower), gated with
#            --backend cpu: REGRESSED against its base, decided within the run's --budget-growth
# and a push of three commits (the docs head's before = the base's parent's parent: fetched).
# Prints, per run: kgate-pr's exit code, the head and base build times and ccache hits, per
# kernel the base status, the decision and Hodges-Lehmann ratio against the base and against eager.
# PR_GPU_ARGS: more kgate check arguments (default "--delta 0.02"); KGATE_CUDA_ARCHS (90);
# PR_GPU_HEADS: only these runs (e.g. "cpu20 same"; default all).
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
out=${1:?usage: ci/pr-gpu.sh OUT_DIR}
build=${KGATE_BUILD_DIR:-$here/build}
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/prefix" "$out/origin.git" "$out/seed" "$out/ws" "$out"/run-*
cmake --install "$build" --prefix "$out/prefix" > "$out/install.log"
kpr="$out/prefix/bin/kgate-pr"
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
git init -q --bare -b main "$out/origin.git"
cp -r "$here/examples/consumer" "$out/seed"
g() { git -C "$out/seed" "$@"; }
g init -q -b main
g add -A && g commit -qm "the consumer project"
# This project deploys its cpu kernel too: timed.
sed -i '/k.timed = false;/d' "$out/seed/l2_normalize_cpu.cpp"
grep -q 'k.timed = false' "$out/seed/l2_normalize_cpu.cpp" && { echo "ci/pr-gpu.sh: the cpu kernel is still untimed" >&2; exit 1; }
g commit -qam "time the cpu kernel"
echo "A line." >> "$out/seed/README.md" && g commit -qam "docs 1"
echo "A line." >> "$out/seed/README.md" && g commit -qam "docs 2"
base=$(g rev-parse HEAD)
heads=()
echo "More." >> "$out/seed/README.md" && g commit -qam "docs" && g branch docs && heads+=(docs)
for s in ${PR_GPU_SPINS:-40 100 400}; do
  g checkout -q -b "spin$s" "$base"
  sed -i "s|^  const float root = sqrtf(total);|  for (const long long t0 = clock64(); clock64() - t0 < $s;) {}\n&|" \
    "$out/seed/package/l2_normalize_rows.cuh"
  grep -q "clock64() - t0 < $s" "$out/seed/package/l2_normalize_rows.cuh" || { echo "ci/pr-gpu.sh: the spin was not inserted" >&2; exit 1; }
  g commit -qam "spin $s"
  heads+=("spin$s")
done
# A launch change (512 threads a row instead of 256: the same values, other timing) and a head wrong
# on ragged rows (the MUTANT's bug switched on: the tail of a row not a multiple of 4 is dropped).
g checkout -q -b launch "$base"
sed -i 's|"block": \[256\]|"block": [512]|' "$out/seed/package/kgate.json"
grep -q '"block": \[512\]' "$out/seed/package/kgate.json" || { echo "ci/pr-gpu.sh: the launch was not changed" >&2; exit 1; }
g commit -qam "launch 512" && heads+=(launch)
g checkout -q -b ragged "$base"
sed -i 's|^#define L2N_DROP_TAIL false|#define L2N_DROP_TAIL true|' "$out/seed/package/l2_normalize_rows.cuh"
grep -q '^#define L2N_DROP_TAIL true' "$out/seed/package/l2_normalize_rows.cuh" || { echo "ci/pr-gpu.sh: the bug was not switched on" >&2; exit 1; }
g commit -qam "drop the ragged tail" && heads+=(ragged)
g checkout -q -b cpu20 "$base"
sed -i 's|^    const float norm = std::max(static_cast<float>(std::sqrt(sum)), eps);|    double extra = 0;  // 2/5 of the row read once more\n    for (int64_t c = 0; c < end * 2 / 5; ++c)\n      extra += static_cast<double>(xr[c * x.strides[1]]) * xr[c * x.strides[1]];\n    if (extra < 0) sum = extra;  // (never: keeps the loop)\n&|' \
  "$out/seed/l2_normalize_cpu.cpp"
grep -q '2/5 of the row read once more' "$out/seed/l2_normalize_cpu.cpp" || { echo "ci/pr-gpu.sh: the cpu slowdown was not inserted" >&2; exit 1; }
g commit -qam "cpu: read 2/5 of each row again" && heads+=(cpu20)
g checkout -q main
g push -q "$out/origin.git" main "${heads[@]}"
git clone -q --depth=2 --branch main "file://$out/origin.git" "$out/ws"

summary() {  # RUN_DIR
  python3 - "$1/report.json" << 'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
b = r["meta"].get("base", {})
print(f"    base {b.get('sha', '')[:12]} error '{b.get('error', '')}' warnings {b.get('warnings', [])}")
c = r["meta"].get("config", {})
print(f"    delta {c.get('delta')} alpha {c.get('alpha')} budget {c.get('time_budget_s')} s, growth {c.get('budget_growth_s')} s")
for k in r["kernels"]:
    parts = []
    for s in k.get("speed", []):
        ratio = s.get("ratio")
        grown = f", grew {s['budget_grown_s']:.1f} s" if s.get("budget_grown_s") else ""
        parts.append(f"{s.get('baseline', '?')}: {s.get('decision')} x{ratio:.4f} ({s.get('blocks')} blocks{grown})" if ratio else
                     f"{s.get('baseline', '?')}: {s.get('decision')}")
    print(f"    {k['name']}: {k.get('outcome')}; base {k.get('base', {}).get('status')}; " + "; ".join(parts))
for n in r.get("not_checked", []):
    print(f"    not checked: {json.dumps(n)}")
EOF
}
run() {  # NAME BRANCH [kgate-pr options]
  local name=$1 branch=$2 rc
  shift 2
  git -C "$out/ws" fetch -q --no-tags --depth=2 origin "+refs/heads/$branch:refs/remotes/origin/$branch"
  git -C "$out/ws" checkout -q --force --detach "refs/remotes/origin/$branch"
  set +e
  (cd "$out/ws" && "$kpr" -DCMAKE_CUDA_ARCHITECTURES="${KGATE_CUDA_ARCHS:-90}" "$@" -- \
    --backend "${BACKEND:-cuda}" ${PR_GPU_ARGS:---delta 0.02} --out "$out/run-$name") > "$out/run-$name.log" 2>&1
  rc=$?
  set -e
  echo "$name: exit $rc; $(grep -o 'head built in .*' "$out/run-$name.log" | head -1); $(grep -o 'base built in .*' "$out/run-$name.log" | head -1)"
  [ -f "$out/run-$name/report.json" ] && summary "$out/run-$name" || tail -20 "$out/run-$name.log"
}
for h in "${heads[@]}"; do
  [ -n "${PR_GPU_HEADS:-}" ] && [[ " $PR_GPU_HEADS " != *" $h "* ]] && continue
  case $h in cpu20) BACKEND=cpu run "$h" "$h" --base "$base" ;; *) run "$h" "$h" --base "$base" ;; esac
done
[ -n "${PR_GPU_HEADS:-}" ] && [[ " $PR_GPU_HEADS " != *" same "* ]] || run same docs --base "$(g rev-parse docs)"
# A push of three commits onto the base's grandparent: before is not in the depth-2 clone
# (PR_GPU_PUSH=0 leaves it out).
[ "${PR_GPU_PUSH:-1}" = 0 ] && exit 0
echo "{\"before\": \"$(g rev-parse "$base~2")\", \"ref\": \"refs/heads/docs\"}" > "$out/push3.json"
GITHUB_EVENT_NAME=push GITHUB_EVENT_PATH="$out/push3.json" run push3 docs
