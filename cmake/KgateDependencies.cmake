# Dependency discovery: CUDA toolkit (cudart, NVRTC, CUPTI), LibTorch, GoogleTest, Google Benchmark,
# nlohmann/json, CLI11. The driver API and NVML are reached at run time (dlopen / entry points) and are
# never linked: CI machines have neither a driver nor NVML, and the binaries must still start there.

find_package(CUDAToolkit REQUIRED)
if(NOT TARGET CUDA::cupti)
  message(FATAL_ERROR "kgate: CUPTI was not found in the CUDA toolkit at ${CUDAToolkit_LIBRARY_ROOT}. "
                      "Install the toolkit's CUPTI component (cuda-cupti) or point CUDAToolkit_ROOT at a full toolkit.")
endif()

# LibTorch: Torch_DIR wins; otherwise ask the python3 that has the torch wheel.
if(NOT Torch_DIR)
  find_package(Python3 COMPONENTS Interpreter QUIET)
  if(Python3_Interpreter_FOUND)
    execute_process(
      COMMAND "${Python3_EXECUTABLE}" -c "import torch, sys; sys.stdout.write(torch.utils.cmake_prefix_path)"
      OUTPUT_VARIABLE _kgate_torch_prefix
      ERROR_QUIET
      RESULT_VARIABLE _kgate_torch_rc)
    if(_kgate_torch_rc EQUAL 0 AND _kgate_torch_prefix)
      list(APPEND CMAKE_PREFIX_PATH "${_kgate_torch_prefix}")
    endif()
  endif()
endif()
# Torch's own CUDA setup reads TORCH_CUDA_ARCH_LIST; keep it in step with ours.
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST} AND NOT TORCH_CUDA_ARCH_LIST)
  list(GET CMAKE_CUDA_ARCHITECTURES 0 _kgate_first_arch)
  string(REGEX REPLACE "^([0-9]+)([0-9])[a-z]*$" "\\1.\\2" _kgate_torch_arch "${_kgate_first_arch}")
  set(TORCH_CUDA_ARCH_LIST "${_kgate_torch_arch}")
endif()
find_package(Torch QUIET)
if(NOT Torch_FOUND)
  message(FATAL_ERROR "kgate: LibTorch was not found. Install the torch==2.11.0 wheel (ci/setup.sh does) "
                      "so that `python3 -c 'import torch'` works, or pass -DTorch_DIR=<libtorch>/share/cmake/Torch.")
endif()
# Torch's flags stay on the targets that link it: wrap them in one interface target. Libraries that
# are installed link ${KGATE_TORCH_DEPS}: in an installed tree, kgateConfig.cmake finds LibTorch again
# and defines kgate::torch_deps (no paths of this machine in the exported targets).
set(KGATE_TORCH_DEPS $<BUILD_INTERFACE:kgate_torch_deps> $<INSTALL_INTERFACE:kgate::torch_deps>)
add_library(kgate_torch_deps INTERFACE)
target_link_libraries(kgate_torch_deps INTERFACE ${TORCH_LIBRARIES})
target_include_directories(kgate_torch_deps SYSTEM INTERFACE ${TORCH_INCLUDE_DIRS})
if(TORCH_CXX_FLAGS)
  separate_arguments(_kgate_torch_flags UNIX_COMMAND "${TORCH_CXX_FLAGS}")
  target_compile_options(kgate_torch_deps INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${_kgate_torch_flags}>)
endif()

find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
if(KGATE_BUILD_TESTS)
  find_package(GTest REQUIRED)
endif()
if(KGATE_BUILD_BENCHMARKS)
  find_package(benchmark REQUIRED)
endif()
# Added to another project (add_subdirectory / FetchContent): its kgate_add_kernel() calls link these
# from their own directories, which see only global imported targets.
if(NOT PROJECT_IS_TOP_LEVEL)
  foreach(t GTest::gtest GTest::gtest_main benchmark::benchmark)
    if(TARGET ${t})
      get_target_property(_kgate_aliased ${t} ALIASED_TARGET)
      if(NOT _kgate_aliased)
        set_target_properties(${t} PROPERTIES IMPORTED_GLOBAL TRUE)
      endif()
    endif()
  endforeach()
endif()

# Binaries find libtorch / CUDA libraries through their build rpath; installs get the same.
set(CMAKE_BUILD_RPATH_USE_ORIGIN ON)
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
