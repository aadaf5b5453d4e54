#!/usr/bin/env bash
# Downloads the Debian packages kgate builds against as .deb files into DIR (default .deps-bundle/),
# for runners without a registry: copy DIR there and run KGATE_OFFLINE_BUNDLE=DIR ci/setup.sh.
# LibTorch is not bundled: such runners use the torch wheel already installed there.
set -euo pipefail
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/.." && pwd)  # (through symlinks)
dir=${1:-$here/.deps-bundle}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)  # (a relative DIR is counted after the cd below)
cd "$dir"
apt-get download libgtest-dev googletest libbenchmark-dev libbenchmark1debian nlohmann-json3-dev libcli11-dev libvalijson-dev \
  || { echo "ci/offline-bundle.sh: apt-get download failed (run apt-get update first?)" >&2; exit 1; }
echo "offline bundle: $(ls "$dir"/*.deb | wc -l) packages in $dir"
