// Device discovery and NVML through dlopen.
#include "runtime/cuda/device.hpp"

#include <cuda_runtime.h>
#include <dlfcn.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "runtime/cuda/check.hpp"

namespace kgate::cuda {
namespace {

// The few NVML entry points used, declared here (nvml.h ships with the driver, not the toolkit).
using nvmlReturn_t = int;
using nvmlDevice_t = void*;
using InitFn = nvmlReturn_t (*)();
using GetHandleByUuidFn = nvmlReturn_t (*)(const char*, nvmlDevice_t*);
using GetClockFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*);
using GetTempFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned*);
using GetReasonsFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned long long*);
// nvmlProcessInfo_v1_t, the layout of the unversioned nvmlDeviceGetComputeRunningProcesses.
struct ProcessInfoV1 {
  unsigned int pid;
  unsigned long long used_gpu_memory;
};
using GetProcessesFn = nvmlReturn_t (*)(nvmlDevice_t, unsigned*, ProcessInfoV1*);
constexpr nvmlReturn_t kNvmlInsufficientSize = 7;
constexpr nvmlReturn_t kNvmlGpuIsLost = 15;
constexpr int kNvmlClockSm = 1;
constexpr int kNvmlTemperatureGpu = 0;

using GetEccFn = nvmlReturn_t (*)(nvmlDevice_t, int, int, unsigned long long*);

// NVML's library, loaded and initialized once per process and kept (nvmlInit is reference counted;
// never shut down while a sampler or a health probe may still ask), with the entry points used
// (null where this driver lacks one), or why it is not there.
struct NvmlLibrary {
  void* lib = nullptr;
  std::string reason;
  GetHandleByUuidFn handle_by_uuid = nullptr;
  GetClockFn clock = nullptr;
  GetTempFn temperature = nullptr;
  GetReasonsFn reasons = nullptr;  // clocks event (throttle) reasons
  GetProcessesFn processes = nullptr;
  GetEccFn ecc_errors = nullptr;
};
const NvmlLibrary& nvml_library() {
  static const NvmlLibrary loaded = [] {
    NvmlLibrary n;
    void* l = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!l) {
      n.reason = "NVML (libnvidia-ml.so.1) not found: no clock/throttle data";
      return n;
    }
    auto init = reinterpret_cast<InitFn>(dlsym(l, "nvmlInit_v2"));
    n.handle_by_uuid = reinterpret_cast<GetHandleByUuidFn>(dlsym(l, "nvmlDeviceGetHandleByUUID"));
    if (!init || !n.handle_by_uuid || init() != 0) {
      n.reason = "NVML failed to initialize: no clock/throttle data";
      n.handle_by_uuid = nullptr;
      dlclose(l);
      return n;
    }
    n.lib = l;
    n.clock = reinterpret_cast<GetClockFn>(dlsym(l, "nvmlDeviceGetClockInfo"));
    n.temperature = reinterpret_cast<GetTempFn>(dlsym(l, "nvmlDeviceGetTemperature"));
    n.reasons = reinterpret_cast<GetReasonsFn>(dlsym(l, "nvmlDeviceGetCurrentClocksEventReasons"));
    if (!n.reasons)
      n.reasons =
          reinterpret_cast<GetReasonsFn>(dlsym(l, "nvmlDeviceGetCurrentClocksThrottleReasons"));
    n.processes =
        reinterpret_cast<GetProcessesFn>(dlsym(l, "nvmlDeviceGetComputeRunningProcesses"));
    n.ecc_errors = reinterpret_cast<GetEccFn>(dlsym(l, "nvmlDeviceGetTotalEccErrors"));
    return n;
  }();
  return loaded;
}
// nvmlClocksEventReasons: SW power cap 0x4, HW slowdown 0x8, SW thermal 0x20, HW thermal 0x40,
// HW power brake 0x80.
constexpr uint64_t kDisturbingReasons = 0x4 | 0x8 | 0x20 | 0x40 | 0x80;

std::string version_string(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

}  // namespace

namespace {

bool any_device(std::string* why) {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) {
    cudaGetLastError();
    if (!why) return false;
    // The runtime says "insufficient driver" also when there is no driver at all: tell them apart.
    if (rc == cudaErrorInsufficientDriver && !dlopen("libcuda.so.1", RTLD_LAZY))
      *why = "no CUDA device: no NVIDIA driver is installed (libcuda.so.1 cannot be loaded)";
    else
      *why = std::string("no CUDA device: ") + cudaGetErrorName(rc) + " (" +
             cudaGetErrorString(rc) + ")";
    return false;
  }
  if (count == 0) {
    if (why) *why = "no CUDA device: the driver reports 0 devices";
    return false;
  }
  return true;
}

}  // namespace

