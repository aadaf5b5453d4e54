# Runs one GoogleTest test of a mutant's kernel test target and succeeds only when that test FAILS
# (its assertions, not a crash) with output matching EXPECT: the proof that the test can catch the
# bug class the mutant stands for. A SKIPPED test (no GPU) is passed through for CTest to see.
#   cmake -DEXE=kgate.kernel.NAME.test -DTEST=Kernel.Memory -DEXPECT=regex -P KgateExpectFailure.cmake
foreach(var EXE TEST EXPECT)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "KgateExpectFailure.cmake: -D${var}=... is required")
  endif()
endforeach()

execute_process(COMMAND "${EXE}" "--gtest_filter=${TEST}" --gtest_color=no
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(rc EQUAL 0 AND out MATCHES "\\[  SKIPPED \\] ")
  message("${TEST} was SKIPPED: nothing to expect")
  return()
endif()
string(REPLACE "." "\\." test_regex "${TEST}")
if(rc EQUAL 0)
  message(FATAL_ERROR "${TEST} passed, but this mutant must make it fail (matching '${EXPECT}')")
elseif(NOT out MATCHES "\\[  FAILED  \\] ${test_regex} ")
  message(FATAL_ERROR "${TEST} did not fail by its assertions (exit status: ${rc}); expected a failure "
                      "matching '${EXPECT}'")
elseif(NOT out MATCHES "${EXPECT}")
  message(FATAL_ERROR "${TEST} failed, but not with output matching '${EXPECT}'")
endif()
message("${TEST} failed as expected (output matches '${EXPECT}')")
