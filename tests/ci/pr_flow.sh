#!/usr/bin/env bash
# kgate-pr end to end on the cpu backend, as a consumer project's CI would run it: kgate installed
# (cmake --install, which installs bin/kgate-pr), an origin repository made from examples/consumer
# (its cpu kernel alone), and one persistent workspace, a shallow clone (fetch-depth 2), in which:
#   push      one commit pushed: the base is `before`, built in a worktree, paired (revision changed)
#   rerun     the same run again in the same workspace (the worktree is reused; must not fail)
#   push3     three commits pushed: `before` is not in the clone and is fetched
#   newbranch a new branch (before = zeros): the merge base with the default branch, after the
#             checkout was cleaned (git clean -ffdx, as actions/checkout does: stale worktree)
#   broken    a base that does not compile: gated against eager (exit 0), meta.base.error says so;
#             --require-base makes it exit 4
# and, without building, the base of a pull request (merge commit and head checkout) and of a
# workflow_dispatch run (--print-base). Usage: pr_flow.sh SOURCE_DIR BUILD_DIR OUT_DIR
set -u
src=$1
build=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
t0=$SECONDS
cmake --install "$build" --prefix "$out/prefix" > "$out/install.log" 2>&1 || { cat "$out/install.log"; fail "cmake --install"; }
kpr="$out/prefix/bin/kgate-pr"
[ -x "$kpr" ] || fail "cmake --install put no executable bin/kgate-pr in the prefix"
prefix_path=$("$kpr" --cmake-prefix-path) || fail "kgate-pr --cmake-prefix-path"
[[ "$prefix_path" == "$out/prefix;"* ]] && [ -f "${prefix_path#*;}/Torch/TorchConfig.cmake" ] ||
  fail "kgate-pr --cmake-prefix-path printed '$prefix_path', not the prefix and torch's CMake directory"

export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t GIT_COMMITTER_EMAIL=t@example.com
export GIT_CONFIG_GLOBAL=/dev/null GIT_TERMINAL_PROMPT=0 CUDA_VISIBLE_DEVICES= KGATE_JOBS=2
origin="$out/origin.git"
seed="$out/seed"
ws="$out/ws"
git init -q --bare -b main "$origin"
cp -r "$src/examples/consumer" "$seed"
g() { git -C "$seed" "$@"; }
g init -q -b main
g add -A && g commit -qm "the consumer project"
# A revision of the cpu kernel: a function kept in its file, so its module's code changes.
revision() {
  grep -v -e 'l2n_revision' -e '#error' "$seed/l2_normalize_cpu.cpp" > "$seed/k.tmp" && mv "$seed/k.tmp" "$seed/l2_normalize_cpu.cpp"
  echo "[[gnu::used]] static int l2n_revision() { return $1; }" >> "$seed/l2_normalize_cpu.cpp"
  g commit -qam "revision $1"
  g rev-parse HEAD
}
c1=$(g rev-parse HEAD)
c2=$(revision 2)
c3=$(revision 3)
c4=$(revision 4)
g checkout -q -b feature "$c2"
revision 21 > /dev/null
f2=$(revision 22)
g checkout -q -b broken "$c4"
echo '#error this revision does not compile' >> "$seed/l2_normalize_cpu.cpp"
g commit -qam "a revision that does not compile"
b0=$(g rev-parse HEAD)
revision 5 > /dev/null
g checkout -q -b pr-merge "$c4"
g merge -q --no-ff -X theirs -m "merge feature" feature
m=$(g rev-parse HEAD)
g push -q "$origin" main feature broken pr-merge:refs/pull/1/merge || fail "push to the origin"

