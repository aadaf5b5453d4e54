// Driver-API entry points resolved through the runtime.
#include "runtime/cuda/driver.hpp"

#include <cuda_runtime.h>

#include <string>

#include "runtime/cuda/check.hpp"

namespace kgate::cuda {
namespace {

template <typename Fn>
void resolve(Fn& fn, const char* symbol) {
  void* p = nullptr;
  cudaDriverEntryPointQueryResult status{};
  const cudaError_t rc = cudaGetDriverEntryPointByVersion(symbol, &p, CUDA_VERSION, cudaEnableDefault, &status);
  if (rc != cudaSuccess || status != cudaDriverEntryPointSuccess || p == nullptr) {
    cudaGetLastError();
    throw Error(ErrorKind::device,
                std::string("the CUDA driver API function ") + symbol +
                    " is not available (" + cudaGetErrorName(rc) + ": " + cudaGetErrorString(rc) +
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
  return api;
}

}  // namespace

const DriverApi& driver() {
  static const DriverApi api = load();
  return api;
}

}  // namespace kgate::cuda
