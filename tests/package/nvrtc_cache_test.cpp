// Tests of the NVRTC compile cache and validate_package: a cold compile is a miss, the second a hit
// that does not call NVRTC, changed inputs miss, a compile error carries NVRTC's log, template
// name expressions lower to mangled names. NVRTC runs without a GPU, so these run on CI machines.
#include "runtime/package/nvrtc_cache.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "core/sha256.hpp"
#include "package_test_util.hpp"
#include "runtime/package/validate.hpp"

namespace kgate::package {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;

const fs::path kExample = fs::path(KGATE_PACKAGE_SOURCE_DIR) / "examples" / "softmax_rows";

json tiny_manifest(const std::string& source = "tiny.cu") {
  json m = json::parse(R"J({
    "format": "kgate-package/1", "name": "tiny", "version": "0.1.0", "op": "softmax",
    "symbols": {"N": ["x", -1]},
    "launches": [{"kernel": "scale<float>", "grid": ["ceil_div(N, 128)"], "block": [128],
                  "args": [{"tensor": "x"}, {"tensor": "y"}, {"shape": "N", "type": "i64"}]}],
    "guard": {"dtypes": ["f32"]}
  })J");
  m["sources"] = {source};
  return m;
}

constexpr const char* kTinySource = R"J(
template <class T>
__global__ void scale(const T* x, T* y, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * T(2);
}
)J";

bool is_elf(const std::string& image) {
  return image.size() > 4 && image.compare(0, 4,
                                           "\x7f"
                                           "ELF") == 0;
}

CompileOptions options_in(const TempDir& cache) {
  CompileOptions o;
  o.cache_dir = cache.path();
  return o;
}

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  Sha256 h;
  const std::string chunk(1000, 'a');
  for (int i = 0; i < 1000; ++i) h.update(chunk);
  EXPECT_EQ(h.hex(), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  EXPECT_NE(Sha256().field("ab").field("c").hex(), Sha256().field("a").field("bc").hex());
}

TEST(NvrtcCache, TinyKernelMissThenHit) {
  TempDir pkg, cache;
  pkg.write("tiny.cu", kTinySource);
  pkg.write_json("kgate.json", tiny_manifest());
  const PackageManifest m = load_manifest(pkg.path());

  const uint64_t before = nvrtc_compile_count();
  const CompileResult cold = compile_package(m, options_in(cache));
  EXPECT_FALSE(cold.cache_hit);
  EXPECT_EQ(nvrtc_compile_count(), before + 1);
  EXPECT_GT(cold.compile_seconds, 0.0);
  EXPECT_TRUE(is_elf(cold.cubin));
  EXPECT_EQ(cold.key.size(), 64u);
  EXPECT_TRUE(fs::exists(cold.cache_entry));
  EXPECT_EQ(cold.cache_entry.parent_path().parent_path(), cache.path() / "nvrtc");
  ASSERT_EQ(cold.lowered_names.count("scale<float>"), 1u);
  EXPECT_EQ(cold.lowered_names.at("scale<float>"), "_Z5scaleIfEvPKT_PS0_x");
  EXPECT_EQ(cold.options.front(), "--gpu-architecture=sm_90");

  const CompileResult warm = compile_package(m, options_in(cache));
  EXPECT_TRUE(warm.cache_hit);
  EXPECT_EQ(nvrtc_compile_count(), before + 1) << "a cache hit must not call NVRTC";
  EXPECT_EQ(warm.compile_seconds, 0.0);
  EXPECT_EQ(warm.key, cold.key);
  EXPECT_EQ(warm.cubin, cold.cubin);
  EXPECT_EQ(warm.lowered_names, cold.lowered_names);
}

TEST(NvrtcCache, KernelFilesCompileWithTheStandardHeadersTheyInclude) {
  // What kernel files begin with, as nvcc takes them: NVRTC opens none of these by itself.
  TempDir pkg, cache;
  pkg.write("tiny.cu", R"J(#include <cstdio>
#include <cstdlib>
#include <cassert>
#include <cstdint>
#include <cstddef>
#include <algorithm>
#include <cuda_runtime.h>
#include <stdint.h>
#include <cmath>
#include <climits>
#include <cfloat>
#include <limits>
#include <type_traits>
template <class T>
__global__ void scale(const T* x, T* y, long long n) {
  const uint i = blockIdx.x * blockDim.x + threadIdx.x;
  const std::uint32_t last = std::min<std::uint32_t>(i, UINT_MAX);
  static_assert(std::is_same<uint32_t, unsigned int>::value, "uint32_t");
  static_assert(std::numeric_limits<float>::max() == FLT_MAX, "FLT_MAX");
  assert(n >= 0);
  if (last < n) y[last] = x[last] * T(std::max(2.0f, std::sqrt(1.0f)));
  if (n < 0) printf("%lld\n", n);
}
)J");
  pkg.write_json("kgate.json", tiny_manifest());
  const CompileResult r = compile_package(load_manifest(pkg.path()), options_in(cache));
  EXPECT_TRUE(is_elf(r.cubin));
  EXPECT_EQ(r.lowered_names.at("scale<float>"), "_Z5scaleIfEvPKT_PS0_x");
}

