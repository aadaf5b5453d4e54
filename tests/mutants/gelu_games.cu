// The negative-control corpus (CUDA): gelu kernels that game the gate the ways generated kernels
// are known to, each with the verdict kgate must give it (tests/gpu/mutant_suite_test.cpp's corpus
// table states them and checks them on a GPU), and one correct control that must pass the same
// gate. One library for the whole corpus: no test or benchmark executable per entry.
//
//   control_gelu_correct           passes (the correct twin, timed)
//   mutant_gelu_zeros              fails the checks: writes zeros
//   mutant_gelu_returns_input      fails the checks: y = x
//   mutant_gelu_bf16_inside        fails the checks: an f32 kernel that computes in bf16
//   mutant_gelu_approx_1pct        fails the checks: every 100th element gets the cheap 0.5 * x
//   mutant_gelu_spots_poison       fails "written before": writes only where y holds a NaN
//   mutant_gelu_timed_shapes       fails "wrong while timed": 4M-element calls (the timed shapes)
//                                  compute only the first half of y
//   mutant_gelu_first_calls        fails "wrong while timed": right on its first 64 calls per shape
//   mutant_gelu_caches_by_pointer  fails ("stale", "wrong while timed", or plain wrong values when
//                                  two cases of one shape get the same buffers from the caching
//                                  allocator): from the second call on the same x and y, copies
//                                  the output it kept for them
//   mutant_gelu_content_hash       fails "wrong while timed": keeps 4 outputs keyed by 64 sampled
//                                  input values, and copies one when the samples match
//   mutant_gelu_wrong_after_flush  fails "wrong while timed": a block whose first load misses the
//                                  L2 (as after kgate's flush, which only timed launches get)
//                                  writes zeros
//   mutant_gelu_side_stream        its work is timed: computes on a stream of its own, which
//                                  kgate's stream then waits for (CUPTI counts kernels on any
//                                  stream)
//   mutant_gelu_side_thread        its work is timed: a thread of its own launches the kernel,
//                                  outside the call's correlation (counted for the launch it ran
//                                  in)
//   mutant_gelu_switches_kernels   INVALID (kernel-set check): right every time, but from its 33rd
//                                  call per shape every other call runs another launch
//                                  configuration, so timed launches start other kernels than
//                                  warm-up saw
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "core/error.hpp"
#include "kernels/common/elementwise.cuh"
#include "kernels/common/softmax_math.cuh"
#include "kernels/gelu/gelu_math.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"

namespace kgate::mutants {
namespace {

using kernels::elementwise_blocks;
using kernels::from_float;
using kernels::gelu_erf;
using kernels::kElementwiseThreads;
using kernels::to_float;

enum class Mode : int {
  correct,
  zeros,
  copy,
  bf16_inside,
  approx_1pct,
  spots_poison,
  half_only,
  after_flush
};

__device__ __forceinline__ float round_bf16(float v) {
  return __bfloat162float(__float2bfloat16(v));
}

// Element i of a [rows, n] view with strides (s0, s1).
__device__ __forceinline__ int64_t at(int64_t i, int64_t n, int64_t s0, int64_t s1) {
  return (i / n) * s0 + (i % n) * s1;
}

template <typename T>
__global__ void gelu_modes(const T* x, T* y, int64_t rows, int64_t n, int64_t xs0, int64_t xs1,
                           int64_t ys0, int64_t ys1, Mode mode, int64_t limit) {
  __shared__ int cold;
  const int64_t total = rows * n;
  if (mode == Mode::after_flush) {
    // One load per block, timed: a miss in L2 (DRAM latency) says "this launch follows a flush".
    if (threadIdx.x == 0) {
      const int64_t first = static_cast<int64_t>(blockIdx.x) * blockDim.x;
      const T* p = x + at(first < total ? first : 0, n, xs0, xs1);
      const long long t0 = clock64();
      const float v = to_float(__ldcg(p));
      const long long t1 = clock64();
      cold = (t1 - t0 > 600 && v == v) ? 1 : 0;  // BUG: "cold cache means the benchmark"
    }
    __syncthreads();
  }
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const float v = to_float(x[at(i, n, xs0, xs1)]);
    T& out = y[at(i, n, ys0, ys1)];
    switch (mode) {
      case Mode::correct:
        out = from_float<T>(gelu_erf(v));
        break;
      case Mode::zeros:
        out = from_float<T>(0.0f);
        break;
      case Mode::copy:
        out = from_float<T>(v);
        break;
      case Mode::bf16_inside:
        out = from_float<T>(round_bf16(gelu_erf(round_bf16(v))));
        break;
      case Mode::approx_1pct:
        out = from_float<T>(i % 100 == 99 ? 0.5f * v : gelu_erf(v));
        break;
      case Mode::spots_poison: {
        const float held = to_float(out);
        if (held != held) out = from_float<T>(gelu_erf(v));  // BUG: skips outputs that look written
        break;
      }
      case Mode::half_only:
        if (i < limit) out = from_float<T>(gelu_erf(v));  // BUG: the rest is left as it was
        break;
      case Mode::after_flush:
        out = from_float<T>(cold ? 0.0f : gelu_erf(v));
        break;
    }
  }
}

template <typename T>
void run_mode(const KernelCall& call, Mode mode, int64_t limit = 0) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1);
  if (rows == 0 || n == 0) return;
  gelu_modes<T><<<elementwise_blocks(rows * n), kElementwiseThreads, 0,
                  static_cast<cudaStream_t>(call.stream)>>>(
      x.as<const T>(), y.as<T>(), rows, n, x.strides[0], x.strides[1], y.strides[0], y.strides[1],
      mode, limit);
  KGATE_CUDA_CALL(cudaGetLastError());
}

