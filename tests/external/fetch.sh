#!/usr/bin/env bash
# fetch.sh [DEST]: materialises every file pinned in tests/external/sources.tsv, byte for byte, as
# DEST/LIB/PATH (DEST defaults to .thirdparty/external, which git ignores), from local bare mirrors
# of the repositories (KGATE_MIRRORS, default /work/.mirror, holding OWNER+NAME/repo). Each file is
# read at its pinned commit and its sha256 checked before it is written; nothing is changed in it.
# A missing mirror, commit or file, or a hash that differs, is named (file, expected, actual) and the
# script exits 1 after checking every line; a DEST/LIB that already holds other bytes is rewritten.
# Kept out of the repository: the fetched files, and anything that builds them.
# fetch.sh --verify [DEST]: checks, with no mirror (on a machine the files were carried to), that
# DEST holds every pinned file with its pinned sha256; exit 1 naming each one that does not.
set -uo pipefail
verify=0
if [ "${1:-}" = --verify ]; then verify=1; shift; fi
here=$(cd "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")" && pwd)
root=$(cd "$here/../.." && pwd)
dest=${1:-$root/.thirdparty/external}
manifest=${KGATE_EXTERNAL_SOURCES:-$here/sources.tsv}
mirrors=${KGATE_MIRRORS:-/work/.mirror}
[ -f "$manifest" ] || { echo "$0: no manifest $manifest" >&2; exit 2; }
if [ "$verify" = 1 ]; then
  [ -d "$dest" ] || { echo "$0: --verify: no directory $dest (run tests/external/fetch.sh where the mirrors are, and carry it)" >&2; exit 1; }
else
  mkdir -p "$dest" || { echo "$0: cannot create $dest" >&2; exit 2; }
fi

bad=0 n=0 line_no=0
while IFS=$'\t' read -r lib repo commit path sum rest; do
  line_no=$((line_no + 1))
  case "$lib" in ''|'#'*) continue ;; esac
  where="$manifest:$line_no"
  if [ -z "$sum" ] || [ -n "${rest:-}" ] || [[ ! "$sum" =~ ^[0-9a-f]{64}$ ]] || [[ ! "$commit" =~ ^[0-9a-f]{40}$ ]]; then
    echo "$where: expected LIB<TAB>OWNER/NAME<TAB>40-hex commit<TAB>PATH<TAB>64-hex sha256" >&2
    bad=1; continue
  fi
  case "$path" in /*|*..*) echo "$where: path '$path' must be relative and stay inside LIB" >&2; bad=1; continue ;; esac
  if [ "$verify" = 1 ]; then
    f=$dest/$lib/$path
    if [ ! -f "$f" ]; then echo "$where: $lib/$path: missing under $dest" >&2; bad=1; continue; fi
    got=$(sha256sum "$f" | cut -d' ' -f1)
    if [ "$got" != "$sum" ]; then
      echo "$where: $lib/$path: sha256 mismatch: expected $sum, got $got" >&2; bad=1; continue
    fi
    n=$((n + 1)); continue
  fi
  git_dir=$mirrors/${repo/\//+}/repo
  if [ ! -d "$git_dir" ]; then
    echo "$where: $lib/$path: no mirror of $repo at $git_dir (set KGATE_MIRRORS)" >&2
    bad=1; continue
  fi
  if ! git --git-dir="$git_dir" cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "$where: $lib/$path: the mirror of $repo lacks commit $commit" >&2
    bad=1; continue
  fi
  if ! git --git-dir="$git_dir" cat-file -e "$commit:$path" 2>/dev/null; then
    echo "$where: $lib/$path: $repo@$commit has no file $path" >&2
    bad=1; continue
  fi
  out=$dest/$lib/$path
  mkdir -p "$(dirname "$out")"
  tmp=$out.part
  git --git-dir="$git_dir" show "$commit:$path" > "$tmp" || { echo "$where: cannot read $path" >&2; bad=1; rm -f "$tmp"; continue; }
  got=$(sha256sum "$tmp" | cut -d' ' -f1)
  if [ "$got" != "$sum" ]; then
    echo "$where: $lib/$path: sha256 mismatch: expected $sum, got $got ($repo@$commit)" >&2
    rm -f "$tmp"; bad=1; continue
  fi
  mv -f "$tmp" "$out"
  n=$((n + 1))
done < "$manifest"

if [ "$verify" = 1 ]; then
  [ "$bad" -eq 0 ] || { echo "$0: --verify: FAILED: $dest differs from the pins (above); $n files matched" >&2; exit 1; }
  echo "$0: --verify: $n files under $dest, every sha256 as pinned"; exit 0
fi
if [ "$bad" -ne 0 ]; then
  echo "$0: FAILED: some pinned files could not be materialised (above); $n were" >&2
  exit 1
fi
# What was fetched, and from where, for whoever carries DEST to another machine.
cp "$manifest" "$dest/sources.tsv"
echo "$0: $n files under $dest, every sha256 as pinned"