TEST(NvrtcCache, AHeaderOfMacrosAloneAndHostApiHeadersCompile) {
  // <cfloat> alone declares nothing in cuda::std (its stand-in must not assume it does); cuBLAS's
  // and the driver's headers, included beside kernels that call nothing of them, are empty under
  // NVRTC.
  TempDir pkg, cache;
  pkg.write("tiny.cu", R"J(#include <cfloat>
#include <cublas_v2.h>
#include <cuda.h>
#include <curand.h>
#if !defined(CUDA_VERSION) || CUDA_VERSION < 12000
#error "CUDA_VERSION"
#endif
template <class T>
__global__ void scale(const T* x, T* y, long long n) {
  const long long i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * T(FLT_EPSILON > 0.f ? 2.0f : 1.0f);
}
)J");
  pkg.write_json("kgate.json", tiny_manifest());
  const CompileResult r = compile_package(load_manifest(pkg.path()), options_in(cache));
  EXPECT_TRUE(is_elf(r.cubin));
}

TEST(NvrtcCache, AQuotedIncludeFindsTheHeaderBesideItsSource) {
  // As nvcc: "beside.cuh" next to src/kernels/tiny.cu, with no include_dirs.
  TempDir pkg, cache;
  pkg.write("src/kernels/beside.cuh", "#pragma once\n#define KGATE_BESIDE_FACTOR 2.0f\n");
  pkg.write("src/kernels/tiny.cu", R"J(#include "beside.cuh"
template <class T>
__global__ void scale(const T* x, T* y, long long n) {
  const long long i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * T(KGATE_BESIDE_FACTOR);
}
)J");
  pkg.write_json("kgate.json", tiny_manifest("src/kernels/tiny.cu"));
  const CompileResult r = compile_package(load_manifest(pkg.path()), options_in(cache));
  EXPECT_TRUE(is_elf(r.cubin));
}

TEST(NvrtcCache, PerDtypeAndPerLaunchOptionsCompileSeparateUnits) {
  // A kernel typed and sized by macros: SCALAR per dtype, FACTOR per launch (a for_each).
  TempDir pkg, cache;
  pkg.write("macro.cu", R"J(
#include <cuda_fp16.h>
extern "C" __global__ void scale(const SCALAR* x, SCALAR* y, long long n) {
  const long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  if (i < n) y[i] = SCALAR(float(x[i]) * FACTOR);
}
)J");
  json m = tiny_manifest("macro.cu");
  m["guard"]["dtypes"] = {"f32", "f16"};
  m["nvrtc_options_for_dtype"] = {{"f32", {"-DSCALAR=float"}}, {"f16", {"-DSCALAR=__half"}}};
  m["launches"][0]["kernel"] = "scale";
  m["launches"][0]["for_each"] = {{"F", {2, 3}}};
  m["launches"][0]["nvrtc_options"] = {"-DFACTOR={F}"};
  m["launches"][0]["when"] = {{"if", "N % 2 == {F} - 2"}};
  pkg.write_json("kgate.json", m);
  const PackageManifest manifest = load_manifest(pkg.path());
  const auto units = compile_units(manifest);
  ASSERT_EQ(units.size(), 4u);
  EXPECT_EQ(units[0].options, (std::vector<std::string>{"-DSCALAR=float", "-DFACTOR=2"}));
  EXPECT_EQ(units[3].options, (std::vector<std::string>{"-DSCALAR=__half", "-DFACTOR=3"}));
  EXPECT_EQ(units[1].launches, (std::vector<std::pair<DType, std::size_t>>{{DType::f32, 1}}));

  const uint64_t before = nvrtc_compile_count();
  const CompileResult cold = compile_package(manifest, options_in(cache));
  EXPECT_EQ(nvrtc_compile_count(), before + 4);
  ASSERT_EQ(cold.units.size(), 4u);
  std::set<std::string> cubins;
  for (const auto& u : cold.units) {
    EXPECT_TRUE(is_elf(u.cubin));
    cubins.insert(u.cubin);
  }
  EXPECT_EQ(cubins.size(), 4u) << "each option set is its own CUBIN";
  EXPECT_EQ(cold.unit_of.at({DType::f16, 0}), 2u);
  EXPECT_EQ(cold.unit_of.at({DType::f16, 1}), 3u);
  EXPECT_EQ(cold.lowered_names.at("scale"), "scale");
  EXPECT_EQ(cold.cubin, cold.units[0].cubin);
  const CompileResult warm = compile_package(manifest, options_in(cache));
  EXPECT_TRUE(warm.cache_hit);
  EXPECT_EQ(nvrtc_compile_count(), before + 4);
  EXPECT_EQ(warm.units.size(), 4u);

  // A unit that does not compile names its options.
  m["nvrtc_options_for_dtype"].erase("f16");
  pkg.write_json("kgate.json", m);
  ManifestProblem problem;
  CompileResult r;
  EXPECT_FALSE(try_compile_package(load_manifest(pkg.path()), options_in(cache), r, problem));
  EXPECT_NE(problem.message.find("(compiled with -DFACTOR=2) "), std::string::npos)
      << problem.message;
}

