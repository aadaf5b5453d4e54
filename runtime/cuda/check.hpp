// One throwing check per API family: CUDA runtime, driver (CUresult), NVRTC (with the compile log),
// CUPTI. Each message carries file:line, the call's text, the error's name and its string.
// The _NOTHROW variants are for destructors: they report to stderr and carry on.
#pragma once

#include <string>

#include "core/error.hpp"

namespace kgate::cuda {

/// Builds "file:line: `call` failed: NAME (description)[\nextra]".
std::string format_api_error(const char* file, int line, const char* call, const std::string& name,
                             const std::string& description, const std::string& extra = {});

/// The error of a message from format_api_error, without kgate's file, line and call:
/// "cudaErrorLaunchFailure (unspecified launch failure)". Other text comes back to its first line
/// (ATen's "CUDA error: misaligned address", without its advice on CUDA_LAUNCH_BLOCKING).
std::string api_error_summary(const std::string& message);

/// Throws ErrorKind::device with the formatted message. Clears the runtime's sticky last error.
[[noreturn]] void throw_runtime_error(int code, const char* file, int line, const char* call);
[[noreturn]] void throw_driver_error(int code, const char* file, int line, const char* call);
[[noreturn]] void throw_nvrtc_error(int code, const char* file, int line, const char* call,
                                    const std::string& log);
[[noreturn]] void throw_cupti_error(int code, const char* file, int line, const char* call);
void report_runtime_error(int code, const char* file, int line, const char* call) noexcept;

}  // namespace kgate::cuda

/// Checks a cudaError_t-returning call.
#define KGATE_CUDA_CALL(call)                                                                     \
  do {                                                                                            \
    const int kgate_rc_ = static_cast<int>(call);                                                 \
    if (kgate_rc_ != 0) ::kgate::cuda::throw_runtime_error(kgate_rc_, __FILE__, __LINE__, #call); \
  } while (0)

/// Checks a cudaError_t-returning call without throwing (destructors).
#define KGATE_CUDA_CALL_NOTHROW(call)                                                              \
  do {                                                                                             \
    const int kgate_rc_ = static_cast<int>(call);                                                  \
    if (kgate_rc_ != 0) ::kgate::cuda::report_runtime_error(kgate_rc_, __FILE__, __LINE__, #call); \
  } while (0)

/// Checks a CUresult-returning driver call (reached through runtime/cuda/driver.hpp).
#define KGATE_DRIVER_CALL(call)                                                                  \
  do {                                                                                           \
    const int kgate_rc_ = static_cast<int>(call);                                                \
    if (kgate_rc_ != 0) ::kgate::cuda::throw_driver_error(kgate_rc_, __FILE__, __LINE__, #call); \
  } while (0)

/// Checks an nvrtcResult-returning call; `log` (a std::string) is appended to the message.
#define KGATE_NVRTC_CALL(call, log)                                                \
  do {                                                                             \
    const int kgate_rc_ = static_cast<int>(call);                                  \
    if (kgate_rc_ != 0)                                                            \
      ::kgate::cuda::throw_nvrtc_error(kgate_rc_, __FILE__, __LINE__, #call, log); \
  } while (0)

/// Checks a CUptiResult-returning call.
#define KGATE_CUPTI_CALL(call)                                                                  \
  do {                                                                                          \
    const int kgate_rc_ = static_cast<int>(call);                                               \
    if (kgate_rc_ != 0) ::kgate::cuda::throw_cupti_error(kgate_rc_, __FILE__, __LINE__, #call); \
  } while (0)
