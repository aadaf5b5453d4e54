#include "runtime/package/device_props.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include <nlohmann/json.hpp>

#include "core/cuda_limits.hpp"
#include "core/error.hpp"
#include "core/strict_json.hpp"

namespace kgate::package {
namespace {

// The fields as (symbol suffix, member), in the order the report and --device-props files use.
struct Field {
  const char* key;
  int64_t DeviceProps::*member;
};
constexpr Field kFields[] = {
    {"arch", &DeviceProps::arch},
    {"sms", &DeviceProps::sms},
    {"smem_per_block", &DeviceProps::smem_per_block},
    {"smem_per_block_optin", &DeviceProps::smem_per_block_optin},
    {"smem_per_sm", &DeviceProps::smem_per_sm},
    {"regs_per_block", &DeviceProps::regs_per_block},
    {"regs_per_sm", &DeviceProps::regs_per_sm},
    {"threads_per_block", &DeviceProps::threads_per_block},
    {"threads_per_sm", &DeviceProps::threads_per_sm},
    {"l2_bytes", &DeviceProps::l2_bytes},
};

DeviceProps props(const char* name, int64_t arch, int64_t sms, int64_t optin, int64_t per_sm,
                  int64_t threads_per_sm, int64_t l2) {
  DeviceProps p;
  p.name = name;
  p.arch = arch;
  p.sms = sms;
  p.smem_per_block = cuda_limits::kSharedPerBlockDefault;
  p.smem_per_block_optin = optin;
  p.smem_per_sm = per_sm;
  p.regs_per_block = 65536;
  p.regs_per_sm = 65536;
  p.threads_per_block = cuda_limits::kThreadsPerBlock;
  p.threads_per_sm = threads_per_sm;
  p.l2_bytes = l2;
  return p;
}

// From the vendors' data sheets and the CUDA programming guide's table of compute capabilities
// (shared memory: 227 KiB per block on sm_90, 163 KiB on sm_80, 99 KiB on sm_86/sm_89). The h200
// preset is also checked against an H200's own attributes (tests/package: device_props_gpu).
const std::vector<DeviceProps>& presets() {
  static const std::vector<DeviceProps> all = {
      props("a100-sxm", 80, 108, 166912, 167936, 2048, 41943040),
      props("a100-pcie", 80, 108, 166912, 167936, 2048, 41943040),
      props("a10g", 86, 80, 101376, 102400, 1536, 6291456),
      props("l4", 89, 58, 101376, 102400, 1536, 50331648),
      props("l40s", 89, 142, 101376, 102400, 1536, 100663296),
      props("rtx-4090", 89, 128, 101376, 102400, 1536, 75497472),
      props("h100-pcie", 90, 114, 232448, 233472, 2048, 52428800),
      props("h100-sxm", 90, 132, 232448, 233472, 2048, 52428800),
      props("h200", 90, 132, 232448, 233472, 2048, 62914560),
  };
  return all;
}

std::mutex g_mutex;
std::optional<DeviceProps> g_override;
std::map<int, DeviceProps> g_devices;

}  // namespace

const std::vector<std::string>& device_symbol_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& f : kFields) out.push_back(std::string("device_") + f.key);
    return out;
  }();
  return names;
}

bool is_device_symbol(const std::string& name) {
  const auto& names = device_symbol_names();
  return std::find(names.begin(), names.end(), name) != names.end();
}

bool reads_device(const Expr& e) {
  for (const auto& s : e.symbols())
    if (is_device_symbol(s)) return true;
  return false;
}

bool reads_device(const FloatExpr& e) {
  for (const auto& s : e.symbols())
    if (is_device_symbol(s)) return true;
  return false;
}

void put_device_values(SymbolValues& values, const DeviceProps& p) {
  for (const auto& f : kFields) values[std::string("device_") + f.key] = p.*f.member;
}

void put_device_values(FloatValues& values, const DeviceProps& p) {
  for (const auto& f : kFields)
    values[std::string("device_") + f.key] = static_cast<double>(p.*f.member);
}

std::vector<std::string> device_preset_names() {
  std::vector<std::string> out;
  for (const auto& p : presets()) out.push_back(p.name);
  return out;
}

std::optional<DeviceProps> device_preset(const std::string& name) {
  for (const auto& p : presets())
    if (p.name == name) return p;
  return std::nullopt;
}

