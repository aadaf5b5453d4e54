#include "runtime/cuda/launch_record.hpp"

#include <cuda.h>
#include <cuda_runtime.h>
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <string>

#include "core/anonymous_names.hpp"
#include "core/sha256.hpp"
#include "runtime/cuda/cubin_digest.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/cuda/driver.hpp"

namespace kgate::cuda {
namespace {

// __cudaLaunchKernel (CUDA 13's <<<>>> launches): its parameters, as CUPTI passes them (the
// generated parameter headers do not declare this one).
struct RuntimeKernelLaunchParams {
  cudaKernel_t kernel;
  dim3 gridDim;
  dim3 blockDim;
  void** args;
  size_t sharedMem;
  cudaStream_t stream;
};

// Driver functions this file needs that DriverApi does not hold; null where the driver lacks them.
struct Driver {
  decltype(&::cuFuncGetName) FuncGetName = nullptr;
  decltype(&::cuFuncGetParamInfo) FuncGetParamInfo = nullptr;
  decltype(&::cuKernelGetFunction) KernelGetFunction = nullptr;
  decltype(&::cuPointerGetAttribute) PointerGetAttribute = nullptr;
};

template <typename Fn>
void resolve(Fn& fn, const char* symbol) {
  fn = reinterpret_cast<Fn>(driver_function(symbol));
}

const Driver& driver_functions() {
  static const Driver d = [] {
    Driver d;
    resolve(d.FuncGetName, "cuFuncGetName");
    resolve(d.FuncGetParamInfo, "cuFuncGetParamInfo");
    resolve(d.KernelGetFunction, "cuKernelGetFunction");
    resolve(d.PointerGetAttribute, "cuPointerGetAttribute");
    return d;
  }();
  return d;
}

struct State {
  // Held only to read or change the members below, never across a CUDA call: a callback of another
  // thread may be inside the driver, and a query of this file can load a module (lazy loading),
  // whose callback comes on the same thread.
  std::mutex mutex;
  CUpti_SubscriberHandle subscriber{};
  bool subscribed = false;
  std::string why_not;
  // The functions of the loaded modules: name -> digest -> how many loaded modules hold it.
  std::map<std::string, std::map<std::string, int>> code;
  std::map<uint32_t, std::vector<std::pair<std::string, std::string>>> module_functions;
  // The recording in progress.
  std::atomic<bool> recording{false};
  std::atomic<uint64_t> generation{0};
  std::vector<std::string> launches;
  std::string unknown;  // the first reason the record is not complete
  std::string ambiguous;
};

State& state() {
  static State* s = new State;  // never destroyed: callbacks may come during exit
  return *s;
}

std::atomic<int64_t> loads{0};

// Runtime calls nest driver calls (and the queries below nest calls of their own): a thread
// records the outermost call only. Reset at each recording's start (`generation`).
struct Nesting {
  uint64_t generation = 0;
  int depth = 0;
};
thread_local Nesting nesting;

void on_module(const void* data, bool loaded) {
  const auto* resource = static_cast<const CUpti_ResourceData*>(data);
  const auto* module =
      resource ? static_cast<const CUpti_ModuleResourceData*>(resource->resourceDescriptor)
               : nullptr;
  if (!module) return;
  auto& s = state();
  if (loaded) {
    ++loads;
    if (!module->pCubin || module->cubinSize == 0) return;
    const CubinFunctions f =
        cubin_function_digests(std::string_view(module->pCubin, module->cubinSize));
    std::lock_guard<std::mutex> lock(s.mutex);
    auto& mine = s.module_functions[module->moduleId];
    for (const auto& [name, digest] : f.digests) {
      ++s.code[name][digest];
      mine.emplace_back(name, digest);
    }
    return;
  }
  std::lock_guard<std::mutex> lock(s.mutex);
  const auto it = s.module_functions.find(module->moduleId);
  if (it == s.module_functions.end()) return;
  for (const auto& [name, digest] : it->second) {
    auto& count = s.code[name][digest];
    if (--count <= 0) s.code[name].erase(digest);
  }
  s.module_functions.erase(it);
}

std::string hex_bytes(const void* p, size_t n) {
  return to_hex(std::string_view(static_cast<const char*>(p), n));
}

// A device (or registered host) address as its allocation-relative offset: "ptr+OFFSET/SIZE";
// "" when `value` is no address CUDA knows.
std::string pointer_word(uint64_t value) {
  const Driver& d = driver_functions();
  if (value == 0 || !d.PointerGetAttribute) return "";
  CUdeviceptr start = 0;
  size_t size = 0;
  if (d.PointerGetAttribute(&start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                            static_cast<CUdeviceptr>(value)) != CUDA_SUCCESS)
    return "";
  d.PointerGetAttribute(&size, CU_POINTER_ATTRIBUTE_RANGE_SIZE, static_cast<CUdeviceptr>(value));
  return "ptr+" + std::to_string(value - start) + "/" + std::to_string(size);
}

// Bytes with every aligned 8-byte word that is an address replaced by its offset (pointers differ
// from one run to the next; where they point into their buffers does not).
std::string masked(const unsigned char* p, size_t n) {
  std::string out;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t word = 0;
    std::memcpy(&word, p + i, 8);
    const std::string ptr = pointer_word(word);
    out += ptr.empty() ? hex_bytes(p + i, 8) : "<" + ptr + ">";
  }
  if (i < n) out += hex_bytes(p + i, n - i);
  return out;
}

std::string dims(unsigned x, unsigned y, unsigned z) {
  return std::to_string(x) + "," + std::to_string(y) + "," + std::to_string(z);
}

// One recorded launch: its line, and why the record cannot be trusted because of it ("" if it can).
struct Line {
  std::string text;
  std::string unknown;
  std::string ambiguous;
};

void commit(State& s, Line line) {
  std::lock_guard<std::mutex> lock(s.mutex);
  if (!s.recording) return;
  if (s.unknown.empty()) s.unknown = std::move(line.unknown);
  if (s.ambiguous.empty()) s.ambiguous = std::move(line.ambiguous);
  s.launches.push_back(std::move(line.text));
}

// A runtime launch call in progress on this thread: its line, from the runtime's parameters, is
// committed when the call returns unless the driver's launch callback came within it (the driver's
// parameters are then used: they are the documented ones).
struct PendingLaunch {
  bool active = false;
  bool from_driver = false;
  Line line;
};
thread_local PendingLaunch pending;

// The line of one launch of `f`; `attrs` describes its launch attributes.
Line launch_line(State& s, CUfunction f, unsigned const (&grid)[3], unsigned const (&block)[3],
                 size_t smem, const std::string& attrs, void** args, void** extra) {
  const Driver& d = driver_functions();
  Line out;
  std::string& line = out.text;
  line = "launch ";
  std::string name;
  for (int i = 0; i < 3; ++i)
    if (grid[i] == 0 || block[i] == 0 || block[i] > 1024)
      out.unknown = "a launch's configuration could not be read (grid " +
                    dims(grid[0], grid[1], grid[2]) + ", block " +
                    dims(block[0], block[1], block[2]) + ")";
  if (!f || !d.FuncGetName) {
    out.unknown = "a launch's function could not be named (the driver lacks cuFuncGetName)";
    name = "?";
  } else {
    // Since CUDA 12 a launch may pass a CUkernel where a CUfunction is taken (the runtime's <<<>>>
    // path does, inside __cudaLaunchKernel): such a handle is read through its function in the
    // current context.
    const char* n = nullptr;
    if (d.FuncGetName(&n, f) != CUDA_SUCCESS || !n) {
      CUfunction g = nullptr;
      n = nullptr;
      if (d.KernelGetFunction &&
          d.KernelGetFunction(&g, reinterpret_cast<CUkernel>(f)) == CUDA_SUCCESS && g &&
          d.FuncGetName(&n, g) == CUDA_SUCCESS && n)
        f = g;
    }
    // (Normalised as the CUBIN digests' keys are: the same code built in another directory.)
    name = n ? normalized_anonymous_names(n) : "?";
    if (!n && out.unknown.empty())
      out.unknown =
          "a launch's function could not be named (the driver refused its handle as a function and "
          "as a kernel)";
  }
  line += name + " code=";
  size_t versions = 0;
  std::string digest;
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    const auto code = s.code.find(name);
    versions = code == s.code.end() ? 0 : code->second.size();
    if (versions == 1) digest = code->second.begin()->first;
  }
  if (versions == 1) {
    line += digest.substr(0, 16);
  } else if (versions == 0) {
    line += "?";
    if (out.unknown.empty())
      out.unknown = "the code of kernel " + name +
                    " was not seen loaded (its module was loaded before kgate watched)";
  } else {
    line += "ambiguous";
    out.ambiguous = "kernel " + name + " is held with different code by " +
                    std::to_string(versions) + " loaded modules: which one ran is not known";
  }
  line += " grid=" + dims(grid[0], grid[1], grid[2]) +
          " block=" + dims(block[0], block[1], block[2]) + " smem=" + std::to_string(smem) + attrs +
          " args=";
  if (args && f && d.FuncGetParamInfo) {
    for (size_t i = 0;; ++i) {
      size_t offset = 0, size = 0;
      if (d.FuncGetParamInfo(f, i, &offset, &size) != CUDA_SUCCESS) break;
      line += (i ? "," : "") + masked(static_cast<const unsigned char*>(args[i]), size);
    }
  } else if (extra) {
    const unsigned char* buffer = nullptr;
    size_t size = 0;
    for (size_t i = 0; extra[i] != CU_LAUNCH_PARAM_END; i += 2) {
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_POINTER)
        buffer = static_cast<const unsigned char*>(extra[i + 1]);
      if (extra[i] == CU_LAUNCH_PARAM_BUFFER_SIZE) size = *static_cast<const size_t*>(extra[i + 1]);
    }
    if (buffer) line += masked(buffer, size);
  } else if (args && out.unknown.empty()) {
    out.unknown = "the arguments of kernel " + name +
                  " could not be read (the driver lacks cuFuncGetParamInfo)";
  }
  return out;
}