bool under_sanitizer() {
  const char* v = std::getenv("KGATE_UNDER_SANITIZER");
  return v && std::string(v) == "1";
}

bool device_available(std::string* why) {
  const bool ok = any_device(why);
  // Name the selection: "--device 3" on a machine of one GPU shows as no device at all.
  if (!ok && why)
    if (const char* s = std::getenv("KGATE_DEVICE"))
      *why += std::string(" (") + s +
              " was selected, with --device or by CTest; CUDA_VISIBLE_DEVICES=" +
              (std::getenv("CUDA_VISIBLE_DEVICES") ? std::getenv("CUDA_VISIBLE_DEVICES") : "") +
              ")";
  return ok;
}

std::string visible_devices_for(int ordinal, const char* visible) {
  if (ordinal < 0)
    throw Error(ErrorKind::usage,
                "--device " + std::to_string(ordinal) + ": expected a device ordinal >= 0");
  if (!visible) return std::to_string(ordinal);
  std::vector<std::string> entries;
  std::string cur;
  for (const char* p = visible;; ++p) {
    if (*p == ',' || *p == '\0') {
      if (!cur.empty()) entries.push_back(cur);
      cur.clear();
      if (*p == '\0') break;
    } else if (*p != ' ') {
      cur += *p;
    }
  }
  if (static_cast<std::size_t>(ordinal) >= entries.size())
    throw Error(ErrorKind::usage, "--device " + std::to_string(ordinal) + ": this process sees " +
                                      std::to_string(entries.size()) +
                                      " device(s) (CUDA_VISIBLE_DEVICES=" + visible +
                                      "); devices are numbered from 0 within that list");
  return entries[static_cast<std::size_t>(ordinal)];
}

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return count;
}

void synchronize_quietly() {
  if (cudaDeviceSynchronize() != cudaSuccess) cudaGetLastError();
}

void select_device(int ordinal) {
  const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
  const std::string before = visible ? visible : "";
  const std::string only = visible_devices_for(ordinal, visible);
  ::setenv("CUDA_VISIBLE_DEVICES", only.c_str(), 1);
  const std::string what = "device " + std::to_string(ordinal) +
                           (visible ? " (of CUDA_VISIBLE_DEVICES=" + before + ")" : std::string());
  ::setenv("KGATE_DEVICE", what.c_str(), 1);
}

std::optional<int> ctest_assigned_gpu() {
  const char* count = std::getenv("CTEST_RESOURCE_GROUP_COUNT");
  const char* gpus = std::getenv("CTEST_RESOURCE_GROUP_0_GPUS");
  if (!count || !gpus) return std::nullopt;
  // "id:1,slots:1": one GPU per test (several would be "id:0,slots:1;id:1,slots:1").
  const char* id = std::strstr(gpus, "id:");
  if (!id) return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(id + 3, &end, 10);
  if (end == id + 3 || v < 0 || v > 1024) return std::nullopt;
  return static_cast<int>(v);
}

namespace {

// A test CTest runs with RESOURCE_GROUPS gpus:1 (ci/test.sh writes one slot per GPU, ids = device
// ordinals) uses the GPU CTest assigned it, before anything starts CUDA: two timing tests never
// share a GPU, and none sits idle. `kgate --device N` then counts within that one device.
const bool kCtestGpuSelected = [] {
  if (std::getenv("KGATE_DEVICE")) return false;  // selected already (a worker of a kgate that did)
  const auto id = ctest_assigned_gpu();
  if (!id) return false;
  try {
    select_device(*id);
    return true;
  } catch (const Error& e) {
    std::fprintf(stderr, "kgate: CTest assigned GPU %d, which this process cannot select: %s\n",
                 *id, e.what());
    return false;
  }
}();

std::string uuid_text(const cudaUUID_t& u) {
  const auto* b = reinterpret_cast<const unsigned char*>(u.bytes);
  char buf[48];
  std::snprintf(buf, sizeof buf,
                "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", b[0],
                b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12], b[13],
                b[14], b[15]);
  return buf;
}

}  // namespace

DeviceInfo device_info(int device) {
  DeviceInfo info;
  cudaDeviceProp prop{};
  KGATE_CUDA_CALL(cudaGetDeviceProperties(&prop, device));
  info.name = prop.name;
  info.uuid = uuid_text(prop.uuid);
  if (const char* s = std::getenv("KGATE_DEVICE")) info.selected = s;
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
  std::string s =
      "SM " + std::to_string(sm_clock_mhz) + " MHz, " + std::to_string(temperature_c) + " C";
  if (throttle_reasons & 0x4) s += ", power cap";
  if (throttle_reasons & 0x8) s += ", HW slowdown";
  if (throttle_reasons & 0x20) s += ", SW thermal";
  if (throttle_reasons & 0x40) s += ", HW thermal";
  if (throttle_reasons & 0x80) s += ", power brake";
  return s;
}

