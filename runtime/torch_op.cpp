// PyTorch custom ops as candidates (see torch_op.hpp): dlopen, the dispatcher, and the mapping of a
// schema onto an op signature.
#include "runtime/torch_op.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/from_blob.h>
#include <c10/cuda/CUDAFunctions.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <sys/wait.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>

#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "references/catalogue.hpp"
#include "references/op_reference.hpp"

namespace kgate {
namespace {

namespace fs = std::filesystem;

std::string demangled(const std::string& symbol) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(
      abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : symbol;
}

/// The loader's message, with an undefined torch / c10 symbol explained: the library was built
/// against another torch (version, or C++ ABI: _GLIBCXX_USE_CXX11_ABI).
std::string load_failure(const std::string& path, const std::string& message) {
  const std::string marker = "undefined symbol: ";
  std::string out = "torch library " + path + " could not be loaded: " + message;
  const auto at = message.find(marker);
  if (at == std::string::npos) return out;
  std::string symbol = message.substr(at + marker.size());
  if (const auto end = symbol.find_first_of(" ,(");
      end != std::string::npos && symbol.rfind("_Z", 0) == 0)
    symbol = symbol.substr(0, end);
  const std::string readable = demangled(symbol);
  out += "\n  the symbol is " + readable;
  if (readable.find("c10::") != std::string::npos || readable.find("at::") != std::string::npos ||
      readable.find("torch::") != std::string::npos) {
    out += "\n  the library was built against another torch than kgate's (torch " TORCH_VERSION
           ", "
           "C++11 ABI " +
           std::to_string(_GLIBCXX_USE_CXX11_ABI) +
           "): rebuild it against the torch that "
           "kgate links (python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')";
  }
  return out;
}

std::set<std::string>& loaded_libraries() {
  static std::set<std::string> s;
  return s;
}

std::vector<std::string>& library_order() {  // loaded_libraries() as loaded
  static std::vector<std::string> v;
  return v;
}

std::vector<TorchOpSpec>& registered_specs() {
  static std::vector<TorchOpSpec> v;
  return v;
}

std::map<std::string, std::string>& memory_notes() {
  static std::map<std::string, std::string> m;
  return m;
}

std::map<std::string, std::string>& repro_options() {
  static std::map<std::string, std::string> m;
  return m;
}

// A message's list of names, "(none)" when empty.
std::string listed(const std::vector<std::string>& names) {
  return names.empty() ? "(none)" : join(names);
}

bool is_write(const c10::Argument& a) { return a.alias_info() && a.alias_info()->isWrite(); }

/// How one schema argument is fed.
struct Binding {
  enum Kind { input, output, attribute, schema_default } kind = input;
  size_t index = 0;            ///< input or output index
  std::string attribute_name;  ///< for an attribute: the op attribute it reads
  c10::TypeKind type = c10::TypeKind::TensorType;
};

struct Plan {
  c10::OperatorHandle handle;
  std::vector<Binding> arguments;    ///< one per schema argument
  std::vector<int> returned_output;  ///< per schema return: the op output it fills, or -1
  bool every_output_in_kgate_buffers = true;
};

std::string schema_text(const c10::FunctionSchema& s) {
  std::ostringstream os;
  os << s;
  return os.str();
}

Plan plan_for(const TorchOpSpec& spec, const OpSignature& op) {
  const auto handle = c10::Dispatcher::singleton().findSchema({spec.schema_name, spec.overload});
  if (!handle) {
    std::vector<std::string> known;
    const std::string ns = spec.schema_name.substr(0, spec.schema_name.find("::") + 2);
    for (const auto& name : c10::Dispatcher::singleton().getAllOpNames())
      if (name.name.rfind(ns, 0) == 0)
        known.push_back(name.name + (name.overload_name.empty() ? "" : "." + name.overload_name));
    std::sort(known.begin(), known.end());
    throw_usage("--torch-op " + spec.text + ": no op " + spec.schema_name +
                (spec.overload.empty() ? "" : "." + spec.overload) + " is registered; ops of " +
                ns + "*: " + listed(known) + " (is its library given with --torch-library?)");
  }
  Plan plan{*handle, {}, {}, true};
  const c10::FunctionSchema& schema = handle->schema();
  const std::string where = "--torch-op " + spec.text + " (" + schema_text(schema) + ")";
  std::map<std::string, std::string> mapping(spec.mapping.begin(), spec.mapping.end());
  for (const auto& [from, to] : mapping) {
    bool found = false;
    for (const auto& a : schema.arguments()) found |= a.name() == from;
    if (!found)
      throw_usage(where + ": the mapping names '" + from + "', which is no argument of the schema");
  }
  auto find_name = [](const std::vector<TensorSpec>& v, const std::string& n) -> int {
    for (size_t i = 0; i < v.size(); ++i)
      if (v[i].name == n) return static_cast<int>(i);
    return -1;
  };
  std::vector<bool> input_bound(op.inputs.size(), false), output_written(op.outputs.size(), false);
  for (const auto& a : schema.arguments()) {
    const std::string target = mapping.count(a.name()) ? mapping[a.name()] : a.name();
    const c10::TypeKind kind = a.type()->kind();
    Binding b;
    b.type = kind;
    if (const int k = find_name(op.inputs, target); k >= 0) {
      if (kind != c10::TypeKind::TensorType)
        throw_usage(where + ": argument '" + a.name() + "' maps onto input tensor '" + target +
                    "' but is not a Tensor");
      int aliased_output = -1;
      for (size_t o = 0; o < op.outputs.size(); ++o)
        if (op.alias_input(op.outputs[o]) == k) aliased_output = static_cast<int>(o);
      if (is_write(a) && aliased_output < 0)
        throw_usage(
            where + ": argument '" + a.name() + "' is written (Tensor(a!)) but op " + op.name +
            "'s input '" + target +
            "' is read only; an op that writes an input declares an output with \"alias\": \"" +
            target + "\"");
      if (!is_write(a) && aliased_output >= 0)
        throw_usage(where + ": op " + op.name + " writes input '" + target +
                    "' in place (output '" + op.outputs[static_cast<size_t>(aliased_output)].name +
                    "'), but argument '" + a.name() +
                    "' is not written (declare it Tensor(a!) in the schema)");
      if (aliased_output >= 0) output_written[static_cast<size_t>(aliased_output)] = true;
      b.kind = Binding::input;
      b.index = static_cast<size_t>(k);
      input_bound[static_cast<size_t>(k)] = true;
    } else if (const int o = find_name(op.outputs, target); o >= 0) {
      if (kind != c10::TypeKind::TensorType || !is_write(a))
        throw_usage(where + ": argument '" + a.name() + "' maps onto output '" + target +
                    "' but is not a written tensor (Tensor(a!), as out= arguments are)");
      b.kind = Binding::output;
      b.index = static_cast<size_t>(o);
      output_written[static_cast<size_t>(o)] = true;
    } else if (op.attributes.count(target)) {
      if (kind != c10::TypeKind::FloatType && kind != c10::TypeKind::IntType &&
          kind != c10::TypeKind::BoolType && kind != c10::TypeKind::NumberType)
        throw_usage(where + ": argument '" + a.name() + "' maps onto attribute '" + target +
                    "' but its type is " + a.type()->str() +
                    " (float, int, bool or Scalar expected)");
      b.kind = Binding::attribute;
      b.attribute_name = target;
    } else if (kind == c10::TypeKind::TensorType && is_write(a) && !mapping.count(a.name())) {
      b.kind = Binding::output;  // an out= argument of another name: the next output left (below)
      b.index = SIZE_MAX;
    } else if (a.default_value()) {
      b.kind = Binding::schema_default;
    } else {
      std::vector<std::string> in, out, attrs;
      for (const auto& t : op.inputs) in.push_back(t.name);
      for (const auto& t : op.outputs) out.push_back(t.name);
      for (const auto& [n, v] : op.attributes) attrs.push_back(n);
      throw_usage(where + ": argument '" + a.name() + "' maps onto nothing of op " + op.name +
                  " (inputs: " + listed(in) + "; outputs: " + listed(out) +
                  "; attributes: " + listed(attrs) + "); map it with ," + a.name() + "=NAME");
    }
    plan.arguments.push_back(b);
  }
  // Written arguments that match no name by name ("out") take the outputs no argument wrote, in
  // order.
  for (size_t i = 0; i < plan.arguments.size(); ++i) {
    Binding& b = plan.arguments[i];
    if (b.kind != Binding::output || b.index != SIZE_MAX) continue;
    size_t o = 0;
    while (o < op.outputs.size() && (output_written[o] || op.alias_input(op.outputs[o]) >= 0)) ++o;
    if (o == op.outputs.size())
      throw_usage(where + ": written argument '" + schema.arguments()[i].name() +
                  "' has no output of op " + op.name + " left to write; map it with ," +
                  schema.arguments()[i].name() + "=NAME");
    b.index = o;
    output_written[o] = true;
  }
  for (size_t k = 0; k < op.inputs.size(); ++k)
    if (!input_bound[k])
      throw_usage(where + ": op " + op.name + "'s input '" + op.inputs[k].name +
                  "' is passed by no argument; map one onto it with ,ARG=" + op.inputs[k].name);
  // The outputs not written through arguments come from the returns, in order; a return that
  // aliases a written argument (-> Tensor(a!)) is that argument.
  std::vector<size_t> remaining;
  for (size_t o = 0; o < op.outputs.size(); ++o)
    if (!output_written[o]) remaining.push_back(o);
  size_t next = 0;
  for (const auto& r : schema.returns()) {
    if (r.alias_info() && r.alias_info()->isWrite()) {
      plan.returned_output.push_back(-1);
      continue;
    }
    if (r.type()->kind() != c10::TypeKind::TensorType)
      throw_usage(where + ": return '" + r.name() + "' is a " + r.type()->str() +
                  "; only tensors can be returned");
    if (next >= remaining.size())
      throw_usage(where + ": the op returns more new tensors than op " + op.name +
                  " has outputs left to fill (" + std::to_string(remaining.size()) + ")");
    plan.returned_output.push_back(static_cast<int>(remaining[next++]));
    plan.every_output_in_kgate_buffers = false;
  }
  if (next < remaining.size())
    throw_usage(where + ": op " + op.name + "'s output '" + op.outputs[remaining[next]].name +
                "' is neither written through an argument (Tensor(a!)) nor returned");
  return plan;
}

at::Tensor as_tensor(const TensorView& v, const at::Device& device) {
  // An empty tensor may have no storage at all (a null pointer), which from_blob cannot place.
  if (v.numel() == 0 || v.data == nullptr)
    return at::empty(v.sizes, at::TensorOptions().dtype(to_scalar_type(v.dtype)).device(device));
  return at::from_blob(v.data, v.sizes, v.strides,
                       at::TensorOptions().dtype(to_scalar_type(v.dtype)).device(device));
}

c10::IValue attribute_value(c10::TypeKind kind, double value) {
  switch (kind) {
    case c10::TypeKind::IntType:
      return c10::IValue(static_cast<int64_t>(std::llround(value)));
    case c10::TypeKind::BoolType:
      return c10::IValue(value != 0);
    default:
      return c10::IValue(value);
  }
}

void call_op(const Plan& plan, Backend backend, const KernelCall& kc) {
  const at::Device device = backend == Backend::cuda
                                ? at::Device(at::kCUDA, c10::cuda::current_device())
                                : at::Device(at::kCPU);
  std::optional<c10::cuda::CUDAStreamGuard> stream_guard;
  if (backend == Backend::cuda)
    stream_guard.emplace(
        c10::cuda::getStreamFromExternal(static_cast<cudaStream_t>(kc.stream), device.index()));
  const auto& schema = plan.handle.schema();
  std::vector<at::Tensor> outputs;
  for (const auto& o : kc.outputs) outputs.push_back(as_tensor(o, device));
  torch::jit::Stack stack;
  for (size_t i = 0; i < plan.arguments.size(); ++i) {
    const Binding& b = plan.arguments[i];
    switch (b.kind) {
      case Binding::input:
        stack.emplace_back(as_tensor(kc.inputs.at(b.index), device));
        break;
      case Binding::output:
        stack.emplace_back(outputs.at(b.index));
        break;
      case Binding::attribute:
        stack.emplace_back(attribute_value(b.type, kc.attributes.at(b.attribute_name)));
        break;
      case Binding::schema_default:
        stack.push_back(*schema.arguments()[i].default_value());
        break;
    }
  }
  try {
    plan.handle.callBoxed(&stack);
  } catch (const c10::Error& e) {
    // The op's own error (a TORCH_CHECK), without the C++ backtrace torch appends.
    throw std::runtime_error(schema.name() + " raised: " + e.what_without_backtrace());
  }
  for (size_t r = 0; r < plan.returned_output.size() && r < stack.size(); ++r) {
    const int o = plan.returned_output[r];
    if (o < 0) continue;
    const at::Tensor got = stack[r].toTensor();
    at::Tensor& dst = outputs.at(static_cast<size_t>(o));
    if (!got.sizes().equals(dst.sizes()))
      throw Error(ErrorKind::usage, schema.name() + " returned a tensor of shape " +
                                        c10::str(got.sizes()) + " for output " + std::to_string(o) +
                                        ", expected " + c10::str(dst.sizes()));
    dst.copy_(got);
  }
}

}  // namespace

void load_torch_library(const std::string& path) {
  std::error_code ec;
  const std::string canonical = fs::weakly_canonical(path, ec).string();
  if (loaded_libraries().count(canonical)) return;
  if (!fs::is_regular_file(canonical, ec)) throw_usage("torch library " + path + " does not exist");
  dlerror();
  if (!dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    const char* why = dlerror();
    throw_usage(load_failure(path, why ? why : "unknown loader error"));
  }
  loaded_libraries().insert(canonical);
  library_order().push_back(canonical);
}

TorchOpSpec parse_torch_op_spec(const std::string& text) {
  const std::string form =
      "expected [cuda/|cpu/]NAMESPACE::OP[.OVERLOAD]=KGATE_OP[,SCHEMA_ARG=NAME...], e.g. "
      "mylib::fused_add_rms_norm=fused_add_rms_norm";
  TorchOpSpec s;
  s.text = text;
  std::string rest = text;
  if (rest.rfind("cuda/", 0) == 0) rest = rest.substr(5);
  else if (rest.rfind("cpu/", 0) == 0) {
    s.backend = Backend::cpu;
    rest = rest.substr(4);
  }
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t comma = rest.find(',', start);
    parts.push_back(
        rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  const auto eq = parts[0].find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == parts[0].size())
    throw_usage("--torch-op " + text + ": " + form);
  std::string name = parts[0].substr(0, eq);
  s.op = parts[0].substr(eq + 1);
  const auto colons = name.find("::");
  if (colons == std::string::npos || colons == 0 || colons + 2 >= name.size())
    throw_usage("--torch-op " + text + ": " + form);
  if (const auto dot = name.find('.', colons); dot != std::string::npos) {
    s.overload = name.substr(dot + 1);
    name = name.substr(0, dot);
  }
  s.schema_name = name;
  for (size_t i = 1; i < parts.size(); ++i) {
    const auto e = parts[i].find('=');
    if (e == std::string::npos || e == 0 || e + 1 == parts[i].size())
      throw_usage("--torch-op " + text + ": mapping '" + parts[i] + "' is not SCHEMA_ARG=NAME; " +
                  form);
    s.mapping.emplace_back(parts[i].substr(0, e), parts[i].substr(e + 1));
  }
  return s;
}

KernelInfo torch_op_kernel(const TorchOpSpec& spec, std::string* memory_note) {
  const OpSignature& op = find_op(spec.op);
  auto plan = std::make_shared<Plan>(plan_for(spec, op));
  KernelInfo k;
  k.name = spec.schema_name.substr(0, spec.schema_name.find("::")) + "." +
           spec.schema_name.substr(spec.schema_name.find("::") + 2) +
           (spec.overload.empty() ? "" : "." + spec.overload) +
           (spec.backend == Backend::cpu ? ".cpu" : "");
  k.op = op.name;
  k.backend = spec.backend;
  k.dtypes = op.dtypes;
  k.accepts_strided = true;  // ATen ops take any strides; an op that cannot fails its layout cases
  k.accepts_unaligned = true;
  k.source = "torch op " + schema_text(plan->handle.schema());
  const Backend backend = spec.backend;
  k.launch = [plan, backend](const KernelCall& call) { call_op(*plan, backend, call); };
  const std::string note =
      plan->every_output_in_kgate_buffers
          ? ""
          : "checks: values, input integrity and determinism; not unwritten elements or guard "
            "bands: " +
                spec.schema_name +
                " returns new tensors, which kgate copies into its buffers (an out= or "
                "in-place variant of the op gets every memory check)";
  if (memory_note) *memory_note = note;
  return k;
}

void add_torch_ops(const std::vector<std::string>& libraries,
                   const std::vector<std::string>& specs) {
  std::string options;
  for (const auto& l : libraries) {
    load_torch_library(l);
    std::error_code ec;
    options += " --torch-library '" + fs::absolute(l, ec).string() + "'";
  }
  for (const auto& text : specs) {
    std::string note;
    const TorchOpSpec spec = parse_torch_op_spec(text);
    KernelInfo k = torch_op_kernel(spec, &note);
    registered_specs().push_back(spec);
    memory_notes()[k.name] = note;
    repro_options()[k.name] = options + " --torch-op '" + text + "'";
    register_kernel(std::move(k));
  }
}

namespace {

// The op namespaces in use by any library of the dispatcher.
std::set<std::string> namespaces_in_use() {
  std::set<std::string> out;
  for (const auto& name : c10::Dispatcher::singleton().getAllOpNames())
    out.insert(name.name.substr(0, name.name.find("::")));
  return out;
}

// `ns` with its last character changed to one that makes a namespace no library uses.
std::string renamed_namespace(const std::string& ns, const std::set<std::string>& taken) {
  static const std::string alphabet = "abcdefghijklmnopqrstuvwxyz0123456789_";
  for (const char c : alphabet) {
    std::string candidate = ns;
    candidate.back() = c;
    if (candidate != ns && !taken.count(candidate)) return candidate;
  }
  throw_usage("--baseline-torch-library: no free namespace of the length of '" + ns +
              "' to load the base under");
}

// `bytes` (an ELF shared library) with every "NS\0" and "NS::" in its read-only data sections
// written as "NS'...": the namespaces its TORCH_LIBRARY macros and qualified op names spell.
// Returns the number of strings changed.
size_t rename_namespaces(std::string& bytes, const std::map<std::string, std::string>& renamed,
                         const std::string& path) {
  if (bytes.size() < sizeof(Elf64_Ehdr) || bytes.compare(0, 4, ELFMAG) != 0 ||
      bytes[EI_CLASS] != ELFCLASS64)
    throw_usage("--baseline-torch-library " + path + " is not a 64-bit ELF shared library");
  Elf64_Ehdr eh;
  std::memcpy(&eh, bytes.data(), sizeof eh);
  if (eh.e_shoff == 0 ||
      eh.e_shoff + static_cast<uint64_t>(eh.e_shnum) * sizeof(Elf64_Shdr) > bytes.size() ||
      eh.e_shstrndx >= eh.e_shnum)
    throw_usage("--baseline-torch-library " + path +
                ": its section headers are missing or cut short");
  std::vector<Elf64_Shdr> sections(eh.e_shnum);
  std::memcpy(sections.data(), bytes.data() + eh.e_shoff, eh.e_shnum * sizeof(Elf64_Shdr));
  const Elf64_Shdr& names = sections[eh.e_shstrndx];
  size_t changed = 0;
  for (const auto& sh : sections) {
    if (sh.sh_type != SHT_PROGBITS || (sh.sh_flags & SHF_EXECINSTR) || (sh.sh_flags & SHF_WRITE) ||
        sh.sh_name >= names.sh_size || sh.sh_offset + sh.sh_size > bytes.size())
      continue;
    const char* name = bytes.data() + names.sh_offset + sh.sh_name;
    if (std::string(name, strnlen(name, names.sh_size - sh.sh_name)).rfind(".rodata", 0) != 0)
      continue;
    const size_t begin = sh.sh_offset, end = sh.sh_offset + sh.sh_size;
    for (const auto& [from, to] : renamed)
      for (const std::string tail : {std::string(1, '\0'), std::string("::")}) {
        const std::string needle = from + tail;
        for (size_t at = bytes.find(needle, begin);
             at != std::string::npos && at + needle.size() <= end;
             at = bytes.find(needle, at + needle.size())) {
          bytes.replace(at, from.size(), to);
          ++changed;
        }
      }
  }
  return changed;
}

std::string child_status(int status) {
  if (WIFEXITED(status)) return "exit " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("signal ") + strsignal(WTERMSIG(status));
  return "status " + std::to_string(status);
}

}  // namespace

std::vector<std::string> loaded_torch_libraries() { return library_order(); }

std::vector<KernelInfo> base_torch_op_kernels(const std::vector<std::string>& old) {
  if (registered_specs().empty())
    throw_usage(
        "--baseline-torch-library pairs the ops of --torch-op: name the ops to check (and their "
        "--torch-library)");
  const std::set<std::string> taken = namespaces_in_use();
  std::map<std::string, std::string> renamed;  // head namespace -> the base's
  for (const auto& spec : registered_specs()) {
    const std::string ns = spec.schema_name.substr(0, spec.schema_name.find("::"));
    if (!renamed.count(ns)) renamed[ns] = renamed_namespace(ns, taken);
  }
  std::string listed_renames;
  std::vector<std::string> head_namespaces;
  for (const auto& [from, to] : renamed) {
    listed_renames += (listed_renames.empty() ? "" : ", ") + from + " -> " + to;
    head_namespaces.push_back(from);
  }
  for (const auto& path : old) {
    std::error_code ec;
    const std::string canonical = fs::weakly_canonical(path, ec).string();
    if (!fs::is_regular_file(canonical, ec))
      throw_usage("--baseline-torch-library " + path + " does not exist");
    std::ifstream in(canonical, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (rename_namespaces(bytes, renamed, path) == 0)
      throw_usage("--baseline-torch-library " + path + ": none of the namespaces " +
                  listed(head_namespaces) +
                  " is spelled in its read-only data: kgate loads a base library under a renamed "
                  "namespace, "
                  "which needs the namespace as a string literal (TORCH_LIBRARY(ns, m) does that)");
    // The copy: a file of its own (the loader keys libraries by path), unlinked once loaded.
    std::string pattern = (fs::temp_directory_path() / "kgate-base-torch-XXXXXX").string();
    const int fd = ::mkstemp(pattern.data());
    if (fd < 0)
      throw_usage("--baseline-torch-library " + path + ": cannot write its renamed copy in " +
                  fs::temp_directory_path().string());
    const bool written =
        ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    ::close(fd);
    struct Unlink {
      std::string file;
      ~Unlink() { ::unlink(file.c_str()); }
    } unlink_copy{pattern};
    if (!written)
      throw_usage("--baseline-torch-library " + path + ": cannot write its renamed copy " +
                  pattern);
    // A library that still registers a head namespace throws from a static constructor, which ends
    // the process: try it in a child first.
    const pid_t child = ::fork();
    if (child == 0) {
      void* h = ::dlopen(pattern.c_str(), RTLD_NOW | RTLD_LOCAL);
      ::_exit(h ? 0 : 3);
    }
    int status = 0;
    if (child < 0 || ::waitpid(child, &status, 0) != child)
      throw_usage("--baseline-torch-library " + path +
                  ": could not try loading it in a child process");
    // (exit 3: the loader refused it; the parent's own dlopen below says why.)
    if (!WIFEXITED(status) || (WEXITSTATUS(status) != 0 && WEXITSTATUS(status) != 3))
      throw_usage(
          "--baseline-torch-library " + path + " could not be loaded under renamed namespaces (" +
          listed_renames + "): loading it ended the process (" + child_status(status) +
          "); a library that registers a namespace by a name built at run time, not a string "
          "literal, cannot be loaded beside the head's");
    dlerror();
    if (!::dlopen(pattern.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      const char* why = dlerror();
      throw_usage(load_failure(path, why ? why : "unknown loader error"));
    }
  }
  std::vector<KernelInfo> out;
  for (const auto& spec : registered_specs()) {
    const std::string ns = spec.schema_name.substr(0, spec.schema_name.find("::"));
    TorchOpSpec base = spec;
    base.schema_name = renamed.at(ns) + spec.schema_name.substr(ns.size());
    std::string note;
    KernelInfo head = torch_op_kernel(spec, &note);
    KernelInfo k;
    try {
      k = torch_op_kernel(base, &note);
    } catch (const Error& e) {
      throw_usage("--baseline-torch-library: the base libraries do not register " +
                  spec.schema_name + " (loaded as " + base.schema_name + "): " + e.what());
    }
    k.name = head.name;
    std::string libraries;
    for (const auto& p : old) libraries += (libraries.empty() ? "" : ", ") + p;
    k.source = "base " + k.source + " (" + libraries + ")";
    out.push_back(std::move(k));
  }
  return out;
}

std::string torch_op_repro_options(const std::string& kernel) {
  const auto it = repro_options().find(kernel);
  return it == repro_options().end() ? "" : it->second;
}

const std::string* torch_op_memory_note(const std::string& kernel) {
  const auto it = memory_notes().find(kernel);
  return it == memory_notes().end() ? nullptr : &it->second;
}

}  // namespace kgate
