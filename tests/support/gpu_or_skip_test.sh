#!/usr/bin/env bash
# kgate_gpu_or_skip (tests/support/gpu_or_skip.cpp), on a machine with or without a GPU:
# listing and --runs-without-gpu tests always start; others start only with a CUDA device, else
# print "[  SKIPPED ]" and exit --skip-exit's code; a bad option is exit 2.
set -u
launcher=$1
fail() { echo "FAIL: $*"; exit 1; }
out=$("$launcher" -- /bin/echo listed --gtest_list_tests) && [ "$out" = "listed --gtest_list_tests" ] ||
  fail "listing did not start the command: '$out'"
out=$("$launcher" --runs-without-gpu='Registry.*' -- /bin/echo ran --gtest_filter=Registry.Every) &&
  [ "$out" = "ran --gtest_filter=Registry.Every" ] || fail "a --runs-without-gpu test did not start: '$out'"
"$launcher" --bogus -- /bin/true > /dev/null 2>&1; [ $? -eq 2 ] || fail "an unknown option is not exit 2"
"$launcher" > /dev/null 2>&1; [ $? -eq 2 ] || fail "no command is not exit 2"
if nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
  out=$("$launcher" --skip-exit=77 -- /bin/echo ran --gtest_filter=Gpu.Test); rc=$?
  [ $rc -eq 0 ] && [ "$out" = "ran --gtest_filter=Gpu.Test" ] || fail "with a GPU the command did not run (exit $rc): '$out'"
  out=$("$launcher" --runs-without-gpu='Registry.*' -- /bin/echo ran --gtest_filter=Registry.A:Gpu.B)
  [ "$out" = "ran --gtest_filter=Registry.A:Gpu.B" ] || fail "with a GPU a mixed filter did not run: '$out'"
  echo "PASS (with a GPU: commands run)"
else
  out=$("$launcher" --skip-exit=77 -- /bin/false --gtest_filter=Gpu.Test); rc=$?
  [ $rc -eq 77 ] || fail "without a GPU the exit code is $rc, not --skip-exit's 77"
  grep -q '^\[  SKIPPED \] no CUDA device (cudaGetDeviceCount: .*): /bin/false --gtest_filter=Gpu.Test not started$' <<< "$out" ||
    fail "without a GPU the SKIPPED line is missing: '$out'"
  out=$("$launcher" --runs-without-gpu='Registry.*' -- /bin/echo ran --gtest_filter=Registry.A:Gpu.B)
  grep -q '^\[  SKIPPED \]' <<< "$out" || fail "a filter naming a GPU test started without a GPU: '$out'"
  out=$("$launcher" --runs-without-gpu='Registry.*' -- /bin/echo ran '--gtest_filter=Registry.*-Registry.B')
  grep -q '^\[  SKIPPED \]' <<< "$out" || fail "a filter with a negative part started without a GPU: '$out'"
  echo "PASS (without a GPU: skipped, not started)"
fi
