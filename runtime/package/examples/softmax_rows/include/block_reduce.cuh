// Block-wide reductions for the softmax_rows example package: warp shuffles, then one partial per
// warp through shared memory. Every thread of the block receives the result.
#pragma once

namespace softmax_rows_detail {

struct MaxOp {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
};

struct SumOp {
  __device__ float operator()(float a, float b) const { return a + b; }
};

template <class Op>
__device__ float warp_reduce(float v, Op op) {
  for (int offset = 16; offset > 0; offset >>= 1)
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// blockDim.x must be a multiple of 32 (full-warp shuffles); `scratch` holds 32 floats.
template <class Op>
__device__ float block_reduce(float v, Op op, float identity, float* scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = blockDim.x >> 5;
  v = warp_reduce(v, op);
  __syncthreads();  // a previous reduction may still be reading scratch
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : identity;
  return warp_reduce(v, op);
}

}  // namespace softmax_rows_detail
