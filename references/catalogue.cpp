// The op catalogue: registration of every op, and the value/layout helpers shared by ops.
// Adding an op: one file references/<op>.cpp with <op>_signature() and <op>_reference(), their two
// declarations and one line in kOps below, and the file in references/CMakeLists.txt.
#include "references/catalogue.hpp"

#include <ATen/TensorOperators.h>  // the tensor arithmetic below (it brings ATen/Functions.h)
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/full_like.h>
#include <ATen/ops/where.h>
#include <ATen/ops/zeros.h>
#include <ATen/ops/zeros_like.h>

#include <ATen/Parallel.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <type_traits>
#include <vector>

#include "core/captured.hpp"
#include "core/embedded_op_files.hpp"
#include "core/error.hpp"
#include "core/expr.hpp"
#include "core/op_file.hpp"
#include "core/safetensors.hpp"
#include "references/counter_rng.hpp"
#include "references/op_reference.hpp"
#include "references/script_op.hpp"

namespace kgate {
namespace fs = std::filesystem;
namespace values {
cudaError_t fill_device(double* out, int64_t n, uint64_t seed, uint64_t stream, bool gaussian,
                        cudaStream_t cuda_stream);  // counter_rng.cu
cudaError_t fill_device_draw(void* out, DrawInto into, int64_t n, const Draw& f, uint64_t seed,
                             double* row_max, cudaStream_t cuda_stream);  // counter_rng.cu
}  // namespace values

OpSignature adaptive_avg_pool2d_signature();
OpReference adaptive_avg_pool2d_reference();
OpSignature embedding_signature();
OpReference embedding_reference();
OpSignature gelu_signature();
OpReference gelu_reference();
OpSignature gelu_tanh_signature();
OpReference gelu_tanh_reference();
OpSignature group_norm_signature();
OpReference group_norm_reference();
OpSignature layer_norm_signature();
OpReference layer_norm_reference();
OpSignature log_softmax_signature();
OpReference log_softmax_reference();
OpSignature rms_norm_signature();
OpReference rms_norm_reference();
OpSignature silu_and_mul_signature();
OpReference silu_and_mul_reference();
OpSignature softmax_signature();
OpReference softmax_reference();
OpSignature softmax_varlen_signature();
OpReference softmax_varlen_reference();

namespace {

struct OpEntry {
  OpSignature (*signature)();
  OpReference (*reference)();
};

const OpEntry kOps[] = {
    {adaptive_avg_pool2d_signature, adaptive_avg_pool2d_reference},
    {embedding_signature, embedding_reference},
    {gelu_signature, gelu_reference},
    {gelu_tanh_signature, gelu_tanh_reference},
    {group_norm_signature, group_norm_reference},
    {layer_norm_signature, layer_norm_reference},
    {log_softmax_signature, log_softmax_reference},
    {rms_norm_signature, rms_norm_reference},
    {silu_and_mul_signature, silu_and_mul_reference},
    {softmax_signature, softmax_reference},
    {softmax_varlen_signature, softmax_varlen_reference},
};

// Every op by name. Deques: find_op's references stay valid while op files are added.
struct Catalogue {
  std::deque<OpSignature> signatures;
  std::deque<OpReference> references;
  std::set<std::string> loaded_paths;            // canonical paths of the op files loaded
  std::map<std::string, std::string> file_text;  // op name -> its op file's bytes
};

Catalogue& catalogue_storage() {
  static Catalogue c = [] {
    Catalogue cat;
    for (const auto& e : kOps) {
      cat.signatures.push_back(e.signature());
      cat.references.push_back(e.reference());
    }
    return cat;
  }();
  return c;
}

void add_file(Catalogue& cat, const std::string& file_path) {
  std::error_code ec;
  const std::string canonical = fs::weakly_canonical(file_path, ec).string();
  if (cat.loaded_paths.count(canonical)) return;
  const std::string* embedded = embedded_op_file(file_path);
  OpFile file = embedded ? parse_op_file(*embedded, file_path) : read_op_file(file_path);
  // The same op in two files (a package copied out of the tree that carries it, and the in-tree
  // kernel's; op_file_differences says what "the same" is) is one op; two different definitions of
  // one name are an error that lists what differs.
  if (auto it = cat.file_text.find(file.signature.name); it != cat.file_text.end()) {
    const auto differ = op_file_differences(it->second, file.text);
    if (differ.empty()) {
      cat.loaded_paths.insert(canonical);
      return;
    }
    std::string fields;
    for (const auto& f : differ) fields += (fields.empty() ? "" : ", ") + f;
    const OpSignature* first = nullptr;
    for (const auto& s : cat.signatures)
      if (s.name == file.signature.name) first = &s;
    throw_usage(
        "op file " + file_path + ": op '" + file.signature.name + "' is already defined by " +
        (first ? first->origin : std::string("another op file")) + ", and the two differ in " +
        fields +
        " (every field but summary and description defines the op): rename one (\"name\": \"" +
        file.signature.name + "_v2\", and the kernels' \"op\") or load only one of them");
  }
  for (const auto& s : cat.signatures)
    if (s.name == file.signature.name)
      throw_usage("op file " + file_path + ": op '" + s.name + "' is already defined by " +
                  s.origin +
                  " (kgate builds it in); rename it (\"name\") or load only one of them");
  OpReference ref = script_reference(file);
  cat.loaded_paths.insert(canonical);
  cat.file_text[file.signature.name] = file.text;
  cat.signatures.push_back(std::move(file.signature));
  cat.references.push_back(std::move(ref));
}

std::vector<std::string> split_paths(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    const size_t colon = std::min(s.find(':', start), s.size());
    if (colon > start) out.push_back(s.substr(start, colon - start));
    start = colon + 1;
  }
  return out;
}

// The catalogue with the op files of KGATE_OPS and of the registered kernels (declared to
// core/embedded_op_files.hpp by the kernel registry), loaded on first use.
Catalogue& catalogue() {
  static std::once_flag once;
  std::call_once(once, [] {
    Catalogue& cat = catalogue_storage();
    if (const char* env = std::getenv("KGATE_OPS"))
      for (const auto& p : split_paths(env))
        for (const auto& f : op_file_paths(p)) add_file(cat, f);
    for (const auto& f : kernel_op_files()) add_file(cat, f);
  });
  return catalogue_storage();
}

size_t index_of(const std::string& name) {
  const auto& sigs = catalogue().signatures;
  for (size_t i = 0; i < sigs.size(); ++i)
    if (sigs[i].name == name) return i;
  std::vector<std::string> names;
  for (const auto& s : sigs) names.push_back(s.name);
  std::sort(names.begin(), names.end());
  std::string known;
  for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
  throw_usage(
      "unknown op '" + name + "'; known ops: " + known +
      " (`kgate list --ops` shows them; an op of your own needs its op file: --ops FILE_OR_DIR)");
}

double smallest_normal(DType d) {
  switch (d) {
    case DType::f16:
      return 6.103515625e-05;
    case DType::bf16:
    case DType::f32:
      return 1.1754943508222875e-38;
    case DType::f8e4m3:
      return 0.015625;
    default:
      return 2.2250738585072014e-308;
  }
}

}  // namespace