DeviceProps load_device_props(const std::string& preset_or_file) {
  if (auto p = device_preset(preset_or_file)) return *p;
  std::string names;
  for (const auto& n : device_preset_names()) names += (names.empty() ? "" : ", ") + n;
  std::ifstream in(preset_or_file);
  if (!in)
    throw Error(ErrorKind::usage, "--device-props " + preset_or_file + ": neither a preset (" +
                                      names + ") nor a readable JSON file");
  std::stringstream text;
  text << in.rdbuf();
  nlohmann::json j;
  try {
    std::string duplicate;
    j = parse_strict_json(text.str().substr(0, 1 << 20), &duplicate);
    if (!duplicate.empty())
      throw Error(ErrorKind::usage,
                  "--device-props " + preset_or_file + ": key \"" + duplicate + "\" appears twice");
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(ErrorKind::usage,
                "--device-props " + preset_or_file + ": not JSON: " + json_error_text(e));
  }
  if (!j.is_object())
    throw Error(ErrorKind::usage, "--device-props " + preset_or_file + ": expected a JSON object");
  DeviceProps p;
  p.name =
      j.contains("name") && j["name"].is_string() ? j["name"].get<std::string>() : preset_or_file;
  std::string missing, keys;
  for (const auto& f : kFields) {
    keys += (keys.empty() ? "" : ", ") + std::string(f.key);
    const auto it = j.find(f.key);
    if (it == j.end()) {
      missing += (missing.empty() ? "" : ", ") + std::string(f.key);
      continue;
    }
    if (!it->is_number_integer() || it->get<int64_t>() < 1 ||
        it->get<int64_t>() > (int64_t{1} << 40))
      throw Error(ErrorKind::usage, "--device-props " + preset_or_file + ": \"" + f.key +
                                        "\" must be a positive integer, got " + it->dump());
    p.*f.member = it->get<int64_t>();
  }
  for (const auto& [k, v] : j.items())
    if (k != "name" && std::none_of(std::begin(kFields), std::end(kFields),
                                    [&](const Field& f) { return k == f.key; }))
      throw Error(ErrorKind::usage, "--device-props " + preset_or_file + ": unknown key \"" + k +
                                        "\"; the keys are name, " + keys);
  if (!missing.empty())
    throw Error(ErrorKind::usage, "--device-props " + preset_or_file + ": missing " + missing +
                                      " (every one of " + keys +
                                      " is needed; or name a preset: " + names + ")");
  return p;
}

std::string device_props_json(const DeviceProps& p) {
  nlohmann::ordered_json j;
  j["name"] = p.name;
  for (const auto& f : kFields) j[f.key] = p.*f.member;
  return j.dump();
}

std::string device_props_summary(const DeviceProps& p) {
  return p.name + " (sm_" + std::to_string(p.arch) + ", " + std::to_string(p.sms) + " SMs, " +
         std::to_string(p.smem_per_block_optin / 1024) + " KiB shared memory per block opted in)";
}

void set_device_props_override(std::optional<DeviceProps> props) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_override = std::move(props);
}

const DeviceProps& device_props_in_effect() {
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_override) return *g_override;
  int device = -1;
  if (cudaGetDevice(&device) != cudaSuccess || device < 0) {
    cudaGetLastError();
    throw Error(ErrorKind::device,
                "the package's launches read the device's properties (device_sms, ...), and no "
                "CUDA device is there to give them; kgate validate takes --device-props PRESET");
  }
  if (auto it = g_devices.find(device); it != g_devices.end()) return it->second;
  auto attr = [&](cudaDeviceAttr a) {
    int v = 0;
    if (cudaDeviceGetAttribute(&v, a, device) != cudaSuccess) {
      cudaGetLastError();
      throw Error(ErrorKind::device, "cudaDeviceGetAttribute(" +
                                         std::to_string(static_cast<int>(a)) +
                                         ") failed on device " + std::to_string(device));
    }
    return static_cast<int64_t>(v);
  };
  DeviceProps p;
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) p.name = prop.name;
  cudaGetLastError();
  p.arch = attr(cudaDevAttrComputeCapabilityMajor) * 10 + attr(cudaDevAttrComputeCapabilityMinor);
  p.sms = attr(cudaDevAttrMultiProcessorCount);
  p.smem_per_block = attr(cudaDevAttrMaxSharedMemoryPerBlock);
  p.smem_per_block_optin = attr(cudaDevAttrMaxSharedMemoryPerBlockOptin);
  p.smem_per_sm = attr(cudaDevAttrMaxSharedMemoryPerMultiprocessor);
  p.regs_per_block = attr(cudaDevAttrMaxRegistersPerBlock);
  p.regs_per_sm = attr(cudaDevAttrMaxRegistersPerMultiprocessor);
  p.threads_per_block = attr(cudaDevAttrMaxThreadsPerBlock);
  p.threads_per_sm = attr(cudaDevAttrMaxThreadsPerMultiProcessor);
  p.l2_bytes = attr(cudaDevAttrL2CacheSize);
  return g_devices.emplace(device, p).first->second;
}

}  // namespace kgate::package
