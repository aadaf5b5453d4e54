#!/usr/bin/env bash
# pin.sh LIB OWNER/NAME COMMIT PATH... : prints one sources.tsv line per PATH (LIB, repository,
# full commit, path, sha256 of the file at that commit), read from the repository's local mirror
# (KGATE_MIRRORS, default /work/.mirror: OWNER+NAME/repo is a bare git directory). Append the lines
# to tests/external/sources.tsv to pin a new file; fetch.sh then checks every byte against them.
set -euo pipefail
[ $# -ge 4 ] || { echo "usage: $0 LIB OWNER/NAME COMMIT PATH..." >&2; exit 2; }
lib=$1 repo=$2 commit=$3
shift 3
git_dir=${KGATE_MIRRORS:-/work/.mirror}/${repo/\//+}/repo
[ -d "$git_dir" ] || { echo "$0: no mirror of $repo at $git_dir" >&2; exit 1; }
full=$(git --git-dir="$git_dir" rev-parse --verify "$commit^{commit}") \
  || { echo "$0: $repo has no commit $commit" >&2; exit 1; }
for path in "$@"; do
  sum=$(git --git-dir="$git_dir" show "$full:$path" | sha256sum | cut -d' ' -f1) \
    || { echo "$0: $repo@$full has no file $path" >&2; exit 1; }
  git --git-dir="$git_dir" cat-file -e "$full:$path" || { echo "$0: $repo@$full has no file $path" >&2; exit 1; }
  printf '%s\t%s\t%s\t%s\t%s\n' "$lib" "$repo" "$full" "$path" "$sum"
done
