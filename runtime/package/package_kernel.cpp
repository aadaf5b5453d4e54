// The package KernelInfo: module cache, workspaces, cuLaunchKernel through the run-time-resolved
// driver API, the code digest, and a package compiled into the build.
#include "runtime/package/package_kernel.hpp"

#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <mutex>
#include <set>
#include <type_traits>

#include <nlohmann/json.hpp>

#include "core/cuda_limits.hpp"
#include "core/error.hpp"
#include "core/format.hpp"
#include "core/rng.hpp"
#include "core/sha256.hpp"
#include "gates/props/guard_cases.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/cuda/driver.hpp"
#include "runtime/package/compiled_package.hpp"
#include "runtime/package/device_props.hpp"
#include "runtime/package/package_internal.hpp"

namespace kgate::package {
// ---------------------------------------------------------------------------------------------
// The kernel: module cache, workspaces, launches

/// The bits of `value` as an element of `dtype` (rounded to nearest, ties to even).
uint64_t element_bits(DType dtype, double value) {
  const float f = static_cast<float>(value);
  uint32_t f32 = 0;
  std::memcpy(&f32, &f, 4);
  switch (dtype) {
    case DType::f64: {
      uint64_t b = 0;
      std::memcpy(&b, &value, 8);
      return b;
    }
    case DType::f32:
      return f32;
    case DType::bf16:
      if (std::isnan(f)) return 0x7fc0;
      return (f32 + 0x7fffu + ((f32 >> 16) & 1u)) >> 16;
    case DType::f16: {
      const uint32_t sign = (f32 >> 16) & 0x8000u;
      const uint32_t magnitude = f32 & 0x7fffffffu;
      if (magnitude > 0x7f800000u) return sign | 0x7e00u;   // NaN
      if (magnitude >= 0x477ff000u) return sign | 0x7c00u;  // rounds past 65504: inf
      if (magnitude < 0x33000001u) return sign;             // below half the least subnormal
      const int exponent = static_cast<int>(magnitude >> 23) - 127;
      uint32_t mantissa = (magnitude & 0x7fffffu) | 0x800000u;        // 24 bits with the hidden one
      const int shift = exponent < -14 ? 13 + (-14 - exponent) : 13;  // subnormals lose more bits
      const uint32_t rest = mantissa & ((1u << shift) - 1);
      const uint32_t half = 1u << (shift - 1);
      mantissa >>= shift;
      if (rest > half || (rest == half && (mantissa & 1u))) ++mantissa;  // to nearest, ties to even
      if (exponent < -14) return sign | mantissa;  // (a carry makes it normal)
      return sign | ((static_cast<uint32_t>(exponent + 15) << 10) + (mantissa - 0x400u));
    }
    case DType::i32:
      return static_cast<uint32_t>(static_cast<int32_t>(value));
    case DType::i64:
      return static_cast<uint64_t>(static_cast<int64_t>(value));
    default:
      break;
  }
  throw Error(ErrorKind::internal,
              std::string("no start value bits for dtype ") + dtype_name(dtype));
}

namespace {

/// What every copy of a package's KernelInfo shares.
struct PackageState {
  PackageManifest manifest;
  OpSignature op;
  std::map<std::string, std::string> lowered_names;  ///< of every unit
  /// One CUBIN per translation unit (one for most packages), each with the key that identifies it
  /// in the module cache.
  struct Unit {
    std::string key;
    std::string cubin;
    std::map<std::string, std::vector<KernelParam>>
        params;  ///< read from the CUBIN, by lowered name
    /// This unit's own lowered names: a plain (non-template) kernel whose parameter types come from
    /// a macro ("floatX" set by -DENABLE_BF16) has another mangled name in each unit.
    std::map<std::string, std::string> lowered_names;
  };
  std::vector<Unit> units;
  std::map<std::pair<DType, std::size_t>, std::size_t>
      unit_of;  ///< (dtype, launch) -> unit; empty: 0
  /// A package compiled into the program by nvcc (no units): each name expression's host stub,
  /// whose function cudaGetFuncBySymbol finds.
  std::map<std::string, const void*> host_functions;
  /// What kgate did that the kernel's own host code must also do (raising a shared memory limit),
  /// once each: the report's warnings.
  struct Notes {
    std::mutex mutex;
    std::vector<std::string> lines;
    void add(const std::string& line) {
      std::lock_guard<std::mutex> lock(mutex);
      if (std::find(lines.begin(), lines.end(), line) == lines.end()) lines.push_back(line);
    }
    std::vector<std::string> get() {
      std::lock_guard<std::mutex> lock(mutex);
      return lines;
    }
  };
  std::shared_ptr<Notes> notes = std::make_shared<Notes>();
};

/// A CUBIN loaded into one context, with its function handles.
struct LoadedModule {
  CUmodule module = nullptr;
  std::map<std::string, CUfunction> functions;        ///< by lowered name
  std::map<CUfunction, uint32_t> dynamic_shared_set;  ///< the max-dynamic-smem attribute set
  std::set<std::pair<CUfunction, int>> carveout_set;  ///< the preferred carveouts set
  std::set<std::pair<CUfunction, std::size_t>> params_checked;  ///< (function, launch index)
};

/// Every package module of the process, by (CUBIN key, context). Modules stay loaded for the
/// process: the driver releases them with their context. Leaked on purpose, so that no module is
/// unloaded during static destruction after the driver is gone.
struct ModuleCache {
  std::mutex mutex;
  std::map<std::pair<std::string, CUcontext>, LoadedModule> modules;
};

ModuleCache& module_cache() {
  static ModuleCache* cache = new ModuleCache;
  return *cache;
}

using FuncGetParamInfoFn = CUresult (*)(CUfunction, size_t, size_t*, size_t*);

/// cuFuncGetParamInfo when the driver has it (CUDA 12.4+), else nullptr: the check is skipped.
FuncGetParamInfoFn param_info_function() {
  static const auto fn =
      reinterpret_cast<FuncGetParamInfoFn>(cuda::driver_function("cuFuncGetParamInfo"));
  return fn;
}

/// Re-throws an Error with the package and launch in front of its message.
template <class F>
void with_context(const std::string& where, F&& f) {
  try {
    f();
  } catch (const Error& e) {
    throw Error(e.kind(), where + ": " + e.what());
  }
}

/// The current CUDA context (the runtime's primary context of the current device).
CUcontext current_context(const cuda::DriverApi& api) {
  CUcontext ctx = nullptr;
  KGATE_DRIVER_CALL(api.CtxGetCurrent(&ctx));
  if (ctx) return ctx;
  int device = 0;
  KGATE_CUDA_CALL(cudaGetDevice(&device));
  KGATE_CUDA_CALL(cudaSetDevice(device));  // makes the device's primary context current
  KGATE_CUDA_CALL(cudaFree(nullptr));      // and initializes it
  KGATE_DRIVER_CALL(api.CtxGetCurrent(&ctx));
  if (!ctx)
    throw Error(ErrorKind::device,
                "no current CUDA context after cudaSetDevice(" + std::to_string(device) + ")");
  return ctx;
}

/// Checks the kernel's parameters (count and sizes) against the launch's "args", when the driver
/// can tell (cuFuncGetParamInfo).
void check_parameters(CUfunction f, const PlannedLaunch& l, const std::vector<KernelParam>* read) {
  const FuncGetParamInfoFn info = param_info_function();
  // The count is found by asking for the parameter past the last one, a call that fails by design:
  // under compute-sanitizer (kgate check --sanitize) that failure would count as the kernel's
  // error, and these checks ran in the check itself.
  if (!info || cuda::under_sanitizer()) return;
  const std::string where = l.field + ": kernel \"" + l.name_expression + "\"";
  // The parameter table kgate read from the CUBIN without a GPU (validate checks args against it)
  // must say what the driver says.
  if (read && !read->empty()) {
    for (std::size_t i = 0; i <= read->size(); ++i) {
      size_t offset = 0, size = 0;
      const CUresult rc = info(f, i, &offset, &size);
      if (i == read->size()) {
        if (rc == CUDA_SUCCESS)
          throw Error(ErrorKind::internal,
                      where +
                          ": the driver lists more parameters than kgate read from the CUBIN (" +
                          std::to_string(read->size()) + "); please report this");
        break;
      }
      if (rc != CUDA_SUCCESS || offset != (*read)[i].offset || size != (*read)[i].size)
        throw Error(ErrorKind::internal,
                    where + ": parameter " + std::to_string(i) + " is at offset " +
                        std::to_string(offset) + ", " + std::to_string(size) +
                        " bytes for the driver, " + "but kgate read offset " +
                        std::to_string((*read)[i].offset) + ", " + std::to_string((*read)[i].size) +
                        " bytes from the CUBIN; please report this");
    }
  }
  for (std::size_t i = 0; i < l.args.size(); ++i) {
    size_t offset = 0, size = 0;
    const CUresult rc = info(f, i, &offset, &size);
    if (rc == CUDA_ERROR_INVALID_VALUE)
      throw Error(ErrorKind::package, where + " takes " + std::to_string(i) +
                                          " parameter(s), but \"args\" lists " +
                                          std::to_string(l.args.size()) +
                                          "; make \"args\" match the kernel's "
                                          "signature");
    if (rc != CUDA_SUCCESS) return;  // the driver cannot tell for this function: skip the check
    if (size != l.args[i].size)
      throw Error(ErrorKind::package, where + ": parameter " + std::to_string(i) + " is " +
                                          std::to_string(size) + " bytes, but " + l.args[i].field +
                                          " (" + l.args[i].description + ") is " +
                                          std::to_string(l.args[i].size) +
                                          " bytes; fix its \"type\" or the kernel's "
                                          "signature");
  }
  size_t offset = 0, size = 0;
  if (info(f, l.args.size(), &offset, &size) == CUDA_SUCCESS) {
    std::size_t n = l.args.size() + 1;
    while (n < 4096 && info(f, n, &offset, &size) == CUDA_SUCCESS) ++n;
    throw Error(ErrorKind::package,
                where + " takes " + std::to_string(n) + " parameters, but \"args\" lists only " +
                    std::to_string(l.args.size()) + "; make \"args\" match the kernel's signature");
  }
}

/// Stream-ordered workspace allocations, freed (on the stream) when the launch is done or failed.
class WorkspaceAllocations {
 public:
  WorkspaceAllocations(cudaStream_t stream) : stream_(stream) {}
  ~WorkspaceAllocations() {
    for (void* p : pointers_) {
      if (async_) KGATE_CUDA_CALL_NOTHROW(cudaFreeAsync(p, stream_));
      else KGATE_CUDA_CALL_NOTHROW(cudaFree(p));
    }
  }
  WorkspaceAllocations(const WorkspaceAllocations&) = delete;
  WorkspaceAllocations& operator=(const WorkspaceAllocations&) = delete;

