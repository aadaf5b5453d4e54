#!/usr/bin/env bash
# ci/setup.sh remembers the offline bundle: a later call without KGATE_OFFLINE_BUNDLE (ci/test.sh's,
# ci/gate.sh's) unpacks the same bundle instead of going to apt; KGATE_OFFLINE_BUNDLE=none forgets it.
# Runs a copy of ci/setup.sh in a scratch tree, with a one-file .deb made here.
set -u
src=$1
out=$2
rm -rf "$out"
mkdir -p "$out/tree/ci" "$out/pkg/DEBIAN" "$out/pkg/usr/include" "$out/bundle"
fail() { echo "FAIL: $*"; exit 1; }
cp "$src/ci/setup.sh" "$out/tree/ci/setup.sh"
printf 'Package: kgate-fake\nVersion: 1.0\nArchitecture: all\nMaintainer: kgate\nDescription: test\n' > "$out/pkg/DEBIAN/control"
echo "// fake" > "$out/pkg/usr/include/kgate-fake.h"
dpkg-deb --build "$out/pkg" "$out/bundle/kgate-fake.deb" > /dev/null || fail "dpkg-deb could not build the test package"

KGATE_OFFLINE_BUNDLE="$out/bundle" bash "$out/tree/ci/setup.sh" > "$out/1.log" 2>&1 || { cat "$out/1.log"; fail "setup with the bundle failed"; }
[ -f "$out/tree/.deps/usr/include/kgate-fake.h" ] || { cat "$out/1.log"; fail "the bundle was not unpacked"; }
[ "$(cat "$out/tree/.deps-bundle-path")" = "$out/bundle" ] || fail "the bundle's path was not remembered"

rm -rf "$out/tree/.deps"
env -u KGATE_OFFLINE_BUNDLE bash "$out/tree/ci/setup.sh" > "$out/2.log" 2>&1 || { cat "$out/2.log"; fail "setup without KGATE_OFFLINE_BUNDLE failed"; }
grep -q "using the offline bundle $out/bundle remembered" "$out/2.log" || { cat "$out/2.log"; fail "the remembered bundle was not said"; }
[ -f "$out/tree/.deps/usr/include/kgate-fake.h" ] || { cat "$out/2.log"; fail "the remembered bundle was not unpacked"; }
grep -q "apt-get\|Debian packages" "$out/2.log" && { cat "$out/2.log"; fail "apt was used although a bundle is remembered"; }

# none forgets it (apt's side then runs, and may fail offline: only the forgetting is checked)
KGATE_OFFLINE_BUNDLE=none bash "$out/tree/ci/setup.sh" > "$out/3.log" 2>&1
[ -f "$out/tree/.deps-bundle-path" ] && { cat "$out/3.log"; fail "KGATE_OFFLINE_BUNDLE=none did not forget the bundle"; }
grep -q "offline bundle" "$out/3.log" && { cat "$out/3.log"; fail "the bundle was used after KGATE_OFFLINE_BUNDLE=none"; }
echo "setup_bundle: all passed"
