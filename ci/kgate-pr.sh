#!/usr/bin/env bash
# kgate-pr: gate a change of any CMake project that uses kgate (find_package(kgate), or kgate's own
# tree) against its base version, in one command. Installed as bin/kgate-pr; the GitHub Action
# .github/actions/kgate-pr and ci/gate.sh --against run it. Steps:
#   1. the head: configured when its build directory has no CMake cache yet (the kgate prefix and
#      torch in CMAKE_PREFIX_PATH, a build type, ccache, Ninja where installed), then only the
#      `kgate` target built: the project's kgate command and its kernels' modules;
#   2. the base: --base REF, or the GitHub event's (GITHUB_EVENT_NAME/GITHUB_EVENT_PATH: a pull
#      request's base, a push's previous head, a new branch's merge base with the default branch),
#      fetched when the clone lacks it;
#   3. the base checked out in a worktree that later runs in the same workspace reuse (refreshed, never
#      "already exists"), configured with the head's CMake configuration (generator, prefix, build
#      type, architectures, compilers, flags, launchers, and what the head was given with -D) and
#      built (`kgate` target) with the head's ccache, its paths made relative so both trees hit;
#   4. `kgate check --baseline-build BASE_BUILD` with the remaining arguments. A base that cannot be
#      found, fetched, checked out, configured or built gates every kernel against eager, with the
#      reason in report.json's meta.base.error; --require-base makes that exit 4.
# Exit codes: kgate check's (0 pass, 1 incorrect, 2 slower, 3 inconclusive, 4 usage, 5 internal);
# 4 also when the head does not configure or build, or for a wrong option of this command.
# Docs: docs/ci.md#one-command-kgate-pr
set -uo pipefail

usage() {
  cat << 'EOF'
usage: kgate-pr [options] [--] [kgate check arguments...]
  --base REF          the base (branch, tag or commit); default: from the GitHub event, else the
                      merge base with the default branch (origin/HEAD)
  --source DIR        the project's source directory (default: the git top level of .)
  --build DIR         the head's build directory (default: SOURCE/build)
  --work-dir DIR      where the base worktree and its build live (default: SOURCE/.kgate-pr)
  --prefix DIR        the installed kgate (default: the prefix this script is installed in)
  -DVAR=VALUE         a CMake cache entry for configuring the head (and so the base)
  --target T          a target to build on both sides besides `kgate` (repeatable)
  --require-base      a base that cannot be used is an error (exit 4), not an eager-only gate
  --print-base        print the base commit this run would use, and exit
  --cmake-prefix-path print what CMAKE_PREFIX_PATH needs for find_package(kgate), and exit
  -h, --help          this text
Environment: KGATE_JOBS (parallel jobs, default nproc), KGATE_CCACHE=0 (no ccache),
KGATE_BUILD_TYPE (default RelWithDebInfo, for a head configured here).
EOF
}

say() { echo "==> kgate-pr: $*" >&2; }
die() { echo "kgate-pr: $*" >&2; exit 4; }

self=$(readlink -f "${BASH_SOURCE[0]}")
prefix=${KGATE_PREFIX:-}
if [ -z "$prefix" ] && [ -f "$(dirname "$self")/../lib/cmake/kgate/kgateConfig.cmake" ]; then
  prefix=$(cd "$(dirname "$self")/.." && pwd)
fi
src="" build="" work="" base_ref="" require_base=0 print_base=0 print_prefix=0
cmake_defs=() targets=(kgate) check_args=()
while [ $# -gt 0 ]; do
  case "$1" in
    --base) base_ref=${2:?kgate-pr: --base needs a ref}; shift 2 ;;
    --base=*) base_ref=${1#--base=}; shift ;;
    --source) src=${2:?kgate-pr: --source needs a directory}; shift 2 ;;
    --build) build=${2:?kgate-pr: --build needs a directory}; shift 2 ;;
    --work-dir) work=${2:?kgate-pr: --work-dir needs a directory}; shift 2 ;;
    --prefix) prefix=${2:?kgate-pr: --prefix needs a directory}; shift 2 ;;
    --target) targets+=("${2:?kgate-pr: --target needs a target}"); shift 2 ;;
    -D?*) cmake_defs+=("$1"); shift ;;
    --require-base) require_base=1; check_args+=(--require-base); shift ;;
    --print-base) print_base=1; shift ;;
    --cmake-prefix-path) print_prefix=1; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; check_args+=("$@"); break ;;
    *) check_args+=("$1"); shift ;;
  esac
done