// A launch seen through the runtime: pending until the call returns (see PendingLaunch).
void runtime_launch(Line line) {
  pending.active = true;
  pending.from_driver = false;
  pending.line = std::move(line);
}

// A launch seen through the driver: inside a runtime launch call it replaces the runtime's line;
// inside another runtime call (kgate's own queries, a copy the runtime makes) it is not the
// kernel's; else it is recorded.
void driver_launch(State& s, Line line, bool nested) {
  if (!nested) {
    commit(s, std::move(line));
  } else if (pending.active && !pending.from_driver) {
    pending.from_driver = true;
    pending.line = std::move(line);
  }
}

template <typename Attribute>
std::string attribute_text(const Attribute* attrs, unsigned count) {
  std::string out;
  for (unsigned i = 0; attrs && i < count; ++i) {
    const auto& a = attrs[i];
    // The value's first 16 bytes hold every scalar attribute (cluster dimensions, priority,
    // cooperative, ...); addresses in them are masked.
    out += " attr" + std::to_string(static_cast<int>(a.id)) + "=" +
           masked(reinterpret_cast<const unsigned char*>(&a) + 8, 16);
  }
  return out;
}

CUfunction function_of_runtime(const void* func) {
  cudaFunction_t f = nullptr;
  if (cudaGetFuncBySymbol(&f, func) == cudaSuccess && f) return reinterpret_cast<CUfunction>(f);
  cudaGetLastError();
  // A cudaKernel_t passed where a function is taken (allowed since CUDA 12).
  CUfunction g = nullptr;
  const Driver& d = driver_functions();
  if (d.KernelGetFunction &&
      d.KernelGetFunction(&g, reinterpret_cast<CUkernel>(const_cast<void*>(func))) == CUDA_SUCCESS)
    return g;
  return nullptr;
}

