#!/usr/bin/env bash
# A project of its own against the installed kgate: installs the build into $build/install, then
# configures, builds and tests examples/consumer (find_package(kgate)) in $build/consumer.
# Prints the install tree's size and the consumer's configure and build times.
# Extra arguments go to the consumer's ctest.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)  # (through symlinks)
build=${KGATE_BUILD_DIR:-$here/build}
prefix="$build/install"
consumer="$build/consumer"
deps=""
[ -f "$here/.deps-prefix" ] && deps=$(cat "$here/.deps-prefix")
torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null | tail -1)
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH

echo "==> ci/consumer.sh: installing kgate into $prefix"
rm -rf "$prefix"
cmake --install "$build" --prefix "$prefix" --strip > "$build/install.log"
echo "    install tree: $(du -sh "$prefix" | cut -f1) ($(find "$prefix" -type f | wc -l) files)"

rm -rf "$consumer"
t0=$(date +%s%N)
cmake -S "$here/examples/consumer" -B "$consumer" -G Ninja -DCMAKE_BUILD_TYPE=${KGATE_BUILD_TYPE:-RelWithDebInfo} \
  -DCMAKE_CUDA_ARCHITECTURES=${KGATE_CUDA_ARCHS:-90} \
  -DCMAKE_PREFIX_PATH="$prefix;$torch_prefix${deps:+;$deps}" > "$consumer.configure.log" 2>&1 \
  || { cat "$consumer.configure.log"; echo "ci/consumer.sh: the consumer project did not configure" >&2; exit 1; }
t1=$(date +%s%N)
cmake --build "$consumer" -j "${KGATE_JOBS:-$(nproc)}" > "$consumer.build.log" 2>&1 \
  || { tail -50 "$consumer.build.log"; echo "ci/consumer.sh: the consumer project did not build" >&2; exit 1; }
t2=$(date +%s%N)
echo "    consumer configure $(( (t1 - t0) / 1000000 )) ms, build $(( (t2 - t1) / 1000000 )) ms" \
  "(${KGATE_JOBS:-$(nproc)} jobs)"
echo "==> ci/consumer.sh: ctest of examples/consumer"
cd "$consumer"
ctest --output-on-failure -j "${KGATE_TEST_JOBS:-2}" --timeout 900 "$@"

# Repro lines work when pasted, from another directory, with the command on PATH: the installed
# kgate (an in-tree mutant) and the project's own kgate (its wrong kernel). Each must replay the
# failure (exit 1, the unwritten elements named).
replay_pasted() {  # BIN_DIR KERNEL [OPTIONS...] (options given instead of --kernel KERNEL)
  local bin=$1 kernel=$2 log="$consumer/replay-$2.log" line
  shift 2
  local select=(--kernel "$kernel")
  [ $# -gt 0 ] && select=("$@")
  PATH="$bin:$PATH" kgate check --backend cpu "${select[@]}" --cases 16 --no-speed --quiet \
    --out "$consumer/replay-$kernel" > "$log" 2>&1 || true  # exit 1: the wrong kernel fails
  line=$(grep -m1 -o 'repro: kgate replay .*' "$log" | sed 's/^repro: //')
  [ -n "$line" ] || { cat "$log"; echo "ci/consumer.sh: no repro line for $kernel" >&2; return 1; }
  local rc=0
  (cd / && PATH="$bin:$PATH" eval "$line") > "$log.replay" 2>&1 || rc=$?
  if [ "$rc" -ne 1 ] || ! grep -q "never written" "$log.replay"; then
    cat "$log.replay"; echo "ci/consumer.sh: pasted '$line' exited $rc, expected 1 naming the unwritten elements" >&2
    return 1
  fi
  echo "    pasted repro replays the failure: $line"
}
replay_pasted "$prefix/bin" mutant_softmax_cpu_tail_dropped
replay_pasted "$consumer/bin" l2_normalize_cpu_tail_dropped
# A torch custom op of an op given with --ops: the line carries --ops, --torch-library, --torch-op.
if [ -f "$build/tests/torch_op/libkgate_test_ops.so" ]; then
  replay_pasted "$prefix/bin" torch_softmax_tail_out --ops "$here/tests/ops/softmax.json" \
    --torch-library "$build/tests/torch_op/libkgate_test_ops.so" --torch-op cpu/kgate_test::softmax_tail_out=softmax_script
fi
# The consumer's own build as its base (kgate check --baseline-build): its cpu kernel, built as a
# module beside its kgate, is paired with itself and UNCHANGED (not timed).
"$consumer/bin/kgate" check --backend cpu --kernel l2_normalize_cpu --cases 4 --family random --speed-cases 1 \
  --quiet --baseline-build "$consumer" --out "$consumer/base-same" > "$consumer/base-same.log" 2>&1 ||
  { cat "$consumer/base-same.log"; echo "ci/consumer.sh: kgate check --baseline-build failed" >&2; exit 1; }
status=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['kernels'][0]['base']['status'])" \
  "$consumer/base-same/report.json")
[ "$status" = unchanged ] || { echo "ci/consumer.sh: l2_normalize_cpu against its own build: base status $status" >&2; exit 1; }
echo "    l2_normalize_cpu against its own build (--baseline-build): unchanged, not timed"
