#!/usr/bin/env bash
# The worker sandbox, end to end (cpu backend, no GPU needed). A custom op that reads a file of the
# user's, or the environment of its parent (kgate's: the CI job's secrets), returns zeros when it can.
#   isolated (a worker, sandboxed): it cannot read them -> PASS, the report says "landlock"
#   --no-isolate (kgate's own process): it can -> FAILED (exit 1): the test can fail
#   --no-isolate with --require-sandbox -> exit 4 before anything runs
# Where Landlock is unavailable the worker runs unconfined: the report says so, and
# --require-sandbox makes the worker refuse (exit 4 from the worker, FAILED in the report).
set -uo pipefail
kgate=$1 lib=$2 out=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out"
# The secret must lie where the sandbox does not open up: not below /tmp.
secret_dir="$out/secret"
case "$(cd "$out" && pwd -P)" in /tmp/*|/var/tmp/*) secret_dir="$HOME/.kgate-sandbox-test-$$" ;; esac
mkdir -p "$secret_dir" && echo "kgate-test-secret" > "$secret_dir/token"
trap 'rm -rf "$secret_dir"' EXIT
export KGATE_TEST_SNOOP_FILE="$secret_dir/token"
op=(--backend cpu --torch-library "$lib" --torch-op cpu/kgate_test::softmax_snoop_out=softmax --cases 8 --no-speed)
landlock=$(python3 -c 'import ctypes; l = ctypes.CDLL(None); print(1 if l.syscall(444, None, 0, 1) >= 1 else 0)' 2>/dev/null || echo 0)

"$kgate" check "${op[@]}" --no-isolate --out "$out/unconfined" > "$out/unconfined.log" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$out/unconfined.log"; fail "--no-isolate: the snooping op could not read the secret (exit $rc, expected 1): the test proves nothing"; }
grep -q '"sandbox": "none: --no-isolate' "$out/unconfined/report.json" || fail "--no-isolate: the report does not say the run was unconfined"

"$kgate" --require-sandbox check "${op[@]}" --no-isolate --out "$out/required" > "$out/required.log" 2>&1
rc=$?
[ $rc -eq 4 ] || { cat "$out/required.log"; fail "--require-sandbox --no-isolate exited $rc, expected 4"; }
grep -q "drop one of them" "$out/required.log" || { cat "$out/required.log"; fail "--require-sandbox --no-isolate: no fix named"; }

"$kgate" check "${op[@]}" --out "$out/worker" > "$out/worker.log" 2>&1
rc=$?
if [ "$landlock" = 1 ]; then
  [ $rc -eq 0 ] || { cat "$out/worker.log"; fail "in a sandboxed worker the snooping op read a secret (or the run broke): exit $rc, expected 0"; }
  grep -q '"sandbox": "landlock' "$out/worker/report.json" || fail "the report does not say the worker ran under Landlock"
  echo "ok: sandboxed worker: the op could not read $KGATE_TEST_SNOOP_FILE or kgate's environ (PASS); --no-isolate: it could (FAILED)"
else
  [ $rc -eq 1 ] || { cat "$out/worker.log"; fail "without Landlock the worker is unconfined: expected exit 1, got $rc"; }
  grep -q '"sandbox": "none:' "$out/worker/report.json" || fail "the report does not say the worker ran unconfined"
  grep -q "workers run unconfined" "$out/worker.log" || fail "no warning that the workers ran unconfined"
  echo "SKIPPED (visibly): no Landlock on this machine; the report and the log say the workers ran unconfined"
fi
