// A small library of PyTorch custom ops, registered with TORCH_LIBRARY as production kernels ship:
// kgate checks them as candidates (--torch-library / --torch-op) in tests/torch_op.
//   fused_add_rms_norm   residual written in place, y returned as a new tensor; CUDA: a real kernel
//                        (the device code of kernels/fused_add_rms_norm), CPU: ATen
//   softmax_out          out= variant (every memory check applies)
//   softmax_tail_out     wrong on purpose: leaves the last column of `out` unwritten
//   softmax_snoop_out    reads the file $KGATE_TEST_SNOOP_FILE names, or the environment of its
//   parent
//                        (kgate): wrong (all zeros) when it can, right when the worker sandbox
//                        stops it
//   softmax_renamed      a schema whose argument (q) maps onto nothing without an explicit mapping
//   softmax_faults_late_out  wrong on purpose (1% too large) on calls of under 4096 elements; CUDA:
//                        from 2^18 elements on, a kernel of its own reads a misaligned address, and
//                        the fault surfaces in ATen (a later .item()) as a c10::Error, not in kgate
//   rms_norm_edge_{tail1,tailshort,whole}_{256,1024}, rms_norm_vec8, rms_norm_edge_correct (CUDA)
//                        rms_norm wrong at one kind of tile edge only
//                        (tests/edges/edge_rms_norm.cuh): a 256-thread block per row, a tile of 256
//                        or 1024; vec8: wrong whenever N % 8 != 0 (a vector width's tail); correct:
//                        the same code without a bug
#include <ATen/ATen.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>

#include <cuda_runtime.h>

void kgate_test_launch_fused_add_rms_norm(int dtype, const void* x, void* residual,
                                          const void* weight, void* y, int64_t rows, int64_t n,
                                          float eps, int64_t x_row, int64_t r_row, int64_t y_row,
                                          cudaStream_t stream);
void kgate_test_launch_misaligned_read(void* p, cudaStream_t stream);
void kgate_test_launch_rms_norm_edge(int dtype, const void* x, const void* weight, void* y,
                                     int64_t rows, int64_t n, float eps, int64_t x_row,
                                     int64_t y_row, int bug, int tile, cudaStream_t stream);

namespace {

at::Tensor fused_add_rms_norm_aten(const at::Tensor& x, at::Tensor& residual,
                                   const at::Tensor& weight, double eps) {
  const at::Tensor r = (x.to(at::kFloat) + residual.to(at::kFloat)).to(x.scalar_type());
  residual.copy_(r);
  const at::Tensor rc = r.to(at::kFloat);
  const at::Tensor inv_rms = at::rsqrt((rc * rc).mean({-1}, /*keepdim=*/true) + eps);
  return (rc * inv_rms * weight.to(at::kFloat)).to(x.scalar_type());
}

at::Tensor fused_add_rms_norm_cuda(const at::Tensor& x, at::Tensor& residual,
                                   const at::Tensor& weight, double eps) {
  const bool rows_contiguous =
      x.dim() == 2 && x.stride(1) == 1 && residual.stride(1) == 1 && weight.stride(0) == 1;
  int dtype = -1;
  if (x.scalar_type() == at::kFloat) dtype = 0;
  if (x.scalar_type() == at::kHalf) dtype = 1;
  if (x.scalar_type() == at::kBFloat16) dtype = 2;
  if (!rows_contiguous || dtype < 0) return fused_add_rms_norm_aten(x, residual, weight, eps);
  at::Tensor y = at::empty(x.sizes(), x.options());
  kgate_test_launch_fused_add_rms_norm(dtype, x.data_ptr(), residual.data_ptr(), weight.data_ptr(),
                                       y.data_ptr(), x.size(0), x.size(1), static_cast<float>(eps),
                                       x.stride(0), residual.stride(0), y.stride(0),
                                       c10::cuda::getCurrentCUDAStream().stream());
  return y;
}

// rms_norm through the tile-edge kernels on contiguous rows; anything else through ATen (as
// fused_add_rms_norm_cuda falls back).
template <int kBug, int kTile>
at::Tensor rms_norm_edge_cuda(const at::Tensor& x, const at::Tensor& weight, double eps) {
  int dtype = -1;
  if (x.scalar_type() == at::kFloat) dtype = 0;
  if (x.scalar_type() == at::kHalf) dtype = 1;
  if (x.scalar_type() == at::kBFloat16) dtype = 2;
  if (x.dim() != 2 || x.stride(1) != 1 || weight.stride(0) != 1 || dtype < 0) {
    const at::Tensor xf = x.to(at::kFloat);
    return (xf * at::rsqrt((xf * xf).mean({-1}, /*keepdim=*/true) + eps) * weight.to(at::kFloat))
        .to(x.scalar_type());
  }
  at::Tensor y = at::empty(x.sizes(), x.options());
  kgate_test_launch_rms_norm_edge(dtype, x.data_ptr(), weight.data_ptr(), y.data_ptr(), x.size(0),
                                  x.size(1), static_cast<float>(eps), x.stride(0), y.stride(0),
                                  kBug, kTile, c10::cuda::getCurrentCUDAStream().stream());
  return y;
}

at::Tensor& softmax_out(const at::Tensor& x, int64_t dim, at::Tensor& out) {
  out.copy_(at::softmax(x, dim));
  return out;
}

at::Tensor& softmax_tail_out(const at::Tensor& x, int64_t dim, at::Tensor& out) {
  const int64_t n = x.size(-1);
  if (n > 1) out.narrow(-1, 0, n - 1).copy_(at::softmax(x, dim).narrow(-1, 0, n - 1));
  return out;
}

at::Tensor& softmax_snoop_out(const at::Tensor& x, int64_t dim, at::Tensor& out) {
  const char* file = std::getenv("KGATE_TEST_SNOOP_FILE");
  std::ifstream secret(file ? file : "");
  std::ifstream parent_env("/proc/" + std::to_string(::getppid()) + "/environ");
  if (secret.good() || parent_env.good()) return out.zero_();  // it could read: the run must fail
  return out.copy_(at::softmax(x, dim));
}

at::Tensor softmax_renamed(const at::Tensor& q, int64_t dim) { return at::softmax(q, dim); }

at::Tensor& softmax_faults_late_out(const at::Tensor& x, int64_t dim, at::Tensor& out) {
  if (x.numel() < 4096) return out.copy_(at::softmax(x, dim) * 1.01);
  out.copy_(at::softmax(x, dim));
  if (x.is_cuda() && x.numel() >= (int64_t{1} << 18)) {
    kgate_test_launch_misaligned_read(out.data_ptr(), c10::cuda::getCurrentCUDAStream().stream());
    (void)out.sum().item<double>();  // the fault surfaces here, inside ATen
  }
  return out;
}

}  // namespace

