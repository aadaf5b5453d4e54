// Error formatting for the CUDA runtime, driver, NVRTC and CUPTI checks.
#include "runtime/cuda/check.hpp"

#include <cuda_runtime.h>
#include <cupti.h>
#include <nvrtc.h>

#include <cstdio>

#include "runtime/cuda/driver.hpp"

namespace kgate::cuda {

std::string format_api_error(const char* file, int line, const char* call, const std::string& name,
                             const std::string& description, const std::string& extra) {
  std::string msg = std::string(file) + ":" + std::to_string(line) + ": `" + call +
                    "` failed: " + name + " (" + description + ")";
  if (!extra.empty()) msg += "\n" + extra;
  return msg;
}

std::string api_error_summary(const std::string& message) {
  static const std::string marker = "` failed: ";
  const auto pos = message.rfind(marker);
  if (pos == std::string::npos)
    return message.substr(0, message.find('\n'));  // (ATen's: its first line)
  std::string out = message.substr(pos + marker.size());
  if (auto nl = out.find('\n'); nl != std::string::npos) out.erase(nl);
  return out;
}

void throw_runtime_error(int code, const char* file, int line, const char* call) {
  cudaGetLastError();  // clear the sticky error so later calls report their own
  const auto rc = static_cast<cudaError_t>(code);
  throw Error(ErrorKind::device,
              format_api_error(file, line, call, cudaGetErrorName(rc), cudaGetErrorString(rc)));
}

void report_runtime_error(int code, const char* file, int line, const char* call) noexcept {
  cudaGetLastError();
  const auto rc = static_cast<cudaError_t>(code);
  std::fprintf(
      stderr, "kgate: %s\n",
      format_api_error(file, line, call, cudaGetErrorName(rc), cudaGetErrorString(rc)).c_str());
}

void throw_driver_error(int code, const char* file, int line, const char* call) {
  const char* name = "CUDA_ERROR_UNKNOWN";
  const char* text = "unknown driver error";
  try {
    const auto& api = driver();
    api.GetErrorName(static_cast<CUresult>(code), &name);
    api.GetErrorString(static_cast<CUresult>(code), &text);
  } catch (const Error&) {
  }
  throw Error(ErrorKind::device,
              format_api_error(file, line, call, name ? name : "?", text ? text : "?"));
}

void throw_nvrtc_error(int code, const char* file, int line, const char* call,
                       const std::string& log) {
  const auto rc = static_cast<nvrtcResult>(code);
  throw Error(ErrorKind::device,
              format_api_error(file, line, call, "NVRTC error " + std::to_string(code),
                               nvrtcGetErrorString(rc), log.empty() ? "" : "compile log:\n" + log));
}

void throw_cupti_error(int code, const char* file, int line, const char* call) {
  const char* text = nullptr;
  cuptiGetResultString(static_cast<CUptiResult>(code), &text);
  throw Error(ErrorKind::device,
              format_api_error(file, line, call, "CUPTI error " + std::to_string(code),
                               text ? text : "unknown CUPTI error"));
}

}  // namespace kgate::cuda
