// CUPTI activity timer and CUDA-event fallback.
#include "runtime/cuda/timer.hpp"

#include <cuda_runtime.h>
#include <cupti.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "runtime/cuda/check.hpp"
#include "runtime/cuda/launch_record.hpp"

namespace kgate::cuda {
namespace {

constexpr size_t kBufferBytes = 2 << 20;
constexpr size_t kAlign = 8;

// CUPTI's activity buffers, kept for reuse and handed out zeroed. CUPTI otherwise zeroes each new
// buffer in the thread whose API call needs it: after every flush that was the first CUDA call of
// the next timed block, ~0.3 ms for an 8 MB buffer (40% of a comparison's wall time on the H200).
// A completed buffer is zeroed only where records were written.
struct BufferPool {
  std::mutex mutex;
  std::vector<uint8_t*> free;
};
BufferPool& buffer_pool() {
  static BufferPool* p = new BufferPool;
  return *p;
}

struct KernelRecord {
  uint32_t correlation = 0;
  uint64_t start = 0, end = 0;
  std::string kernel;  // "name<<<(x,y,z), (x,y,z)>>>"
};

// CUPTI delivers records through process-wide callbacks; they land here, while a timer collects.
struct ActivitySink {
  std::mutex mutex;
  bool collecting = false;
  std::map<uint32_t, uint64_t> external_of_correlation;  // CUPTI correlation id -> our launch id
  std::set<uint32_t> own_correlations;  // API calls of kgate's own work between launches
  std::vector<KernelRecord> kernels;
  uint64_t dropped = 0;
};

// Never destroyed: CUPTI's own thread may still deliver a buffer while the process exits, after
// static destructors ran (a static Runner's timer flushing at exit crashed there).
ActivitySink& sink() {
  static ActivitySink* s = new ActivitySink;
  return *s;
}

// External correlation kinds: the launch being timed, and kgate's own work between launches.
constexpr auto kLaunchKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0;
constexpr auto kOwnKind = CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM1;

std::string describe_kernel(const CUpti_ActivityKernel10& k) {
  char dims[96];
  std::snprintf(dims, sizeof dims, "<<<(%d,%d,%d), (%d,%d,%d)>>>", k.gridX, k.gridY, k.gridZ,
                k.blockX, k.blockY, k.blockZ);
  return std::string(k.name ? k.name : "?") + dims;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *max_records = 0;
  auto& pool = buffer_pool();
  {
    std::lock_guard<std::mutex> lock(pool.mutex);
    if (!pool.free.empty()) {
      *buffer = pool.free.back();
      pool.free.pop_back();
      *size = kBufferBytes;
      return;
    }
  }
  void* p = nullptr;
  if (posix_memalign(&p, kAlign, kBufferBytes) != 0) p = nullptr;
  if (p) std::memset(p, 0, kBufferBytes);
  *buffer = static_cast<uint8_t*>(p);
  *size = p ? kBufferBytes : 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  auto& s = sink();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    CUpti_Activity* record = nullptr;
    while (s.collecting && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
          record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        s.kernels.push_back({k->correlationId, k->start, k->end, describe_kernel(*k)});
      } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (e->externalKind == kLaunchKind)
          s.external_of_correlation[e->correlationId] = e->externalId;
        if (e->externalKind == kOwnKind) s.own_correlations.insert(e->correlationId);
      }
    }
    size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
    s.dropped += dropped;
  }
  if (!buffer) return;
  std::memset(buffer, 0, std::min(valid, kBufferBytes));
  auto& pool = buffer_pool();
  std::lock_guard<std::mutex> lock(pool.mutex);
  pool.free.push_back(buffer);
}