TORCH_LIBRARY(kgate_test, m) {
  m.def("fused_add_rms_norm(Tensor x, Tensor(a!) residual, Tensor weight, float eps) -> Tensor");
  m.def("softmax_out(Tensor x, int dim, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("softmax_tail_out(Tensor x, int dim, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("softmax_snoop_out(Tensor x, int dim, *, Tensor(a!) out) -> Tensor(a!)");
  m.def("softmax_renamed(Tensor q, int dim) -> Tensor");
  m.def("softmax_faults_late_out(Tensor x, int dim, *, Tensor(a!) out) -> Tensor(a!)");
  for (const char* name :
       {"rms_norm_edge_tail1_256", "rms_norm_edge_tailshort_256", "rms_norm_edge_whole_256",
        "rms_norm_edge_tail1_1024", "rms_norm_edge_tailshort_1024", "rms_norm_edge_whole_1024",
        "rms_norm_vec8", "rms_norm_edge_correct"})
    m.def((std::string(name) + "(Tensor x, Tensor weight, float eps) -> Tensor").c_str());
}

TORCH_LIBRARY_IMPL(kgate_test, CPU, m) { m.impl("fused_add_rms_norm", fused_add_rms_norm_aten); }
TORCH_LIBRARY_IMPL(kgate_test, CUDA, m) {
  m.impl("fused_add_rms_norm", fused_add_rms_norm_cuda);
  m.impl("rms_norm_edge_tail1_256", rms_norm_edge_cuda<1, 256>);
  m.impl("rms_norm_edge_tailshort_256", rms_norm_edge_cuda<2, 256>);
  m.impl("rms_norm_edge_whole_256", rms_norm_edge_cuda<3, 256>);
  m.impl("rms_norm_edge_tail1_1024", rms_norm_edge_cuda<1, 1024>);
  m.impl("rms_norm_edge_tailshort_1024", rms_norm_edge_cuda<2, 1024>);
  m.impl("rms_norm_edge_whole_1024", rms_norm_edge_cuda<3, 1024>);
  m.impl("rms_norm_vec8", rms_norm_edge_cuda<4, 256>);
  m.impl("rms_norm_edge_correct", rms_norm_edge_cuda<0, 1024>);
}
TORCH_LIBRARY_IMPL(kgate_test, CompositeExplicitAutograd, m) {
  m.impl("softmax_out", softmax_out);
  m.impl("softmax_tail_out", softmax_tail_out);
  m.impl("softmax_snoop_out", softmax_snoop_out);
  m.impl("softmax_renamed", softmax_renamed);
  m.impl("softmax_faults_late_out", softmax_faults_late_out);
}