// A call that is not a kernel launch recorded above: a memory copy or fill is recorded by name; a
// launch of another kind (a graph, a host function, several devices) leaves the record unknown.
void record_other(State& s, const char* function, const std::string& api) {
  const std::string name = function ? function : "";
  const auto is = [&](const char* what) {
    return name.compare(0, api.size() + std::strlen(what), api + what) == 0;
  };
  if (is("Memcpy") || is("Memset")) {
    commit(s, {name, "", ""});
  } else if (is("Launch") || is("GraphLaunch")) {
    commit(s, {name,
               name.find("Graph") != std::string::npos
                   ? "it launches a CUDA graph (" + name +
                         "), whose kernels are not recorded one by one"
                   : "it calls " + name + ", which is not recorded in detail",
               ""});
  }
}

void on_runtime(State& s, CUpti_CallbackId id, const CUpti_CallbackData* cb) {
  switch (id) {
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000: {
      const auto* p = static_cast<const cudaLaunchKernel_v7000_params*>(cb->functionParams);
      const bool plain = id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 ||
                         id == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000;
      runtime_launch(launch_line(s, function_of_runtime(p->func),
                                 {p->gridDim.x, p->gridDim.y, p->gridDim.z},
                                 {p->blockDim.x, p->blockDim.y, p->blockDim.z}, p->sharedMem,
                                 plain ? "" : " cooperative", p->args, nullptr));
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000:
    case CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_ptsz_v13000: {
      // (No generated parameter header declares this one: its parameters are read as its
      // prototype has them, and the driver's launch callback, when it comes within, replaces them.)
      const auto* p = static_cast<const RuntimeKernelLaunchParams*>(cb->functionParams);
      CUfunction f = nullptr;
      const Driver& d = driver_functions();
      if (p && d.KernelGetFunction) d.KernelGetFunction(&f, reinterpret_cast<CUkernel>(p->kernel));
      if (!p) return;
      runtime_launch(launch_line(s, f, {p->gridDim.x, p->gridDim.y, p->gridDim.z},
                                 {p->blockDim.x, p->blockDim.y, p->blockDim.z}, p->sharedMem, "",
                                 p->args, nullptr));
      return;
    }
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060:
    case CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060: {
      const auto* p = static_cast<const cudaLaunchKernelExC_v11060_params*>(cb->functionParams);
      const cudaLaunchConfig_t* c = p->config;
      if (!c) return;
      runtime_launch(launch_line(s, function_of_runtime(p->func),
                                 {c->gridDim.x, c->gridDim.y, c->gridDim.z},
                                 {c->blockDim.x, c->blockDim.y, c->blockDim.z}, c->dynamicSmemBytes,
                                 attribute_text(c->attrs, c->numAttrs), p->args, nullptr));
      return;
    }
    default:
      record_other(s, cb->functionName, "cuda");
  }
}

void on_driver(State& s, CUpti_CallbackId id, const CUpti_CallbackData* cb, bool nested) {
  switch (id) {
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz: {
      const auto* p = static_cast<const cuLaunchKernel_params*>(cb->functionParams);
      driver_launch(s,
                    launch_line(s, p->f, {p->gridDimX, p->gridDimY, p->gridDimZ},
                                {p->blockDimX, p->blockDimY, p->blockDimZ}, p->sharedMemBytes, "",
                                p->kernelParams, p->extra),
                    nested);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz: {
      const auto* p = static_cast<const cuLaunchCooperativeKernel_params*>(cb->functionParams);
      driver_launch(s,
                    launch_line(s, p->f, {p->gridDimX, p->gridDimY, p->gridDimZ},
                                {p->blockDimX, p->blockDimY, p->blockDimZ}, p->sharedMemBytes,
                                " cooperative", p->kernelParams, nullptr),
                    nested);
      return;
    }
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx:
    case CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz: {
      const auto* p = static_cast<const cuLaunchKernelEx_params*>(cb->functionParams);
      const CUlaunchConfig* c = p->config;
      if (!c) return;
      driver_launch(s,
                    launch_line(s, p->f, {c->gridDimX, c->gridDimY, c->gridDimZ},
                                {c->blockDimX, c->blockDimY, c->blockDimZ}, c->sharedMemBytes,
                                attribute_text(c->attrs, c->numAttrs), p->kernelParams, p->extra),
                    nested);
      return;
    }
    default:
      if (!nested) record_other(s, cb->functionName, "cu");
  }
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId id,
                          const void* data) {
  if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
    if (id == CUPTI_CBID_RESOURCE_MODULE_LOADED) on_module(data, true);
    if (id == CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) on_module(data, false);
    return;
  }
  if (domain != CUPTI_CB_DOMAIN_RUNTIME_API && domain != CUPTI_CB_DOMAIN_DRIVER_API) return;
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  auto& s = state();
  if (nesting.generation != s.generation) {
    nesting = {s.generation, 0};
    pending = {};
  }
  if (cb->callbackSite == CUPTI_API_EXIT) {
    if (nesting.depth > 0) --nesting.depth;
    // The outermost runtime call returns: its launch, if it was one, is recorded now.
    if (nesting.depth == 0 && pending.active) {
      commit(s, std::move(pending.line));
      pending = {};
    }
    return;
  }
  const bool nested = nesting.depth++ > 0;
  if (!s.recording) return;
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (!nested) on_runtime(s, id, cb);  // (a nested runtime call is kgate's own query)
  } else {
    on_driver(s, id, cb, nested);
  }
}

}  // namespace