TEST(NvrtcCache, ChangedInputsMiss) {
  TempDir pkg, cache;
  pkg.write("tiny.cu", kTinySource);
  pkg.write_json("kgate.json", tiny_manifest());
  PackageManifest m = load_manifest(pkg.path());
  const CompileResult first = compile_package(m, options_in(cache));

  // Another architecture.
  CompileOptions other_arch = options_in(cache);
  other_arch.arch = "sm_80";
  const CompileResult a = compile_package(m, other_arch);
  EXPECT_FALSE(a.cache_hit);
  EXPECT_NE(a.key, first.key);

  // Another option.
  m.nvrtc_options.push_back("-DSCALE=3");
  const CompileResult b = compile_package(m, options_in(cache));
  EXPECT_FALSE(b.cache_hit);
  EXPECT_NE(b.key, first.key);
  m.nvrtc_options.clear();

  // Another source text (a comment is enough: the key is the content).
  pkg.write("tiny.cu", std::string(kTinySource) + "// edited\n");
  const CompileResult c = compile_package(m, options_in(cache));
  EXPECT_FALSE(c.cache_hit);
  EXPECT_NE(c.key, first.key);

  // Back to the first content: a hit again.
  pkg.write("tiny.cu", kTinySource);
  EXPECT_TRUE(compile_package(m, options_in(cache)).cache_hit);
}

TEST(NvrtcCache, CorruptEntryIsRecompiled) {
  TempDir pkg, cache;
  pkg.write("tiny.cu", kTinySource);
  pkg.write_json("kgate.json", tiny_manifest());
  const PackageManifest m = load_manifest(pkg.path());
  const CompileResult first = compile_package(m, options_in(cache));
  std::ofstream(first.cache_entry, std::ios::binary | std::ios::trunc) << "not a cubin";
  const uint64_t before = nvrtc_compile_count();
  const CompileResult again = compile_package(m, options_in(cache));
  EXPECT_FALSE(again.cache_hit);
  EXPECT_EQ(nvrtc_compile_count(), before + 1);
  EXPECT_EQ(again.cubin, first.cubin);
  EXPECT_TRUE(compile_package(m, options_in(cache)).cache_hit);
}

TEST(NvrtcCache, WithoutCacheNothingIsWritten) {
  TempDir pkg, cache;
  pkg.write("tiny.cu", kTinySource);
  pkg.write_json("kgate.json", tiny_manifest());
  CompileOptions o = options_in(cache);
  o.use_cache = false;
  const CompileResult r = compile_package(load_manifest(pkg.path()), o);
  EXPECT_FALSE(r.cache_hit);
  EXPECT_TRUE(r.cache_entry.empty());
  EXPECT_TRUE(fs::is_empty(cache.path()));
}

TEST(NvrtcCache, SyntaxErrorShowsTheCompilerLog) {
  TempDir pkg, cache;
  pkg.write("broken.cu", "template <class T>\n__global__ void scale(T* x) { x[0] = T(1) }\n");
  pkg.write_json("kgate.json", tiny_manifest("broken.cu"));
  const PackageManifest m = load_manifest(pkg.path());
  try {
    compile_package(m, options_in(cache));
    FAIL() << "no error";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.kind(), ErrorKind::package);
    EXPECT_EQ(what.rfind((pkg.path() / "kgate.json").string() +
                             ": sources: NVRTC could not compile "
                             "package \"tiny\" (broken.cu) for sm_90: NVRTC_ERROR_COMPILATION\n",
                         0),
              0u)
        << what;
    EXPECT_NE(what.find("broken.cu(2): error: expected a \";\""), std::string::npos) << what;
    EXPECT_NE(what.find("1 error detected in the compilation of \"broken.cu\""), std::string::npos)
        << what;
  }
  // validate_package reports the same as a problem instead of throwing.
  ValidateOptions vo;
  vo.compile_options = options_in(cache);
  const ValidationReport report = validate_package(pkg.path(), vo);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0].field, "sources");
  EXPECT_NE(report.problems[0].message.find("broken.cu(2): error"), std::string::npos);
  EXPECT_FALSE(report.compiled);
  EXPECT_FALSE(report.ok());
}