class CuptiTimer final : public LaunchTimer {
 public:
  explicit CuptiTimer(CuptiRecords records)
      : kind_(records == CuptiRecords::serialized ? CUPTI_ACTIVITY_KIND_KERNEL
                                                  : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
    static std::once_flag registered;
    std::call_once(registered, [] {
      // CUPTI's device buffers for kernel timestamps: 256 KB each (room for ~8,000 records; a timed
      // half-block makes tens) instead of the default 3.2 MB; the size applies to buffers allocated
      // afterwards. After every forced flush the first kernel launch paid for the large buffer,
      // ~0.17 ms per timed half-block; on the H200 this cut an A/A comparison's wall time by 29%
      // unchecked and 26% checked (kgate calibrate, 120 comparisons). Set when the first timer is
      // made, not when the library loads: CUPTI initialized before the driver keeps a tool such as
      // compute-sanitizer from attaching to the process. Without CUPTI the call fails, harmlessly.
      size_t buffer = 256 << 10;
      size_t buffer_bytes = sizeof buffer;
      cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &buffer_bytes, &buffer);
      // kgate hands CUPTI zeroed buffers (buffer_requested): CUPTI need not zero them itself.
      uint8_t zeroed = 1;
      size_t bytes = sizeof zeroed;
      KGATE_CUPTI_CALL(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
                                                 &bytes, &zeroed));
      KGATE_CUPTI_CALL(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed));
    });
    KGATE_CUPTI_CALL(cuptiActivityEnable(kind_));
    KGATE_CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    // External correlation records are attached to API records: without API activity there are
    // none.
    KGATE_CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
    KGATE_CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
    watching_loads_ = watch_modules();  // the one CUPTI subscriber (launch_record.cpp) counts loads
  }
  ~CuptiTimer() override {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    cuptiActivityDisable(kind_);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_RUNTIME);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_DRIVER);
  }

  std::vector<double> time(const std::function<void()>& launch, int count,
                           const std::function<void()>& between) override {
    auto& s = sink();
    // Everything before this call has finished: the window holds only kernels that started while
    // these launches were made (the device, not only the stream, is drained at its end, so that
    // work a launch left on another stream is in its window).
    KGATE_CUDA_CALL(cudaDeviceSynchronize());
    uint64_t window_start = 0;
    KGATE_CUPTI_CALL(cuptiGetTimestamp(&window_start));
    {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.kernels.clear();
      s.external_of_correlation.clear();
      s.own_correlations.clear();
      s.collecting = true;
    }
    const uint64_t first = next_id_;
    int64_t loads = 0;
    std::vector<uint64_t> called(static_cast<size_t>(count), 0);  // when each launch call began
    try {
      for (int i = 0; i < count; ++i) {
        if (between) {
          KGATE_CUPTI_CALL(cuptiActivityPushExternalCorrelationId(kOwnKind, 1));
          between();
          uint64_t popped = 0;
          KGATE_CUPTI_CALL(cuptiActivityPopExternalCorrelationId(kOwnKind, &popped));
        }
        KGATE_CUPTI_CALL(cuptiActivityPushExternalCorrelationId(kLaunchKind, next_id_++));
        KGATE_CUPTI_CALL(cuptiGetTimestamp(&called[static_cast<size_t>(i)]));
        const int64_t loads_before = modules_loaded();
        launch();
        loads += modules_loaded() - loads_before;
        uint64_t popped = 0;
        KGATE_CUPTI_CALL(cuptiActivityPopExternalCorrelationId(kLaunchKind, &popped));
      }
      KGATE_CUDA_CALL(cudaDeviceSynchronize());
      // The device is drained, so the window's records are complete: a plain flush hands over the
      // buffers that hold them. A forced one also ends every partly filled buffer; on the H200 it
      // cost 14 us per call unchecked and 45 us with checked timing (an A/A comparison's wall
      // time: 3% and 8%). It follows only when a launch still lacks its kernel record, or the API
      // record that ties the kernel to the launch.
      KGATE_CUPTI_CALL(cuptiActivityFlushAll(0));
      if (!every_launch_recorded(first, count)) {
        ++forced_flushes_;
        KGATE_CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
      }
    } catch (...) {
      std::lock_guard<std::mutex> lock(s.mutex);
      s.collecting = false;
      throw;
    }
    module_loads_ = watching_loads_ ? static_cast<int>(loads) : -1;
    std::vector<double> ns(static_cast<size_t>(count), 0.0);
    kernels_.assign(static_cast<size_t>(count), KernelSet{});
    std::lock_guard<std::mutex> lock(s.mutex);
    s.collecting = false;
    // The launch's own kernels first; then a kernel that no launch call started (another thread
    // launched it) counts for the last launch that had begun before it started: begun when its
    // first own kernel started, or, without one, when the launch call began.
    std::vector<uint64_t> begun = called;
    std::vector<bool> has_own(static_cast<size_t>(count), false);
    std::vector<const KernelRecord*> foreign;
    for (const auto& k : s.kernels) {
      if (k.start < window_start) continue;
      auto it = s.external_of_correlation.find(k.correlation);
      if (it == s.external_of_correlation.end()) {
        if (!s.own_correlations.count(k.correlation)) foreign.push_back(&k);
        continue;
      }
      if (it->second < first || it->second >= first + static_cast<uint64_t>(count)) continue;
      const size_t i = static_cast<size_t>(it->second - first);
      ns[i] += static_cast<double>(k.end - k.start);
      kernels_[i].push_back(k.kernel);
      begun[i] = has_own[i] ? std::min(begun[i], k.start) : k.start;
      has_own[i] = true;
    }
    for (const KernelRecord* k : foreign) {
      size_t at = 0;
      for (size_t i = 0; i < begun.size(); ++i)
        if (begun[i] <= k->start && begun[i] >= begun[at]) at = i;
      ns[at] += static_cast<double>(k->end - k->start);
      kernels_[at].push_back(k->kernel + " (launched by another thread)");
    }
    for (auto& set : kernels_) std::sort(set.begin(), set.end());
    s.kernels.clear();
    s.external_of_correlation.clear();
    s.own_correlations.clear();
    for (int i = 0; i < count; ++i)
      if (kernels_[static_cast<size_t>(i)].empty())
        throw Error(ErrorKind::device,
                    "CUPTI recorded no kernel for launch " + std::to_string(i) + " of " +
                        std::to_string(count) +
                        ": the launch started no kernel, or CUPTI dropped records (" +
                        std::to_string(s.dropped) + " dropped)");
    return ns;
  }
  const char* name() const override {
    return kind_ == CUPTI_ACTIVITY_KIND_KERNEL ? "cupti-serial" : "cupti";
  }
  int64_t forced_flushes() const override { return forced_flushes_; }
  const std::vector<KernelSet>& launch_kernels() const override { return kernels_; }
  int module_loads() const override { return module_loads_; }

 private:
  CUpti_ActivityKind kind_;
  uint64_t next_id_ = 1;
  bool watching_loads_ = false;
  int module_loads_ = -1;
  std::vector<KernelSet> kernels_;
  int64_t forced_flushes_ = 0;

  // Whether launches first .. first + count - 1 each have a kernel record, tied to the launch by
  // its API record's external correlation, in what was delivered so far.
  static bool every_launch_recorded(uint64_t first, int count) {
    auto& s = sink();
    std::lock_guard<std::mutex> lock(s.mutex);
    std::vector<bool> seen(static_cast<size_t>(count), false);
    int missing = count;
    for (const auto& k : s.kernels) {
      const auto it = s.external_of_correlation.find(k.correlation);
      if (it == s.external_of_correlation.end() || it->second < first) continue;
      const uint64_t i = it->second - first;
      if (i < seen.size() && !seen[i]) {
        seen[i] = true;
        --missing;
      }
    }
    return missing == 0;
  }
};