bool watch_modules(std::string* why) {
  auto& s = state();
  static std::once_flag once;
  std::call_once(once, [&s] {
    if (under_sanitizer()) {
      s.why_not = "CUPTI is left to compute-sanitizer in this process (KGATE_UNDER_SANITIZER=1)";
      return;
    }
    CUpti_SubscriberHandle subscriber{};
    const CUptiResult rc =
        cuptiSubscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_callback), nullptr);
    if (rc != CUPTI_SUCCESS) {
      const char* text = nullptr;
      cuptiGetResultString(rc, &text);
      s.why_not = std::string("CUPTI's callbacks are not available (") + (text ? text : "?") +
                  "; a profiler may hold them)";
      return;
    }
    if (cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                            CUPTI_CBID_RESOURCE_MODULE_LOADED) != CUPTI_SUCCESS ||
        cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_RESOURCE,
                            CUPTI_CBID_RESOURCE_MODULE_UNLOAD_STARTING) != CUPTI_SUCCESS) {
      s.why_not = "CUPTI's module callbacks could not be enabled";
      return;
    }
    s.subscriber = subscriber;
    s.subscribed = true;
  });
  if (why) *why = s.why_not;
  return s.subscribed;
}

int64_t modules_loaded() { return loads.load(); }

LaunchRecorder::LaunchRecorder() {
  if (!watch_modules(&why_not_)) return;
  auto& s = state();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    if (s.recording) {
      why_not_ = "another recording is in progress";
      return;
    }
    s.recording = true;
    ++s.generation;
    s.launches.clear();
    s.unknown.clear();
    s.ambiguous.clear();
  }
  if (cuptiEnableDomain(1, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API) != CUPTI_SUCCESS ||
      cuptiEnableDomain(1, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API) != CUPTI_SUCCESS) {
    why_not_ = "CUPTI's API callbacks could not be enabled";
    std::lock_guard<std::mutex> lock(s.mutex);
    s.recording = false;
    return;
  }
  active_ = true;
}