TEST(NvrtcCache, MissingKernelNameIsAProblem) {
  TempDir pkg, cache;
  pkg.write("tiny.cu", kTinySource);
  json manifest = tiny_manifest();
  manifest["launches"][0]["kernel"] = "scale<doubel>";
  pkg.write_json("kgate.json", manifest);
  ValidateOptions vo;
  vo.compile_options = options_in(cache);
  const ValidationReport report = validate_package(pkg.path(), vo);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_NE(report.problems[0].message.find("identifier \"doubel\" is undefined"),
            std::string::npos)
      << report.problems[0].message;
  EXPECT_EQ(report.problems[0].field, "launches[0].kernel");
}

TEST(NvrtcCache, MisspelledKernelGetsADidYouMeanOnItsLaunch) {
  TempDir pkg, cache;
  pkg.write("tiny.cu", std::string(kTinySource) +
                           "template <class T> __global__ void __launch_bounds__(128) "
                           "scale_rows(T* y) { y[0] = T(1); }\n");
  json manifest = tiny_manifest();
  manifest["launches"][0]["kernel"] = "scael<float>";
  pkg.write_json("kgate.json", manifest);
  ValidateOptions vo;
  vo.compile_options = options_in(cache);
  const ValidationReport report = validate_package(pkg.path(), vo);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0].field, "launches[0].kernel");
  EXPECT_EQ(
      report.problems[0].message,
      "kernel \"scael<float>\" does not name a kernel of the sources (NVRTC: identifier \"scael\" "
      "is "
      "undefined); did you mean \"scale<float>\"? Their __global__ functions: scale, scale_rows.");
}

TEST(NvrtcCache, APlainKernelTypedByAMacroHasItsOwnNameInEachUnit) {
  // llm.c's style: one non-template kernel over "floatX", set per dtype. Its mangled name differs
  // per unit, and each unit's kernel is looked up (and its parameters checked) under its own name.
  TempDir pkg, cache;
  pkg.write("floatx.cu", R"J(
#include <cuda_fp16.h>
__global__ void twice(floatX* y, const floatX* x, IDX n) {
  const IDX i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = floatX(float(x[i]) * 2.0f);
}
)J");
  json m = tiny_manifest("floatx.cu");
  m["guard"]["dtypes"] = {"f32", "f16"};
  m["nvrtc_options_for_dtype"] = {{"f32", {"-DfloatX=float", "-DIDX=int"}},
                                  {"f16", {"-DfloatX=__half", "-DIDX=int"}}};
  m["launches"][0]["kernel"] = "twice";
  m["launches"][0]["args"] = {
      {{"tensor", "y"}}, {{"tensor", "x"}}, {{"shape", "N"}, {"type", "i32"}}};
  pkg.write_json("kgate.json", m);
  const CompileResult r = compile_package(load_manifest(pkg.path()), options_in(cache));
  ASSERT_EQ(r.units.size(), 2u);
  const std::string f32 = r.units[0].lowered_names.at("twice"),
                    f16 = r.units[1].lowered_names.at("twice");
  EXPECT_EQ(f32, "_Z5twicePfPKfi");
  EXPECT_EQ(f16, "_Z5twiceP6__halfPKS_i");
  EXPECT_EQ(r.units[0].params.count(f32), 1u);
  EXPECT_EQ(r.units[1].params.count(f16), 1u);

  // A parameter that is wrong in the first unit only is still found there.
  m["nvrtc_options_for_dtype"]["f32"] = {"-DfloatX=float", "-DIDX=long long"};
  pkg.write_json("kgate.json", m);
  ManifestProblem problem;
  CompileResult bad;
  EXPECT_FALSE(try_compile_package(load_manifest(pkg.path()), options_in(cache), bad, problem));
  EXPECT_EQ(problem.field, "launches[0].args[2]");
  EXPECT_EQ(
      problem.message,
      "is 4 bytes (i32), but parameter 2 of kernel \"twice\" (f32) is 8 bytes; fix its \"type\" or "
      "the kernel's signature");
}