git clone -q --depth=2 --branch main "file://$origin" "$ws" || fail "clone"
# actions/checkout in a persistent workspace: fetch the ref (depth 2) and check it out.
checkout() {  # REF [clean]
  git -C "$ws" fetch -q --no-tags --depth=2 origin "+$1:refs/remotes/origin/checkout" || fail "fetch $1"
  git -C "$ws" checkout -q --force --detach refs/remotes/origin/checkout || fail "checkout $1"
  [ "${2:-}" = clean ] && git -C "$ws" clean -q -ffdx
  return 0
}
event() {  # NAME JSON: writes the event payload, sets the GitHub variables
  echo "$2" > "$out/event-$1.json"
  export GITHUB_EVENT_NAME=$1 GITHUB_EVENT_PATH="$out/event-$1.json"
}
push_event() { event push "{\"before\": \"$1\", \"ref\": \"refs/heads/$2\", \"repository\": {\"default_branch\": \"main\"}}"; }
field() {  # REPORT_DIR PYTHON_EXPR over r (the report) and k (the kernel)
  python3 -c "import json, sys
r = json.load(open(sys.argv[1] + '/report.json'))
k = [k for k in r['kernels'] if k['name'] == 'l2_normalize_cpu'][0]
print($2)" "$out/$1" 2>&1
}
run() {  # EXPECTED_EXIT NAME [kgate-pr options...]
  local expect=$1 name=$2 rc t=$SECONDS
  shift 2
  (cd "$ws" && "$kpr" -DEXAMPLE_CUDA_KERNELS=OFF "$@" -- --backend cpu --kernel l2_normalize_cpu --cases 2 \
    --family random --no-speed -q --out "$out/$name") > "$out/$name.log" 2>&1
  rc=$?
  [ $rc -eq "$expect" ] || { tail -40 "$out/$name.log"; fail "$name: exit $rc, expected $expect"; }
  echo "$name: exit $rc in $((SECONDS - t)) s; $(grep -o 'base built in .*' "$out/$name.log" | head -1)"
}
expect_base() {  # NAME SHA STATUS
  local sha err status
  sha=$(field "$1" "r['meta']['base'].get('sha')")
  err=$(field "$1" "r['meta']['base'].get('error')")
  status=$(field "$1" "k['base']['status']")
  [ "$sha" = "$2" ] || { tail -20 "$out/$1.log"; fail "$1: meta.base.sha is '$sha', expected $2"; }
  [ -z "$err" ] || fail "$1: meta.base.error: $err"
  [ "$status" = "$3" ] || fail "$1: l2_normalize_cpu's base status is '$status', expected $3"
}

checkout refs/heads/main
push_event "$c3" main
run 0 push
expect_base push "$c3" paired
run 0 rerun
expect_base rerun "$c3" paired
grep -q "already exists" "$out/rerun.log" && fail "rerun: 'already exists' in its log"

git -C "$ws" cat-file -e "$c1^{commit}" 2> /dev/null && fail "push3: the clone already has $c1"
push_event "$c1" main
run 0 push3
expect_base push3 "$c1" paired

checkout refs/heads/feature clean
push_event 0000000000000000000000000000000000000000 feature
run 0 newbranch
expect_base newbranch "$c2" paired
ref=$(field newbranch "r['meta']['base'].get('ref')")
[[ "$ref" == *"merge base with main"* ]] || fail "newbranch: meta.base.ref is '$ref'"

checkout refs/heads/broken
push_event "$b0" broken
run 0 broken
err=$(field broken "r['meta']['base'].get('error')")
case "$err" in *"building the base"*"$b0"*"this revision does not compile"*) ;; *) fail "broken: meta.base.error: '$err'" ;; esac
[ "$(field broken "k['base']['status']")" = new ] || fail "broken: the kernel is not gated against eager alone"
[ "$(field broken "r['meta']['base'].get('sha')")" = "$b0" ] || fail "broken: meta.base.sha"
echo "broken: $err"
run 4 broken_required --require-base
grep -q "require-base" "$out/broken_required.log" || fail "broken_required: no --require-base message"

# The base of other events, without building (--print-base).
print_base() {  # EXPECTED_SHA NAME
  local got
  got=$(cd "$ws" && "$kpr" --print-base 2> "$out/$2.log") || { cat "$out/$2.log"; fail "$2: --print-base failed"; }
  [ "$got" = "$1" ] || fail "$2: base $got, expected $1"
  echo "$2: base ok"
}
pr="{\"pull_request\": {\"head\": {\"sha\": \"$f2\"}, \"base\": {\"sha\": \"$c4\", \"ref\": \"main\"}}, \"repository\": {\"default_branch\": \"main\"}}"
checkout refs/pull/1/merge
event pull_request "$pr"
print_base "$c4" pr_merge_commit
checkout refs/heads/feature
print_base "$c2" pr_head_checkout
checkout refs/heads/main
event workflow_dispatch '{"repository": {"default_branch": "main"}}'
print_base "$c3" dispatch_on_main
echo "PASS in $((SECONDS - t0)) s"
