#!/usr/bin/env bash
# Installs everything kgate's build needs, idempotently and without questions:
#   Debian packages (cmake, ninja, GoogleTest, Google Benchmark, nlohmann/json, CLI11) and the
#   torch==2.11.0 wheel (LibTorch, CUDA 13.0 build) from the Python package index.
# Offline runners: KGATE_OFFLINE_BUNDLE=DIR (made by ci/offline-bundle.sh) unpacks the bundled .deb
# files with `dpkg -x` into $KGATE_DEPS_PREFIX (default .deps/) instead of using apt.
# The CUDA toolkit (nvcc, NVRTC, CUPTI) is expected at /usr/local/cuda (or $CUDA_HOME).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PACKAGES=(cmake ninja-build g++ libgtest-dev googletest libbenchmark-dev libbenchmark1debian nlohmann-json3-dev libcli11-dev)
TORCH_SPEC=${KGATE_TORCH_SPEC:-torch==2.11.0}

step() { echo "==> ci/setup.sh: $*"; }
die() { echo "ci/setup.sh: error: $*" >&2; exit 1; }

cuda=${CUDA_HOME:-/usr/local/cuda}
[ -x "$cuda/bin/nvcc" ] || die "no CUDA toolkit at $cuda (nvcc missing). Install CUDA 13.0 or set CUDA_HOME."

if [ -n "${KGATE_OFFLINE_BUNDLE:-}" ]; then
  prefix=${KGATE_DEPS_PREFIX:-$here/.deps}
  step "unpacking the offline bundle $KGATE_OFFLINE_BUNDLE into $prefix"
  ls "$KGATE_OFFLINE_BUNDLE"/*.deb > /dev/null 2>&1 || die "no .deb files in $KGATE_OFFLINE_BUNDLE (run ci/offline-bundle.sh where a registry is reachable)"
  mkdir -p "$prefix"
  for deb in "$KGATE_OFFLINE_BUNDLE"/*.deb; do dpkg -x "$deb" "$prefix" || die "dpkg -x $deb failed"; done
  echo "$prefix/usr" > "$here/.deps-prefix"
else
  missing=()
  for p in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    step "installing Debian packages: ${missing[*]}"
    SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq || die "apt-get update failed (no network? use KGATE_OFFLINE_BUNDLE)"
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null \
      || die "apt-get install ${missing[*]} failed"
  else
    step "Debian packages present"
  fi
  rm -f "$here/.deps-prefix"
fi

if python3 -c 'import torch' > /dev/null 2>&1; then
  step "torch present: $(python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)"
else
  step "installing $TORCH_SPEC from the Python package index (LibTorch; ~3 GB with its CUDA libraries)"
  python3 -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC" \
    || die "pip install $TORCH_SPEC failed (set KGATE_TORCH_SPEC, or pass -DTorch_DIR to CMake)"
fi
step "done"