TEST(NvrtcCache, ArgsAreCheckedAgainstTheCompiledParameterTable) {
  TempDir pkg, cache;
  pkg.write("tiny.cu", std::string(kTinySource) +
                           "extern \"C\" __global__ void mixed(float* y, int n, double s, short h, "
                           "long long m) {}\n");
  json manifest = tiny_manifest();
  pkg.write_json("kgate.json", manifest);
  const CompileResult r = compile_package(load_manifest(pkg.path()), options_in(cache));
  ASSERT_EQ(r.params.count("_Z5scaleIfEvPKT_PS0_x"), 1u);
  const auto& p = r.params.at("_Z5scaleIfEvPKT_PS0_x");
  ASSERT_EQ(p.size(), 3u);
  EXPECT_EQ(p[2].offset, 16u);
  EXPECT_EQ(p[2].size, 8u);
  // The reader, on every parameter size and alignment.
  const auto all = cubin_kernel_params(r.cubin);
  ASSERT_TRUE(all.has_value());
  ASSERT_EQ(all->count("mixed"), 1u);
  EXPECT_EQ(r.params.count("mixed"), 0u) << "r.params keeps the package's kernels only";
  const auto& m = all->at("mixed");
  ASSERT_EQ(m.size(), 5u);
  const std::vector<std::pair<uint32_t, uint32_t>> expected = {
      {0, 8}, {8, 4}, {16, 8}, {24, 2}, {32, 8}};
  for (std::size_t i = 0; i < m.size(); ++i) {
    EXPECT_EQ(m[i].ordinal, i);
    EXPECT_EQ(std::make_pair(m[i].offset, m[i].size), expected[i]) << "parameter " << i;
  }
  manifest["launches"][0]["kernel"] = "mixed";
  manifest["launches"][0]["args"] = json::parse(R"J([{"tensor": "y"}, {"shape": "N", "type": "i32"},
      {"scalar": 1.0, "type": "f64"}, {"scalar": 1, "type": "i32"}, {"shape": "N", "type": "i64"}])J");
  pkg.write_json("kgate.json", manifest);
  ValidateOptions vo;
  vo.compile_options = options_in(cache);
  ValidationReport report = validate_package(pkg.path(), vo);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0].field, "launches[0].args[3]");
  EXPECT_EQ(report.problems[0].message,
            "is 4 bytes (i32), but parameter 3 of kernel \"mixed\" (f32) is 2 bytes; fix its "
            "\"type\" or the kernel's "
            "signature");
  manifest["launches"][0]["args"].erase(4);
  pkg.write_json("kgate.json", manifest);
  report = validate_package(pkg.path(), vo);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0].field, "launches[0].args");
  EXPECT_NE(report.problems[0].message.find(
                "takes 5 parameter(s) of 8, 4, 8, 2, 8 bytes, but \"args\" lists 4"),
            std::string::npos)
      << report.problems[0].message;
}

TEST(NvrtcCache, PtxParametersAreReadFromTheEntry) {
  const std::string ptx =
      ".version 8.0\n.target sm_90\n.visible .entry k(\n\t.param .u64 k_param_0,\n"
      "\t.param .u32 k_param_1,\n\t.param .f64 k_param_2,\n\t.param .align 4 .b8 "
      "k_param_3[12]\n)\n{\n}\n";
  const auto p = ptx_kernel_params(ptx, "k");
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[1].offset, 8u);
  EXPECT_EQ(p[1].size, 4u);
  EXPECT_EQ(p[2].offset, 16u);
  EXPECT_EQ(p[3].offset, 24u);
  EXPECT_EQ(p[3].size, 12u);
  EXPECT_TRUE(ptx_kernel_params(ptx, "other").empty());
  EXPECT_EQ(ptx_entry_names(ptx), std::vector<std::string>{"k"});
}

TEST(NvrtcCache, ADeviceVariableIsNotAKernel) {
  TempDir pkg, cache;
  pkg.write("tiny.cu", std::string(kTinySource) + "__device__ float scale_factor[4];\n");
  json manifest = tiny_manifest();
  manifest["launches"][0]["kernel"] = "scale_factor";
  pkg.write_json("kgate.json", manifest);
  ValidateOptions vo;
  vo.compile_options = options_in(cache);
  const ValidationReport report = validate_package(pkg.path(), vo);
  ASSERT_EQ(report.problems.size(), 1u);
  EXPECT_EQ(report.problems[0].field, "launches[0].kernel");
  EXPECT_NE(report.problems[0].message.find(
                "kernel \"scale_factor\" is not a function in the compiled code"),
            std::string::npos)
      << report.problems[0].message;
}