std::vector<OpSignature> op_catalogue() {
  const auto& sigs = catalogue().signatures;
  std::vector<OpSignature> out(sigs.begin(), sigs.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  return out;
}

const OpSignature* lookup_op(const std::string& name) {
  for (const auto& s : catalogue().signatures)
    if (s.name == name) return &s;
  return nullptr;
}

const std::string* op_file_text(const std::string& name) {
  const auto& texts = catalogue().file_text;
  const auto it = texts.find(name);
  return it == texts.end() ? nullptr : &it->second;
}

void load_op_files(const std::string& path) {
  Catalogue& cat = catalogue();
  for (const auto& f : op_file_paths(path)) add_file(cat, f);
}

void add_ops_path(const std::string& path) {
  std::error_code ec;
  const std::string absolute = fs::absolute(path, ec).string();
  if (absolute.find(':') != std::string::npos)
    throw_usage(
        "--ops " + path +
        ": a path with ':' cannot be passed on to worker processes (KGATE_OPS is ':'-separated)");
  const char* env = std::getenv("KGATE_OPS");
  const std::string joined = env && *env ? std::string(env) + ":" + absolute : absolute;
  ::setenv("KGATE_OPS", joined.c_str(), 1);
  load_op_files(absolute);
}
const OpSignature& find_op(const std::string& name) {
  return catalogue().signatures[index_of(name)];
}
const OpReference& op_reference(const std::string& name) {
  return catalogue().references[index_of(name)];
}

at::ScalarType to_scalar_type(DType dtype) {
  switch (dtype) {
    case DType::f16:
      return at::kHalf;
    case DType::bf16:
      return at::kBFloat16;
    case DType::f32:
      return at::kFloat;
    case DType::f64:
      return at::kDouble;
    case DType::i32:
      return at::kInt;
    case DType::i64:
      return at::kLong;
    case DType::i8:
      return at::kChar;
    case DType::u8:
      return at::kByte;
    case DType::b8:
      return at::kBool;
    case DType::f8e4m3:
      return at::kFloat8_e4m3fn;
  }
  return at::kFloat;
}

DType from_scalar_type(at::ScalarType type) {
  switch (type) {
    case at::kHalf:
      return DType::f16;
    case at::kBFloat16:
      return DType::bf16;
    case at::kFloat:
      return DType::f32;
    case at::kDouble:
      return DType::f64;
    case at::kInt:
      return DType::i32;
    case at::kLong:
      return DType::i64;
    case at::kChar:
      return DType::i8;
    case at::kByte:
      return DType::u8;
    case at::kBool:
      return DType::b8;
    case at::kFloat8_e4m3fn:
      return DType::f8e4m3;
    default:
      throw Error(ErrorKind::internal,
                  std::string("unsupported tensor dtype ") + c10::toString(type));
  }
}

namespace {

// A dim: an integer, a symbol or an integer expression of the symbols ("2*H", "S+1", "N-1",
// "ceil_div(N, 64)"; core/expr.hpp).
int64_t dim_value(const std::string& expr, const Case& c) {
  const auto digit = [](unsigned char ch) { return std::isdigit(ch) != 0; };
  if (!expr.empty() && std::all_of(expr.begin(), expr.end(), digit)) return std::stoll(expr);
  return package::evaluate_expr(expr, package::symbol_values(c.dims));
}

}  // namespace

std::vector<int64_t> concrete_shape(const std::vector<std::string>& shape, const Case& c) {
  std::vector<int64_t> out;
  for (const auto& s : shape) out.push_back(dim_value(s, c));
  return out;
}

Attributes call_attributes(const OpSignature& op, const Case& c) {
  Attributes attrs = op.attributes;
  for (const auto& [name, value] : c.dims) attrs.emplace(name, static_cast<double>(value));
  return attrs;
}

namespace {

// A float64 tensor of `sizes` on `device`, element i = values::uniform/normal(seed, stream, i).
at::Tensor draw(at::IntArrayRef sizes, uint64_t seed, uint64_t stream, bool gaussian,
                at::Device device) {
  auto x = at::empty(sizes, at::TensorOptions().dtype(at::kDouble).device(device));
  const int64_t n = x.numel();
  if (n == 0) return x;
  double* out = x.data_ptr<double>();
  if (device.is_cuda()) {
    const cudaError_t rc = values::fill_device(
        out, n, seed, stream, gaussian, at::cuda::getCurrentCUDAStream(device.index()).stream());
    if (rc != cudaSuccess)
      throw Error(ErrorKind::device,
                  std::string("drawing case values on the GPU failed: ") + cudaGetErrorString(rc));
    return x;
  }
  at::parallel_for(0, n, 1 << 14, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      out[i] = gaussian ? values::normal(seed, stream, static_cast<uint64_t>(i))
                        : values::uniform(seed, stream, static_cast<uint64_t>(i));
  });
  return x;
}

// A family as one direct draw (values::Draw), as make_values's chain of operators computes it on a
// tensor of `sizes`; none for captured values.
std::optional<values::Draw> direct_family(Values family, at::IntArrayRef sizes, DType dtype,
                                          uint64_t seed, double extreme_magnitude) {
  using Kind = values::Draw::Kind;
  values::Draw f;
  const int64_t row = sizes.empty() ? 0 : sizes.back();
  switch (family) {
    case Values::normal:
      return f;
    case Values::uniform:  // U * 18 - 9
      f.gaussian = false;
      f.scale = 18.0, f.has_scale = true;
      f.shift = -9.0, f.has_shift = true;
      return f;
    case Values::extreme:  // (U * 2 - 1) * magnitude
      f.gaussian = false;
      f.scale = 2.0, f.has_scale = true;
      f.shift = -1.0, f.has_shift = true;
      f.post = extreme_magnitude, f.has_post = true;
      return f;
    case Values::tiny:  // N * the dtype's smallest normal
      f.scale = smallest_normal(dtype), f.has_scale = true;
      return f;
    case Values::large_mean:  // 1000 + N * spread
      f.scale = std::max(1e-3, 8 * dtype_eps(dtype) * 1000.0), f.has_scale = true;
      f.shift = 1000.0, f.has_shift = true;
      return f;
    case Values::all_equal:
      f.kind = Kind::constant;
      f.constant = values::normal(seed, values::kConstant, 0);
      return f;
    case Values::clustered_max:  // (a 0-d tensor, or one of empty rows: the plain draw)
      if (!sizes.empty() && row > 0) f.kind = Kind::clustered_max, f.row = row;
      return f;
    case Values::pm_pairs:
      if (!sizes.empty() && row >= 2) f.kind = Kind::pm_pairs, f.row = row;
      return f;
    case Values::special:
      f.kind = Kind::special;
      return f;
    case Values::captured:
      break;
  }
  return std::nullopt;
}

std::optional<values::DrawInto> draw_into(DType dtype) {
  switch (dtype) {
    case DType::f64:
      return values::DrawInto::f64;
    case DType::f32:
      return values::DrawInto::f32;
    case DType::f16:
      return values::DrawInto::f16;
    case DType::bf16:
      return values::DrawInto::bf16;
    default:
      return std::nullopt;
  }
}

template <typename T>
void fill_host(T* out, int64_t n, const values::Draw& f, uint64_t seed) {
  std::vector<double> row_max;
  if (f.kind == values::Draw::Kind::clustered_max) {
    row_max.assign(static_cast<size_t>(n / f.row), -std::numeric_limits<double>::infinity());
    at::parallel_for(0, n / f.row, 1, [&](int64_t begin, int64_t end) {
      for (int64_t r = begin; r < end; ++r)
        for (int64_t j = 0; j < f.row; ++j)
          row_max[static_cast<size_t>(r)] = std::fmax(
              row_max[static_cast<size_t>(r)],
              values::normal(seed, values::kPrimary, static_cast<uint64_t>(r * f.row + j)));
    });
  }
  at::parallel_for(0, n, 1 << 14, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const double x = values::draw_value(f, seed, static_cast<uint64_t>(i), row_max.data());
      if constexpr (std::is_same_v<T, double>) out[i] = x;
      else out[i] = static_cast<T>(static_cast<float>(x));  // through float, as ATen converts
    }
  });
}