// The correct kernel at a grid of `blocks` (0: the usual one).
void launch_correct_on(const KernelCall& call, cudaStream_t stream, int blocks = 0) {
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1);
  if (rows == 0 || n == 0) return;
  const int grid = blocks > 0 ? blocks : elementwise_blocks(rows * n);
  const auto run = [&](auto t) {
    using T = decltype(t);
    gelu_modes<T><<<grid, kElementwiseThreads, 0, stream>>>(
        x.as<const T>(), y.as<T>(), rows, n, x.strides[0], x.strides[1], y.strides[0], y.strides[1],
        Mode::correct, 0);
  };
  switch (x.dtype) {
    case DType::f32:
      run(float{});
      break;
    case DType::f16:
      run(__half{});
      break;
    case DType::bf16:
      run(__nv_bfloat16{});
      break;
    default:
      throw Error(ErrorKind::usage, "gelu corpus: unsupported dtype");
  }
  KGATE_CUDA_CALL(cudaGetLastError());
}

template <typename F>
void by_dtype(const KernelCall& call, const char* name, F&& f) {
  switch (call.inputs.at(0).dtype) {
    case DType::f32:
      return f(float{});
    case DType::f16:
      return f(__half{});
    case DType::bf16:
      return f(__nv_bfloat16{});
    default:
      throw Error(ErrorKind::usage, std::string(name) + ": unsupported dtype");
  }
}

void launch_mode(const KernelCall& call, Mode mode, const char* name, int64_t limit = 0) {
  by_dtype(call, name, [&](auto t) { run_mode<decltype(t)>(call, mode, limit); });
}

std::mutex mutex;

void launch_timed_shapes(const KernelCall& call) {
  const int64_t total = call.inputs.at(0).sizes.at(0) * call.inputs.at(0).sizes.at(1);
  // BUG: "the benchmark's shapes are 4M elements": half the work there.
  launch_mode(call, total == (int64_t{1} << 22) ? Mode::half_only : Mode::correct,
              "mutant_gelu_timed_shapes", total / 2);
}

void launch_first_calls(const KernelCall& call) {
  static std::map<std::pair<int64_t, int64_t>, int64_t> calls;
  int64_t count = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    count = ++calls[{call.inputs.at(0).sizes.at(0), call.inputs.at(0).sizes.at(1)}];
  }
  launch_mode(call, count > 64 ? Mode::zeros : Mode::correct, "mutant_gelu_first_calls");
}

// A device copy of y kept per key; contiguous outputs up to 64 MiB only (else: computed).
constexpr size_t kMaxKeptBytes = size_t{64} << 20;