  void* allocate(std::size_t bytes, DType dtype, std::optional<double> start) {
    if (!probed_) {
      int device = 0, pools = 0;
      KGATE_CUDA_CALL(cudaGetDevice(&device));
      KGATE_CUDA_CALL(cudaDeviceGetAttribute(&pools, cudaDevAttrMemoryPoolsSupported, device));
      async_ = pools != 0;
      probed_ = true;
    }
    void* p = nullptr;
    if (async_) KGATE_CUDA_CALL(cudaMallocAsync(&p, bytes, stream_));
    else KGATE_CUDA_CALL(cudaMalloc(&p, bytes));
    pointers_.push_back(p);
    if (start) fill(p, bytes, dtype, *start);
    return p;
  }

  /// Every element of `dtype` at `p` set to `value`, on the stream: a byte memset where the
  /// element's bytes agree, else the driver's 16- or 32-bit memsets (a 64-bit element as two
  /// strided 32-bit halves).
  void fill(void* p, std::size_t bytes, DType dtype, double value) {
    const std::size_t size = dtype_size(dtype);
    const uint64_t bits = element_bits(dtype, value);
    bool bytes_agree = true;
    for (std::size_t i = 1; i < size; ++i)
      bytes_agree &= ((bits >> (8 * i)) & 0xff) == (bits & 0xff);
    if (bytes_agree) {
      KGATE_CUDA_CALL(cudaMemsetAsync(p, static_cast<int>(bits & 0xff), bytes, stream_));
      return;
    }
    using D16 = CUresult (*)(CUdeviceptr, unsigned short, size_t, CUstream);
    using D32 = CUresult (*)(CUdeviceptr, unsigned int, size_t, CUstream);
    using D2D32 = CUresult (*)(CUdeviceptr, size_t, unsigned int, size_t, size_t, CUstream);
    // Resolved once: a workspace is filled inside every launch of its package.
    static const auto d16 = reinterpret_cast<D16>(cuda::driver_function("cuMemsetD16Async"));
    static const auto d32 = reinterpret_cast<D32>(cuda::driver_function("cuMemsetD32Async"));
    static const auto d2d32 = reinterpret_cast<D2D32>(cuda::driver_function("cuMemsetD2D32Async"));
    const auto ptr = reinterpret_cast<CUdeviceptr>(p);
    const auto stream = reinterpret_cast<CUstream>(stream_);
    const std::size_t n = bytes / size;
    if (size == 2 && d16) {
      KGATE_DRIVER_CALL(d16(ptr, static_cast<unsigned short>(bits), n, stream));
    } else if (size == 4 && d32) {
      KGATE_DRIVER_CALL(d32(ptr, static_cast<unsigned int>(bits), n, stream));
    } else if (size == 8 && d2d32) {
      KGATE_DRIVER_CALL(d2d32(ptr, 8, static_cast<unsigned int>(bits), 1, n, stream));
      KGATE_DRIVER_CALL(d2d32(ptr + 4, 8, static_cast<unsigned int>(bits >> 32), 1, n, stream));
    } else {
      throw Error(ErrorKind::device,
                  std::string("the driver lacks the memset that fills a workspace of ") +
                      dtype_name(dtype));
    }
  }

