// Tile-edge mutants of rms_norm as CMake kernels (tests/edges/CMakeLists.txt): each is wrong at one
// kind of tile edge only (edge_rms_norm.cuh), and `kgate check --kernel NAME` at the defaults must
// reject it, whether it declares its tile (KernelInfo::tile_sizes) or not (kgate then observes it
// in the kernel's launches). Registered as mutants (left out of a plain `kgate check`); the
// correct ones of the same code as controls (they must pass).
//   edge_{declared,found}_{tail1,tailshort,whole}_{256,1024}: one 256-thread block per row, 1 or
//     4 elements a thread a step (a tile of 256 or 1024)
//   edge_warp_tail1_128: a warp per row, 4 elements a lane a step (a tile of 128, no block tile)
//   edge_correct_{declared,found}_{256,1024}, edge_warp_correct_128: the same code without a bug
#include <cuda_runtime.h>

#include <string>

#include "edge_rms_norm.cuh"
#include "runtime/cuda/check.hpp"
#include "runtime/dispatch.hpp"

namespace kgate::edges {
namespace {

template <typename T, int VPT>
void run_block(const KernelCall& call, int bug) {
  const auto& x = call.inputs.at(0);
  const auto& w = call.inputs.at(1);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  kgate_edges::rms_norm_block_tiles<T, VPT>
      <<<static_cast<unsigned>(rows), 256, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), w.as<const T>(), y.as<T>(), n,
          static_cast<float>(call.attributes.at("eps")), x.strides[0], y.strides[0], bug);
  KGATE_CUDA_CALL(cudaGetLastError());
}

template <typename T>
void run_warp(const KernelCall& call, int bug) {
  const auto& x = call.inputs.at(0);
  const auto& w = call.inputs.at(1);
  const auto& y = call.outputs.at(0);
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  const auto blocks = static_cast<unsigned>((rows + 7) / 8);  // 8 warps, 8 rows a block
  kgate_edges::rms_norm_warp_tiles<T, 4>
      <<<blocks, 256, 0, static_cast<cudaStream_t>(call.stream)>>>(
          x.as<const T>(), w.as<const T>(), y.as<T>(), rows, n,
          static_cast<float>(call.attributes.at("eps")), x.strides[0], y.strides[0], bug);
  KGATE_CUDA_CALL(cudaGetLastError());
}

const char* bug_name(int bug) {
  switch (bug) {
    case kgate_edges::kTailOne:
      return "tail1";
    case kgate_edges::kTailShort:
      return "tailshort";
    case kgate_edges::kWholeTile:
      return "whole";
    default:
      return "correct";
  }
}

KernelInfo edge_kernel(const std::string& name, std::function<void(const KernelCall&)> launch,
                       bool control) {
  KernelInfo k = cuda_kernel(name, "rms_norm", "tests/edges/rms_norm_edges.cu", std::move(launch));
  k.accepts_strided = false;  // contiguous rows (the row stride is any)
  k.mutant = true;  // (controls too: registered beside the mutants, left out of a plain check)
  k.control = control;
  k.expected_catch = "tile_edges";  // tests/edges/edges_gpu.sh, not the mutant suite
  k.timed = false;
  return k;
}

bool register_all() {
  for (bool declared : {true, false})
    for (int tile : {256, 1024})
      for (int bug : {kgate_edges::kTailOne, kgate_edges::kTailShort, kgate_edges::kWholeTile,
                      kgate_edges::kCorrect}) {
        const std::string name =
            std::string("edge_") + (bug == kgate_edges::kCorrect ? "correct_" : "") +
            (declared ? "declared" : "found") +
            (bug == kgate_edges::kCorrect ? "" : std::string("_") + bug_name(bug)) + "_" +
            std::to_string(tile);
        KernelInfo k = edge_kernel(
            name,
            [tile, bug, name](const KernelCall& call) {
              dispatch_floating(call.inputs.at(0).dtype, name.c_str(), [&](auto t) {
                if (tile == 256) run_block<element_t<decltype(t)>, 1>(call, bug);
                else run_block<element_t<decltype(t)>, 4>(call, bug);
              });
            },
            bug == kgate_edges::kCorrect);
        if (declared) k.tile_sizes = {tile};
        register_kernel(std::move(k));
      }
  for (int bug : {kgate_edges::kTailOne, kgate_edges::kCorrect}) {
    const std::string name =
        bug == kgate_edges::kCorrect ? "edge_warp_correct_128" : "edge_warp_tail1_128";
    register_kernel(edge_kernel(
        name,
        [bug, name](const KernelCall& call) {
          dispatch_floating(call.inputs.at(0).dtype, name.c_str(),
                            [&](auto t) { run_warp<element_t<decltype(t)>>(call, bug); });
        },
        bug == kgate_edges::kCorrect));
  }
  return true;
}

[[maybe_unused]] const bool registered = register_all();

}  // namespace
}  // namespace kgate::edges
