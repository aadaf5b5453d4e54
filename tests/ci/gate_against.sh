#!/usr/bin/env bash
# ci/gate.sh --against REF when REF cannot be used (no GPU needed): every kernel is gated against
# eager alone, report.json's meta.base.error says why and names the ref, the exit code is the
# eager-only one (0), and --require-base makes it 4. (A base that builds is measured on the GPU
# machine: docs/ci.md.) Usage: gate_against.sh SOURCE_DIR BUILD_DIR OUT_DIR
set -u
src=$1
build=$2
out=$3
rm -rf "$out"
mkdir -p "$out"
fail() { echo "FAIL: $*"; exit 1; }
run() {  # expected-exit name [args...]
  local expect=$1 name=$2
  shift 2
  GIT_TERMINAL_PROMPT=0 CUDA_VISIBLE_DEVICES= KGATE_BUILD_DIR="$build" KGATE_GOOGLE_BENCHMARK=0 \
    KGATE_REPORTS="$out/$name" KGATE_BASE_DIR="$out/base" \
    bash "$src/ci/gate.sh" --against kgate-no-such-ref --backend cpu --kernel softmax_cpu --cases 4 --no-speed -q "$@" \
    > "$out/$name.log" 2>&1
  local rc=$?
  [ $rc -eq "$expect" ] || { tail -30 "$out/$name.log"; fail "$name: exit $rc, expected $expect"; }
}
run 0 eager_only
err=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['meta']['base']['error'])" "$out/eager_only/report.json")
case "$err" in *"kgate-no-such-ref"*"could not be found"*) ;; *) fail "meta.base.error: '$err'" ;; esac
ref=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['meta']['base'].get('ref'))" "$out/eager_only/report.json")
[ "$ref" = kgate-no-such-ref ] || fail "meta.base.ref: $ref"
echo "eager only: $err"
run 4 required --require-base
echo "--require-base: exit 4"
echo "PASS"
