#!/usr/bin/env bash
# A project of its own against the installed kgate: installs the build into $build/install, then
# configures, builds and tests examples/consumer (find_package(kgate)) in $build/consumer.
# Prints the install tree's size and the consumer's configure and build times.
# Extra arguments go to the consumer's ctest.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
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
