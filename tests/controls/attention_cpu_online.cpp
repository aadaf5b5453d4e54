// control_attention_cpu_online (cpu backend): a correct f32 attention on the op of
// tests/ops/attention/attention.op.json, for CI machines without a GPU, computed as
// control_attention_online is: per query row, keys in tiles of 16, a running max m (from -inf),
// a running sum l of exp(s - m) and an output accumulator in float, both rescaled by
// exp(m_old - m_new) when a tile raises the max. Under the op's conditioning it must pass. Its
// guard is the CUDA control's (dense, 16-byte aligned tensors), so the cpu run falls back to the
// reference on the same layouts.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "runtime/kernel.hpp"
#include "tests/controls/attention_guard.hpp"

namespace kgate::controls {
namespace {

constexpr int64_t kKeys = 16;
constexpr int64_t kMaxD = 128;

/// One query row against the keys and values of its (batch, head): o = softmax(q k^T * scale) v.
void attend(const float* q, const float* k, const float* v, float* o, int64_t l, int64_t d,
            float scale) {
  float m = -std::numeric_limits<float>::infinity();
  float sum = 0.f;
  std::vector<float> acc(static_cast<size_t>(d), 0.f);  // o times the running sum
  float s[kKeys];
  for (int64_t k0 = 0; k0 < l; k0 += kKeys) {
    const int64_t keys = std::min(kKeys, l - k0);
    float tile_max = -std::numeric_limits<float>::infinity();
    for (int64_t j = 0; j < keys; ++j) {
      const float* kr = k + (k0 + j) * d;
      float dot = 0.f;
      for (int64_t c = 0; c < d; ++c) dot = std::fma(q[c], kr[c], dot);
      s[j] = dot * scale;
      tile_max = std::fmax(tile_max, s[j]);
    }
    const float m_new = std::fmax(m, tile_max);
    const float alpha = std::exp(m - m_new);  // 0 on the first tile (m = -inf)
    sum *= alpha;
    for (float& a : acc) a *= alpha;
    for (int64_t j = 0; j < keys; ++j) {
      const float p = std::exp(s[j] - m_new);
      sum += p;
      const float* vr = v + (k0 + j) * d;
      for (int64_t c = 0; c < d; ++c) {
        float& a = acc[static_cast<size_t>(c)];
        a = std::fma(p, vr[c], a);
      }
    }
    m = m_new;
  }
  for (int64_t c = 0; c < d; ++c) o[c] = acc[static_cast<size_t>(c)] / sum;
}

void launch(const KernelCall& call) {
  if (call.inputs.at(0).dtype != DType::f32)
    throw Error(ErrorKind::usage, "control_attention_cpu_online: only f32");
  if (const std::string why = attention_refusal(call, kMaxD); !why.empty())
    throw Error(ErrorKind::usage, "control_attention_cpu_online: " + why + " (the guard says so)");
  const TensorView& q = call.inputs.at(0);
  const TensorView& k = call.inputs.at(1);
  const int64_t bh = q.sizes[0] * q.sizes[1], s = q.sizes[2], l = k.sizes[2], d = q.sizes[3];
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(d)));
  const float* qp = q.as<const float>();
  const float* kp = k.as<const float>();
  const float* vp = call.inputs.at(2).as<const float>();
  float* op = call.outputs.at(0).as<float>();
  for (int64_t h = 0; h < bh; ++h)
    for (int64_t i = 0; i < s; ++i)
      attend(qp + (h * s + i) * d, kp + h * l * d, vp + h * l * d, op + (h * s + i) * d, l, d,
             scale);
}

KGATE_REGISTER_KERNEL(([] {
  KernelInfo k;
  k.name = "control_attention_cpu_online";
  k.op = "attention";
  k.backend = Backend::cpu;
  k.dtypes = {DType::f32};
  k.tile_sizes = {};  // its tiles run along L, not D
  k.timed = false;
  k.source = "tests/controls/attention_cpu_online.cpp";
  k.mutant = true;
  k.control = true;
  k.expected_catch = "control";
  k.launch = launch;
  return with_attention_guard(std::move(k), kMaxD);
})());

}  // namespace
}  // namespace kgate::controls