 private:
  cudaStream_t stream_;
  bool probed_ = false;
  bool async_ = false;
  std::vector<void*> pointers_;
};

/// The function of a launch in the package's CUBIN for the call's dtype: its module loaded once
/// per context, the function looked up and its parameters checked once. Under module_cache's lock.
std::pair<CUfunction, LoadedModule*> module_function(const PackageState& state,
                                                     const LaunchPlan& plan, const PlannedLaunch& l,
                                                     const cuda::DriverApi& api, CUcontext ctx) {
  const std::string where = l.field + " (" + l.name_expression + ")";
  // The translation unit that holds this launch's kernel for the call's dtype.
  std::size_t u = 0;
  if (!state.unit_of.empty()) {
    const auto it = state.unit_of.find({plan.dtype, l.index});
    if (it == state.unit_of.end())
      throw Error(ErrorKind::internal, "package " + state.manifest.name + ": no compile unit for " +
                                           where + " and dtype " + dtype_name(plan.dtype));
    u = it->second;
  }
  const auto& unit = state.units.at(u);
  const std::string& cubin = unit.cubin;
  LoadedModule& loaded = module_cache().modules[{unit.key, ctx}];
  if (!loaded.module) {
    with_context("loading its CUBIN (" + std::to_string(cubin.size()) + " bytes)",
                 [&] { KGATE_DRIVER_CALL(api.ModuleLoadData(&loaded.module, cubin.data())); });
  }
  std::string lowered = l.lowered_name;
  if (const auto own = unit.lowered_names.find(l.name_expression);
      own != unit.lowered_names.end() && !own->second.empty())
    lowered = own->second;
  CUfunction& f = loaded.functions[lowered];
  if (!f)
    with_context(where, [&] {
      KGATE_DRIVER_CALL(api.ModuleGetFunction(&f, loaded.module, lowered.c_str()));
    });
  if (loaded.params_checked.insert({f, l.index}).second) {
    try {
      const auto read = unit.params.find(lowered);
      check_parameters(f, l, read == unit.params.end() ? nullptr : &read->second);
    } catch (...) {
      loaded.params_checked.erase({f, l.index});
      throw;
    }
  }
  return {f, &loaded};
}

/// The function of a launch compiled into the program by nvcc: its host stub's function in this
/// context (cudaGetFuncBySymbol), its parameters checked once. Under module_cache's lock.
std::pair<CUfunction, LoadedModule*> compiled_function(const PackageState& state,
                                                       const PlannedLaunch& l, CUcontext ctx) {
  const auto stub = state.host_functions.find(l.name_expression);
  if (stub == state.host_functions.end() || !stub->second)
    throw Error(ErrorKind::internal, l.field + ": kernel \"" + l.name_expression +
                                         "\" was not compiled into the build; please report this");
  // Keyed by the host stub, not by the package's name: two builds of one package in one process
  // (a head and its base, a kernel and its mutant) share the name and must not share a function.
  char key[48];
  std::snprintf(key, sizeof key, "compiled %p", stub->second);
  LoadedModule& loaded = module_cache().modules[{key, ctx}];
  CUfunction& f = loaded.functions[l.name_expression];
  if (!f) {
    cudaFunction_t function = nullptr;
    with_context(l.field + " (" + l.name_expression + ")",
                 [&] { KGATE_CUDA_CALL(cudaGetFuncBySymbol(&function, stub->second)); });
    f = reinterpret_cast<CUfunction>(function);
  }
  if (loaded.params_checked.insert({f, l.index}).second) {
    try {
      check_parameters(f, l, nullptr);
    } catch (...) {
      loaded.params_checked.erase({f, l.index});
      throw;
    }
  }
  return {f, &loaded};
}

/// A launch's function attributes, each set once per function and value: the dynamic shared
/// memory limit as the kernel's host code states it ("max_dynamic_shared_mem"), else raised by
/// kgate to what the launch needs past 48 KiB (which the kernel's own host code must also do: the
/// report says so), and the preferred carveout. Under module_cache's lock.
void set_attributes(const PackageState& state, const LaunchPlan& plan, const PlannedLaunch& l,
                    CUfunction f, LoadedModule& loaded, const cuda::DriverApi& api) {
  const std::string where = l.field + " (" + l.name_expression + ")";
  const Launch& declared = state.manifest.launches[l.index];
  const bool stated = l.max_dynamic_shared_mem.has_value();
  const uint32_t limit = stated ? *l.max_dynamic_shared_mem : l.shared_mem;
  const auto set = loaded.dynamic_shared_set.find(f);
  if (stated ? (set == loaded.dynamic_shared_set.end() || set->second != limit)
             : (l.shared_mem > cuda_limits::kSharedPerBlockDefault &&
                (set == loaded.dynamic_shared_set.end() || set->second < limit))) {
    int device = 0, optin = 0;
    KGATE_CUDA_CALL(cudaGetDevice(&device));
    KGATE_CUDA_CALL(
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    const std::string text =
        stated ? "max_dynamic_shared_mem \"" + declared.max_dynamic_shared_mem->text() + "\""
               : "shared_mem \"" + declared.shared_mem.text() + "\"";
    if (static_cast<int64_t>(limit) > optin)
      throw Error(
          ErrorKind::package,
          where + ": " + text + " = " + std::to_string(limit) +
              " bytes is above the device's limit of " + std::to_string(optin) +
              " bytes of shared memory per block [" + internal::values_text(plan.symbols) +
              "]; narrow guard.shapes so that it fits, or pick a smaller tile with a launch's "
              "\"when\": {\"if\": \"device_smem_per_block_optin >= ...\"}");
    with_context(
        where + ": setting CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES to " +
            std::to_string(limit) + " (the kernel's static shared memory counts too)",
        [&] {
          KGATE_DRIVER_CALL(api.FuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                                 static_cast<int>(limit)));
        });
    loaded.dynamic_shared_set[f] = limit;
    if (!stated)
      state.notes->add(
          l.field + " (" + l.name_expression +
          "): kgate raised the kernel's dynamic shared memory "
          "limit to " +
          std::to_string(limit) +
          " bytes, past the 48 KiB a launch gets without it; "
          "the kernel's own host code must do the same (cudaFuncSetAttribute with "
          "cudaFuncAttributeMaxDynamicSharedMemorySize), and \"max_dynamic_shared_mem\" states it");
  }
  if (l.carveout && loaded.carveout_set.insert({f, *l.carveout}).second)
    with_context(where + ": setting CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT to " +
                     std::to_string(*l.carveout),
                 [&] {
                   KGATE_DRIVER_CALL(api.FuncSetAttribute(
                       f, CU_FUNC_ATTRIBUTE_PREFERRED_SHARED_MEMORY_CARVEOUT, *l.carveout));
                 });
}

void launch_package(const PackageState& state, const KernelCall& call) {
  const std::string& name = state.manifest.name;
  LaunchPlan plan = plan_launches(state.manifest, state.op, state.lowered_names, call);
  const auto& api = cuda::driver();
  const auto stream = static_cast<cudaStream_t>(call.stream);

  // Load the module (once per context) and resolve the functions, attributes and checks.
  std::vector<CUfunction> functions(plan.launches.size(), nullptr);
  with_context("package " + name, [&] {
    std::lock_guard<std::mutex> lock(module_cache().mutex);
    const CUcontext ctx = current_context(api);
    for (std::size_t i = 0; i < plan.launches.size(); ++i) {
      const PlannedLaunch& l = plan.launches[i];
      const auto [f, loaded] = state.host_functions.empty()
                                   ? module_function(state, plan, l, api, ctx)
                                   : compiled_function(state, l, ctx);
      functions[i] = f;
      set_attributes(state, plan, l, f, *loaded, api);
    }
  });

  // Workspaces, then the launches in order on the call's stream.
  WorkspaceAllocations workspaces(stream);
  with_context("package " + name + ": workspace", [&] {
    for (std::size_t w = 0; w < plan.workspaces.size(); ++w) {
      const auto& ws = plan.workspaces[w];
      plan.bind_workspace(w, ws.bytes > 0 ? workspaces.allocate(static_cast<std::size_t>(ws.bytes),
                                                                ws.dtype, ws.start)
                                          : nullptr);
    }
  });
  for (std::size_t i = 0; i < plan.launches.size(); ++i) {
    PlannedLaunch& l = plan.launches[i];
    if (l.empty) continue;
    auto params = l.kernel_params();
    try {
      if (l.cluster[0] == 0 && !l.cooperative && !l.pdl) {
        KGATE_DRIVER_CALL(api.LaunchKernel(functions[i], l.grid[0], l.grid[1], l.grid[2],
                                           l.block[0], l.block[1], l.block[2], l.shared_mem, stream,
                                           params.data(), nullptr));
      } else {  // a cluster, a cooperative or a PDL launch: cuLaunchKernelEx with its attributes
        if (!api.LaunchKernelEx)
          throw Error(ErrorKind::device,
                      "the driver has no cuLaunchKernelEx, which cluster, cooperative and "
                      "programmatic dependent launches need");
        CUlaunchAttribute attrs[3] = {};
        unsigned n = 0;
        if (l.cluster[0] != 0) {
          attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
          attrs[n].value.clusterDim.x = l.cluster[0];
          attrs[n].value.clusterDim.y = l.cluster[1];
          attrs[n].value.clusterDim.z = l.cluster[2];
          ++n;
        }
        if (l.cooperative) {
          attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
          attrs[n].value.cooperative = 1;
          ++n;
        }
        if (l.pdl) {
          attrs[n].id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
          attrs[n].value.programmaticStreamSerializationAllowed = 1;
          ++n;
        }
        CUlaunchConfig config{};
        config.gridDimX = l.grid[0];
        config.gridDimY = l.grid[1];
        config.gridDimZ = l.grid[2];
        config.blockDimX = l.block[0];
        config.blockDimY = l.block[1];
        config.blockDimZ = l.block[2];
        config.sharedMemBytes = l.shared_mem;
        config.hStream = stream;
        config.attrs = attrs;
        config.numAttrs = n;
        KGATE_DRIVER_CALL(api.LaunchKernelEx(&config, functions[i], params.data(), nullptr));
      }
    } catch (const Error& e) {  // the context is only built on failure: launches are timed
      throw Error(e.kind(), "package " + name + ": " + l.field + " (" + l.name_expression +
                                ", grid " + std::to_string(l.grid[0]) + "x" +
                                std::to_string(l.grid[1]) + "x" + std::to_string(l.grid[2]) +
                                ", block " + std::to_string(l.block[0]) + "x" +
                                std::to_string(l.block[1]) + "x" + std::to_string(l.block[2]) +
                                ", " + std::to_string(l.shared_mem) + " bytes of shared memory [" +
                                internal::values_text(plan.symbols) + "]): " + e.what());
    }
  }
}

// Every CUBIN (in unit order) and the manifest as parsed, less what names the package (name,
// version, description): two packages with equal digests launch the same code the same way.
std::string code_digest(const PackageManifest& manifest, const PackageState& state) {
  std::string text;
  for (const auto& u : state.units) text += "unit " + sha256_hex(u.cubin) + "\n";
  try {
    std::ifstream in(manifest.manifest_path);
    nlohmann::json j = nlohmann::json::parse(in);
    for (const char* key : {"name", "version", "description"}) j.erase(key);
    text += j.dump();
  } catch (const std::exception&) {
    return {};  // no digest: never UNCHANGED
  }
  return sha256_hex(text);
}

}  // namespace

namespace {

/// What a package's KernelInfo says whichever compiler built its kernels.
KernelInfo package_kernel_info(const std::shared_ptr<const PackageState>& shared) {
  const PackageManifest& manifest = shared->manifest;
  KernelInfo k;
  k.name = manifest.name;
  k.op = manifest.op;
  k.backend = Backend::cuda;
  k.dtypes = manifest.guard.dtypes;
  k.found_sizes = manifest_sizes(manifest, shared->op);
  k.accepts_strided =
      true;  // outside guard.layouts the call falls back: layout cases test both sides
  k.accepts_unaligned = true;
  k.source = manifest.dir.string();
  k.output_start = manifest.output_start;
  k.case_launches = [shared](const Case& c) {
    std::vector<std::string> out;
    if (const std::string why = case_guard_violation(shared->manifest, shared->op, c); !why.empty())
      return std::vector<std::string>{"fallback (outside the guard: " + why + ")"};
    for (const auto& l : case_launches(shared->manifest, shared->op, c)) out.push_back(describe(l));
    return out;
  };
  k.device_props = [] { return device_props_json(device_props_in_effect()); };
  for (const auto& l : manifest.launches) k.launch_fields.push_back(l.field);
  k.notes = [notes = shared->notes] { return notes->get(); };
  k.accepts = [shared](const KernelCall& call) {
    return call_guard_violation(shared->manifest, shared->op, call).empty();
  };
  k.rejection_reason = [shared](const KernelCall& call) {
    return call_guard_violation(shared->manifest, shared->op, call);
  };
  k.launch = [shared](const KernelCall& call) { launch_package(*shared, call); };
  k.guard_cases = [shared](uint64_t seed) {
    return guard_boundary_cases(shared->manifest, shared->op, seed, kMaxGuardCaseElements);
  };
  return k;
}

void check_op_of(const PackageManifest& manifest, const OpSignature& op, const char* caller) {
  if (manifest.op != op.name)
    throw Error(ErrorKind::internal, std::string(caller) + ": package " + manifest.name +
                                         " implements op '" + manifest.op + "', not '" + op.name +
                                         "'");
}

}  // namespace

KernelInfo make_package_kernel(const PackageManifest& manifest, const CompileResult& compiled,
                               const OpSignature& op) {
  check_op_of(manifest, op, "make_package_kernel");
  if (compiled.cubin.empty())
    throw Error(ErrorKind::package,
                "package " + manifest.name + " (" + manifest.manifest_path.string() +
                    "): the compile result holds no CUBIN; compile it first (kgate validate)");
  auto state = std::make_shared<PackageState>();
  state->manifest = manifest;
  state->op = op;
  state->lowered_names = compiled.lowered_names;
  if (compiled.units.empty()) {
    state->units.push_back({compiled.key.empty() ? sha256_hex(compiled.cubin) : compiled.key,
                            compiled.cubin, compiled.params, compiled.lowered_names});
  } else {
    for (const auto& u : compiled.units)
      state->units.push_back(
          {u.key.empty() ? sha256_hex(u.cubin) : u.key, u.cubin, u.params, u.lowered_names});
    state->unit_of = compiled.unit_of;
  }
  KernelInfo k = package_kernel_info(state);
  k.package = true;
  k.code_digest = code_digest(manifest, *state);
  return k;
}

KernelInfo make_compiled_package_kernel(const PackageManifest& manifest, const OpSignature& op,
                                        const std::map<std::string, const void*>& functions) {
  check_op_of(manifest, op, "make_compiled_package_kernel");
  if (compile_units(manifest).size() > 1)
    throw Error(ErrorKind::package,
                "package " + manifest.name +
                    ": its dtypes or launches have NVRTC options of their "
                    "own (several translation units), which one nvcc compile cannot give");
  auto state = std::make_shared<PackageState>();
  state->manifest = manifest;
  state->op = op;
  for (const auto& name : manifest.name_expressions()) {
    const auto it = functions.find(name);
    if (it == functions.end() || !it->second)
      throw Error(ErrorKind::package,
                  "package " + manifest.name + ": kernel \"" + name +
                      "\" was not compiled into the build (rebuild: the manifest changed)");
    state->lowered_names[name] = name;
    state->host_functions[name] = it->second;
  }
  return package_kernel_info(state);
}

KernelInfo compiled_package_kernel(const CompiledPackage& p) {
  KernelInfo k;
  k.name = p.kernel;
  k.op = p.op;
  k.backend = Backend::cuda;
  k.source = p.source;
  k.timed = p.timed;
  k.mutant = p.mutant || p.control;
  k.control = p.control;
  const std::string text(p.manifest, p.manifest_size);
  std::map<std::string, const void*> functions;
  for (std::size_t i = 0; i < p.function_count; ++i)
    functions[p.functions[i].name_expression] = p.functions[i].function;
  const std::vector<int64_t> tiles(p.tile_sizes, p.tile_sizes + p.tile_count);
  const auto lookup = p.lookup_op;
  k.complete = [text, functions, tiles, lookup](KernelInfo& info) {
    ManifestCheckOptions options;
    options.manifest_text = text;
    options.find_op = lookup;
    PackageManifest manifest;
    try {
      manifest = load_manifest(info.source, options);
    } catch (const Error& e) {
      throw Error(e.kind(), std::string("its manifest, as built:\n") + e.what());
    }
    const OpSignature* op = lookup(manifest.op);
    if (!op) throw Error(ErrorKind::package, "unknown op '" + manifest.op + "'");
    KernelInfo full = make_compiled_package_kernel(manifest, *op, functions);
    full.name = info.name;  // the kernel's name, not the package's
    full.source = info.source;
    full.op_file = info.op_file;
    full.timed = info.timed;
    full.mutant = info.mutant;
    full.control = info.control;
    full.expected_catch = info.expected_catch;
    for (const int64_t t : tiles)
      if (std::find(full.tile_sizes.begin(), full.tile_sizes.end(), t) == full.tile_sizes.end())
        full.tile_sizes.push_back(t);
    std::sort(full.tile_sizes.begin(), full.tile_sizes.end());
    info = std::move(full);
  };
  return k;
}

}  // namespace kgate::package
