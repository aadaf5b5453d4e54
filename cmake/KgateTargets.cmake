# One CMake function per kind of target:
#   kgate_add_library(NAME SOURCES ... [LIBS ...])          a host library of the project
#   kgate_add_test(NAME SOURCES ... [LIBS ...] [LABELS ...]) a GoogleTest executable kgate.test.NAME
#   kgate_add_kernel(NAME OP BACKEND [MUTANT [FAILS_TEST T FAILS_WITH REGEX]] SOURCES ...)
#       a kernel under test: registers it with the kgate command and makes it a test target
#       (GoogleTest + Google Benchmark + CTest speed gate); MUTANT: a deliberately broken kernel,
#       linked into kgate but with no test targets of its own, except, with FAILS_TEST, its
#       GoogleTest executable and one CTest test kernel.NAME.T.fails that passes only when the
#       GoogleTest test T fails with output matching REGEX (proof that T can fail; label mutants).
include(GoogleTest)

set(KGATE_SKIP_RETURN_CODE 77 CACHE INTERNAL "exit code a test uses to report SKIPPED to CTest")

# Sets LABELS (a list) and more properties on the tests gtest_discover_tests() finds at test time.
# Passing a list through gtest_discover_tests(PROPERTIES) escapes differently across CMake versions,
# so the properties go into a test include file that runs after discovery.
function(kgate_set_discovered_properties target labels extra)
  list(REMOVE_ITEM labels "")
  list(JOIN extra " " extra)
  set(file "${CMAKE_CURRENT_BINARY_DIR}/${target}_properties.cmake")
  file(WRITE "${file}"
    "if(DEFINED ${target}_TESTS)\n"
    "  set_tests_properties(\${${target}_TESTS} PROPERTIES LABELS \"${labels}\"\n"
    "    SKIP_REGULAR_EXPRESSION [==[\\[  SKIPPED \\]]==] ${extra})\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES "${file}")
endfunction()

function(kgate_add_test NAME)
  cmake_parse_arguments(ARG "GPU" "" "SOURCES;LIBS;LABELS" ${ARGN})
  set(target kgate.test.${NAME})
  add_executable(${target} ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  gtest_discover_tests(${target} TEST_PREFIX "${NAME}." DISCOVERY_MODE PRE_TEST TEST_LIST ${target}_TESTS)
  # GPU: the test uses the GPU when there is one (it holds a CTest GPU slot while it runs).
  if(ARG_GPU)
    kgate_set_discovered_properties(${target} "unit;${ARG_LABELS}" "RESOURCE_GROUPS gpus:1")
  else()
    kgate_set_discovered_properties(${target} "unit;${ARG_LABELS}" "")
  endif()
endfunction()

# kgate_add_kernel(NAME softmax_block OP softmax BACKEND cuda SOURCES softmax_block.cu)
# The sources register the kernel with KGATE_REGISTER_KERNEL; the object library is linked whole into
# the kgate command and into this kernel's test and benchmark executables.
function(kgate_add_kernel NAME)
  cmake_parse_arguments(ARG "MUTANT" "OP;OP_FILE;BACKEND;FAILS_TEST;FAILS_WITH" "SOURCES" ${ARGN})
  if(NOT ARG_OP OR NOT ARG_BACKEND OR NOT ARG_SOURCES)
    message(FATAL_ERROR "kgate_add_kernel(${NAME}): OP, BACKEND (cuda|cpu) and SOURCES are required")
  endif()
  if(NOT ARG_BACKEND MATCHES "^(cuda|cpu)$")
    message(FATAL_ERROR "kgate_add_kernel(${NAME}): BACKEND must be cuda or cpu, not '${ARG_BACKEND}'")
  endif()
  if((ARG_FAILS_TEST OR ARG_FAILS_WITH) AND NOT (ARG_MUTANT AND ARG_FAILS_TEST AND ARG_FAILS_WITH))
    message(FATAL_ERROR "kgate_add_kernel(${NAME}): FAILS_TEST and FAILS_WITH go together, on a MUTANT")
  endif()
  set(lib kgate.kernel.${NAME})
  add_library(${lib} OBJECT ${ARG_SOURCES})
  target_link_libraries(${lib} PUBLIC kgate_kernel_api)
  target_include_directories(${lib} PRIVATE ${PROJECT_SOURCE_DIR})
  # OP_FILE: the op is declared by an op file (kgate-op/1), not built in; every kernel the sources
  # register carries its absolute path, and the catalogue loads it on first use.
  if(ARG_OP_FILE)
    get_filename_component(_op_file "${ARG_OP_FILE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${_op_file}")
      message(FATAL_ERROR "kgate_add_kernel(${NAME}): OP_FILE ${_op_file} does not exist")
    endif()
    target_compile_definitions(${lib} PRIVATE KGATE_OP_FILE="${_op_file}")
  endif()
  set_property(GLOBAL APPEND PROPERTY KGATE_KERNEL_LIBRARIES ${lib})
  if(ARG_MUTANT AND NOT (KGATE_BUILD_TESTS AND ARG_FAILS_TEST))
    return()  # mutants get no test targets of their own: the mutant suite asserts they are rejected
  endif()

  if(ARG_BACKEND STREQUAL "cuda")
    set(labels "gpu;correctness")
    set(props RESOURCE_GROUPS "gpus:1")
  else()
    set(labels "cpu;correctness")
    set(props "")
  endif()
  if(KGATE_BUILD_TESTS)
    set(test kgate.kernel.${NAME}.test)
    add_executable(${test} ${PROJECT_SOURCE_DIR}/tests/kernel_test.cpp)
    target_compile_definitions(${test} PRIVATE KGATE_KERNEL_NAME="${NAME}")
    target_link_libraries(${test} PRIVATE ${lib} kgate_runner GTest::gtest GTest::gtest_main)
    target_include_directories(${test} PRIVATE ${PROJECT_SOURCE_DIR})
  endif()
  if(ARG_MUTANT)
    # Its other tests may fail or crash: only the expected failure runs (SKIPPED without a GPU).
    add_test(NAME kernel.${NAME}.${ARG_FAILS_TEST}.fails
      COMMAND ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:${test}> -DTEST=${ARG_FAILS_TEST}
              "-DEXPECT=${ARG_FAILS_WITH}" -P ${PROJECT_SOURCE_DIR}/cmake/KgateExpectFailure.cmake)
    set_tests_properties(kernel.${NAME}.${ARG_FAILS_TEST}.fails PROPERTIES
      LABELS "${labels};mutants" SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==] ${props})
    return()
  endif()

  if(KGATE_BUILD_TESTS)
    gtest_discover_tests(${test} TEST_PREFIX "kernel.${NAME}." DISCOVERY_MODE PRE_TEST TEST_LIST ${test}_TESTS)
    kgate_set_discovered_properties(${test} "${labels}" "${props}")
    # The speed gate of this kernel alone, through the kgate command (SKIPPED without a GPU).
    add_test(NAME kernel.${NAME}.speed_gate
      COMMAND kgate check --kernel ${NAME} --backend ${ARG_BACKEND} --cases 8
              --out ${CMAKE_CURRENT_BINARY_DIR}/reports/${NAME}
              --no-device-exit-code ${KGATE_SKIP_RETURN_CODE})
    set_tests_properties(kernel.${NAME}.speed_gate PROPERTIES
      LABELS "${ARG_BACKEND};speed" SKIP_RETURN_CODE ${KGATE_SKIP_RETURN_CODE} ${props})
  endif()

  if(KGATE_BUILD_BENCHMARKS)
    set(bench kgate.kernel.${NAME}.bench)
    add_executable(${bench} ${PROJECT_SOURCE_DIR}/bench/kernel_bench.cpp)
    target_compile_definitions(${bench} PRIVATE KGATE_KERNEL_NAME="${NAME}")
    target_link_libraries(${bench} PRIVATE ${lib} kgate_runner benchmark::benchmark)
    target_include_directories(${bench} PRIVATE ${PROJECT_SOURCE_DIR})
    # Beside the kgate command, where ci/google-benchmark.sh finds every kernel's benchmark.
    set_target_properties(${bench} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/bin)
  endif()
endfunction()