TEST(NvrtcCache, HeadersComeFromIncludeDirsOnly) {
  TempDir pkg, cache;
  pkg.write("src/a.cu",
            "#include \"common/defs.cuh\"\n"
            "extern \"C\" __global__ void first(float* x) { x[0] = FACTOR; }\n");
  pkg.write("src/b.cu",
            "template <int K> __global__ void second(float* x) { x[0] = K * FACTOR; }\n");
  pkg.write("inc/common/defs.cuh", "#pragma once\n#define FACTOR 3.0f\n");
  json manifest = tiny_manifest();
  manifest["sources"] = {"src/a.cu", "src/b.cu"};
  manifest["include_dirs"] = {"inc"};
  manifest["launches"] = json::parse(R"J([
    {"kernel": "first", "grid": [1], "block": [32], "args": [{"tensor": "x"}]},
    {"kernel": "second<4>", "grid": [1], "block": [32], "args": [{"tensor": "y"}]}
  ])J");
  pkg.write_json("kgate.json", manifest);
  ValidateOptions vo;
  vo.compile_options = options_in(cache);
  const ValidationReport report = validate_package(pkg.path(), vo);
  ASSERT_TRUE(report.ok()) << format_problems(report.problems);
  ASSERT_TRUE(report.compiled);
  EXPECT_EQ(report.compiled->lowered_names.at("first"), "first");
  EXPECT_EQ(report.compiled->lowered_names.at("second<4>"), "_Z6secondILi4EEvPf");

  // A header beside a source is found, as nvcc finds it for a quoted #include; one elsewhere,
  // outside include_dirs, is not.
  pkg.write("src/local.cuh", "#define LOCAL 1\n");
  pkg.write("src/a.cu",
            "#include \"local.cuh\"\n#include \"common/defs.cuh\"\n"
            "extern \"C\" __global__ void first(float* x) { x[0] = LOCAL * FACTOR; }\n");
  const ValidationReport beside = validate_package(pkg.path(), vo);
  EXPECT_TRUE(beside.ok()) << format_problems(beside.problems);
  pkg.write("elsewhere/far.cuh", "#define FAR 1\n");
  pkg.write("src/a.cu", "#include \"far.cuh\"\n__global__ void first(float* x) {}\n");
  const ValidationReport hidden = validate_package(pkg.path(), vo);
  ASSERT_EQ(hidden.problems.size(), 1u);
  EXPECT_NE(hidden.problems[0].message.find("cannot open source file \"far.cuh\""),
            std::string::npos)
      << hidden.problems[0].message;
}

TEST(NvrtcCache, BadArchitectureIsAUsageError) {
  TempDir pkg, cache;
  pkg.write("tiny.cu", kTinySource);
  pkg.write_json("kgate.json", tiny_manifest());
  CompileOptions o = options_in(cache);
  o.arch = "compute_90";
  try {
    compile_package(load_manifest(pkg.path()), o);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_STREQ(e.what(),
                 "GPU architecture \"compute_90\" is not valid; expected a real "
                 "architecture such as \"sm_90\" (a CUBIN is built, so compute_XY is "
                 "refused)");
  }
}

TEST(NvrtcCache, DefaultCacheDirFollowsTheEnvironment) {
  const char* saved = std::getenv("KGATE_CACHE_DIR");
  const std::string saved_value = saved ? saved : "";
  ::setenv("KGATE_CACHE_DIR", "/tmp/kgate-cache-test-dir", 1);
  EXPECT_EQ(default_cache_dir(), fs::path("/tmp/kgate-cache-test-dir"));
  ::unsetenv("KGATE_CACHE_DIR");
  EXPECT_NE(default_cache_dir().string().find("kgate"), std::string::npos);
  if (saved) ::setenv("KGATE_CACHE_DIR", saved_value.c_str(), 1);
}

// ---- the cache cannot change what runs
// ------------------------------------------------------------

/// Compiles another kernel, for a CUBIN an attacker could plant.
CompileResult foreign_cubin(const TempDir& cache) {
  TempDir other;
  other.write("tiny.cu", std::string(kTinySource) + "\n__global__ void evil(int* p) { *p = 1; }\n");
  other.write_json("kgate.json", tiny_manifest());
  CompileOptions o = options_in(cache);
  o.use_cache = false;
  return compile_package(load_manifest(other.path()), o);
}

TEST(NvrtcCache, APlantedCubinWithMatchingMetadataIsNotRun) {
  TempDir pkg, cache;
  pkg.write("tiny.cu", kTinySource);
  pkg.write_json("kgate.json", tiny_manifest());
  const PackageManifest m = load_manifest(pkg.path());
  const CompileResult first = compile_package(m, options_in(cache));
  const CompileResult evil = foreign_cubin(cache);
  ASSERT_NE(evil.cubin, first.cubin);

  // Replace the CUBIN and make the metadata match it, as someone with write access to a shared or
  // restored cache (but not the key) can.
  std::ofstream(first.cache_entry, std::ios::binary | std::ios::trunc) << evil.cubin;
  fs::path meta_path = first.cache_entry;
  meta_path.replace_extension(".json");
  json meta = json::parse(std::ifstream(meta_path));
  meta["cubin_sha256"] = sha256_hex(evil.cubin);
  std::ofstream(meta_path, std::ios::trunc) << meta.dump(2);

  const uint64_t before = nvrtc_compile_count();
  const CompileResult again = compile_package(m, options_in(cache));
  EXPECT_FALSE(again.cache_hit) << "a forged entry was trusted";
  EXPECT_EQ(nvrtc_compile_count(), before + 1);
  EXPECT_EQ(again.cubin, first.cubin);
  // The entry was replaced by the package's own CUBIN: the next run hits it.
  const CompileResult third = compile_package(m, options_in(cache));
  EXPECT_TRUE(third.cache_hit);
  EXPECT_EQ(third.cubin, first.cubin);
}