// A family drawn straight into `dtype`: one pass (two for clustered_max), no float64 tensor.
at::Tensor draw_direct(const values::Draw& f, values::DrawInto into, at::IntArrayRef sizes,
                       DType dtype, uint64_t seed, at::Device device) {
  auto x = at::empty(sizes, at::TensorOptions().dtype(to_scalar_type(dtype)).device(device));
  const int64_t n = x.numel();
  if (n == 0) return x;
  if (device.is_cuda()) {
    at::Tensor row_max;  // (the caching allocator's: freed after the stream's use, as any tensor)
    if (f.kind == values::Draw::Kind::clustered_max)
      row_max = at::empty({n / f.row}, at::TensorOptions().dtype(at::kDouble).device(device));
    const cudaError_t rc = values::fill_device_draw(
        x.data_ptr(), into, n, f, seed, row_max.defined() ? row_max.data_ptr<double>() : nullptr,
        at::cuda::getCurrentCUDAStream(device.index()).stream());
    if (rc != cudaSuccess)
      throw Error(ErrorKind::device,
                  std::string("drawing case values on the GPU failed: ") + cudaGetErrorString(rc));
    return x;
  }
  switch (into) {
    case values::DrawInto::f64:
      fill_host(x.data_ptr<double>(), n, f, seed);
      break;
    case values::DrawInto::f32:
      fill_host(x.data_ptr<float>(), n, f, seed);
      break;
    case values::DrawInto::f16:
      fill_host(x.data_ptr<at::Half>(), n, f, seed);
      break;
    case values::DrawInto::bf16:
      fill_host(x.data_ptr<at::BFloat16>(), n, f, seed);
      break;
  }
  return x;
}

}  // namespace

