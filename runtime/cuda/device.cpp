// Device discovery and NVML through dlopen.
#include "runtime/cuda/device.hpp"

#include <cuda_runtime.h>
#include <dlfcn.h>

#include "runtime/cuda/check.hpp"

namespace kgate::cuda {
namespace {

// The few NVML entry points used, declared here (nvml.h ships with the driver, not the toolkit).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using GetHandleFn = nvmlReturn_t (*)(unsigned, nvmlDevice_t*);
using GetClockFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*);
using GetTempFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*);
using GetReasonsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlTemperatureGpu = 0;
// nvmlClocksEventReasons: SW power cap 0x4, HW slowdown 0x8, SW thermal 0x20, HW thermal 0x40,
// HW power brake 0x80.
constexpr uint64_t kDisturbingReasons = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); }

}  // namespace

bool device_available(std::string* why) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    if (!why) return false;
    // The runtime says "insufficient driver" also when there is no driver at all: tell them apart.
    if (rc == cudaErrorInsufficientDriver && !dlopen("libcuda.so.1", RTLD_LAZY))
      *why = "no CUDA device: no NVIDIA driver is installed (libcuda.so.1 cannot be loaded)";
    else
      *why = std::string("no CUDA device: ") + cudaGetErrorName(rc) + " (" + cudaGetErrorString(rc) + ")";
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device: the driver reports 0 devices";
    return false;
  }
  return true;
}

DeviceInfo device_info(int device) {
  DeviceInfo info;
  cudaDeviceProp prop{};
  KGATE_CUDA_CALL(cudaGetDeviceProperties(&prop, device));
  info.name = prop.name;
  info.sm_major = prop.major;
  info.sm_minor = prop.minor;
  info.multiprocessors = prop.multiProcessorCount;
  info.l2_bytes = prop.l2CacheSize;
  int v = 0;
  if (cudaDriverGetVersion(&v) == cudaSuccess) info.driver = version_string(v);
  if (cudaRuntimeGetVersion(&v) == cudaSuccess) info.runtime = version_string(v);
  return info;
}

bool ClockSample::throttled() const { return (throttle_reasons & kDisturbingReasons) != 0; }

std::string ClockSample::describe() const {
  std::string s = "SM " + std::to_string(sm_clock_mhz) + " MHz, " + std::to_string(temperature_c) + " C";
  if (throttle_reasons & 0x4) s += ", power cap";
  if (throttle_reasons & 0x8) s += ", HW slowdown";
  if (throttle_reasons & 0x20) s += ", SW thermal";
  if (throttle_reasons & 0x40) s += ", HW thermal";
  if (throttle_reasons & 0x80) s += ", power brake";
  return s;
}

Nvml::Nvml() {
  lib_ = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib_) {
    reason_ = "NVML (libnvidia-ml.so.1) not found: no clock/throttle data";
    return;
  }
  auto init = reinterpret_cast<InitFn>(dlsym(lib_, "nvmlInit_v2"));
  auto get = reinterpret_cast<GetHandleFn>(dlsym(lib_, "nvmlDeviceGetHandleByIndex_v2"));
  if (!init || !get || init() != 0) {
    reason_ = "NVML failed to initialize: no clock/throttle data";
    return;
  }
  nvmlDevice_t dev = nullptr;
  int ordinal = 0;
  cudaGetDevice(&ordinal);
  if (get(static_cast<unsigned>(ordinal), &dev) != 0) {
    reason_ = "NVML has no handle for device " + std::to_string(ordinal);
    return;
  }
  device_ = dev;
}

Nvml::~Nvml() {
  if (lib_) {
    if (device_) {
      if (auto shutdown = reinterpret_cast<ShutdownFn>(dlsym(lib_, "nvmlShutdown"))) shutdown();
    }
    dlclose(lib_);
  }
}

std::optional<ClockSample> Nvml::sample() const {
  if (!device_) return std::nullopt;
  auto clock = reinterpret_cast<GetClockFn>(dlsym(lib_, "nvmlDeviceGetClockInfo"));
  auto temp = reinterpret_cast<GetTempFn>(dlsym(lib_, "nvmlDeviceGetTemperature"));
  auto reasons = reinterpret_cast<GetReasonsFn>(dlsym(lib_, "nvmlDeviceGetCurrentClocksEventReasons"));
  if (!reasons) reasons = reinterpret_cast<GetReasonsFn>(dlsym(lib_, "nvmlDeviceGetCurrentClocksThrottleReasons"));
  ClockSample s;
  unsigned long long r = 0;
  if (!clock || clock(device_, kNvmlClockSm, &s.sm_clock_mhz) != 0) return std::nullopt;
  if (temp) temp(device_, kNvmlTemperatureGpu, &s.temperature_c);
  if (reasons && reasons(device_, &r) == 0) s.throttle_reasons = r;
  return s;
}

}  // namespace kgate::cuda
