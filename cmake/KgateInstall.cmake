# `cmake --install`: the kgate command, its package compiler, and what a project of its own needs to
# make its kernels test targets with find_package(kgate CONFIG REQUIRED):
#   bin/kgate                          the command (with kgate's own example kernels)
#   bin/kgate-pr                       a project's change against its base, in one command
#                                      (ci/kgate-pr.sh)
#   bin/kgate-triton-pack              a Triton kernel's compiled specializations made a package
#                                      (tools/kgate_triton_pack.py; Python 3, no Triton needed)
#   libexec/kgate/kgate-nvrtc-worker   the sandboxed package compiler it runs
#   libexec/kgate/kgate_gpu_or_skip    the launcher of GPU tests (SKIPPED unstarted without a GPU)
#   libexec/kgate/kgate-package-source writes the unit that compiles a package into a build
#                                      (kgate_add_kernel PACKAGE)
#   lib/libkgate_*.so, include/kgate/  the libraries and headers a kernel, its tests and a command link
#                                      (shared: the runner is linked once, not into every executable;
#                                      libkgate_cli.a is the command's verbs, linked into one kgate)
#   lib/cmake/kgate/                   kgateConfig.cmake, the exported targets, kgate_add_kernel()
#   share/kgate/src/                   the test, benchmark and command mains kgate_add_kernel() builds
#   share/kgate/schemas/               JSON Schemas of op files and package manifests
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(_kgate_libraries kgate_core kgate_report kgate_kernel_api kgate_speed kgate_gates kgate_cuda
    kgate_references kgate_package kgate_plan kgate_runner kgate_cli)
foreach(lib IN LISTS _kgate_libraries)
  string(REGEX REPLACE "^kgate_" "" export_name "${lib}")
  set_target_properties(${lib} PROPERTIES EXPORT_NAME ${export_name})
endforeach()
set_target_properties(kgate-nvrtc-worker PROPERTIES EXPORT_NAME nvrtc_worker)
set_target_properties(kgate PROPERTIES EXPORT_NAME kgate)
set_target_properties(kgate_gpu_or_skip PROPERTIES EXPORT_NAME gpu_or_skip)
set_target_properties(kgate-package-source PROPERTIES EXPORT_NAME package_source INSTALL_RPATH "$ORIGIN/../../${CMAKE_INSTALL_LIBDIR}")

# kgate's libraries are shared (lib/ of the build tree, lib/ of an install): the runner, LibTorch's
# users and the kernel registry exist once per process, and the many per-kernel test and benchmark
# executables link them in seconds instead of each carrying a copy.
# Installed binaries find kgate's libraries beside them (lib/), LibTorch and CUDA where they were linked
# (CMAKE_INSTALL_RPATH_USE_LINK_PATH).
set_target_properties(kgate PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")
foreach(lib IN LISTS _kgate_libraries)
  get_target_property(_kgate_type ${lib} TYPE)
  if(_kgate_type STREQUAL "SHARED_LIBRARY")
    set_target_properties(${lib} PROPERTIES INSTALL_RPATH "$ORIGIN" LIBRARY_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/lib)
  endif()
endforeach()
install(TARGETS kgate EXPORT kgateTargets RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(PROGRAMS ${PROJECT_SOURCE_DIR}/ci/kgate-pr.sh DESTINATION ${CMAKE_INSTALL_BINDIR} RENAME kgate-pr)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/kgate_triton_pack.py DESTINATION ${CMAKE_INSTALL_BINDIR}
        RENAME kgate-triton-pack)
install(TARGETS kgate-nvrtc-worker EXPORT kgateTargets RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/kgate)
install(TARGETS kgate_gpu_or_skip EXPORT kgateTargets RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/kgate)
install(TARGETS kgate-package-source EXPORT kgateTargets RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/kgate)
install(TARGETS ${_kgate_libraries} EXPORT kgateTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

# Headers keep their layout ("runtime/kernel.hpp"): include/kgate is the include directory.
foreach(dir core report runtime runtime/cuda runtime/package gates/correctness gates/props gates/sensitivity
            gates/speed references plan cli)
  file(GLOB _headers "${PROJECT_SOURCE_DIR}/${dir}/*.hpp" "${PROJECT_SOURCE_DIR}/${dir}/*.cuh")
  install(FILES ${_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kgate/${dir})
endforeach()

set(_kgate_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/kgate)
install(EXPORT kgateTargets NAMESPACE kgate:: DESTINATION ${_kgate_cmake_dir})
set(KGATE_BUILT_TORCH_DIR "${Torch_DIR}")
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/kgateConfig.cmake.in
  ${PROJECT_BINARY_DIR}/kgateConfig.cmake INSTALL_DESTINATION ${_kgate_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/kgateConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/kgateConfig.cmake ${PROJECT_BINARY_DIR}/kgateConfigVersion.cmake
              ${PROJECT_SOURCE_DIR}/cmake/KgateKernels.cmake ${PROJECT_SOURCE_DIR}/cmake/KgateExpectFailure.cmake
        DESTINATION ${_kgate_cmake_dir})
install(FILES ${PROJECT_SOURCE_DIR}/tests/kernel_test.cpp ${PROJECT_SOURCE_DIR}/bench/kernel_bench.cpp
              ${PROJECT_SOURCE_DIR}/cli/kgate_main.cpp
        DESTINATION ${CMAKE_INSTALL_DATADIR}/kgate/src)
install(FILES ${PROJECT_SOURCE_DIR}/core/kgate-op.schema.json ${PROJECT_SOURCE_DIR}/runtime/package/kgate-package.schema.json
        DESTINATION ${CMAKE_INSTALL_DATADIR}/kgate/schemas)