LaunchRecorder::~LaunchRecorder() {
  if (active_) stop();
}

LaunchRecord LaunchRecorder::stop() {
  LaunchRecord r;
  if (!active_) {
    r.why = why_not_.empty() ? "not recorded" : why_not_;
    return r;
  }
  active_ = false;
  auto& s = state();
  cuptiEnableDomain(0, s.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
  cuptiEnableDomain(0, s.subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
  std::lock_guard<std::mutex> lock(s.mutex);
  s.recording = false;
  r.launches = std::move(s.launches);
  s.launches.clear();
  r.ambiguous = !s.ambiguous.empty();
  r.known = s.unknown.empty();
  r.why = !s.unknown.empty() ? s.unknown : s.ambiguous;
  Sha256 h;
  h.field("kgate-launches/1");
  for (const auto& l : r.launches) h.field(l);
  if (r.known) r.digest = h.hex();
  return r;
}

bool same_launches(const LaunchRecord& a, const LaunchRecord& b, std::string* difference) {
  auto say = [&](const std::string& text) {
    if (difference) *difference = text;
    return false;
  };
  if (!a.known || !b.known) return say("not recorded: " + (!a.known ? a.why : b.why));
  if (a.ambiguous || b.ambiguous) return say(a.ambiguous ? a.why : b.why);
  for (size_t i = 0; i < a.launches.size() && i < b.launches.size(); ++i)
    if (a.launches[i] != b.launches[i])
      return say("launch " + std::to_string(i + 1) + ": '" + a.launches[i] + "' against '" +
                 b.launches[i] + "'");
  if (a.launches.size() != b.launches.size())
    return say(std::to_string(a.launches.size()) + " launches against " +
               std::to_string(b.launches.size()));
  return true;
}

}  // namespace kgate::cuda
