#!/usr/bin/env bash
# The time from `git clone` of a consumer project to its first paired verdict, on a machine where
# kgate is not installed: examples/consumer made a git repository of its own under OUT_DIR (a base
# commit, and a head one commit on it that changes only its README), then, timed from the clone:
#   git clone --depth=2 (as actions/checkout with fetch-depth 2), the kgate .deb unpacked with
#   dpkg-deb -x (no root, as the kgate-pr action does with a release asset), and the unpacked
#   kgate-pr run on the head against its base (a cold ccache of its own): head and base configured
#   and built, every kernel paired and judged.
#   ci/clone-verdict.sh KGATE.deb OUT_DIR [cuda|cpu]     (default: cuda where nvidia-smi sees a GPU)
# Prints each step's seconds and kgate-pr's exit code and verdict lines. Needs python3 with the
# torch wheel (the .deb's launcher finds LibTorch there) and the CUDA toolkit for the cuda kernels.
set -uo pipefail
deb=$(readlink -f "${1:?usage: ci/clone-verdict.sh KGATE.deb OUT_DIR [cuda|cpu]}")
out=${2:?usage: ci/clone-verdict.sh KGATE.deb OUT_DIR [cuda|cpu]}
backend=${3:-}
[ -n "$backend" ] || { nvidia-smi -L > /dev/null 2>&1 && backend=cuda || backend=cpu; }
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)
rm -rf "$out" && mkdir -p "$out"
out=$(cd "$out" && pwd)
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
export GIT_CONFIG_GLOBAL=/dev/null CCACHE_DIR="$out/ccache"
git init -q --bare -b main "$out/origin.git"
cp -r "$here/examples/consumer" "$out/seed"
g() { git -C "$out/seed" "$@"; }
g init -q -b main && g add -A && g commit -qm "the consumer project"
base=$(g rev-parse HEAD)
echo "A line." >> "$out/seed/README.md" && g commit -qam "docs"
g push -q "$out/origin.git" main
extra=()
[ "$backend" = cpu ] && extra=(-DEXAMPLE_CUDA_KERNELS=OFF)

t0=$(date +%s%N)
git clone -q --depth=2 "file://$out/origin.git" "$out/ws" || { echo "ci/clone-verdict.sh: clone failed" >&2; exit 1; }
t1=$(date +%s%N)
dpkg-deb -x "$deb" "$out/root" || { echo "ci/clone-verdict.sh: dpkg-deb -x $deb failed" >&2; exit 1; }
t2=$(date +%s%N)
(cd "$out/ws" && "$out/root/opt/kgate/bin/kgate-pr" --base "$base" "${extra[@]}" -- --backend "$backend" \
   --out "$out/report") > "$out/kgate-pr.log" 2>&1
rc=$?
t3=$(date +%s%N)
ms() { echo $(( ($2 - $1) / 1000000 )); }
echo "clone $(ms $t0 $t1) ms; unpack $(ms $t1 $t2) ms; kgate-pr $(ms $t2 $t3) ms (exit $rc, $backend);" \
     "clone to first paired verdict $(ms $t0 $t3) ms"
grep -o 'head built in .*\|base built in .*' "$out/kgate-pr.log" | head -3
sed -n '/^kernel /,/^reports:/p' "$out/kgate-pr.log" | head -20
exit $rc
