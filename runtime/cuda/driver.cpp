// Driver-API entry points resolved through the runtime.
#include "runtime/cuda/driver.hpp"

#include <cuda_runtime.h>

#include <string>

#include "runtime/cuda/check.hpp"

namespace kgate::cuda {
namespace {

template <typename Fn>
void resolve(Fn& fn, const char* symbol) {
  int code = 0;
  void* p = driver_function(symbol, &code);
  if (p == nullptr) {
    const auto rc = static_cast<cudaError_t>(code);
    throw Error(
        ErrorKind::device,
        std::string("the CUDA driver API function ") + symbol + " is not available (" +
            cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc) +
            "): is an NVIDIA driver installed and a GPU visible? kgate needs driver >= CUDA " +
            std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10));
  }
  fn = reinterpret_cast<Fn>(p);
}

DriverApi load() {
  DriverApi api;
  resolve(api.GetErrorName, "cuGetErrorName");
  resolve(api.GetErrorString, "cuGetErrorString");
  resolve(api.DriverGetVersion, "cuDriverGetVersion");
  resolve(api.ModuleLoadData, "cuModuleLoadData");
  resolve(api.ModuleUnload, "cuModuleUnload");
  resolve(api.ModuleGetFunction, "cuModuleGetFunction");
  resolve(api.FuncSetAttribute, "cuFuncSetAttribute");
  resolve(api.LaunchKernel, "cuLaunchKernel");
  resolve(api.CtxGetCurrent, "cuCtxGetCurrent");
  api.LaunchKernelEx =
      reinterpret_cast<decltype(api.LaunchKernelEx)>(driver_function("cuLaunchKernelEx"));
  return api;
}

}  // namespace

void* driver_function(const char* symbol, int* rc) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status{};
  const cudaError_t r =
      cudaGetDriverEntryPointByVersion(symbol, &p, CUDA_VERSION, cudaEnableDefault, &status);
  if (rc) *rc = static_cast<int>(r);
  if (r == cudaSuccess && status == cudaDriverEntryPointSuccess && p != nullptr) return p;
  cudaGetLastError();
  return nullptr;
}

const DriverApi& driver() {
  static const DriverApi api = load();
  return api;
}

}  // namespace kgate::cuda
