# One CMake function per kind of target:
#   kgate_add_library(NAME SOURCES ... [LIBS ...])          a host library of the project
#   kgate_add_test(NAME SOURCES ... [LIBS ...] [LABELS ...]) a GoogleTest executable kgate.test.NAME
#   kgate_add_kernel(NAME OP BACKEND [MUTANT [FAILS_TEST T FAILS_WITH REGEX]] SOURCES ...)
#       a kernel under test: registers it with the kgate command and makes it a test target
#       (GoogleTest + Google Benchmark + CTest speed gate); MUTANT: a deliberately broken kernel,
#       linked into kgate but with no test targets of its own, except, with FAILS_TEST, its
#       GoogleTest executable and one CTest test kernel.NAME.T.fails that passes only when the
#       GoogleTest test T fails with output matching REGEX (proof that T can fail; label mutants).
# kgate_add_kernel() is the function a consumer project gets too: it lives in KgateKernels.cmake,
# which the install puts beside kgateConfig.cmake. Here it uses this build's targets and sources.
# Cache entries, not variables: a project that adds kgate with add_subdirectory / FetchContent calls
# kgate_add_kernel() from its own directories, which do not see this directory's variables.
set(KGATE_KERNEL_TEST_SOURCE ${PROJECT_SOURCE_DIR}/tests/kernel_test.cpp CACHE INTERNAL "")
set(KGATE_KERNEL_BENCH_SOURCE ${PROJECT_SOURCE_DIR}/bench/kernel_bench.cpp CACHE INTERNAL "")
set(KGATE_COMMAND_SOURCE ${PROJECT_SOURCE_DIR}/cli/kgate_main.cpp CACHE INTERNAL "")
set(KGATE_EXPECT_FAILURE_SCRIPT ${PROJECT_SOURCE_DIR}/cmake/KgateExpectFailure.cmake CACHE INTERNAL "")
set(KGATE_BIN_DIR ${PROJECT_BINARY_DIR}/bin CACHE INTERNAL "")
# The version a module records: kgate's and its kernel ABI (KGATE_KERNEL_ABI in runtime/kernel.hpp).
file(STRINGS "${PROJECT_SOURCE_DIR}/runtime/kernel.hpp" _kgate_abi REGEX "^#define KGATE_KERNEL_ABI [0-9]+$")
string(REGEX REPLACE "^#define KGATE_KERNEL_ABI " "" _kgate_abi "${_kgate_abi}")
if(NOT _kgate_abi MATCHES "^[0-9]+$")
  message(FATAL_ERROR "runtime/kernel.hpp: no '#define KGATE_KERNEL_ABI <number>' line")
endif()
set(KGATE_MODULE_KGATE_VERSION "${PROJECT_VERSION}+kernel-abi.${_kgate_abi}" CACHE INTERNAL "")
include(KgateKernels)

function(kgate_add_test NAME)
  cmake_parse_arguments(ARG "GPU" "" "SOURCES;LIBS;LABELS" ${ARGN})
  set(target kgate.test.${NAME})
  add_executable(${target} ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE ${ARG_LIBS} GTest::gtest GTest::gtest_main)
  target_include_directories(${target} PRIVATE ${PROJECT_SOURCE_DIR})
  if(KGATE_TEST_CXX_OPT)  # (CMakeLists.txt says why)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:${KGATE_TEST_CXX_OPT}>)
  endif()
  gtest_discover_tests(${target} TEST_PREFIX "${NAME}." DISCOVERY_MODE PRE_TEST TEST_LIST ${target}_TESTS
                       DISCOVERY_TIMEOUT 60)  # (listing loads LibTorch: seconds from a cold page cache)
  # GPU: the test uses the GPU when there is one (it holds a CTest GPU slot while it runs).
  if(ARG_GPU)
    kgate_set_discovered_properties(${target} "unit;${ARG_LABELS}" "RESOURCE_GROUPS gpus:1")
  else()
    kgate_set_discovered_properties(${target} "unit;${ARG_LABELS}" "")
  endif()
endfunction()