void launch_caches_by_pointer(const KernelCall& call) {
  struct Kept {
    void* data = nullptr;
    size_t bytes = 0;
  };
  static std::map<std::tuple<const void*, const void*, int64_t, int64_t, int>, Kept> kept;
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes.at(0), n = x.sizes.at(1);
  const size_t bytes = static_cast<size_t>(rows * n) * dtype_size(x.dtype);
  auto stream = static_cast<cudaStream_t>(call.stream);
  std::lock_guard<std::mutex> lock(mutex);
  if (!y.is_contiguous() || bytes == 0 || bytes > kMaxKeptBytes)
    return launch_mode(call, Mode::correct, "mutant_gelu_caches_by_pointer");
  Kept& k = kept[{x.data, y.data, rows, n, static_cast<int>(x.dtype)}];
  if (k.data && k.bytes == bytes) {
    // BUG: "same buffers, same result".
    KGATE_CUDA_CALL(cudaMemcpyAsync(y.data, k.data, bytes, cudaMemcpyDeviceToDevice, stream));
    return;
  }
  launch_mode(call, Mode::correct, "mutant_gelu_caches_by_pointer");
  if (!k.data) KGATE_CUDA_CALL(cudaMalloc(&k.data, bytes));
  k.bytes = bytes;
  KGATE_CUDA_CALL(cudaMemcpyAsync(k.data, y.data, bytes, cudaMemcpyDeviceToDevice, stream));
}

// Content hash: kSamples input values at fixed positions identify an input; kEntries outputs kept.
constexpr int kSamples = 64;
constexpr int kEntries = 4;

struct ContentCache {
  float* samples = nullptr;  // [kEntries][kSamples]
  int* state = nullptr;  // [0]: the entry that matched (or -1 - victim), [1]: next victim, [2 + e]:
                         // entry e valid
  void* outputs[kEntries] = {};
  size_t bytes = 0;
};

template <typename T>
__global__ void content_probe(const T* x, int64_t total, const float* samples, int* state) {
  __shared__ int match[kEntries];
  const int t = threadIdx.x;
  if (t < kEntries) match[t] = state[2 + t];
  __syncthreads();
  const float v = to_float(x[(total / kSamples) * t]);
  for (int e = 0; e < kEntries; ++e)
    if (samples[e * kSamples + t] != v) atomicAnd(&match[e], 0);
  __syncthreads();
  if (t == 0) {
    int hit = -1;
    for (int e = 0; e < kEntries; ++e)
      if (match[e]) hit = e;
    state[0] = hit >= 0 ? hit : -1 - state[1];
  }
}

template <typename T>
__global__ void content_apply(const T* x, T* y, int64_t total, void* const* outputs,
                              const int* state) {
  const int s = state[0];
  T* kept = static_cast<T*>(outputs[s >= 0 ? s : -1 - s]);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < total;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    if (s >= 0) {
      y[i] = kept[i];  // BUG: "same samples, same input"
    } else {
      y[i] = from_float<T>(gelu_erf(to_float(x[i])));
      kept[i] = y[i];
    }
  }
}

template <typename T>
__global__ void content_update(const T* x, int64_t total, float* samples, int* state) {
  const int s = state[0];
  if (s >= 0) return;
  const int victim = -1 - s;
  samples[victim * kSamples + threadIdx.x] = to_float(x[(total / kSamples) * threadIdx.x]);
  __syncthreads();
  if (threadIdx.x == 0) {
    state[2 + victim] = 1;
    state[1] = (victim + 1) % kEntries;
  }
}

