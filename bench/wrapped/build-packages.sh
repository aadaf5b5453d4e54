#!/usr/bin/env bash
# build-packages.sh SRC_ROOT OUT_DIR
#
# Assembles the wrapped third-party kernels as kgate packages, fetching nothing.
#
#   SRC_ROOT  a directory holding one folder per repository, named OWNER+NAME (for example
#             SRC_ROOT/siboehm+SGEMM_CUDA/): a checkout of that repository at the commit listed in
#             kernels.tsv, or a tree holding only the listed files at their repository paths.
#   OUT_DIR   where OUT_DIR/<package>/ is written (created; each listed package folder is replaced).
#
# For each line of kernels.tsv it copies packages/<package>/ (the manifest kgate.json, the op file
# where the package declares its own op, and any file of ours that the manifest names) and then the
# listed source files from SRC_ROOT/OWNER+NAME/<path> to OUT_DIR/<package>/<path>, byte for byte,
# after checking each file's SHA-256 against SHA256SUMS. Exit 1, naming every missing or differing
# file, when any is; exit 2 on a usage error.

set -u

usage() {
  echo "usage: $0 SRC_ROOT OUT_DIR" >&2
  exit 2
}
[ $# -eq 2 ] || usage
case "$1" in -h|--help) usage ;; esac

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SRC=$1
OUT=$2
TSV=$HERE/kernels.tsv
SUMS=$HERE/SHA256SUMS

[ -d "$SRC" ] || { echo "$0: SRC_ROOT '$SRC' is not a directory" >&2; exit 2; }
[ -f "$TSV" ] && [ -f "$SUMS" ] || { echo "$0: kernels.tsv or SHA256SUMS missing beside the script" >&2; exit 2; }
command -v sha256sum >/dev/null || { echo "$0: sha256sum not found" >&2; exit 2; }
mkdir -p "$OUT" || { echo "$0: cannot create '$OUT'" >&2; exit 2; }

# The SHA-256 recorded for OWNER+NAME/PATH.
recorded_sum() {
  awk -v p="$1" '$2 == p { print $1; exit }' "$SUMS"
}

errors=0
built=0
while IFS=$'\t' read -r pkg repo commit files kernel op; do
  [ "$pkg" = package ] && continue   # header
  [ -n "$pkg" ] || continue
  case "$pkg" in *[!A-Za-z0-9_.-]*|.*) echo "$0: bad package name '$pkg' in kernels.tsv" >&2; exit 2 ;; esac
  case "$repo" in */*) ;; *) echo "$0: bad repository '$repo' for $pkg" >&2; exit 2 ;; esac
  if [ ! -f "$HERE/packages/$pkg/kgate.json" ]; then
    echo "ERROR $pkg: no manifest packages/$pkg/kgate.json" >&2
    errors=$((errors + 1)); continue
  fi
  repodir=${repo/\//+}
  dest=$OUT/$pkg
  rm -rf -- "$dest"
  mkdir -p "$dest"
  cp -R "$HERE/packages/$pkg/." "$dest/"
  ok=1
  IFS=',' read -r -a paths <<<"$files"
  for path in "${paths[@]}"; do
    case "$path" in /*|*..*) echo "ERROR $pkg: bad path '$path' in kernels.tsv" >&2; ok=0; continue ;; esac
    src=$SRC/$repodir/$path
    want=$(recorded_sum "$repodir/$path")
    if [ -z "$want" ]; then
      echo "ERROR $pkg: no SHA-256 recorded in SHA256SUMS for $repodir/$path" >&2; ok=0; continue
    fi
    if [ ! -f "$src" ]; then
      echo "ERROR $pkg: missing $src (from $repo at commit $commit)" >&2; ok=0; continue
    fi
    got=$(sha256sum "$src" | cut -d' ' -f1)
    if [ "$got" != "$want" ]; then
      echo "ERROR $pkg: $src differs from $repo@$commit:$path (SHA-256 $got, expected $want)" >&2
      ok=0; continue
    fi
    mkdir -p "$dest/$(dirname "$path")"
    cp "$src" "$dest/$path"
  done
  if [ $ok -eq 1 ]; then
    built=$((built + 1))
    echo "built $pkg <- $repo@${commit:0:12} ($files)"
  else
    errors=$((errors + 1))
    rm -rf -- "$dest"
  fi
done <"$TSV"

if [ $errors -ne 0 ]; then
  echo "$0: $errors package(s) could not be built (see ERROR lines); $built built under $OUT" >&2
  exit 1
fi
echo "$0: $built package(s) built under $OUT"
