#!/usr/bin/env bash
# The action's first step: finds kgate-pr, or installs kgate without building it. In this order:
# KGATE_PREFIX_INPUT/bin/kgate-pr; kgate-pr on PATH; the release KGATE_VERSION_INPUT's Debian
# package from KGATE_RELEASES (…/v$VERSION/kgate_${VERSION}_amd64.deb), unpacked with dpkg-deb -x
# into the tool cache (kept between the jobs of a self-hosted runner). Writes kgate-pr=PATH to
# $GITHUB_OUTPUT.
set -euo pipefail
found() {
  echo "kgate-pr: $1"
  echo "kgate-pr=$1" >> "${GITHUB_OUTPUT:-/dev/null}"
  exit 0
}
if [ -n "${KGATE_PREFIX_INPUT:-}" ]; then
  [ -x "$KGATE_PREFIX_INPUT/bin/kgate-pr" ] || {
    echo "::error::kgate-prefix $KGATE_PREFIX_INPUT has no bin/kgate-pr (an install of kgate 0.1 or later: cmake --install BUILD --prefix DIR)"
    exit 4
  }
  found "$(cd "$KGATE_PREFIX_INPUT" && pwd)/bin/kgate-pr"
fi
if [ -z "${KGATE_VERSION_INPUT:-}" ] && command -v kgate-pr > /dev/null 2>&1; then
  found "$(command -v kgate-pr)"
fi
version=${KGATE_VERSION_INPUT#v}
if [ -z "$version" ]; then
  echo "::error::no kgate: give kgate-version (a release whose .deb is fetched), kgate-prefix, or put kgate-pr on PATH"
  exit 4
fi
root=${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-/tmp}}/kgate/$version
if [ ! -x "$root/opt/kgate/bin/kgate-pr" ]; then
  deb=kgate_${version}_amd64.deb
  url=$KGATE_RELEASES/v$version/$deb
  tmp=$(mktemp -d)
  echo "kgate: fetching $url"
  auth=()
  [ -n "${GH_TOKEN:-}" ] && auth=(-H "Authorization: Bearer $GH_TOKEN")
  curl -fsSL --retry 3 ${auth[@]+"${auth[@]}"} -o "$tmp/$deb" "$url" || {
    echo "::error::could not fetch $url: is there a release v$version with $deb among its assets?"
    exit 4
  }
  rm -rf "$root"
  mkdir -p "$root"
  dpkg-deb -x "$tmp/$deb" "$root"
  rm -rf "$tmp"
fi
found "$root/opt/kgate/bin/kgate-pr"