bool values_drawn_directly(DType dtype) { return draw_into(dtype).has_value(); }

at::Tensor make_values(Values family, at::IntArrayRef sizes, DType dtype, uint64_t seed,
                       double extreme_magnitude, at::Device device) {
  if (const auto into = draw_into(dtype))
    if (const auto f = direct_family(family, sizes, dtype, seed, extreme_magnitude))
      return draw_direct(*f, *into, sizes, dtype, seed, device);
  return make_values_chained(family, sizes, dtype, seed, extreme_magnitude, device);
}

at::Tensor make_values_chained(Values family, at::IntArrayRef sizes, DType dtype, uint64_t seed,
                               double extreme_magnitude, at::Device device) {
  const auto normal = [&](uint64_t stream) { return draw(sizes, seed, stream, true, device); };
  const auto uniform = [&](uint64_t stream) { return draw(sizes, seed, stream, false, device); };
  const double eps = dtype_eps(dtype);
  at::Tensor x;
  switch (family) {
    case Values::normal:
      x = normal(values::kPrimary);
      break;
    case Values::uniform:
      x = uniform(values::kPrimary) * 18.0 - 9.0;
      break;
    case Values::extreme:
      x = (uniform(values::kPrimary) * 2.0 - 1.0) * extreme_magnitude;
      break;
    case Values::tiny:
      x = normal(values::kPrimary) * smallest_normal(dtype);
      break;
    case Values::large_mean:
      x = 1000.0 + normal(values::kPrimary) * std::max(1e-3, 8 * eps * 1000.0);
      break;
    case Values::all_equal:
      x = at::full(sizes, values::normal(seed, values::kConstant, 0),
                   at::TensorOptions().dtype(at::kDouble).device(device));
      break;
    case Values::clustered_max: {
      x = normal(values::kPrimary);
      if (x.numel() > 0 && x.dim() > 0) {
        const auto row_max = std::get<0>(x.max(-1, true));
        x = at::where(uniform(values::kPick) < 0.5, row_max.expand_as(x), x);
      }
      break;
    }
    case Values::pm_pairs: {
      x = normal(values::kPrimary);
      if (x.dim() > 0 && x.size(-1) >= 2) {
        const int64_t n = x.size(-1) / 2 * 2;
        x.narrow(-1, 1, n - 1)
            .slice(-1, 0, std::numeric_limits<int64_t>::max(), 2)
            .copy_(-x.narrow(-1, 0, n - 1).slice(-1, 0, std::numeric_limits<int64_t>::max(), 2));
      }
      break;
    }
    case Values::special: {
      x = normal(values::kPrimary);
      if (x.numel() > 0) {
        const auto pick = uniform(values::kPick);
        const double inf = std::numeric_limits<double>::infinity();
        x = at::where(pick < 0.004, at::full_like(x, inf), x);
        x = at::where((pick >= 0.004) & (pick < 0.008), at::full_like(x, -inf), x);
        x = at::where((pick >= 0.008) & (pick < 0.012), at::full_like(x, std::nan("")), x);
        x = at::where((pick >= 0.012) & (pick < 0.016), at::zeros_like(x), x);
        x = at::where((pick >= 0.016) & (pick < 0.020), at::full_like(x, -0.0), x);
      }
      break;
    }
    case Values::captured:
      throw Error(ErrorKind::internal,
                  "captured values are read from their file (captured_inputs), not drawn");
  }
  return x.to(to_scalar_type(dtype));
}

