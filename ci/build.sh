#!/usr/bin/env bash
# Configures and builds kgate into ${KGATE_BUILD_DIR:-build} (after ci/setup.sh).
# KGATE_BUILD_TARGETS="a b" builds only those targets (default: everything). KGATE_BUILD_TYPE
# (RelWithDebInfo), KGATE_DEBUG_INFO (lines: -g1, the default; full: -g), KGATE_JOBS (nproc).
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)  # (through symlinks)
build=${KGATE_BUILD_DIR:-$here/build}
prefix=""
[ -f "$here/.deps-prefix" ] && prefix=$(cat "$here/.deps-prefix")
# torch.utils.cmake_prefix_path, found without importing torch (which takes over a second).
torch_prefix=$(python3 -c 'import importlib.util as u, os
print(os.path.join(os.path.dirname(u.find_spec("torch").origin), "share", "cmake"))' 2>/dev/null) \
  || { echo "ci/build.sh: python3 finds no torch: run ci/setup.sh" >&2; exit 1; }
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
jobs=${KGATE_JOBS:-$(nproc)}
# ccache, where it is installed (the workflow caches its directory); KGATE_CCACHE=0 leaves it out.
launcher=()
if [ "${KGATE_CCACHE:-1}" != 0 ] && command -v ccache > /dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
fi
echo "==> ci/build.sh: configuring $build"
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=${KGATE_BUILD_TYPE:-RelWithDebInfo} "${launcher[@]}" \
  ${KGATE_DEBUG_INFO:+-DKGATE_DEBUG_INFO=$KGATE_DEBUG_INFO} \
  -DCMAKE_CUDA_ARCHITECTURES=${KGATE_CUDA_ARCHS:-90} \
  -DCMAKE_PREFIX_PATH="$torch_prefix${prefix:+;$prefix}" > "$build.configure.log" 2>&1 \
  || { cat "$build.configure.log"; echo "ci/build.sh: configure failed" >&2; exit 1; }
echo "==> ci/build.sh: building with $jobs jobs"
# shellcheck disable=SC2086
cmake --build "$build" -j "$jobs" ${KGATE_BUILD_TARGETS:+--target $KGATE_BUILD_TARGETS}
