#!/usr/bin/env bash
# kgate as a Debian package, built once from a build directory and installed without a compiler:
#   ci/package.sh [BUILD_DIR [OUT_DIR]]      (default: build, BUILD_DIR/deb)
# writes OUT_DIR/kgate_VERSION_amd64.deb holding
#   /opt/kgate/                 cmake --install of the build, stripped: bin/kgate, libexec/kgate/
#                               (the package compiler), lib/ (libraries, lib/cmake/kgate: the CMake
#                               package, kgate_add_kernel), include/kgate/, share/kgate/
#   /usr/bin/kgate-pr           a link to /opt/kgate/bin/kgate-pr (a change against its base; docs/ci.md)
#   /usr/bin/kgate              a launcher: finds the torch==2.11.0 wheel's LibTorch (and the CUDA 13
#                               libraries of its nvidia-* wheels, where there is no toolkit) with
#                               python3, refuses another torch version, and runs /opt/kgate/bin/kgate
# Then (ci/package.sh --test DEB) it unpacks the package into a fresh directory, as `dpkg -i` would
# lay it out, runs `kgate --version` and `kgate validate` through the launcher, and configures and
# builds examples/consumer against the unpacked /opt/kgate.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)

if [ "${1:-}" = "--test" ]; then
  deb=${2:?usage: ci/package.sh --test KGATE.deb [WORK_DIR]}
  work=${3:-$(dirname "$deb")/test}
  rm -rf "$work" && mkdir -p "$work"
  work=$(cd "$work" && pwd)
  deb=$(cd "$(dirname "$deb")" && pwd)/$(basename "$deb")
  t0=$(date +%s%N)
  dpkg-deb -x "$deb" "$work/root"
  t1=$(date +%s%N)
  echo "==> ci/package.sh --test: unpacked $(basename "$deb") ($(du -h "$deb" | cut -f1)) in $(( (t1 - t0) / 1000000 )) ms"
  kgate=$work/root/usr/bin/kgate
  "$kgate" --version | tee "$work/version.txt"
  grep -qE "^[0-9]+\.[0-9]+\.[0-9]+" "$work/version.txt" || { echo "ci/package.sh --test: kgate --version printed no version" >&2; exit 1; }
  "$kgate" validate "$here/runtime/package/examples/softmax_rows" --no-reference > "$work/validate.log" 2>&1 ||
    { cat "$work/validate.log"; echo "ci/package.sh --test: kgate validate through the launcher failed" >&2; exit 1; }
  tail -1 "$work/validate.log"
  # kgate-pr (a link in /usr/bin) names the unpacked prefix for a project's CMAKE_PREFIX_PATH.
  pr_prefix=$("$work/root/usr/bin/kgate-pr" --cmake-prefix-path) && [[ "$pr_prefix" == "$work/root/opt/kgate;"* ]] ||
    { echo "ci/package.sh --test: kgate-pr --cmake-prefix-path printed '${pr_prefix:-}', not $work/root/opt/kgate;..." >&2; exit 1; }
  echo "==> ci/package.sh --test: kgate-pr --cmake-prefix-path: $pr_prefix"
  # A project of its own against the unpacked package (its kernels need nvcc, as any consumer's do).
  torch_prefix=$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)' 2>/dev/null | tail -1)
  deps=""
  [ -f "$here/.deps-prefix" ] && deps=$(cat "$here/.deps-prefix")
  export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH
  t0=$(date +%s%N)
  cmake -S "$here/examples/consumer" -B "$work/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CUDA_ARCHITECTURES="${KGATE_CUDA_ARCHS:-90}" -DKGATE_BUILD_TESTS=OFF -DKGATE_BUILD_BENCHMARKS=OFF \
    -DCMAKE_PREFIX_PATH="$work/root/opt/kgate;$torch_prefix${deps:+;$deps}" > "$work/consumer.configure.log" 2>&1 ||
    { tail -30 "$work/consumer.configure.log"; echo "ci/package.sh --test: the consumer did not configure against the package" >&2; exit 1; }
  cmake --build "$work/consumer" -j "${KGATE_JOBS:-$(nproc)}" > "$work/consumer.build.log" 2>&1 ||
    { tail -30 "$work/consumer.build.log"; echo "ci/package.sh --test: the consumer did not build against the package" >&2; exit 1; }
  t1=$(date +%s%N)
  "$work/consumer/bin/kgate" list > "$work/consumer.list.log" 2>&1 ||
    { cat "$work/consumer.list.log"; echo "ci/package.sh --test: the consumer's kgate does not start" >&2; exit 1; }
  # Here torch lies where the package was built, so the libraries' RUNPATH finds it; on a machine where
  # it lies elsewhere only the consumer's own RUNPATH does, and only for libraries the consumer itself
  # needs (RUNPATH does not carry over to dependencies): each torch library that kgate's need must be one.
  needs() { readelf -d "$@" 2>/dev/null | sed -n 's/.*(NEEDED).*\[\(lib\(torch\|c10\)[^]]*\)\]/\1/p' | sort -u; }
  missing=$(comm -23 <(needs "$work"/root/opt/kgate/lib/libkgate_*.so) <(needs "$work/consumer/bin/kgate"))
  [ -z "$missing" ] || { echo "ci/package.sh --test: the consumer's kgate does not itself need $(echo $missing) (kgate's" \
    "libraries do): on a machine with torch elsewhere it would not start (kgateConfig's --no-as-needed)" >&2; exit 1; }
  echo "==> ci/package.sh --test: examples/consumer configured and built against it in $(( (t1 - t0) / 1000000 )) ms;" \
       "its kgate lists $(grep -c . "$work/consumer.list.log") lines"
  exit 0
