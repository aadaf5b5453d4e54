// The negative-control corpus, the game only a reduction can play: "touches 99% of the elements and
// rescales". mutant_rms_norm_samples_99pct leaves every hundredth element out of the sum of squares
// and scales the sum up by N / (elements summed): right on average, exact on rows under 100
// elements, about 0.2% off on a row of 1024 normal values, so the f32 tolerance (and no looser
// one) must catch it. control_rms_norm_correct is its correct twin, the same code summing every
// element. The device code is the package corpus's (tests/packages/corpus/rms_norm_games.cuh), so
// the in-tree entries and the packages corpus_samples_99pct / corpus_rms_norm_control play the
// game the same way. f32 only; contiguous rows.
#include <cuda_runtime.h>

#include "core/error.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/kernel.hpp"
#include "tests/packages/corpus/rms_norm_games.cuh"

namespace kgate::mutants {
namespace {

constexpr int kThreads = 256;  // 8 rows (warps) per block

void launch(const KernelCall& call, bool every) {
  const auto& x = call.inputs.at(0);
  const auto& w = call.inputs.at(1);
  const auto& y = call.outputs.at(0);
  if (x.dtype != DType::f32)
    throw Error(ErrorKind::usage, "the rms_norm corpus entries take f32 only");
  const int64_t rows = x.sizes[0], n = x.sizes[1];
  if (rows == 0 || n == 0) return;
  const auto blocks = static_cast<unsigned>((rows + kThreads / 32 - 1) / (kThreads / 32));
  const auto eps = static_cast<float>(call.attributes.at("eps"));
  const auto stream = static_cast<cudaStream_t>(call.stream);
  if (every)
    rms_norm_every<<<blocks, kThreads, 0, stream>>>(x.as<const float>(), w.as<const float>(),
                                                    y.as<float>(), rows, n, eps);
  else
    rms_norm_99pct<<<blocks, kThreads, 0, stream>>>(x.as<const float>(), w.as<const float>(),
                                                    y.as<float>(), rows, n, eps);
  KGATE_CUDA_CALL(cudaGetLastError());
}

KernelInfo entry(const char* name, const char* expected_catch, void (*fn)(const KernelCall&)) {
  KernelInfo k;
  k.name = name;
  k.op = "rms_norm";
  k.backend = Backend::cuda;
  k.dtypes = {DType::f32};
  k.tile_sizes = {32};
  k.source = "tests/mutants/rms_norm_games.cu";
  k.mutant = true;  // kept out of a plain `kgate check`, with the rest of the corpus
  k.expected_catch = expected_catch;
  k.control = std::string(expected_catch) == "control";  // a correct entry: must pass
  k.launch = fn;
  return k;
}

KGATE_REGISTER_KERNEL(entry("control_rms_norm_correct", "control",
                            [](const KernelCall& c) { launch(c, true); }));
KGATE_REGISTER_KERNEL(entry("mutant_rms_norm_samples_99pct", "corpus",
                            [](const KernelCall& c) { launch(c, false); }));

}  // namespace
}  // namespace kgate::mutants