# What CMAKE_PREFIX_PATH needs: the kgate prefix, and the torch it was built against (where that
# still exists; else the python3 torch's).
cmake_prefix_path() {
  local torch=""
  torch=$(sed -n 's/^ *set(Torch_DIR "\(.*\)")$/\1/p' "$prefix/lib/cmake/kgate/kgateConfig.cmake" 2>/dev/null | head -1)
  if [ -n "$torch" ] && [ -f "$torch/TorchConfig.cmake" ]; then
    torch=$(cd "$torch/.." && pwd)  # <prefix>/share/cmake/Torch -> <prefix>/share/cmake
  else
    torch=$(python3 -c 'import importlib.util as u, os
print(os.path.join(os.path.dirname(u.find_spec("torch").origin), "share", "cmake"))' 2>/dev/null) || torch=""
  fi
  echo "$prefix${torch:+;$torch}"
}
if [ "$print_prefix" = 1 ]; then
  [ -n "$prefix" ] || die "no installed kgate found beside $self: give --prefix"
  cmake_prefix_path
  exit 0
fi

# ---- where things are
if [ -z "$src" ]; then
  src=$(git rev-parse --show-toplevel 2>/dev/null) || die "$(pwd) is not in a git repository: give --source"
fi
src=$(cd "$src" 2>/dev/null && pwd) || die "--source $src: no such directory"
git -C "$src" rev-parse --git-dir > /dev/null 2>&1 || die "$src is not in a git repository"
[ -f "$src/CMakeLists.txt" ] || die "$src has no CMakeLists.txt: give the project's source directory with --source"
build=$(realpath -m "${build:-$src/build}")
work=$(realpath -m "${work:-$src/.kgate-pr}")
# The base's worktree, and its copy of the project (the same subdirectory of the repository).
wt="$work/base"
sub=$(realpath -m --relative-to="$(git -C "$src" rev-parse --show-toplevel)" "$src")
base_src=$(realpath -m "$wt/$sub")
# The base build mirrors the head's place relative to its sources (SOURCE/build -> base/build), so
# that the relative paths ccache sees are the same in both trees and the base hits the head's objects.
rel=$(realpath -m --relative-to="$src" "$build")
case "$rel" in
  ../../* | /*) base_build="$work/base-build" ;;
  *) base_build=$(realpath -m "$base_src/$rel") ;;
esac
mkdir -p "$work"
log="$work/base.log"
# The work directory inside the checkout is none of git's business (git status, git clean -fd).
if [[ "$work/" == "$src/"* ]]; then
  exclude=$(cd "$src" && realpath -m "$(git rev-parse --git-path info/exclude)")
  line="/${work#"$src"/}/"
  grep -qxF "$line" "$exclude" 2>/dev/null || { mkdir -p "$(dirname "$exclude")" && echo "$line" >> "$exclude"; }
fi

# ---- the base commit
head_sha=$(git -C "$src" rev-parse --verify HEAD 2>/dev/null) || die "$src has no HEAD commit"
zero=0000000000000000000000000000000000000000
base_sha="" base_desc="" base_error=""

gitq() { git -C "$src" "$@" >> "$log" 2>&1; }
# --depth=N for a fetch into a shallow clone; nothing for a complete one (which it would make shallow).
shallow_depth() { [ "$(git -C "$src" rev-parse --is-shallow-repository)" = true ] && echo "--depth=$1"; }
commit_of() { git -C "$src" rev-parse --verify --quiet "$1^{commit}" 2>/dev/null; }
event_field() {  # a dotted path into the event payload ("" when missing)
  python3 -c 'import json, sys
v = json.load(open(sys.argv[1]))
for k in sys.argv[2].split("."):
    v = v.get(k) if isinstance(v, dict) else None
print("" if v is None else v)' "$GITHUB_EVENT_PATH" "$1" 2>/dev/null
}
# A commit by name or hash, fetched from origin when the clone lacks it (a shallow clone of a push
# lacks the previous head; one commit of it is enough to build it).
fetch_commit() {
  local ref=$1 sha
  sha=$(commit_of "$ref") && { echo "$sha"; return 0; }
  sha=$(commit_of "origin/$ref") && { echo "$sha"; return 0; }
  gitq fetch --no-tags $(shallow_depth 1) origin "$ref" || return 1
  commit_of FETCH_HEAD
}
default_branch() {
  local b=""
  [ -n "${GITHUB_EVENT_PATH:-}" ] && b=$(event_field repository.default_branch)
  [ -z "$b" ] && b=$(git -C "$src" symbolic-ref --quiet --short refs/remotes/origin/HEAD 2>/dev/null | sed 's|^origin/||')
  if [ -z "$b" ]; then
    b=$(git -C "$src" ls-remote --symref origin HEAD 2>/dev/null | sed -n 's|^ref: refs/heads/\(.*\)\tHEAD$|\1|p')
  fi
  echo "${b:-main}"
}
# The merge base of HEAD and origin's branch B, deepening a shallow clone until the histories meet.
merge_base_with() {
  local b=$1 mb depth
  gitq fetch --no-tags $(shallow_depth 64) origin "+refs/heads/$b:refs/remotes/origin/$b" || return 1
  for depth in 64 512 4096 all; do
    mb=$(git -C "$src" merge-base HEAD "refs/remotes/origin/$b" 2>/dev/null) && { echo "$mb"; return 0; }
    [ "$(git -C "$src" rev-parse --is-shallow-repository)" = true ] || return 1
    if [ "$depth" = all ]; then
      gitq fetch --no-tags --unshallow origin "+refs/heads/$b:refs/remotes/origin/$b" "$head_sha" || return 1
    else
      gitq fetch --no-tags --deepen="$depth" origin "+refs/heads/$b:refs/remotes/origin/$b" "$head_sha" || return 1
    fi
  done
  git -C "$src" merge-base HEAD "refs/remotes/origin/$b" 2>/dev/null
}
find_base() {
  local event=${GITHUB_EVENT_NAME:-} sha b
  if [ -n "$base_ref" ]; then
    base_desc=$base_ref
    sha=$(fetch_commit "$base_ref") || { base_error="ref '$base_ref' could not be found or fetched"; return; }
    base_sha=$sha
    return
  fi
  if [ -n "$event" ] && [ -z "${GITHUB_EVENT_PATH:-}" -o ! -f "${GITHUB_EVENT_PATH:-/}" ]; then
    base_error="GITHUB_EVENT_NAME is $event but GITHUB_EVENT_PATH names no event file: give --base"
    return
  fi
  case "$event" in
    pull_request | pull_request_target)
      local pr_head pr_base
      pr_head=$(event_field pull_request.head.sha)
      pr_base=$(event_field pull_request.base.sha)
      # actions/checkout checks out the merge commit: its first parent is the base it merges into.
      if [ "$(git -C "$src" rev-parse --verify --quiet HEAD^2 2>/dev/null)" = "$pr_head" ] && [ -n "$pr_head" ]; then
        base_desc="pull request base (HEAD^1)"
        base_sha=$(git -C "$src" rev-parse HEAD^1)
        return
      fi
      [ -n "$pr_base" ] || { base_error="the $event event has no pull_request.base.sha"; return; }
      # The pull request's head itself: its merge base with the base branch.
      b=$(event_field pull_request.base.ref)
      base_desc="pull request base ${b:-$pr_base}"
      if sha=$(merge_base_with "${b:-$(default_branch)}"); then base_sha=$sha; return; fi
      sha=$(fetch_commit "$pr_base") && { base_sha=$sha; return; }
      base_error="the pull request's base $pr_base could not be fetched"
      ;;
    merge_group)
      sha=$(event_field merge_group.base_sha)
      base_desc="merge group base"
      base_sha=$(fetch_commit "$sha") || base_error="the merge group's base $sha could not be fetched"
      ;;
    push)
      sha=$(event_field before)
      if [ -n "$sha" ] && [ "$sha" != "$zero" ]; then
        base_desc="previous head of $(event_field ref) (push)"
        base_sha=$(fetch_commit "$sha") || base_error="the push's previous head $sha could not be fetched (a force push that dropped it?)"
        return
      fi
      # A new branch: its merge base with the default branch.
      b=$(default_branch)
      base_desc="merge base with $b (new branch)"
      base_sha=$(merge_base_with "$b") || base_error="no merge base of HEAD and origin/$b could be found"
      ;;
    *)
      # No event, or one without a base (workflow_dispatch, schedule): the merge base with the
      # default branch; on the default branch itself, the commit before HEAD.
      b=$(default_branch)
      if sha=$(merge_base_with "$b") && [ "$sha" != "$head_sha" ]; then
        base_desc="merge base with $b"
        base_sha=$sha
        return
      fi
      base_desc="HEAD^1"
      gitq fetch --no-tags --deepen=1 origin "$head_sha" || true
      base_sha=$(commit_of HEAD^1) || base_error="neither a merge base with origin/$b nor HEAD^1 could be found"
      ;;
  esac
}
: > "$log"
find_base
if [ "$print_base" = 1 ]; then
  [ -n "$base_error" ] && die "$base_error"
  echo "$base_sha"
  exit 0
fi

# ---- ccache shared by both trees
launcher=()
if [ "${KGATE_CCACHE:-1}" != 0 ] && command -v ccache > /dev/null 2>&1; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  # Paths under the common directory of both trees are made relative; the working directory is not
  # hashed (with -g it would be); the modules' -ffile-prefix-map flags, which map each tree to the
  # same names, are left out of the hash.
  common=$src
  while [ "$common" != / ] && { [[ "$work/" != "$common/"* ]] || [[ "$build/" != "$common/"* ]]; }; do
    common=$(dirname "$common")
  done
  export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$common}
  export CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-true}
  export CCACHE_IGNOREOPTIONS=${CCACHE_IGNOREOPTIONS:-"-ffile-prefix-map=* -Xcompiler=-ffile-prefix-map=*"}
fi
jobs=${KGATE_JOBS:-$(nproc)}
target_args=()
for t in "${targets[@]}"; do target_args+=(--target "$t"); done
export PATH=${CUDA_HOME:-/usr/local/cuda}/bin:$PATH

# ---- the head
SECONDS=0
if [ ! -f "$build/CMakeCache.txt" ] || [ ${#cmake_defs[@]} -gt 0 ]; then
  args=()
  if [ ! -f "$build/CMakeCache.txt" ]; then
    command -v ninja > /dev/null 2>&1 && args+=(-G Ninja)
    args+=("-DCMAKE_BUILD_TYPE=${KGATE_BUILD_TYPE:-RelWithDebInfo}" ${launcher[@]+"${launcher[@]}"})
    [ -n "$prefix" ] && args+=("-DCMAKE_PREFIX_PATH=$(cmake_prefix_path)")
  fi
  say "configuring the head in $build"
  cmake -S "$src" -B "$build" ${args[@]+"${args[@]}"} ${cmake_defs[@]+"${cmake_defs[@]}"} > "$work/head-configure.log" 2>&1 \
    || { tail -40 "$work/head-configure.log" >&2; die "the head did not configure (log: $work/head-configure.log)"; }
fi
say "building the head (${targets[*]}, $jobs jobs)"
cmake --build "$build" -j "$jobs" "${target_args[@]}" >&2 || die "the head did not build"
# The project's kgate command: KGATE_BIN_DIR/kgate (default BUILD/bin).
kgate_bin=$(sed -n 's/^KGATE_BIN_DIR:[A-Z]*=//p' "$build/CMakeCache.txt")
kgate=${kgate_bin:-$build/bin}/kgate
[ -x "$kgate" ] || die "$kgate was not built: does the project call kgate_add_kernel()?"
say "head built in ${SECONDS}s"

# ---- the base's CMake configuration: the head's
# From the head's cache: the generator, the entries that decide how code is built, kgate's own options,
# and every entry given on the head's command line (-D); never one that names the head's build.
head_cache=$build/CMakeCache.txt
base_cache_args() {
  local gen
  gen=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$head_cache")
  [ -n "$gen" ] && printf '%s\n' "-G" "$gen"
  awk -v build="$build" '
    /^\/\// { help = $0; next }
    /^[A-Za-z_][A-Za-z0-9_.+-]*:[A-Z]+=/ {
      name = $0; sub(/:.*/, "", name)
      type = $0; sub(/^[^:]*:/, "", type); sub(/=.*/, "", type)
      value = $0; sub(/^[^=]*=/, "", value)
      keep = (help == "//No help, variable specified on the command line.") || type == "UNINITIALIZED"
      keep = keep || name ~ /^CMAKE_(BUILD_TYPE|PREFIX_PATH|CUDA_ARCHITECTURES|CUDA_HOST_COMPILER|MAKE_PROGRAM)$/
      keep = keep || name ~ /^CMAKE_(C|CXX|CUDA)_(COMPILER|COMPILER_LAUNCHER|FLAGS|FLAGS_[A-Z]+|STANDARD)$/
      keep = keep || name ~ /^CMAKE_(EXE|SHARED|MODULE)_LINKER_FLAGS(_[A-Z]+)?$/
      keep = keep || name ~ /^(KGATE_.*|kgate_DIR|Torch_DIR|TORCH_CUDA_ARCH_LIST|CUDAToolkit_ROOT)$/
      if (type == "INTERNAL" || type == "STATIC") keep = 0
      if (name ~ /^(KGATE_MODULE_DIR|KGATE_BIN_DIR)$/) keep = 0
      if (index(value, build)) keep = 0
      if (keep) print "-D" name ":" type "=" value
      help = ""
    }' "$head_cache"
}

