// The few driver-API functions kgate uses, resolved at run time through
// cudaGetDriverEntryPointByVersion: kgate never links libcuda, so it starts on machines without a
// driver (CI) and reports "no driver" as an error there instead of failing to load.
#pragma once

#include <cuda.h>

namespace kgate::cuda {

struct DriverApi {
  decltype(&::cuGetErrorName) GetErrorName = nullptr;
  decltype(&::cuGetErrorString) GetErrorString = nullptr;
  decltype(&::cuDriverGetVersion) DriverGetVersion = nullptr;
  decltype(&::cuModuleLoadData) ModuleLoadData = nullptr;
  decltype(&::cuModuleUnload) ModuleUnload = nullptr;
  decltype(&::cuModuleGetFunction) ModuleGetFunction = nullptr;
  decltype(&::cuFuncSetAttribute) FuncSetAttribute = nullptr;
  decltype(&::cuLaunchKernel) LaunchKernel = nullptr;
  decltype(&::cuLaunchKernelEx) LaunchKernelEx = nullptr;  ///< nullptr where the driver lacks it
  decltype(&::cuCtxGetCurrent) CtxGetCurrent = nullptr;
};

/// The resolved driver API; throws a device Error when no driver is installed.
const DriverApi& driver();

/// A driver-API function by name, or nullptr where there is no driver or it lacks the function (a
/// newer one, such as cuFuncGetName); `rc`, when given, holds the runtime's cudaError_t.
void* driver_function(const char* symbol, int* rc = nullptr);

}  // namespace kgate::cuda