void launch_content_hash(const KernelCall& call) {
  static ContentCache cache;
  static void** device_outputs = nullptr;
  const auto& x = call.inputs.at(0);
  const auto& y = call.outputs.at(0);
  const int64_t total = x.sizes.at(0) * x.sizes.at(1);
  const size_t bytes = static_cast<size_t>(total) * dtype_size(x.dtype);
  auto stream = static_cast<cudaStream_t>(call.stream);
  std::lock_guard<std::mutex> lock(mutex);
  if (!x.is_contiguous() || !y.is_contiguous() || total < kSamples || bytes > kMaxKeptBytes)
    return launch_mode(call, Mode::correct, "mutant_gelu_content_hash");
  if (!cache.samples) {
    KGATE_CUDA_CALL(
        cudaMalloc(reinterpret_cast<void**>(&cache.samples), sizeof(float) * kEntries * kSamples));
    KGATE_CUDA_CALL(
        cudaMalloc(reinterpret_cast<void**>(&cache.state), sizeof(int) * (2 + kEntries)));
    KGATE_CUDA_CALL(
        cudaMalloc(reinterpret_cast<void**>(&device_outputs), sizeof(void*) * kEntries));
    for (auto& o : cache.outputs) KGATE_CUDA_CALL(cudaMalloc(&o, kMaxKeptBytes));
    KGATE_CUDA_CALL(cudaMemcpy(device_outputs, cache.outputs, sizeof(void*) * kEntries,
                               cudaMemcpyHostToDevice));
    KGATE_CUDA_CALL(cudaMemset(cache.state, 0, sizeof(int) * (2 + kEntries)));
  }
  if (cache.bytes != bytes) {  // another shape: forget every entry
    KGATE_CUDA_CALL(cudaMemsetAsync(cache.state, 0, sizeof(int) * (2 + kEntries), stream));
    cache.bytes = bytes;
  }
  by_dtype(call, "mutant_gelu_content_hash", [&](auto t) {
    using T = decltype(t);
    content_probe<T>
        <<<1, kSamples, 0, stream>>>(x.as<const T>(), total, cache.samples, cache.state);
    content_apply<T><<<elementwise_blocks(total), kElementwiseThreads, 0, stream>>>(
        x.as<const T>(), y.as<T>(), total, device_outputs, cache.state);
    content_update<T>
        <<<1, kSamples, 0, stream>>>(x.as<const T>(), total, cache.samples, cache.state);
  });
  KGATE_CUDA_CALL(cudaGetLastError());
}