Tensors case_inputs(const OpReference& ref, const Case& c, const OpSignature& op,
                    at::Device device) {
  if (c.values != Values::captured) return ref.make_inputs(c, op, device);
  // The file is read again (not trusted from when the case was made): its shapes must still be
  // the case's.
  const SafetensorsFile file = read_safetensors_header(c.captured_path);
  const Case now = captured_case(op, c.captured, file, c.seed);
  if (now.dims != c.dims || now.dtype != c.dtype)
    throw Error(ErrorKind::package, "captured inputs '" + c.captured + "' changed since case " +
                                        c.id() + " was made from them: it now reads as " +
                                        now.id());
  Tensors inputs;
  for (const auto& in : op.inputs) {
    const SafetensorsTensor& t = *file.find(in.name);
    auto bytes = read_safetensors_data(file, t);
    auto cpu =
        at::empty(t.shape, at::TensorOptions().dtype(to_scalar_type(op.tensor_dtype(in, c.dtype))));
    if (!bytes.empty()) std::memcpy(cpu.data_ptr(), bytes.data(), bytes.size());
    inputs.push_back(device.is_cpu() ? cpu : cpu.to(device));
  }
  return inputs;
}

at::Tensor make_norm_values(Values family, at::IntArrayRef sizes, DType dtype, uint64_t seed,
                            double mean_to_spread, bool zero_constant, at::Device device) {
  switch (family) {
    case Values::large_mean: {
      const double mean = 1000.0;
      auto z = make_values(Values::normal, sizes, DType::f64, seed, 0, device);
      return (mean + z * (mean / mean_to_spread)).to(to_scalar_type(dtype));
    }
    case Values::all_equal:
      if (zero_constant)
        return at::zeros(sizes, at::TensorOptions().dtype(to_scalar_type(dtype)).device(device));
      break;
    default:
      break;
  }
  return make_values(family, sizes, dtype, seed, std::min(0.5 * dtype_max(dtype), 1e15), device);
}