fi

build=$(cd "${1:-$here/build}" && pwd)
out=${2:-$build/deb}
version=$(sed -n 's/^project(kgate VERSION \([0-9.]*\).*/\1/p' "$here/CMakeLists.txt")
[ -n "$version" ] || { echo "ci/package.sh: no version in CMakeLists.txt's project()" >&2; exit 1; }
torch_version=$(python3 -c 'import torch; print(torch.__version__.split("+")[0])' 2>/dev/null || echo 2.11.0)
stage=$out/stage
rm -rf "$stage" && mkdir -p "$stage/DEBIAN" "$stage/usr/bin" "$stage/opt/kgate"
echo "==> ci/package.sh: cmake --install $build (stripped) into the package"
cmake --install "$build" --prefix "$stage/opt/kgate" --strip > "$out/install.log" 2>&1 ||
  { tail -20 "$out/install.log"; echo "ci/package.sh: cmake --install failed" >&2; exit 1; }
strip --strip-debug "$stage/opt/kgate/lib/"*.a 2>/dev/null || true

cat > "$stage/usr/bin/kgate" <<LAUNCHER
#!/bin/sh
# kgate, installed from its Debian package: runs /opt/kgate/bin/kgate with the LibTorch of the
# torch==$torch_version wheel (CUDA 13.0 build) that python3 imports, and the CUDA 13 libraries of the
# CUDA toolkit or of torch's nvidia-* wheels. KGATE_TORCH_LIB names LibTorch's lib directory instead.
prefix=\$(dirname "\$(readlink -f "\$0")")/../../opt/kgate
python=\${KGATE_PYTHON:-python3}
if [ -z "\${KGATE_TORCH_LIB:-}" ]; then
  found=\$("\$python" -c 'import os, torch; print(torch.__version__.split("+")[0]); print(os.path.join(os.path.dirname(torch.__file__), "lib"))' 2>/dev/null)
  version=\$(echo "\$found" | sed -n 1p)
  KGATE_TORCH_LIB=\$(echo "\$found" | sed -n 2p)
  if [ -z "\$KGATE_TORCH_LIB" ]; then
    echo "kgate: python3 cannot import torch; kgate needs the torch==$torch_version wheel (CUDA 13.0 build):" >&2
    echo "  pip install torch==$torch_version --index-url https://download.pytorch.org/whl/cu130" >&2
    echo "  (or set KGATE_TORCH_LIB to LibTorch $torch_version's lib directory, KGATE_PYTHON to another python)" >&2
    exit 4
  fi
  if [ "\$version" != "$torch_version" ]; then
    echo "kgate: python3 imports torch \$version; this kgate is built against torch $torch_version (its C++ ABI):" >&2
    echo "  pip install torch==$torch_version --index-url https://download.pytorch.org/whl/cu130" >&2
    exit 4
  fi
fi
cuda_libs=\$("\$python" - <<'PY' 2>/dev/null
import glob, os, sys
for p in sys.path:
    for lib in sorted(glob.glob(os.path.join(p, "nvidia", "*", "lib")) + glob.glob(os.path.join(p, "nvidia", "*", "*", "lib"))):
        print(lib)
PY
)
path="\$KGATE_TORCH_LIB:\${CUDA_HOME:-/usr/local/cuda}/lib64"
for d in \$cuda_libs; do path="\$path:\$d"; done
LD_LIBRARY_PATH="\$path\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}" exec "\$prefix/bin/kgate" "\$@"
LAUNCHER
chmod 755 "$stage/usr/bin/kgate"
# kgate-pr on PATH: a link, so that it finds its prefix (/opt/kgate) where it lies.
ln -s ../../opt/kgate/bin/kgate-pr "$stage/usr/bin/kgate-pr"

size=$(du -sk "$stage/opt" "$stage/usr" | awk '{s += $1} END {print s}')
sha=$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)
cat > "$stage/DEBIAN/control" <<CONTROL
Package: kgate
Version: $version+git$sha
Architecture: amd64
Maintainer: kgate <kgate@localhost>
Installed-Size: $size
Depends: libc6, libstdc++6, libgcc-s1, python3
Recommends: cmake, ninja-build, nlohmann-json3-dev, libgtest-dev, libbenchmark-dev
Section: devel
Priority: optional
Description: regression tester for optimized GPU kernels
 kgate checks CUDA kernels (CMake kernels, exported packages, torch custom ops) for correctness
 against a LibTorch reference and a float64 oracle, and times them against eager and their base
 version; it fails the build on a wrong or slower kernel. Built against torch $torch_version (CUDA 13.0):
 python3 must import that torch wheel. /opt/kgate holds the CMake package (kgate_add_kernel); a
 project's own kernels still need nvcc.
CONTROL
deb=$out/kgate_${version}_amd64.deb
fakeroot dpkg-deb --build -Zxz "$stage" "$deb" > /dev/null 2>&1 || dpkg-deb --root-owner-group --build -Zxz "$stage" "$deb" > /dev/null
rm -rf "$stage"
echo "==> ci/package.sh: $deb ($(du -h "$deb" | cut -f1), $size KiB installed)"