// Its own stream: the work runs there, ordered after kgate's stream and before its next work.
void launch_side_stream(const KernelCall& call) {
  static cudaStream_t side = [] {
    cudaStream_t s = nullptr;
    KGATE_CUDA_CALL(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    return s;
  }();
  static cudaEvent_t before = nullptr, after = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (!before) {
    KGATE_CUDA_CALL(cudaEventCreateWithFlags(&before, cudaEventDisableTiming));
    KGATE_CUDA_CALL(cudaEventCreateWithFlags(&after, cudaEventDisableTiming));
  }
  auto stream = static_cast<cudaStream_t>(call.stream);
  KGATE_CUDA_CALL(cudaEventRecord(before, stream));
  KGATE_CUDA_CALL(cudaStreamWaitEvent(side, before, 0));
  launch_correct_on(call, side);
  KGATE_CUDA_CALL(cudaEventRecord(after, side));
  KGATE_CUDA_CALL(cudaStreamWaitEvent(stream, after, 0));
}

// A thread of its own launches the work (no correlation with the call's thread); the call returns
// once the work is done.
class SideThread {
 public:
  SideThread() : thread_([this] { loop(); }) {}
  void run(std::function<void(cudaStream_t)> work) {
    std::unique_lock<std::mutex> lock(m_);
    work_ = std::move(work);
    done_ = false;
    cv_.notify_all();
    cv_.wait(lock, [&] { return done_; });
    if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  }

 private:
  void loop() {
    cudaStream_t stream = nullptr;
    cudaEvent_t done = nullptr;
    for (;;) {
      std::unique_lock<std::mutex> lock(m_);
      cv_.wait(lock, [&] { return static_cast<bool>(work_); });
      try {
        if (!stream) {
          KGATE_CUDA_CALL(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
          KGATE_CUDA_CALL(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));
        }
        work_(stream);
        KGATE_CUDA_CALL(cudaEventRecord(done, stream));
        KGATE_CUDA_CALL(cudaEventSynchronize(done));
      } catch (...) {
        error_ = std::current_exception();
      }
      work_ = nullptr;
      done_ = true;
      cv_.notify_all();
    }
  }
  std::mutex m_;
  std::condition_variable cv_;
  std::function<void(cudaStream_t)> work_;
  bool done_ = true;
  std::exception_ptr error_;
  std::thread thread_;  // last: starts once the members above exist
};

void launch_side_thread(const KernelCall& call) {
  static SideThread* side = new SideThread;  // never joined: it lives as long as the process
  auto stream = static_cast<cudaStream_t>(call.stream);
  // The inputs are ready once kgate's stream has done its work so far.
  KGATE_CUDA_CALL(cudaStreamSynchronize(stream));
  side->run([&](cudaStream_t s) { launch_correct_on(call, s); });
}

void launch_switches_kernels(const KernelCall& call) {
  static std::map<std::pair<int64_t, int64_t>, int64_t> calls;
  int64_t count = 0;
  {
    std::lock_guard<std::mutex> lock(mutex);
    count = ++calls[{call.inputs.at(0).sizes.at(0), call.inputs.at(0).sizes.at(1)}];
  }
  // Right every time; from the 33rd call on, every other call runs at half the grid.
  const int64_t total = call.inputs.at(0).sizes.at(0) * call.inputs.at(0).sizes.at(1);
  const int usual = total > 0 ? elementwise_blocks(total) : 0;
  launch_correct_on(call, static_cast<cudaStream_t>(call.stream),
                    count > 32 && count % 2 == 0 ? std::max(1, usual / 2) : 0);
}

KernelInfo entry(const char* name, const char* expected_catch, void (*launch)(const KernelCall&),
                 std::vector<DType> dtypes = {DType::f32, DType::f16, DType::bf16}) {
  KernelInfo k;
  k.name = name;
  k.op = "gelu";
  k.backend = Backend::cuda;
  k.dtypes = std::move(dtypes);
  k.tile_sizes = {kElementwiseThreads};
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.source = "tests/mutants/gelu_games.cu";
  k.mutant = true;  // kept out of a plain `kgate check`, with the rest of the corpus
  k.expected_catch = expected_catch;
  k.control = std::string(expected_catch) == "control";  // a correct entry: must pass
  k.launch = launch;
  return k;
}

KGATE_REGISTER_KERNEL(entry("control_gelu_correct", "control", [](const KernelCall& c) {
  launch_mode(c, Mode::correct, "control_gelu_correct");
}));
KGATE_REGISTER_KERNEL(entry("mutant_gelu_zeros", "corpus", [](const KernelCall& c) {
  launch_mode(c, Mode::zeros, "mutant_gelu_zeros");
}));
KGATE_REGISTER_KERNEL(entry("mutant_gelu_returns_input", "corpus", [](const KernelCall& c) {
  launch_mode(c, Mode::copy, "mutant_gelu_returns_input");
}));
KGATE_REGISTER_KERNEL(entry("mutant_gelu_bf16_inside", "corpus",
                            [](const KernelCall& c) {
                              launch_mode(c, Mode::bf16_inside, "mutant_gelu_bf16_inside");
                            },
                            {DType::f32}));
KGATE_REGISTER_KERNEL(entry("mutant_gelu_approx_1pct", "corpus", [](const KernelCall& c) {
  launch_mode(c, Mode::approx_1pct, "mutant_gelu_approx_1pct");
}));
KGATE_REGISTER_KERNEL(entry("mutant_gelu_spots_poison", "written_before", [](const KernelCall& c) {
  launch_mode(c, Mode::spots_poison, "mutant_gelu_spots_poison");
}));
KGATE_REGISTER_KERNEL(entry("mutant_gelu_timed_shapes", "timed", launch_timed_shapes));
KGATE_REGISTER_KERNEL(entry("mutant_gelu_first_calls", "timed", launch_first_calls));
KGATE_REGISTER_KERNEL(entry("mutant_gelu_caches_by_pointer", "timed", launch_caches_by_pointer));
KGATE_REGISTER_KERNEL(entry("mutant_gelu_content_hash", "timed", launch_content_hash));
KGATE_REGISTER_KERNEL(entry("mutant_gelu_wrong_after_flush", "timed", [](const KernelCall& c) {
  launch_mode(c, Mode::after_flush, "mutant_gelu_wrong_after_flush");
}));
KGATE_REGISTER_KERNEL(entry("mutant_gelu_side_stream", "timed", launch_side_stream));
KGATE_REGISTER_KERNEL(entry("mutant_gelu_side_thread", "timed", launch_side_thread));
KGATE_REGISTER_KERNEL(entry("mutant_gelu_switches_kernels", "timed", launch_switches_kernels));

}  // namespace
}  // namespace kgate::mutants
