#include "runtime/cuda/compare.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>

namespace kgate::cuda {
namespace {

constexpr int kJobsPerLaunch = 8;
constexpr int kThreads = 256;

// A job as the kernel reads it: byte pointers, and `words` 16-byte words to do as such (all its
// pointers 16-byte aligned) before the bytes from words * 16 on.
struct DeviceJob {
  CheckJob::Kind kind;
  CloseType type;
  const unsigned char* a;
  const unsigned char* b;
  unsigned char* copy_to;
  int64_t count;
  int64_t words;
  double rtol, atol;
  int* flag;
};
struct JobTable {
  DeviceJob job[kJobsPerLaunch];
};

__device__ __forceinline__ double widen(float v) { return v; }
__device__ __forceinline__ double widen(double v) { return v; }
__device__ __forceinline__ double widen(__half v) { return __half2float(v); }
__device__ __forceinline__ double widen(__nv_bfloat16 v) { return __bfloat162float(v); }

// Raises the flag when any thread of the block saw a difference. Every writer writes 1: no atomic.
__device__ __forceinline__ void raise_flag_if_any(bool bad, int* flag) {
  if (__syncthreads_or(bad) && threadIdx.x == 0) *reinterpret_cast<volatile int*>(flag) = 1;
}

template <typename T>
__device__ bool not_close(const DeviceJob& j, int64_t first, int64_t stride) {
  const T* out = reinterpret_cast<const T*>(j.a);
  const T* want = reinterpret_cast<const T*>(j.b);
  T* copy = reinterpret_cast<T*>(j.copy_to);
  bool bad = false;
  for (int64_t i = first; i < j.count; i += stride) {
    const T v = out[i];
    if (copy) copy[i] = v;
    const double o = widen(v), w = widen(want[i]);
    if (o == w || (o != o && w != w)) continue;  // equal (infinities included), or both NaN
    if (o != o || w != w || isinf(o) || isinf(w) || !(fabs(o - w) <= j.atol + j.rtol * fabs(w)))
      bad = true;
  }
  return bad;
}

// copy and bytes_differ: 16-byte words where aligned, then bytes.
__device__ bool bytes(const DeviceJob& j, int64_t first, int64_t stride) {
  const bool compare = j.kind == CheckJob::Kind::bytes_differ;
  bool bad = false;
  const auto* wa = reinterpret_cast<const uint4*>(j.a);
  const auto* wb = reinterpret_cast<const uint4*>(j.b);
  auto* wc = reinterpret_cast<uint4*>(j.copy_to);
  for (int64_t i = first; i < j.words; i += stride) {
    const uint4 x = wa[i];
    if (wc) wc[i] = x;
    if (compare) {
      const uint4 y = wb[i];
      bad |= ((x.x ^ y.x) | (x.y ^ y.y) | (x.z ^ y.z) | (x.w ^ y.w)) != 0;
    }
  }
  for (int64_t i = j.words * 16 + first; i < j.count; i += stride) {
    const unsigned char x = j.a[i];
    if (j.copy_to) j.copy_to[i] = x;
    if (compare) bad |= x != j.b[i];
  }
  return bad;
}

__global__ void check_jobs_kernel(JobTable table) {
  const DeviceJob& j = table.job[blockIdx.y];
  const int64_t stride = static_cast<int64_t>(gridDim.x) * blockDim.x;
  const int64_t first = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x;
  bool bad = false;
  if (j.kind == CheckJob::Kind::not_close) {
    switch (j.type) {
      case CloseType::f32:
        bad = not_close<float>(j, first, stride);
        break;
      case CloseType::f16:
        bad = not_close<__half>(j, first, stride);
        break;
      case CloseType::bf16:
        bad = not_close<__nv_bfloat16>(j, first, stride);
        break;
      case CloseType::f64:
        bad = not_close<double>(j, first, stride);
        break;
    }
  } else {
    bad = bytes(j, first, stride);
  }
  if (j.flag) raise_flag_if_any(bad, j.flag);  // the same for the whole block (one job a block row)
}

bool aligned(const void* p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

}  // namespace

cudaError_t launch_check_jobs(const std::vector<CheckJob>& jobs, cudaStream_t stream) {
  for (size_t from = 0; from < jobs.size(); from += kJobsPerLaunch) {
    JobTable table{};
    int used = 0;
    int64_t units = 1;  // the largest job's loop count: the grid's width
    for (size_t i = from; i < jobs.size() && used < kJobsPerLaunch; ++i) {
      const CheckJob& c = jobs[i];
      if (c.count <= 0) continue;
      DeviceJob& d = table.job[used++];
      d.kind = c.kind;
      d.type = c.type;
      d.a = static_cast<const unsigned char*>(c.a);
      d.b = static_cast<const unsigned char*>(c.b);
      d.copy_to = static_cast<unsigned char*>(c.copy_to);
      d.count = c.count;
      d.rtol = c.rtol;
      d.atol = c.atol;
      d.flag = c.kind == CheckJob::Kind::copy ? nullptr : c.flag;
      const bool vector = c.kind != CheckJob::Kind::not_close && aligned(c.a) &&
                          (c.kind == CheckJob::Kind::copy || aligned(c.b)) &&
                          (!c.copy_to || aligned(c.copy_to));
      d.words = vector ? c.count / 16 : 0;
      units = std::max<int64_t>(
          units, vector ? std::max<int64_t>(d.words, c.count - d.words * 16) : c.count);
    }
    if (used == 0) continue;
    const int64_t blocks = std::min<int64_t>(1024, (units + kThreads - 1) / kThreads);
    check_jobs_kernel<<<dim3(static_cast<unsigned>(blocks), static_cast<unsigned>(used)), kThreads,
                        0, stream>>>(table);
    if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  }
  return cudaSuccess;
}

}  // namespace kgate::cuda