# ccache's hit and miss counters ("HITS MISSES"; "" without ccache). The cache may be shared, so
# the difference over the base build is what this machine compiled meanwhile.
ccache_counts() {
  [ ${#launcher[@]} -gt 0 ] || return 0
  ccache --print-stats 2>/dev/null | awk '$1 ~ /^(direct|preprocessed)_cache_hit$/ { h += $2 }
    $1 == "cache_miss" { m += $2 } END { if (NR) print h + 0, m + 0 }'
}

# ---- the base: a worktree of its own, reused by later runs in this workspace
base_worktree() {
  local common_dir wt_common
  common_dir=$(cd "$src" && realpath -m "$(git rev-parse --git-common-dir)")
  gitq worktree prune
  if [ -e "$wt/.git" ]; then
    wt_common=$(cd "$wt" 2>/dev/null && realpath -m "$(git rev-parse --git-common-dir 2>/dev/null)")
    if [ "$wt_common" = "$common_dir" ] && gitq -C "$wt" checkout --force --detach "$base_sha"; then
      # Refreshed: what the last run left (but the base's build directory) is removed.
      local keep=()
      [[ "$base_build/" == "$wt/"* ]] && keep=(-e "/${base_build#"$wt"/}/")
      gitq -C "$wt" clean -ffdx ${keep[@]+"${keep[@]}"} && return 0
    fi
  fi
  # Not a worktree of this repository (or a broken one): made anew. Only what this command made is
  # removed: a worktree, or the directory inside --work-dir.
  gitq worktree remove --force "$wt" || true
  rm -rf "$wt"
  gitq worktree prune
  gitq worktree add --force --detach "$wt" "$base_sha"
}

build_base() {
  say "base: $base_desc, $base_sha (log: $log)"
  if ! base_worktree; then
    base_error="could not check out $base_desc ($base_sha) in $wt: $(tail -3 "$log" | tr '\n' ' ' | cut -c1-400)"
    return
  fi
  mapfile -t cfg < <(base_cache_args)
  # A base build of another generator or another source directory is made anew; the module records
  # of the last base are removed (this base's configure writes its own).
  if [ -f "$base_build/CMakeCache.txt" ]; then
    local home gen
    home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$base_build/CMakeCache.txt")
    gen=$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$base_build/CMakeCache.txt")
    if [ "$home" != "$base_src" ] || [ "$gen" != "$(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$head_cache")" ]; then
      rm -rf "$base_build"
    fi
  fi
  rm -rf "$base_build/kgate-modules"
  local before
  before=$(ccache_counts)
  SECONDS=0
  if ! cmake -S "$base_src" -B "$base_build" "${cfg[@]}" >> "$log" 2>&1; then
    base_error="configuring the base $base_desc ($base_sha) failed: $(tail -5 "$log" | tr '\n' ' ' | cut -c1-600)"
    return
  fi
  if ! cmake --build "$base_build" -j "$jobs" "${target_args[@]}" >> "$log" 2>&1; then
    base_error="building the base $base_desc ($base_sha) failed: $(grep -m3 -iE 'error|failed' "$log" | tr '\n' ' ' | cut -c1-600)"
    return
  fi
  local after hits=""
  after=$(ccache_counts)
  if [ -n "$before" ] && [ -n "$after" ]; then
    read -r h0 m0 <<< "$before"
    read -r h1 m1 <<< "$after"
    hits="; ccache: $((h1 - h0)) hits, $((m1 - m0)) misses"
  fi
  say "base built in ${SECONDS}s$hits"
}

if [ -z "$base_error" ]; then build_base; fi
export KGATE_BASE_REF=$base_desc
[ -n "$base_sha" ] && export KGATE_BASE_SHA=$base_sha
given_build=$base_build
if [ -n "$base_error" ]; then
  say "no base: $base_error"
  export KGATE_BASE_ERROR=$base_error
  # Never a stale base of an earlier run: kgate is given a build directory without modules.
  given_build="$work/no-base"
  rm -rf "$given_build"
  mkdir -p "$given_build/kgate-modules"
fi
say "$kgate check --baseline-build $given_build ${check_args[*]}"
"$kgate" check --baseline-build "$given_build" ${check_args[@]+"${check_args[@]}"}