at::Tensor make_normal(at::IntArrayRef sizes, DType dtype, uint64_t seed, double mean,
                       double stddev, at::Device device) {
  const auto z = make_values(Values::normal, sizes, DType::f64, seed, 0, device);
  return (mean + z * stddev).to(to_scalar_type(dtype));
}

at::Tensor apply_layout(const at::Tensor& t, Layout layout, at::Device device) {
  const auto opts = t.options().device(device);
  switch (layout) {
    case Layout::contiguous:
      return t.to(device).contiguous();
    case Layout::strided: {
      if (t.dim() == 0) return t.to(device);
      auto wide_sizes = t.sizes().vec();
      wide_sizes.back() *= 2;
      auto buffer = at::zeros(wide_sizes, opts);
      auto view = buffer.slice(-1, 0, std::numeric_limits<int64_t>::max(), 2);
      view.copy_(t);
      return view;
    }
    case Layout::offset: {
      auto flat = at::zeros({t.numel() + 1}, opts);
      auto view = flat.narrow(0, 1, t.numel()).view(t.sizes());
      view.copy_(t);
      return view;
    }
    case Layout::padded: {
      if (t.dim() < 2) return t.to(device).contiguous();
      // 3 elements of padding: each row starts at an odd element, so a kernel that vectorizes rows
      // because the last dim is contiguous and the base aligned, without looking at the row stride,
      // reads across rows.
      auto wide_sizes = t.sizes().vec();
      wide_sizes.back() += kPaddedLayoutElements;
      auto buffer = at::zeros(wide_sizes, opts);
      auto view = buffer.narrow(-1, 0, t.size(-1));
      view.copy_(t);
      return view;
    }
    case Layout::offset16: {
      const int64_t shift = std::max<int64_t>(1, 16 / static_cast<int64_t>(t.element_size()));
      auto flat = at::zeros({t.numel() + shift}, opts);
      auto view = flat.narrow(0, shift, t.numel()).view(t.sizes());
      view.copy_(t);
      return view;
    }
  }
  return t.to(device);
}

}  // namespace kgate
