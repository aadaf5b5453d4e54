// PyTorch custom ops as candidates: a shared library that registers ops with TORCH_LIBRARY is
// loaded into the process, and an op is found through the dispatcher by its name, its schema's
// arguments mapped onto an op's tensors and attributes, and wrapped as a kernel like any other.
//
//   kgate check --torch-library libmyops.so --torch-op mylib::fused_add_rms_norm=fused_add_rms_norm
//
// A spec is  [BACKEND/]NAMESPACE::OP[.OVERLOAD]=KGATE_OP[,SCHEMA_ARG=TARGET...]
//   BACKEND      cuda (default) or cpu: where the op's tensors live;
//   KGATE_OP     the op (built in, or from an op file) whose cases, references and rules apply;
//   SCHEMA_ARG=TARGET  binds a schema argument to the op's input, output or attribute, a shape
//                symbol or expression, a list, a constant or None (runtime/torch_op_plan.hpp; by
//                default each argument maps onto the op's tensor or attribute of its own name).
// Libraries registered with TORCH_LIBRARY and with STABLE_TORCH_LIBRARY load alike.
// Schema arguments written in place or out= (Tensor(a!)) are bound to the op's outputs (or to an
// input that an output aliases; a written argument of no op tensor's name, such as `out`, takes the
// next output no argument writes), so the op writes into kgate's buffers and every memory check
// applies. Outputs the op returns as new tensors are copied into kgate's buffers: values, input
// integrity and determinism are checked, but unwritten elements and guard bands cannot be, and the
// kernel's report says so. Torch-free header.
#pragma once

#include <string>
#include <vector>

#include "runtime/kernel.hpp"

namespace kgate {

/// Loads a shared library of torch custom ops (dlopen, RTLD_NOW). Loading the same path twice is a
/// no-op. Throws Error(usage) naming the library, with the loader's message; a library built
/// against another torch (an undefined torch or c10 symbol) is named as such.
void load_torch_library(const std::string& path);

/// A parsed --torch-op spec.
struct TorchOpSpec {
  std::string text;  ///< as given
  Backend backend = Backend::cuda;
  std::string schema_name;                                   ///< "mylib::fused_add_rms_norm"
  std::string overload;                                      ///< "" or "out"
  std::string op;                                            ///< the kgate op
  std::vector<std::pair<std::string, std::string>> mapping;  ///< schema argument -> op name
};
/// Throws Error(usage) on a malformed spec, with the expected form.
TorchOpSpec parse_torch_op_spec(const std::string& spec);

/// The kernel that calls the op through the dispatcher: named "NAMESPACE.OP[.OVERLOAD]" (with
/// ".cpu" for the cpu backend), with the op's dtypes. `memory_note` is set to "" when every output
/// is written into kgate's buffers, else to what could not be checked. Throws Error(usage) when the
/// op is not registered (listing the library's ops) or its schema cannot be mapped.
KernelInfo torch_op_kernel(const TorchOpSpec& spec, std::string* memory_note);

/// --torch-library / --torch-op: loads each library, then registers each op's kernel (workers get
/// the same options on their command line).
void add_torch_ops(const std::vector<std::string>& libraries,
                   const std::vector<std::string>& specs);

/// The base version of every torch-op kernel registered so far (add_torch_ops), from `old`: builds
/// of the same libraries at the base commit. The dispatcher holds one registration per op name, so
/// each old library is loaded from a copy whose op namespaces are renamed in its read-only data
/// (same length, a name no library uses: `mylib` -> `mylic`). This asks of the library that it
/// names each namespace as a string literal (TORCH_LIBRARY, TORCH_LIBRARY_IMPL,
/// TORCH_LIBRARY_FRAGMENT, or "mylib::op" in full), as every library built from those macros does;
/// its code is not touched. The copy is loaded first in a child process, so a library that
/// registers anyway under the head's namespace (and would abort the process) is refused with a
/// message. Each kernel returned has its head twin's name and source "base torch op ... (OLD)".
/// Throws Error(usage) naming the library.
std::vector<KernelInfo> base_torch_op_kernels(const std::vector<std::string>& old);

/// The libraries add_torch_ops loaded, as loaded (canonical paths).
std::vector<std::string> loaded_torch_libraries();

/// The options a repro line needs to register the torch-op kernel again (" --torch-library ...
/// --torch-op ..."); "" when `kernel` is not a torch op.
std::string torch_op_repro_options(const std::string& kernel);

/// Whether `kernel` calls a torch op (torch_op_kernel made it, registered or not).
bool is_torch_op(const KernelInfo& kernel);

/// The note of a registered torch-op kernel ("" when every memory check applies); nullptr when
/// `kernel` is not a torch op.
const std::string* torch_op_memory_note(const std::string& kernel);

}  // namespace kgate