TEST(NvrtcCache, ACacheRestoredWithoutItsKeyIsRecompiled) {
  TempDir pkg, cache, keys;
  pkg.write("tiny.cu", kTinySource);
  pkg.write_json("kgate.json", tiny_manifest());
  const PackageManifest m = load_manifest(pkg.path());
  CompileOptions a = options_in(cache);
  a.cache_key_file = keys.path() / "a.key";
  const CompileResult first = compile_package(m, a);
  EXPECT_FALSE(first.cache_hit);
  EXPECT_TRUE(compile_package(m, a).cache_hit);
  EXPECT_EQ(fs::status(a.cache_key_file).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);

  CompileOptions b = options_in(cache);
  b.cache_key_file = keys.path() / "b.key";  // another machine's (or a pull request's) key
  EXPECT_FALSE(compile_package(m, b).cache_hit);

  // A CI secret as the key: the same on every runner, so a restored cache is trusted.
  ::setenv("KGATE_CACHE_KEY", "0123456789abcdef0123456789abcdef", 1);
  EXPECT_FALSE(compile_package(m, a).cache_hit);
  EXPECT_TRUE(compile_package(m, b).cache_hit);
  ::setenv("KGATE_CACHE_KEY", "short", 1);
  EXPECT_THROW(compile_package(m, a), Error);
  ::unsetenv("KGATE_CACHE_KEY");
}

TEST(NvrtcCache, KeyFilesMustBePrivateAndOutsideTheCache) {
  TempDir pkg, cache, keys;
  pkg.write("tiny.cu", kTinySource);
  pkg.write_json("kgate.json", tiny_manifest());
  const PackageManifest m = load_manifest(pkg.path());
  CompileOptions o = options_in(cache);
  o.cache_key_file = keys.path() / "open.key";
  keys.write("open.key", "0123456789abcdef0123456789abcdef");
  fs::permissions(o.cache_key_file, fs::perms::owner_read | fs::perms::owner_write |
                                        fs::perms::group_read | fs::perms::others_read);
  try {
    compile_package(m, o);
    FAIL() << "a readable key file was used";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("mode 0600"), std::string::npos) << e.what();
  }
  o.cache_key_file = cache.path() / "inside.key";
  try {
    compile_package(m, o);
    FAIL() << "a key inside the cache was used";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("lies inside the cache directory"), std::string::npos)
        << e.what();
  }
}

TEST(NvrtcCache, LinkedDirectoryOrForeignEntriesAreMisses) {
  TempDir pkg, cache;
  pkg.write("tiny.cu", kTinySource);
  pkg.write_json("kgate.json", tiny_manifest());
  const PackageManifest m = load_manifest(pkg.path());
  const CompileResult first = compile_package(m, options_in(cache));

  // A symbolic link in place of the CUBIN (to an identical copy): not followed.
  const fs::path copy = cache.path() / "copy.cubin";
  fs::copy_file(first.cache_entry, copy);
  fs::remove(first.cache_entry);
  fs::create_symlink(copy, first.cache_entry);
  EXPECT_FALSE(compile_package(m, options_in(cache)).cache_hit);

  // A directory in place of the CUBIN: a miss, compiled, never a crash.
  fs::remove(first.cache_entry);
  fs::create_directories(first.cache_entry / "sub");
  const CompileResult dir = compile_package(m, options_in(cache));
  EXPECT_FALSE(dir.cache_hit);
  EXPECT_EQ(dir.cubin, first.cubin);
  fs::remove_all(first.cache_entry);

  // Another user's entry.
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give a file to another user here";
  compile_package(m, options_in(cache));
  ASSERT_EQ(::chown(first.cache_entry.c_str(), 4242, 4242), 0);
  EXPECT_FALSE(compile_package(m, options_in(cache)).cache_hit);
}