class EventTimer final : public LaunchTimer {
 public:
  explicit EventTimer(cudaStream_t stream) : stream_(stream) {
    KGATE_CUDA_CALL(cudaEventCreate(&start_));
    KGATE_CUDA_CALL(cudaEventCreate(&stop_));
  }
  ~EventTimer() override {
    KGATE_CUDA_CALL_NOTHROW(cudaEventDestroy(start_));
    KGATE_CUDA_CALL_NOTHROW(cudaEventDestroy(stop_));
  }
  std::vector<double> time(const std::function<void()>& launch, int count,
                           const std::function<void()>& between) override {
    std::vector<double> ns;
    for (int i = 0; i < count; ++i) {
      if (between) between();
      KGATE_CUDA_CALL(cudaEventRecord(start_, stream_));
      launch();
      KGATE_CUDA_CALL(cudaEventRecord(stop_, stream_));
      KGATE_CUDA_CALL(cudaEventSynchronize(stop_));
      float ms = 0;
      KGATE_CUDA_CALL(cudaEventElapsedTime(&ms, start_, stop_));
      ns.push_back(static_cast<double>(ms) * 1e6);
    }
    return ns;
  }
  const char* name() const override { return "events"; }

 private:
  cudaStream_t stream_;
  cudaEvent_t start_{}, stop_{};
};

}  // namespace

std::unique_ptr<LaunchTimer> make_cupti_timer(CuptiRecords records) {
  return std::make_unique<CuptiTimer>(records);
}

std::unique_ptr<LaunchTimer> make_event_timer(void* stream) {
  return std::make_unique<EventTimer>(static_cast<cudaStream_t>(stream));
}

std::unique_ptr<LaunchTimer> make_best_timer(void* stream, std::string* note) {
  try {
    return make_cupti_timer();
  } catch (const Error& e) {
    if (note) *note = std::string("CUPTI unavailable, timing with CUDA events: ") + e.what();
    return make_event_timer(stream);
  }
}

cudaError_t launch_copy(const void* src, void* dst, size_t bytes, int multiprocessors,
                        cudaStream_t stream);  // l2_flush.cu
