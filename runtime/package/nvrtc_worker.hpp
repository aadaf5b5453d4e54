// NVRTC compiles in a bounded, sandboxed process: kgate-nvrtc-worker. The parent (compile_package)
// hands it everything NVRTC sees, in memory, over a socket; the worker starts with an empty
// environment and limits on file writes and core dumps, confines itself
// (compile_sandbox.hpp), compiles and answers. The parent kills it when it outlives the time limit
// or its resident memory passes the memory limit.
// So a hostile source can neither read the runner's files and environment, nor hang or exhaust
// the machine through the compiler (an #include of a FIFO, a macro bomb).
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "runtime/package/compile_sandbox.hpp"

namespace kgate::package {

/// Everything NVRTC sees.
struct NvrtcRequest {
  std::string main_name;
  std::string main_source;
  std::vector<std::string> header_names;
  std::vector<std::string> header_sources;
  std::vector<std::string> options;
  std::vector<std::string> name_expressions;
  /// The directories the sandbox leaves readable (the toolkit's include directories).
  std::vector<std::string> readable_dirs;
  bool require_sandbox = false;
  bool sandbox = true;  ///< false: enter none (tests)
};

/// What the worker answers.
struct NvrtcResponse {
  enum class Status : uint32_t {
    ok = 0,
    compile_error = 1,  ///< NVRTC refused the sources: `error` and `log`
    missing_name = 2,   ///< a name expression was not found: `error` holds it
    no_sandbox = 3,     ///< require_sandbox and none could be entered: sandbox_detail
    out_of_memory = 4,  ///< NVRTC reported running out of memory
    internal = 5        ///< an NVRTC API failure: `error`
  };
  Status status = Status::internal;
  std::string error;
  std::string log;  ///< NVRTC's log, capped (kMaxCompilerLogBytes)
  std::map<std::string, std::string> lowered_names;
  std::string cubin;
  double compile_seconds = 0;
  SandboxKind sandbox = SandboxKind::none;
  std::string sandbox_detail;
};

/// A compiler log longer than this keeps its first and last parts and says how much was dropped.
inline constexpr std::size_t kMaxCompilerLogBytes = 64 * 1024;

/// Caps `log` at kMaxCompilerLogBytes (head and tail kept, the cut said in words).
std::string cap_compiler_log(const std::string& log);

/// Limits on one worker.
struct WorkerLimits {
  double timeout_seconds = 300;
  uint64_t memory_limit_bytes = 8ULL << 30;  ///< resident size; 0: none
};

/// How a worker run ended, beside its response.
struct WorkerRun {
  bool answered = false;         ///< a complete response was read
  bool timed_out = false;        ///< killed at the time limit
  bool memory_exceeded = false;  ///< killed past the memory limit
  int exit_code = -1;            ///< when it exited
  int signal = 0;                ///< when a signal ended it
  std::string stderr_text;       ///< what it wrote to stderr, capped
  double seconds = 0;
  NvrtcResponse response;
};

/// Path of the worker executable: $KGATE_NVRTC_WORKER, else next to the running executable (or in
/// ../libexec/kgate/ from it), else where this build put it. Throws Error(internal) naming where it
/// looked when none exists.
std::filesystem::path nvrtc_worker_path();

/// Runs one compile in a fresh worker. Throws Error(internal) when no worker can be started.
WorkerRun run_nvrtc_worker(const NvrtcRequest& request, const WorkerLimits& limits);

/// The worker's side: compiles `request` in this process (no sandbox entered here).
NvrtcResponse nvrtc_compile_in_process(const NvrtcRequest& request);

/// Wire format (both directions): little-endian u64 lengths and byte strings.
std::string encode_request(const NvrtcRequest& r);
bool decode_request(const std::string& bytes, NvrtcRequest& r);
std::string encode_response(const NvrtcResponse& r);
bool decode_response(const std::string& bytes, NvrtcResponse& r);

}  // namespace kgate::package