TEST(NvrtcCache, SharedOrForeignCacheDirectoriesAreRefused) {
  TempDir pkg, cache;
  pkg.write("tiny.cu", kTinySource);
  pkg.write_json("kgate.json", tiny_manifest());
  const PackageManifest m = load_manifest(pkg.path());
  fs::permissions(cache.path(), fs::perms::others_write, fs::perm_options::add);
  try {
    compile_package(m, options_in(cache));
    FAIL() << "a world-writable cache directory was used";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::usage);
    EXPECT_NE(std::string(e.what()).find("is writable by every user"), std::string::npos)
        << e.what();
  }
  fs::permissions(cache.path(), fs::perms::others_write, fs::perm_options::remove);
  EXPECT_NO_THROW(compile_package(m, options_in(cache)));
  if (::geteuid() != 0) GTEST_SKIP() << "only root can give a directory to another user here";
  ASSERT_EQ(::chown((cache.path() / "nvrtc").c_str(), 4242, 4242), 0);
  try {
    compile_package(m, options_in(cache));
    FAIL() << "another user's cache directory was used";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("belongs to user 4242"), std::string::npos) << e.what();
  }
}

TEST(NvrtcCache, AChangedToolkitHeaderChangesTheKey) {
  TempDir pkg, cache, toolkit;
  pkg.write("tiny.cu", kTinySource);
  pkg.write_json("kgate.json", tiny_manifest());
  const PackageManifest m = load_manifest(pkg.path());
  toolkit.write("kgate_fake_toolkit.h", "#define A 1\n");
  CompileOptions o = options_in(cache);
  o.system_include_dirs = {toolkit.path()};
  const CompileResult first = compile_package(m, o);
  EXPECT_TRUE(compile_package(m, o).cache_hit);
  toolkit.write("kgate_fake_toolkit.h", "#define A 11\n");  // edited in place
  forget_toolkit_fingerprints();                            // as a new process would
  const CompileResult second = compile_package(m, o);
  EXPECT_NE(first.key, second.key);
  EXPECT_FALSE(second.cache_hit);
}

TEST(NvrtcCache, WithoutHomeTheCacheIsPerUser) {
  const char* saved[] = {std::getenv("KGATE_CACHE_DIR"), std::getenv("XDG_CACHE_HOME"),
                         std::getenv("HOME")};
  const std::string values[] = {saved[0] ? saved[0] : "", saved[1] ? saved[1] : "",
                                saved[2] ? saved[2] : ""};
  ::unsetenv("KGATE_CACHE_DIR");
  ::unsetenv("XDG_CACHE_HOME");
  ::unsetenv("HOME");
  EXPECT_EQ(default_cache_dir().filename().string(), "kgate-cache-" + std::to_string(::geteuid()));
  const char* names[] = {"KGATE_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
  for (int i = 0; i < 3; ++i)
    if (saved[i]) ::setenv(names[i], values[i].c_str(), 1);
}

TEST(NvrtcCache, ExamplePackageValidatesAndCompiles) {
  TempDir cache;
  ValidateOptions vo;
  vo.check = testing::catalogue_options();
  vo.compile_options = options_in(cache);

  const ValidationReport cold = validate_package(kExample, vo);
  ASSERT_TRUE(cold.ok()) << format_problems(cold.problems);
  ASSERT_TRUE(cold.compiled);
  EXPECT_FALSE(cold.compiled->cache_hit);
  EXPECT_TRUE(is_elf(cold.compiled->cubin));
  for (const auto& [name, lowered] : cold.compiled->lowered_names)
    EXPECT_EQ(lowered.rfind("_Z12softmax_rowsI", 0), 0u) << name << " -> " << lowered;
  EXPECT_EQ(cold.compiled->lowered_names.size(), 3u);

  const uint64_t before = nvrtc_compile_count();
  const ValidationReport warm = validate_package(kExample, vo);
  ASSERT_TRUE(warm.ok());
  EXPECT_TRUE(warm.compiled->cache_hit);
  EXPECT_EQ(nvrtc_compile_count(), before);
  EXPECT_EQ(warm.compiled->cubin, cold.compiled->cubin);

  std::printf(
      "[ timing   ] softmax_rows example: cold compile %.3f s (NVRTC %.3f s), cache hit "
      "%.4f s\n",
      cold.compiled->total_seconds, cold.compiled->compile_seconds, warm.compiled->total_seconds);
  EXPECT_EQ(format_summary(warm).rfind("softmax_rows 1.0.0 (op softmax): 1 launch, 3 kernels; "
                                       "cached CUBIN for sm_90 (",
                                       0),
            0u)
      << format_summary(warm);
}

TEST(NvrtcCache, ValidateWithoutCompile) {
  ValidateOptions vo;
  vo.compile = false;
  const uint64_t before = nvrtc_compile_count();
  const ValidationReport r = validate_package(kExample, vo);
  EXPECT_TRUE(r.ok());
  EXPECT_FALSE(r.compiled);
  EXPECT_EQ(nvrtc_compile_count(), before);
  EXPECT_EQ(format_summary(r), "softmax_rows 1.0.0 (op softmax): 1 launch, 3 kernels");
}

}  // namespace
}  // namespace kgate::package
