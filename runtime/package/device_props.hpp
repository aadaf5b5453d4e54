// The device properties a package's launches may read: tile sizes chosen per GPU ("when": {"if":
// "device_arch >= 90"}, "grid": ["min(ceil_div(B, 64), 2 * device_sms)"], "shared_mem":
// ["device_smem_per_block_optin"]). On the GPU they come from the device that runs the launch;
// `kgate validate`, which has no GPU, takes them from --device-props (a named preset such as
// "h200", or a JSON file) and judges the launches under them.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/expr.hpp"
#include "core/float_expr.hpp"

namespace kgate::package {

/// What one GPU offers a launch. Every field is an integer symbol of the same name with "device_"
/// in front ("device_arch", "device_sms", ...).
struct DeviceProps {
  std::string name;                  ///< the preset's name, the GPU's name, or the file's "name"
  int64_t arch = 0;                  ///< compute capability major * 10 + minor (90 for sm_90)
  int64_t sms = 0;                   ///< streaming multiprocessors
  int64_t smem_per_block = 0;        ///< dynamic + static shared memory without opting in (bytes)
  int64_t smem_per_block_optin = 0;  ///< the most a block can opt in to (bytes)
  int64_t smem_per_sm = 0;           ///< shared memory of one SM (bytes)
  int64_t regs_per_block = 0;        ///< 32-bit registers one block may use
  int64_t regs_per_sm = 0;           ///< 32-bit registers of one SM
  int64_t threads_per_block = 0;     ///< most threads in a block
  int64_t threads_per_sm = 0;        ///< most resident threads on an SM
  int64_t l2_bytes = 0;              ///< L2 cache size (bytes)
};

/// The symbol names, in field order: "device_arch", "device_sms", ..., "device_l2_bytes".
const std::vector<std::string>& device_symbol_names();
/// True for one of device_symbol_names().
bool is_device_symbol(const std::string& name);
/// True when the expression names a device symbol.
bool reads_device(const Expr& e);
bool reads_device(const FloatExpr& e);

/// Sets each device symbol's value in `values`.
void put_device_values(SymbolValues& values, const DeviceProps& props);
void put_device_values(FloatValues& values, const DeviceProps& props);

/// The built-in presets' names ("a100-sxm", "h100-sxm", "h200", ...), and one by name (nullopt:
/// no such preset).
std::vector<std::string> device_preset_names();
std::optional<DeviceProps> device_preset(const std::string& name);

/// A preset's name, or a JSON file {"name": ..., "arch": 90, "sms": 132, ...} with every field of
/// DeviceProps but name; throws Error(usage) naming the file and the missing or wrong field.
DeviceProps load_device_props(const std::string& preset_or_file);

/// {"name": ..., "arch": ..., ...}, the fields in order, as the report records them.
std::string device_props_json(const DeviceProps& props);
/// "h200 (sm_90, 132 SMs, 227 KiB shared memory per block opted in)".
std::string device_props_summary(const DeviceProps& props);

/// The properties launches read in this process: those set with set_device_props_override (kgate
/// validate), else the current CUDA device's (read once per device). Throws Error(device) where
/// there is no device and no override.
const DeviceProps& device_props_in_effect();
void set_device_props_override(std::optional<DeviceProps> props);

}  // namespace kgate::package
