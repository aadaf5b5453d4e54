// PyTorch custom ops as candidates (see torch_op.hpp): dlopen, the dispatcher, and the mapping of a
// schema onto an op signature.
#include "runtime/torch_op.hpp"

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <sys/wait.h>
#include <torch/version.h>
#include <unistd.h>

#include <algorithm>
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
#include "runtime/torch_op_plan.hpp"

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

/// What loading the libraries took that a user would not expect (libpython for an extension
/// module): said on every torch op's report.
std::vector<std::string>& library_notes() {
  static std::vector<std::string> v;
  return v;
}

/// Whether the loader failed only on a symbol of the Python C API: the library is a Python
/// extension module (PyInit_* calls PyModule_Create2), not linked to libpython as such modules
/// never are; its ops do not need Python.
bool wants_python(const std::string& message) {
  const std::string marker = "undefined symbol: ";
  const auto at = message.find(marker);
  if (at == std::string::npos) return false;
  const std::string symbol = message.substr(at + marker.size());
  return symbol.rfind("Py", 0) == 0 || symbol.rfind("_Py", 0) == 0;
}

/// Where libpython may be, first to last: KGATE_LIBPYTHON; the libpython of the Python whose
/// torch kgate runs with (.../lib/pythonX.Y/site-packages/torch/lib/libc10.so: .../lib/
/// libpythonX.Y.so.1.0); the same name on the loader's path; libpython3.so.
std::vector<std::string> libpython_candidates() {
  if (const char* env = std::getenv("KGATE_LIBPYTHON"); env && *env) return {env};
  std::vector<std::string> out;
  Dl_info info{};
  using CheckFail = void (*)(const char*, const char*, uint32_t, const char*);
  const CheckFail in_c10 = &c10::detail::torchCheckFail;  // any function of libc10
  if (dladdr(reinterpret_cast<void*>(in_c10), &info) && info.dli_fname) {
    const std::string torch_lib = fs::weakly_canonical(info.dli_fname).string();
    const auto at = torch_lib.find("/lib/python");
    if (at != std::string::npos) {
      const auto end = torch_lib.find('/', at + 11);
      const std::string version = torch_lib.substr(
          at + 11, end == std::string::npos ? std::string::npos : end - at - 11);  // "3.12"
      const std::string prefix = torch_lib.substr(0, at);
      for (const std::string& name :
           {"libpython" + version + ".so.1.0", "libpython" + version + ".so"}) {
        out.push_back(prefix + "/lib/" + name);
        out.push_back(name);
      }
    }
  }
  out.push_back("libpython3.so");
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

std::vector<std::string>& registered_names() {  // the kernel of each registered_specs() entry
  static std::vector<std::string> v;
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

}  // namespace

void load_torch_library(const std::string& path) {
  std::error_code ec;
  const std::string canonical = fs::weakly_canonical(path, ec).string();
  if (loaded_libraries().count(canonical)) return;
  if (!fs::is_regular_file(canonical, ec)) throw_usage("torch library " + path + " does not exist");
  dlerror();
  if (!dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL)) {
    const char* why = dlerror();
    const std::string message = why ? why : "unknown loader error";
    if (!wants_python(message)) throw_usage(load_failure(path, message));
    // A Python extension module: libpython made global, then the library again.
    std::vector<std::string> tried;
    bool loaded = false;
    for (const auto& candidate : libpython_candidates()) {
      tried.push_back(candidate);
      if (!dlopen(candidate.c_str(), RTLD_NOW | RTLD_GLOBAL)) continue;
      dlerror();
      if (dlopen(canonical.c_str(), RTLD_NOW | RTLD_LOCAL)) {
        library_notes().push_back(
            "torch library " + path + " is a Python extension module (it leaves the Python C API " +
            "undefined): kgate loaded " + candidate + " for it; its ops run without Python");
        loaded = true;
        break;
      }
      const char* again = dlerror();
      if (!wants_python(again ? again : "")) throw_usage(load_failure(path, again ? again : ""));
    }
    if (!loaded)
      throw_usage(load_failure(path, message) +
                  "\n  the library is a Python extension module (it uses the Python C API but is "
                  "not linked to libpython); kgate found no libpython that provides it (tried " +
                  join(tried) + "): set KGATE_LIBPYTHON to the libpython3.X.so.1.0 of the " +
                  "Python it was built for");
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
  auto plan = std::make_shared<torch_op::Plan>(torch_op::plan_for(spec, op));
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
  k.source = "torch op " + torch_op::schema_text(plan->handle.schema());
  k.notes = [] { return library_notes(); };
  if (!plan->implicit.empty()) k.source += " with " + join(plan->implicit);
  const Backend backend = spec.backend;
  k.launch = [plan, backend](const KernelCall& call) { torch_op::call_op(*plan, backend, call); };
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
  // One op given several times (apply_rotary with conj=false and conj=true): each is a kernel of
  // its own, named by the mapping entries in which it differs from the others of its op
  // ("_rotary.apply_rotary[conj=true]"); the same spec twice is an error.
  std::vector<TorchOpSpec> parsed;
  std::map<std::string, std::vector<std::size_t>> by_op;
  for (const auto& text : specs) {
    parsed.push_back(parse_torch_op_spec(text));
    const TorchOpSpec& p = parsed.back();
    by_op[p.schema_name + "." + p.overload + (p.backend == Backend::cpu ? ".cpu" : "")].push_back(
        parsed.size() - 1);
  }
  std::vector<std::string> suffix(parsed.size());
  for (const auto& [op, indices] : by_op) {
    if (indices.size() < 2) continue;
    // Each spec's entries: its kgate op, then its mapping (SCHEMA_ARG=TARGET).
    const auto entries = [&](std::size_t i) {
      std::vector<std::string> out{parsed[i].op};
      for (const auto& [arg, target] : parsed[i].mapping) out.push_back(arg + "=" + target);
      return out;
    };
    for (const std::size_t i : indices) {
      std::vector<std::string> own;
      for (const auto& entry : entries(i)) {
        bool everywhere = true;
        for (const std::size_t j : indices) {
          const auto other = entries(j);
          everywhere = everywhere && std::find(other.begin(), other.end(), entry) != other.end();
        }
        if (!everywhere) own.push_back(entry);
      }
      if (own.empty())
        throw_usage("--torch-op " + parsed[i].text + " is given twice (or another spec of " +
                    parsed[i].schema_name +
                    " maps everything it maps): give each spec of one op a mapping of its own");
      suffix[i] = "[" + join(own, ",") + "]";
    }
  }
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    const std::string& text = specs[i];
    const TorchOpSpec& spec = parsed[i];
    std::string note;
    KernelInfo k = torch_op_kernel(spec, &note);
    k.name += suffix[i];
    registered_specs().push_back(spec);
    registered_names().push_back(k.name);
    memory_notes()[k.name] = note;
    // A named spec replays with the specs of its op, which give it its name.
    std::string ops = " --torch-op '" + text + "'";
    if (!suffix[i].empty()) {
      ops.clear();
      const TorchOpSpec& p = spec;
      for (const std::size_t j :
           by_op[p.schema_name + "." + p.overload + (p.backend == Backend::cpu ? ".cpu" : "")])
        ops += " --torch-op '" + specs[j] + "'";
    }
    repro_options()[k.name] = options + ops;
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
                  torch_op::listed(head_namespaces) +
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
  for (std::size_t i = 0; i < registered_specs().size(); ++i) {
    const TorchOpSpec& spec = registered_specs()[i];
    const std::string ns = spec.schema_name.substr(0, spec.schema_name.find("::"));
    TorchOpSpec base = spec;
    base.schema_name = renamed.at(ns) + spec.schema_name.substr(ns.size());
    std::string note;
    KernelInfo k;
    try {
      k = torch_op_kernel(base, &note);
    } catch (const Error& e) {
      throw_usage("--baseline-torch-library: the base libraries do not register " +
                  spec.schema_name + " (loaded as " + base.schema_name + "): " + e.what());
    }
    k.name = registered_names()[i];
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

bool is_torch_op(const KernelInfo& kernel) {
  return kernel.source.rfind("torch op ", 0) == 0 || kernel.source.rfind("base torch op ", 0) == 0;
}

const std::string* torch_op_memory_note(const std::string& kernel) {
  const auto it = memory_notes().find(kernel);
  return it == memory_notes().end() ? nullptr : &it->second;
}

}  // namespace kgate
