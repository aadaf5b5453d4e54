// CUPTI activity timer and CUDA-event fallback.
#include "runtime/cuda/timer.hpp"

#include <cuda_runtime.h>
#include <cupti.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "runtime/cuda/check.hpp"

namespace kgate::cuda {
namespace {

constexpr size_t kBufferBytes = 8 << 20;
constexpr size_t kAlign = 8;

// CUPTI delivers records through process-wide callbacks; they land here.
struct ActivitySink {
  std::mutex mutex;
  std::map<uint32_t, uint64_t> external_of_correlation;  // CUPTI correlation id -> our launch id
  std::vector<std::pair<uint32_t, uint64_t>> kernel_durations;  // (correlation id, ns)
  uint64_t dropped = 0;
};

// Never destroyed: CUPTI's own thread may still deliver a buffer while the process exits, after
// static destructors ran (a static Runner's timer flushing at exit crashed there).
ActivitySink& sink() {
  static ActivitySink* s = new ActivitySink;
  return *s;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  void* p = nullptr;
  if (posix_memalign(&p, kAlign, kBufferBytes) != 0) p = nullptr;
  *buffer = static_cast<uint8_t*>(p);
  *size = p ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  auto& s = sink();
  {
    std::lock_guard<std::mutex> lock(s.mutex);
    CUpti_Activity* record = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        s.kernel_durations.emplace_back(k->correlationId, k->end - k->start);
      } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
          s.external_of_correlation[e->correlationId] = e->externalId;
      }
    }
    size_t dropped = 0;
    cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped);
    s.dropped += dropped;
  }
  std::free(buffer);
}

class CuptiTimer final : public LaunchTimer {
 public:
  CuptiTimer(cudaStream_t stream, CuptiRecords records)
      : stream_(stream),
        kind_(records == CuptiRecords::serialized ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
    static std::once_flag registered;
    std::call_once(registered, [] { KGATE_CUPTI_CALL(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed)); });
    KGATE_CUPTI_CALL(cuptiActivityEnable(kind_));
    KGATE_CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION));
    // External correlation records are attached to API records: without API activity there are none.
    KGATE_CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_RUNTIME));
    KGATE_CUPTI_CALL(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER));
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
    const uint64_t first = next_id_;
    for (int i = 0; i < count; ++i) {
      if (between) between();
      KGATE_CUPTI_CALL(cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, next_id_++));
      launch();
      uint64_t popped = 0;
      KGATE_CUPTI_CALL(cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &popped));
    }
    KGATE_CUDA_CALL(cudaStreamSynchronize(stream_));
    KGATE_CUPTI_CALL(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED));
    std::vector<double> ns(static_cast<size_t>(count), 0.0);
    std::vector<int> kernels(static_cast<size_t>(count), 0);
    auto& s = sink();
    std::lock_guard<std::mutex> lock(s.mutex);
    for (const auto& [corr, dur] : s.kernel_durations) {
      auto it = s.external_of_correlation.find(corr);
      if (it == s.external_of_correlation.end()) continue;
      if (it->second < first || it->second >= first + static_cast<uint64_t>(count)) continue;
      ns[it->second - first] += static_cast<double>(dur);
      kernels[it->second - first] += 1;
    }
    s.kernel_durations.clear();
    s.external_of_correlation.clear();
    for (int i = 0; i < count; ++i)
      if (kernels[static_cast<size_t>(i)] == 0)
        throw Error(ErrorKind::device, "CUPTI recorded no kernel for launch " + std::to_string(i) +
                                           " of " + std::to_string(count) +
                                           ": the launch started no kernel, or CUPTI dropped records (" +
                                           std::to_string(s.dropped) + " dropped)");
    return ns;
  }
  const char* name() const override { return kind_ == CUPTI_ACTIVITY_KIND_KERNEL ? "cupti-serial" : "cupti"; }

 private:
  cudaStream_t stream_;
  CUpti_ActivityKind kind_;
  uint64_t next_id_ = 1;
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

std::unique_ptr<LaunchTimer> make_cupti_timer(void* stream, CuptiRecords records) {
  return std::make_unique<CuptiTimer>(static_cast<cudaStream_t>(stream), records);
}

std::unique_ptr<LaunchTimer> make_event_timer(void* stream) {
  return std::make_unique<EventTimer>(static_cast<cudaStream_t>(stream));
}

std::unique_ptr<LaunchTimer> make_best_timer(void* stream, std::string* note) {
  try {
    return make_cupti_timer(stream);
  } catch (const Error& e) {
    if (note) *note = std::string("CUPTI unavailable, timing with CUDA events: ") + e.what();
    return make_event_timer(stream);
  }
}

cudaError_t launch_read_flush(const void* buffer, size_t bytes, int* sink, int multiprocessors,
                              cudaStream_t stream);  // l2_flush.cu

L2Flusher::L2Flusher(void* stream, FlushMode mode) : stream_(stream), mode_(mode) {
  int device = 0, l2 = 0;
  KGATE_CUDA_CALL(cudaGetDevice(&device));
  KGATE_CUDA_CALL(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device));
  KGATE_CUDA_CALL(cudaDeviceGetAttribute(&multiprocessors_, cudaDevAttrMultiProcessorCount, device));
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

void L2Flusher::flush() {
  if (mode_ == FlushMode::read) {
    KGATE_CUDA_CALL(launch_read_flush(buffer_, bytes_, sink_, multiprocessors_, static_cast<cudaStream_t>(stream_)));
    return;
  }
  value_ = (value_ + 1) & 0xff;
  KGATE_CUDA_CALL(cudaMemsetAsync(buffer_, value_, bytes_, static_cast<cudaStream_t>(stream_)));
}

}  // namespace kgate::cuda