Nvml::Nvml() {
  const NvmlLibrary& nvml = nvml_library();
  if (!nvml.lib) {
    reason_ = nvml.reason;
    return;
  }
  // By UUID: NVML's indices ignore CUDA_VISIBLE_DEVICES (and --device), CUDA's ordinals do not.
  int ordinal = 0;
  cudaDeviceProp prop{};
  if (cudaGetDevice(&ordinal) != cudaSuccess ||
      cudaGetDeviceProperties(&prop, ordinal) != cudaSuccess) {
    cudaGetLastError();
    reason_ = "no current CUDA device for NVML: no clock/throttle data";
    return;
  }
  const std::string uuid = uuid_text(prop.uuid);
  nvmlDevice_t dev = nullptr;
  if (nvml.handle_by_uuid(uuid.c_str(), &dev) != 0) {
    reason_ = "NVML has no device " + uuid + " (CUDA device " + std::to_string(ordinal) +
              "): no clock/throttle data";
    return;
  }
  device_ = dev;
}

Nvml::~Nvml() = default;  // the library stays loaded and initialized (nvml_library)

std::optional<ClockSample> Nvml::sample() const {
  if (!device_) return std::nullopt;
  const NvmlLibrary& nvml = nvml_library();
  ClockSample s;
  unsigned long long r = 0;
  if (!nvml.clock || nvml.clock(device_, kNvmlClockSm, &s.sm_clock_mhz) != 0) return std::nullopt;
  if (nvml.temperature) nvml.temperature(device_, kNvmlTemperatureGpu, &s.temperature_c);
  if (nvml.reasons && nvml.reasons(device_, &r) == 0) s.throttle_reasons = r;
  return s;
}

std::string nvml_device_trouble(const std::string& uuid, unsigned long long* ecc_baseline,
                                bool* found) {
  if (found) *found = false;
  const NvmlLibrary& nvml = nvml_library();
  if (!nvml.lib || uuid.empty()) return "";
  nvmlDevice_t dev = nullptr;
  const nvmlReturn_t r = nvml.handle_by_uuid(uuid.c_str(), &dev);
  if (r == kNvmlGpuIsLost) return "NVML: the GPU is lost (it stopped answering)";
  if (r != 0) return "";
  if (found) *found = true;
  unsigned long long count = 0;
  // NVML_MEMORY_ERROR_TYPE_UNCORRECTED (1), NVML_VOLATILE_ECC (0): since the driver loaded.
  const nvmlReturn_t e = nvml.ecc_errors ? nvml.ecc_errors(dev, 1, 0, &count) : -1;
  if (e == kNvmlGpuIsLost) return "NVML: the GPU is lost (it stopped answering)";
  if (e != 0 || !ecc_baseline) return "";
  if (*ecc_baseline == ~0ull) {
    *ecc_baseline = count;
    return "";
  }
  if (count > *ecc_baseline)
    return "NVML: " + std::to_string(count - *ecc_baseline) + " new uncorrected ECC error(s)";
  return "";
}

std::optional<std::vector<GpuProcess>> Nvml::other_processes(
    const std::vector<int>& siblings) const {
  if (!device_) return std::nullopt;
  const GetProcessesFn get = nvml_library().processes;
  if (!get) return std::nullopt;
  std::vector<ProcessInfoV1> infos(16);
  unsigned count = static_cast<unsigned>(infos.size());
  nvmlReturn_t r = get(device_, &count, infos.data());
  if (r == kNvmlInsufficientSize) {
    infos.resize(count + 8);
    count = static_cast<unsigned>(infos.size());
    r = get(device_, &count, infos.data());
  }
  if (r != 0) return std::nullopt;
  infos.resize(count);
  std::vector<GpuProcess> others;
  const unsigned self = static_cast<unsigned>(getpid());
  bool self_listed = false;
  const auto sibling = [&](unsigned pid) {
    return std::find(siblings.begin(), siblings.end(), static_cast<int>(pid)) != siblings.end();
  };
  for (const auto& p : infos) {
    if (p.pid == self) self_listed = true;
    else if (!sibling(p.pid)) others.push_back({p.pid, p.used_gpu_memory});
  }
  // In a container NVML names processes by the host's pids: this process and its siblings are
  // then in the list under numbers it cannot recognize. That many entries are theirs; more are
  // others, though which ones cannot be told.
  if (!self_listed) others.resize(others.size() - std::min(others.size(), siblings.size() + 1));
  return others;
}

}  // namespace kgate::cuda
