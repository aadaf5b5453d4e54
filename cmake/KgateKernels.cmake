# kgate_add_kernel(): one kernel under test, in kgate's own tree or in a project of your own (after
# find_package(kgate CONFIG REQUIRED), or add_subdirectory / FetchContent of kgate).
#
#   kgate_add_kernel(NAME OP op BACKEND cuda|cpu [OP_FILE file.op.json] SOURCES ...
#                    [MUTANT [FAILS_TEST T FAILS_WITH REGEX] | CONTROL] [COMPILE_OPTIONS flag...])
#   kgate_add_kernel(NAME PACKAGE dir [TILE_SIZES n...] [UNTIMED] [COMPILE_OPTIONS flag...]
#                    [OP_FILE file.op.json] [MUTANT [FAILS_TEST T FAILS_WITH REGEX] | CONTROL])
#
# PACKAGE: the kernel is described by an exported package's kgate.json alone. nvcc compiles the
# package's sources (its include_dirs and nvrtc_options applied; they may reach outside the package),
# and the kernel runs the manifest's launch plan: its guard (calls outside fall back to the
# reference), launches, grid, block, arguments and workspaces, as `kgate check --package dir` would,
# but on the build's own code (no NVRTC at run time). OP, BACKEND (cuda) and OP_FILE come from the
# manifest (OP_FILE may be given where the manifest names none). A MUTANT of a package is the same
# package built with COMPILE_OPTIONS that switch its bug on (-DMY_BUG=1 read by the device code). A broken manifest fails the build, naming the field. TILE_SIZES: block or tile sizes for
# the ragged cases beside those the guard names; UNTIMED: a correctness twin, not timed.
#
# The sources register the kernel with KGATE_REGISTER_KERNEL. The kernel becomes:
#   - an object library kgate.kernel.NAME, linked whole into the project's `kgate` command
#     (in a consumer project, find_package mode, that command is built on the first call:
#     ${KGATE_BIN_DIR}/kgate, with every verb of the installed one);
#   - a GoogleTest executable kgate.kernel.NAME.test (one test per property family), a Google
#     Benchmark executable kgate.kernel.NAME.bench, and a CTest speed gate kernel.NAME.speed_gate.
# OP_FILE: the op is declared by an op file (kgate-op/1); its bytes are compiled into the kernel, so
# the programs never read the source tree at run time (editing the file reconfigures).
# MUTANT: a deliberately broken kernel, linked into kgate with no test targets of its own, except,
# with FAILS_TEST, its GoogleTest executable and one CTest test kernel.NAME.T.fails that passes only
# when the GoogleTest test T fails with output matching REGEX (proof that T can catch it).
# CONTROL: a correct kernel of a control corpus (it sets KernelInfo::control and ::mutant), linked
# into kgate with no test targets of its own; the control suites assert that it passes.
# COMPILE_OPTIONS: compiler flags for these sources alone. A target with an OP_FILE also compiles
# a generated C++ source, so give nvcc-only flags as $<$<COMPILE_LANGUAGE:CUDA>:--fmad=false>.
#
# Inputs, set by KgateTargets.cmake (in-tree) or kgateConfig.cmake (installed):
#   KGATE_KERNEL_TEST_SOURCE, KGATE_KERNEL_BENCH_SOURCE, KGATE_COMMAND_SOURCE,
#   KGATE_EXPECT_FAILURE_SCRIPT, KGATE_BIN_DIR, KGATE_BUILD_TESTS, KGATE_BUILD_BENCHMARKS,
#   and the targets kgate::kernel_api, kgate::runner, kgate::cli.
include_guard(GLOBAL)
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

# The launcher of GPU tests (tests/support/gpu_or_skip.cpp): kgate's own build's target, or the
# installed kgate::gpu_or_skip; "" where there is neither (a kgate installed before it).
function(_kgate_gpu_or_skip_file out)
  set(file "")
  if(TARGET kgate_gpu_or_skip)
    set(file "$<TARGET_FILE:kgate_gpu_or_skip>")
  elseif(TARGET kgate::gpu_or_skip)
    set(file "$<TARGET_FILE:kgate::gpu_or_skip>")
  endif()
  set(${out} "${file}" PARENT_SCOPE)