cudaError_t launch_read_flush(const void* buffer, size_t bytes, int* sink, int multiprocessors,
                              const ElementSwaps& swaps, cudaStream_t stream);      // l2_flush.cu
cudaError_t launch_swap_elements(void* a, void* b, int size, cudaStream_t stream);  // l2_flush.cu

L2Flusher::L2Flusher(void* stream, FlushMode mode) : stream_(stream), mode_(mode) {
  int device = 0, l2 = 0;
  KGATE_CUDA_CALL(cudaGetDevice(&device));
  KGATE_CUDA_CALL(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  KGATE_CUDA_CALL(
      cudaDeviceGetAttribute(&multiprocessors_, cudaDevAttrMultiProcessorCount, device));
  bytes_ = static_cast<size_t>(l2 > 0 ? l2 : 64 << 20) * 2;
  KGATE_CUDA_CALL(cudaMalloc(&buffer_, bytes_));
  KGATE_CUDA_CALL(cudaMalloc(reinterpret_cast<void**>(&sink_), sizeof(int)));
  // Zeros: the read kernel stores to the sink only on a non-zero value, i.e. never.
  KGATE_CUDA_CALL(cudaMemsetAsync(buffer_, 0, bytes_, static_cast<cudaStream_t>(stream_)));
  KGATE_CUDA_CALL(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)));
}

L2Flusher::~L2Flusher() {
  KGATE_CUDA_CALL_NOTHROW(cudaFree(buffer_));
  KGATE_CUDA_CALL_NOTHROW(cudaFree(sink_));
}

void L2Flusher::swap_at_flush(void* a, void* b, int size) {
  if (mode_ != FlushMode::read || swaps_.count == ElementSwaps::kMax) {
    KGATE_CUDA_CALL(launch_swap_elements(a, b, size, static_cast<cudaStream_t>(stream_)));
    return;
  }
  swaps_.a[swaps_.count] = static_cast<unsigned char*>(a);
  swaps_.b[swaps_.count] = static_cast<unsigned char*>(b);
  swaps_.size[swaps_.count] = size;
  ++swaps_.count;
}

void L2Flusher::flush() {
  if (mode_ == FlushMode::read) {
    const ElementSwaps swaps = swaps_;
    swaps_.count = 0;
    KGATE_CUDA_CALL(launch_read_flush(buffer_, bytes_, sink_, multiprocessors_, swaps,
                                      static_cast<cudaStream_t>(stream_)));
    return;
  }
  value_ = (value_ + 1) & 0xff;
  KGATE_CUDA_CALL(cudaMemsetAsync(buffer_, value_, bytes_, static_cast<cudaStream_t>(stream_)));
}

double copy_bandwidth(void* stream, LaunchTimer& timer, L2Flusher& flusher, int launches) {
  int device = 0, l2 = 0, sms = 0;
  KGATE_CUDA_CALL(cudaGetDevice(&device));
  KGATE_CUDA_CALL(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  KGATE_CUDA_CALL(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
  const size_t bytes = std::max<size_t>(size_t{256} << 20, static_cast<size_t>(l2) * 4);
  void* src = nullptr;
  void* dst = nullptr;
  KGATE_CUDA_CALL(cudaMalloc(&src, bytes));
  if (cudaMalloc(&dst, bytes) != cudaSuccess) {
    cudaGetLastError();
    KGATE_CUDA_CALL_NOTHROW(cudaFree(src));
    throw Error(ErrorKind::device, "no device memory for the speed-of-light copy (" +
                                       std::to_string(2 * bytes) + " bytes)");
  }
  auto s = static_cast<cudaStream_t>(stream);
  std::vector<double> ns;
  try {
    KGATE_CUDA_CALL(cudaMemsetAsync(src, 1, bytes, s));
    ns = timer.time([&] { KGATE_CUDA_CALL(launch_copy(src, dst, bytes, sms, s)); }, launches,
                    [&] { flusher.flush(); });
  } catch (...) {
    KGATE_CUDA_CALL_NOTHROW(cudaFree(src));
    KGATE_CUDA_CALL_NOTHROW(cudaFree(dst));
    throw;
  }
  KGATE_CUDA_CALL_NOTHROW(cudaFree(src));
  KGATE_CUDA_CALL_NOTHROW(cudaFree(dst));
  const double best = *std::min_element(ns.begin(), ns.end());
  return best > 0 ? 2.0 * static_cast<double>(bytes) / (best * 1e-9) : 0;
}

}  // namespace kgate::cuda
