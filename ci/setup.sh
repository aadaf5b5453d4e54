#!/usr/bin/env bash
# Installs everything kgate's build needs, idempotently and without questions:
#   Debian packages (cmake, ninja, GoogleTest, Google Benchmark, nlohmann/json, CLI11, clang-format) and the
#   torch==2.11.0 wheel (LibTorch, CUDA 13.0 build) from the Python package index.
# Offline runners: KGATE_OFFLINE_BUNDLE=DIR (made by ci/offline-bundle.sh) unpacks the bundled .deb
# files with `dpkg -x` into $KGATE_DEPS_PREFIX (default .deps/) instead of using apt, and is
# remembered for later calls (KGATE_OFFLINE_BUNDLE=none goes back to apt).
# The CUDA toolkit (nvcc, NVRTC, CUPTI) is expected at /usr/local/cuda (or $CUDA_HOME).
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)  # (through symlinks)
PACKAGES=(cmake ninja-build g++ libgtest-dev googletest libbenchmark-dev libbenchmark1debian nlohmann-json3-dev libcli11-dev libvalijson-dev
          clang-format)  # clang-format: the CTest lane lint.clang_format
TORCH_SPEC=${KGATE_TORCH_SPEC:-torch==2.11.0}

step() { echo "==> ci/setup.sh: $*"; }
die() { echo "ci/setup.sh: error: $*" >&2; exit 1; }

cuda=${CUDA_HOME:-/usr/local/cuda}
[ -x "$cuda/bin/nvcc" ] || die "no CUDA toolkit at $cuda (nvcc missing). Install CUDA 13.0 or set CUDA_HOME."

# The offline bundle is remembered (.deps-bundle-path): later calls, ci/test.sh's and ci/gate.sh's
# included, use it without KGATE_OFFLINE_BUNDLE set again; KGATE_OFFLINE_BUNDLE=none forgets it.
bundle=${KGATE_OFFLINE_BUNDLE:-}
if [ "$bundle" = none ]; then
  rm -f "$here/.deps-bundle-path"
  bundle=""
elif [ -z "${KGATE_OFFLINE_BUNDLE+set}" ] && [ -f "$here/.deps-bundle-path" ]; then
  bundle=$(cat "$here/.deps-bundle-path")
  step "using the offline bundle $bundle remembered from an earlier call (KGATE_OFFLINE_BUNDLE=none forgets it)"
fi
if [ -n "$bundle" ]; then
  prefix=${KGATE_DEPS_PREFIX:-$here/.deps}
  step "unpacking the offline bundle $bundle into $prefix"
  ls "$bundle"/*.deb > /dev/null 2>&1 || die "no .deb files in $bundle (run ci/offline-bundle.sh where a registry is reachable)"
  mkdir -p "$prefix"
  for deb in "$bundle"/*.deb; do dpkg -x "$deb" "$prefix" || die "dpkg -x $deb failed"; done
  echo "$prefix/usr" > "$here/.deps-prefix"
  (cd "$bundle" && pwd) > "$here/.deps-bundle-path"
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

# (Found and its version read without importing it: an import of torch takes over a second, and
# every ci/gate.sh runs this.)
if torch_version=$(python3 -c 'import importlib.metadata as m, importlib.util as u
assert u.find_spec("torch")
print(m.version("torch"))' 2> /dev/null); then
  step "torch present: $torch_version"
else
  step "installing $TORCH_SPEC from the Python package index (LibTorch; ~3 GB with its CUDA libraries)"
  python3 -m pip install --quiet --disable-pip-version-check "$TORCH_SPEC" \
    || die "pip install $TORCH_SPEC failed (set KGATE_TORCH_SPEC, or pass -DTorch_DIR to CMake)"
fi
# PyYAML: the tests of the workflow and of docs/ci.md's CI examples parse YAML.
if ! python3 -c 'import yaml' > /dev/null 2>&1; then
  step "installing PyYAML from the Python package index (the CI-example tests read YAML)"
  python3 -m pip install --quiet --disable-pip-version-check pyyaml \
    || echo "ci/setup.sh: warning: PyYAML could not be installed; the ci.* tests will fail" >&2
fi
step "done"