endfunction()

# Runs the GoogleTest executable `target`'s tests through the launcher of GPU tests: without a CUDA
# device they are reported SKIPPED without being started. GLOBs name tests of it that run without
# a GPU. Before gtest_discover_tests(), which reads it.
function(_kgate_gpu_test_launcher target)
  _kgate_gpu_or_skip_file(launcher)
  if(NOT launcher)
    return()
  endif()
  foreach(glob IN LISTS ARGN)
    list(APPEND launcher "--runs-without-gpu=${glob}")
  endforeach()
  list(APPEND launcher --)
  if(CMAKE_VERSION VERSION_GREATER_EQUAL 3.29)
    set_property(TARGET ${target} PROPERTY TEST_LAUNCHER "${launcher}")
  else()
    set_property(TARGET ${target} PROPERTY CROSSCOMPILING_EMULATOR "${launcher}")
  endif()
endfunction()

# Writes a source that embeds the op file's bytes (keyed by `key`, the name its kernels carry) into
# `lib`.
function(_kgate_embed_op_file lib op_file key)
  file(READ "${op_file}" hex HEX)
  string(LENGTH "${hex}" hex_length)
  math(EXPR size "${hex_length} / 2")
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
  string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)"
                       "\\1\n" bytes "${bytes}")
  set(source "${CMAKE_CURRENT_BINARY_DIR}/${lib}.op_file.cpp")
  file(CONFIGURE OUTPUT "${source}" @ONLY CONTENT
"// Generated by kgate_add_kernel(OP_FILE): the bytes of @op_file@.
#include \"core/embedded_op_files.hpp\"
namespace {
const unsigned char kText[] = {
@bytes@0};
const bool kEmbedded = ::kgate::embed_op_file(\"@key@\", kText, @size@);
}  // namespace
")
  target_sources(${lib} PRIVATE "${source}")
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${op_file}")
endfunction()

# The project's kgate command, in a consumer project (find_package mode): the installed command's
# verbs with this project's kernels linked in. Beside it, a link to the installed package compiler.
function(_kgate_add_command)
  add_executable(kgate "${KGATE_COMMAND_SOURCE}")
  target_link_libraries(kgate PRIVATE kgate::cli)
  set_target_properties(kgate PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${KGATE_BIN_DIR}")
  if(TARGET kgate::nvrtc_worker)
    add_custom_command(TARGET kgate POST_BUILD
      COMMAND ${CMAKE_COMMAND} -E create_symlink $<TARGET_FILE:kgate::nvrtc_worker>
              "${KGATE_BIN_DIR}/kgate-nvrtc-worker"
      VERBATIM)
  endif()
endfunction()

# The test and benchmark mains are compiled once, as object libraries, for every kernel; each
# executable adds a one-line source that names its kernel (kgate_kernel_name).
function(_kgate_kernel_main kind source)
  if(NOT TARGET kgate_kernel_${kind}_main)
    add_library(kgate_kernel_${kind}_main OBJECT "${source}")
    if(kind STREQUAL "test")
      target_link_libraries(kgate_kernel_${kind}_main PUBLIC kgate::runner GTest::gtest)
    else()
      target_link_libraries(kgate_kernel_${kind}_main PUBLIC kgate::runner benchmark::benchmark)
    endif()
  endif()
endfunction()

function(_kgate_kernel_name_source NAME out_var)
  set(file "${CMAKE_CURRENT_BINARY_DIR}/kgate_kernel_name_${NAME}.cpp")
  file(CONFIGURE OUTPUT "${file}" CONTENT "extern \"C\" const char kgate_kernel_name[] = \"@NAME@\";\n" @ONLY)
  set(${out_var} "${file}" PARENT_SCOPE)
endfunction()

# kgate_reproducible_paths(TARGET)
# Maps the project's source and build trees out of TARGET's objects (-ffile-prefix-map, for C++ and,
# through -Xcompiler, for CUDA host code), so that one commit built in two directories (a head and
# its base worktree) gives the same bytes: __FILE__ (TORCH_LIBRARY, TORCH_CHECK, assert) reads
# "./ops.cpp" in both. Every kgate_add_kernel module gets it; kgate_add_torch_op gives it to a
# LIBRARY that is a target; call it on a torch-op library built otherwise.
function(kgate_reproducible_paths TARGET)
  # The trees' paths, and the same paths relative to where the compiler runs (the build directory
  # with Ninja, the target's with Makefiles): ccache with CCACHE_BASEDIR hands the compiler relative
  # paths, and __FILE__ would then name the tree ("../base-src/k.cu") in the module's code.
  set(maps "${CMAKE_SOURCE_DIR}=." "${CMAKE_BINARY_DIR}=build")
  foreach(cwd "${CMAKE_BINARY_DIR}" "${CMAKE_CURRENT_BINARY_DIR}")
    file(RELATIVE_PATH rel_src "${cwd}" "${CMAKE_SOURCE_DIR}")
    file(RELATIVE_PATH rel_bin "${cwd}" "${CMAKE_BINARY_DIR}")
    if(rel_src)
      list(APPEND maps "${rel_src}=.")
    endif()
    if(rel_bin)
      list(APPEND maps "${rel_bin}=build")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES maps)
  foreach(map IN LISTS maps)
    target_compile_options(${TARGET} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-ffile-prefix-map=${map}>
                                          $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-ffile-prefix-map=${map}>)
  endforeach()
endfunction()

# The kernel as a loadable module too, so that a later run can load this build as the base version
# of a pull request (kgate check --baseline-build DIR): kgate.module.NAME (the kernel's objects, the
# shared CUDA runtime, its references bound within the module) in KGATE_MODULE_DIR (default
# <build>/kgate-modules), with NAME.kgate-module.json beside it (format kgate-module/1: the module
# file, op, backend, the kgate version it was built against, compiler and flags). Paths of the
# source and build trees are mapped out of the objects, so one commit built in two directories
# gives the same code. KGATE_BUILD_MODULES=OFF leaves the modules out.
function(_kgate_add_module NAME lib op backend)
  if(DEFINED KGATE_BUILD_MODULES AND NOT KGATE_BUILD_MODULES)
    return()
  endif()
  if(NOT KGATE_MODULE_DIR)
    set(KGATE_MODULE_DIR "${CMAKE_BINARY_DIR}/kgate-modules")
  endif()
  set_target_properties(${lib} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  kgate_reproducible_paths(${lib})
  set(mod kgate.module.${NAME})
  add_library(${mod} MODULE $<TARGET_OBJECTS:${lib}>)
  target_link_libraries(${mod} PRIVATE kgate::runner)
  set_target_properties(${mod} PROPERTIES PREFIX "" LIBRARY_OUTPUT_DIRECTORY "${KGATE_MODULE_DIR}"
                                          CUDA_RUNTIME_LIBRARY Shared LINKER_LANGUAGE CXX)
  target_link_options(${mod} PRIVATE -Wl,-Bsymbolic)
  add_dependencies(kgate ${mod})  # building the kgate command builds the modules a later run pairs with
  if(backend STREQUAL "cuda")
    target_link_libraries(${mod} PRIVATE CUDA::cudart)
  endif()
  string(TOUPPER "${CMAKE_BUILD_TYPE}" build_type)
  # The architectures compiled for: the target's, or where LibTorch's CUDA setup turned them OFF (it
  # passes -gencode flags of its own), TORCH_CUDA_ARCH_LIST's.
  set(archs "$<TARGET_PROPERTY:${lib},CUDA_ARCHITECTURES>")
  if(TORCH_CUDA_ARCH_LIST)
    string(REPLACE ";" " " torch_archs "${TORCH_CUDA_ARCH_LIST}")
    set(archs "$<IF:$<STREQUAL:${archs},OFF>,TORCH_CUDA_ARCH_LIST ${torch_archs},${archs}>")
  endif()
  file(GENERATE OUTPUT "${KGATE_MODULE_DIR}/${NAME}.kgate-module.json" CONTENT "{
  \"format\": \"kgate-module/1\",
  \"name\": \"${NAME}\",
  \"op\": \"${op}\",
  \"backend\": \"${backend}\",
  \"module\": \"$<TARGET_FILE_NAME:${mod}>\",
  \"kgate_version\": \"${KGATE_MODULE_KGATE_VERSION}\",
  \"build\": {
    \"cxx_compiler\": \"${CMAKE_CXX_COMPILER_ID} ${CMAKE_CXX_COMPILER_VERSION}\",
    \"cuda_compiler\": \"${CMAKE_CUDA_COMPILER_ID} ${CMAKE_CUDA_COMPILER_VERSION}\",
    \"build_type\": \"${CMAKE_BUILD_TYPE}\",
    \"cxx_flags\": \"${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${build_type}}\",
    \"cuda_flags\": \"${CMAKE_CUDA_FLAGS} ${CMAKE_CUDA_FLAGS_${build_type}}\",
    \"cuda_architectures\": \"${archs}\"
  }
}
")
endfunction()

# The strings of the JSON array `key` of `json` (none when it is missing), as a list in `out`.
function(_kgate_json_strings out json key)
  set(items "")
  string(JSON n ERROR_VARIABLE err LENGTH "${json}" ${key})
  if(NOT err AND n GREATER 0)
    math(EXPR last "${n} - 1")
    foreach(i RANGE ${last})
      string(JSON item GET "${json}" ${key} ${i})
      list(APPEND items "${item}")
    endforeach()
  endif()
  set(${out} "${items}" PARENT_SCOPE)
endfunction()

# PACKAGE: the kernel is a package directory (kgate-package/1) compiled by nvcc: reads kgate.json at
# configure time for its op, op file, include_dirs and NVRTC options (as nvcc flags: -std= gives way
# to the project's CUDA standard, -default-device has no nvcc equivalent), and has
# kgate-package-source write, at build time, the unit that includes its sources and registers them.
# Sets, in the caller's scope, ARG_OP, ARG_BACKEND, ARG_OP_FILE and ARG_SOURCES, and _kgate_package_flags,
# _kgate_package_includes.
macro(_kgate_package_kernel NAME)
  get_filename_component(_pkg_dir "${ARG_PACKAGE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  set(_pkg_where "kgate_add_kernel(${NAME} PACKAGE ${ARG_PACKAGE})")
  if(NOT EXISTS "${_pkg_dir}/kgate.json")
    message(FATAL_ERROR "${_pkg_where}: ${_pkg_dir}/kgate.json does not exist; PACKAGE names a package directory")
  endif()
  if(ARG_SOURCES)
    message(FATAL_ERROR "${_pkg_where}: SOURCES and PACKAGE do not go together: the package's own sources are compiled")
  endif()
  if(ARG_BACKEND AND NOT ARG_BACKEND STREQUAL "cuda")
    message(FATAL_ERROR "${_pkg_where}: a package runs on the cuda backend, not '${ARG_BACKEND}'")
  endif()
  set(ARG_BACKEND cuda)
  file(READ "${_pkg_dir}/kgate.json" _pkg_json)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${_pkg_dir}/kgate.json")
  string(JSON _pkg_op ERROR_VARIABLE _pkg_err GET "${_pkg_json}" op)
  if(_pkg_err)
    message(FATAL_ERROR "${_pkg_where}: ${_pkg_dir}/kgate.json: \"op\": ${_pkg_err}")
  endif()
  if(ARG_OP AND NOT ARG_OP STREQUAL _pkg_op)
    message(FATAL_ERROR "${_pkg_where}: OP ${ARG_OP} differs from the manifest's \"op\": \"${_pkg_op}\"")
  endif()
  set(ARG_OP "${_pkg_op}")
  string(JSON _pkg_op_file ERROR_VARIABLE _pkg_err GET "${_pkg_json}" op_file)
  if(NOT _pkg_err AND NOT ARG_OP_FILE)
    set(ARG_OP_FILE "${_pkg_dir}/${_pkg_op_file}")
  endif()
  set(_kgate_package_includes "${_pkg_dir}")
  _kgate_json_strings(_pkg_items "${_pkg_json}" include_dirs)
  foreach(_pkg_inc IN LISTS _pkg_items)
    get_filename_component(_pkg_inc "${_pkg_inc}" ABSOLUTE BASE_DIR "${_pkg_dir}")
    list(APPEND _kgate_package_includes "${_pkg_inc}")
  endforeach()
  set(_kgate_package_flags "")
  _kgate_json_strings(_pkg_items "${_pkg_json}" nvrtc_options)
  foreach(_pkg_opt IN LISTS _pkg_items)
    if(_pkg_opt MATCHES "^-std=")
      continue()  # the project's CMAKE_CUDA_STANDARD (nvcc refuses a second -std)
    elseif(_pkg_opt STREQUAL "-default-device")
      message(FATAL_ERROR "${_pkg_where}: nvrtc_options: -default-device has no nvcc equivalent; "
                          "mark the device functions __device__, or check the package with kgate check --package")
    endif()
    list(APPEND _kgate_package_flags "$<$<COMPILE_LANGUAGE:CUDA>:${_pkg_opt}>")
  endforeach()
  if(TARGET kgate-package-source)
    set(_pkg_tool "$<TARGET_FILE:kgate-package-source>")
  elseif(TARGET kgate::package_source)
    set(_pkg_tool "$<TARGET_FILE:kgate::package_source>")
  else()
    message(FATAL_ERROR "${_pkg_where}: this kgate has no kgate-package-source (libexec/kgate); install a newer kgate")
  endif()
  file(RELATIVE_PATH _pkg_name "${CMAKE_SOURCE_DIR}" "${_pkg_dir}")
  if(_pkg_name MATCHES "^\\.\\./")
    set(_pkg_name "${_pkg_dir}")
  endif()
  set(_pkg_args --package "${_pkg_dir}" --kernel ${NAME} --source-name "${_pkg_name}")
  foreach(_pkg_t IN LISTS ARG_TILE_SIZES)
    list(APPEND _pkg_args --tile-size ${_pkg_t})
  endforeach()
  if(ARG_UNTIMED)
    list(APPEND _pkg_args --untimed)
  endif()
  if(ARG_MUTANT)
    list(APPEND _pkg_args --mutant)
  elseif(ARG_CONTROL)
    list(APPEND _pkg_args --control)
  endif()
  set(_pkg_out "${CMAKE_CURRENT_BINARY_DIR}/kgate.kernel.${NAME}.package.cu")
  add_custom_command(OUTPUT "${_pkg_out}"
    COMMAND ${_pkg_tool} ${_pkg_args} --out "${_pkg_out}"
    DEPENDS "${_pkg_dir}/kgate.json" ${_pkg_tool}
    COMMENT "Writing the unit that compiles package ${ARG_PACKAGE} into kernel ${NAME}"
    VERBATIM)
  set(ARG_SOURCES "${_pkg_out}")
endmacro()

function(kgate_add_kernel NAME)
  cmake_parse_arguments(ARG "MUTANT;CONTROL;UNTIMED" "OP;OP_FILE;BACKEND;FAILS_TEST;FAILS_WITH;PACKAGE"
                        "SOURCES;COMPILE_OPTIONS;TILE_SIZES" ${ARGN})
  if(ARG_PACKAGE)
    _kgate_package_kernel(${NAME})
  elseif(ARG_TILE_SIZES OR ARG_UNTIMED)
    message(FATAL_ERROR "kgate_add_kernel(${NAME}): TILE_SIZES and UNTIMED go with PACKAGE (other kernels set "
                        "KernelInfo::tile_sizes and ::timed in their sources)")
  endif()
  if(NOT ARG_OP OR NOT ARG_BACKEND OR NOT ARG_SOURCES)
    message(FATAL_ERROR "kgate_add_kernel(${NAME}): OP, BACKEND (cuda|cpu) and SOURCES are required")
  endif()
  if(NOT ARG_BACKEND MATCHES "^(cuda|cpu)$")
    message(FATAL_ERROR "kgate_add_kernel(${NAME}): BACKEND must be cuda or cpu, not '${ARG_BACKEND}'")
  endif()
  if((ARG_FAILS_TEST OR ARG_FAILS_WITH) AND NOT (ARG_MUTANT AND ARG_FAILS_TEST AND ARG_FAILS_WITH))
    message(FATAL_ERROR "kgate_add_kernel(${NAME}): FAILS_TEST and FAILS_WITH go together, on a MUTANT")
  endif()
  if(NOT TARGET kgate)
    _kgate_add_command()
  endif()
  set(lib kgate.kernel.${NAME})
  add_library(${lib} OBJECT ${ARG_SOURCES})
  target_link_libraries(${lib} PUBLIC kgate::kernel_api)
  target_include_directories(${lib} PRIVATE ${PROJECT_SOURCE_DIR})
  # OP_FILE: the op is declared by an op file (kgate-op/1), not built in; every kernel the sources
  # register carries its path (relative to the project's source directory when inside it), and the
  # catalogue loads it (from the embedded bytes) on first use.
  if(ARG_OP_FILE)
    get_filename_component(_op_file "${ARG_OP_FILE}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT EXISTS "${_op_file}")
      message(FATAL_ERROR "kgate_add_kernel(${NAME}): OP_FILE ${_op_file} does not exist")
    endif()
    # Named relative to the project's source directory, so that one commit built in two
    # directories compiles the same bytes (kgate check --baseline-build: UNCHANGED).
    file(RELATIVE_PATH _op_file_name "${CMAKE_SOURCE_DIR}" "${_op_file}")
    if(_op_file_name MATCHES "^\\.\\./")
      set(_op_file_name "${_op_file}")
    endif()
    target_compile_definitions(${lib} PRIVATE KGATE_OP_FILE="${_op_file_name}")
    _kgate_embed_op_file(${lib} "${_op_file}" "${_op_file_name}")
  endif()
  # MUTANT and CONTROL reach the kernel's registration (runtime/kernel.hpp: with_role).
  if(ARG_MUTANT)
    target_compile_definitions(${lib} PRIVATE KGATE_KERNEL_MUTANT=1)
  elseif(ARG_CONTROL)
    target_compile_definitions(${lib} PRIVATE KGATE_KERNEL_CONTROL=1)
  endif()
  set_property(GLOBAL APPEND PROPERTY KGATE_KERNEL_LIBRARIES ${lib})
  target_link_libraries(kgate PRIVATE ${lib})
  if(NOT ARG_MUTANT AND NOT ARG_CONTROL)  # (mutants and controls have no base version to pair)
    _kgate_add_module(${NAME} ${lib} ${ARG_OP} ${ARG_BACKEND})
  endif()
  # COMPILE_OPTIONS: flags for these sources alone (e.g. --fmad=false for a control compiled
  # without FMA contraction).
  if(ARG_COMPILE_OPTIONS)
    target_compile_options(${lib} PRIVATE ${ARG_COMPILE_OPTIONS})
  endif()
  if(ARG_PACKAGE)  # the manifest's include_dirs and options; its launch plan needs kgate's package code
    target_include_directories(${lib} PRIVATE ${_kgate_package_includes})
    target_compile_options(${lib} PRIVATE ${_kgate_package_flags})
    target_link_libraries(${lib} PUBLIC kgate::package kgate::references)
  endif()
  if(ARG_CONTROL OR (ARG_MUTANT AND NOT (KGATE_BUILD_TESTS AND ARG_FAILS_TEST)))
    # Mutants and controls get no test targets of their own: the mutant suite asserts that the
    # mutants are rejected, the control suite that the controls pass.
    return()
  endif()

  # A cuda kernel's tests run through the launcher of GPU tests.
  set(gpu_or_skip "")
  set(fails_prefix "")
  set(gate_command kgate)
  if(ARG_BACKEND STREQUAL "cuda")
    set(labels "gpu;correctness")
    set(props RESOURCE_GROUPS "gpus:1")
    _kgate_gpu_or_skip_file(gpu_or_skip)
    if(gpu_or_skip)
      set(fails_prefix "${gpu_or_skip}" --)
      set(gate_command "${gpu_or_skip}" --skip-exit=${KGATE_SKIP_RETURN_CODE} -- "$<TARGET_FILE:kgate>")
    endif()
  else()
    set(labels "cpu;correctness")
    set(props "")
  endif()
  if(KGATE_BUILD_TESTS)
    set(test kgate.kernel.${NAME}.test)
    _kgate_kernel_main(test "${KGATE_KERNEL_TEST_SOURCE}")
    _kgate_kernel_name_source(${NAME} name_source)
    add_executable(${test} "${name_source}")
    target_link_libraries(${test} PRIVATE ${lib} kgate_kernel_test_main kgate::runner GTest::gtest GTest::gtest_main)
    if(gpu_or_skip)
      _kgate_gpu_test_launcher(${test})
    endif()
  endif()
  if(ARG_MUTANT)
    # Its other tests may fail or crash: only the expected failure runs (SKIPPED without a GPU).
    add_test(NAME kernel.${NAME}.${ARG_FAILS_TEST}.fails
      COMMAND ${fails_prefix} ${CMAKE_COMMAND} -DEXE=$<TARGET_FILE:${test}> -DTEST=${ARG_FAILS_TEST}
              "-DEXPECT=${ARG_FAILS_WITH}" -P "${KGATE_EXPECT_FAILURE_SCRIPT}")
    set_tests_properties(kernel.${NAME}.${ARG_FAILS_TEST}.fails PROPERTIES
      LABELS "${labels};mutants" SKIP_REGULAR_EXPRESSION [==[\[  SKIPPED \]]==] ${props})
    return()
  endif()

  if(KGATE_BUILD_TESTS)
    gtest_discover_tests(${test} TEST_PREFIX "kernel.${NAME}." DISCOVERY_MODE PRE_TEST TEST_LIST ${test}_TESTS
                         DISCOVERY_TIMEOUT 60)  # (listing loads LibTorch: seconds from a cold page cache)
    kgate_set_discovered_properties(${test} "${labels}" "${props}")
    # The speed gate of this kernel alone, through the kgate command (SKIPPED without a GPU).
    add_test(NAME kernel.${NAME}.speed_gate
      COMMAND ${gate_command} check --kernel ${NAME} --backend ${ARG_BACKEND} --cases 8
              --out ${CMAKE_CURRENT_BINARY_DIR}/reports/${NAME}
              --no-device-exit-code ${KGATE_SKIP_RETURN_CODE})
    set_tests_properties(kernel.${NAME}.speed_gate PROPERTIES
      LABELS "${ARG_BACKEND};speed" SKIP_RETURN_CODE ${KGATE_SKIP_RETURN_CODE} ${props})
  endif()

  if(KGATE_BUILD_BENCHMARKS)
    set(bench kgate.kernel.${NAME}.bench)
    _kgate_kernel_main(bench "${KGATE_KERNEL_BENCH_SOURCE}")
    _kgate_kernel_name_source(${NAME} name_source)
    add_executable(${bench} "${name_source}")
    target_link_libraries(${bench} PRIVATE ${lib} kgate_kernel_bench_main kgate::runner benchmark::benchmark)
    # Beside the kgate command, where ci/google-benchmark.sh finds every kernel's benchmark.
    set_target_properties(${bench} PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${KGATE_BIN_DIR}")
  endif()
endfunction()

# kgate_add_torch_op(NAME LIBRARY lib SPEC spec [OPS op_file...] [ARGS check_arg...])
# A PyTorch custom op (registered with TORCH_LIBRARY in `lib`, a target or a path) gated as a
# kernel: the CTest test torch_op.NAME runs
#   kgate [--ops op_file]... check --torch-library <lib> --torch-op <spec> [ARGS...]
# on the backend the spec names (cuda by default; "cpu/NS::OP=..." for cpu), SKIPPED without a GPU.
function(kgate_add_torch_op NAME)
  cmake_parse_arguments(ARG "" "LIBRARY;SPEC;CONTRACT;OUTSIDE_CONTRACT" "OPS;ARGS" ${ARGN})
  if(NOT ARG_LIBRARY OR NOT ARG_SPEC)
    message(FATAL_ERROR "kgate_add_torch_op(${NAME}): LIBRARY and SPEC are required")
  endif()
  # CONTRACT '{"layouts": ["contiguous"], "require": ["N % 8 == 0"]}' (and OUTSIDE_CONTRACT warn):
  # the op's contract, in a config file written for the test (kernels.<its name>.contract).
  set(contract_args "")
  if(ARG_CONTRACT OR ARG_OUTSIDE_CONTRACT)
    if("--config" IN_LIST ARG_ARGS)
      message(FATAL_ERROR "kgate_add_torch_op(${NAME}): CONTRACT writes the test's config; put the "
                          "contract in your --config file instead (kernels.<name>.contract)")
    endif()
    string(REGEX REPLACE "^(cpu|cuda)/" "" kernel "${ARG_SPEC}")
    string(REGEX REPLACE "[=,].*$" "" kernel "${kernel}")
    string(REPLACE "::" "." kernel "${kernel}")
    if(ARG_SPEC MATCHES "^cpu/")
      string(APPEND kernel ".cpu")
    endif()
    set(settings "")
    if(ARG_CONTRACT)
      string(APPEND settings "\"contract\": ${ARG_CONTRACT}")
    endif()
    if(ARG_OUTSIDE_CONTRACT)
      if(settings)
        string(APPEND settings ", ")
      endif()
      string(APPEND settings "\"outside_contract\": \"${ARG_OUTSIDE_CONTRACT}\"")
    endif()
    set(config ${CMAKE_CURRENT_BINARY_DIR}/torch_op.${NAME}.kgate.json)
    file(WRITE ${config} "{\"format\": \"kgate-config/1\", \"kernels\": {\"${kernel}\": {${settings}}}}\n")
    set(contract_args --config ${config})
  endif()
  if(TARGET ${ARG_LIBRARY})
    set(library $<TARGET_FILE:${ARG_LIBRARY}>)
    # Built at the base commit in another directory, the same code is the same library (UNCHANGED
    # under --baseline-torch-library).
    kgate_reproducible_paths(${ARG_LIBRARY})
  else()
    get_filename_component(library "${ARG_LIBRARY}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
  endif()
  if(TARGET kgate)
    set(command kgate)
  else()
    set(command kgate::kgate)
  endif()
  set(ops "")
  foreach(f IN LISTS ARG_OPS)
    get_filename_component(f "${f}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    list(APPEND ops --ops "${f}")
  endforeach()
  if(ARG_SPEC MATCHES "^cpu/")
    set(backend cpu)
    set(labels "cpu;torch_op")
    set(props "")
  else()
    set(backend cuda)
    set(labels "gpu;torch_op")
    set(props RESOURCE_GROUPS "gpus:1")
  endif()
  add_test(NAME torch_op.${NAME}
    COMMAND ${command} ${ops} check --backend ${backend} --torch-library ${library} --torch-op ${ARG_SPEC}
            --out ${CMAKE_CURRENT_BINARY_DIR}/reports/torch_op.${NAME}
            --no-device-exit-code ${KGATE_SKIP_RETURN_CODE} ${contract_args} ${ARG_ARGS})
  set_tests_properties(torch_op.${NAME} PROPERTIES LABELS "${labels}" SKIP_RETURN_CODE ${KGATE_SKIP_RETURN_CODE} ${props})
endfunction()
