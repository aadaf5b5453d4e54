// The guard of the attention controls (tests/ops/attention/attention.op.json): they index q, k,
// v and o as dense row-major [B,H,*,D] tensors and load them in 16-byte pieces, so they take only
// contiguous tensors whose base is 16-byte aligned (the contiguous and offset16 layouts). Any other
// call (strided, row-padded or misaligned views) is refused: kgate runs the op's reference instead,
// as deployed code falls back, and the reference's trouble on such views is the reference's.
#pragma once

#include <cstdint>
#include <string>

#include "runtime/kernel.hpp"

namespace kgate::controls {

/// Why the attention controls refuse `call` ("" when they take it); `max_d` is the largest head
/// dimension the kernel holds.
inline std::string attention_refusal(const KernelCall& call, int64_t max_d) {
  auto check = [](const TensorView& t, const std::string& name) -> std::string {
    const char* takes = "; the kernel takes dense, 16-byte aligned tensors";
    if (!t.is_contiguous()) return name + " is a strided or row-padded view" + takes;
    if (t.numel() > 0 && reinterpret_cast<std::uintptr_t>(t.data) % 16 != 0)
      return name + " does not start 16-byte aligned" + takes;
    return {};
  };
  static const char* const kNames[] = {"q", "k", "v"};
  for (size_t i = 0; i < call.inputs.size() && i < 3; ++i)
    if (std::string why = check(call.inputs[i], kNames[i]); !why.empty()) return why;
  if (!call.outputs.empty())
    if (std::string why = check(call.outputs[0], "o"); !why.empty()) return why;
  const bool shaped = !call.inputs.empty() && !call.inputs[0].sizes.empty();
  const int64_t d = shaped ? call.inputs[0].sizes.back() : 0;
  if (d > max_d)
    return "D=" + std::to_string(d) + " is above the kernel's largest, " + std::to_string(max_d);
  return {};
}

/// `k` guarded by attention_refusal: the layout family's strided, padded and misaligned cases are
/// drawn (they fall outside the guard and exercise the fallback).
inline KernelInfo with_attention_guard(KernelInfo k, int64_t max_d) {
  k.accepts_strided = true;
  k.accepts_unaligned = true;
  k.accepts = [max_d](const KernelCall& call) { return attention_refusal(call, max_d).empty(); };
  k.rejection_reason = [max_d](const KernelCall& call) { return attention_refusal(call, max_d); };
  return k;
}

}  // namespace kgate::controls
