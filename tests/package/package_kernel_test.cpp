// Tests of running packages, host side (no GPU): the LaunchPlan of a call (parameter packing with
// sizes, alignment, offsets and values; grid / block / shared memory; workspaces), its errors
// (exact messages), guard checks of cases and calls (exact messages), the cases generated on both
// sides of every guard boundary, variants, and the KernelInfo of a package (accepts /
// rejection_reason).
#include "runtime/package/package_kernel.hpp"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.hpp"
#include "package_test_util.hpp"
#include "runtime/cuda/check.hpp"
#include "runtime/package/compiled_package.hpp"

namespace kgate::package {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;

const fs::path kExample = fs::path(KGATE_PACKAGE_SOURCE_DIR) / "examples" / "softmax_rows";

/// Two launches sharing a workspace, every argument kind, per-dtype kernel names.
json plan_manifest() {
  return json::parse(R"J({
    "format": "kgate-package/1", "name": "plan_pkg", "version": "1.0.0", "op": "softmax",
    "attributes": {"dim": -1},
    "sources": ["k.cu"],
    "symbols": {"B": ["x", 0], "N": ["x", -1]},
    "workspace": [{"name": "partial", "dtype": "f32", "shape": ["B", "ceil_div(N, 256)"], "zero": true}],
    "launches": [
      {"kernel": {"f32": "k<float>", "f16": "k<__half>"},
       "grid": ["ceil_div(N, 256)", "min(B, 65535)"], "block": [256], "shared_mem": "min(N, 8192) * 4",
       "args": [{"tensor": "x"}, {"tensor": "y"}, {"shape": "N", "type": "i32"},
                {"shape": "B * N", "type": "i64"}, {"scalar": 1.5, "type": "f32"},
                {"scalar": 7, "type": "u32"}, {"attribute": "dim", "type": "i32"},
                {"workspace": "partial"}, {"scalar": 0.25, "type": "f64"}]},
      {"kernel": "finish", "grid": [1], "block": ["min(1024, B)"],
       "args": [{"workspace": "partial"}, {"tensor": "y"}, {"shape": "B", "type": "u64"}]}
    ],
    "guard": {"dtypes": ["f32", "f16"], "ranks": [2], "shapes": {"N": {"min": 1, "max": 65536}}}
  })J");
}

const std::map<std::string, std::string> kLowered = {
    {"k<float>", "_Z1kIfEvv"}, {"k<__half>", "_Z1kI6__halfEvv"}, {"finish", "finish"}};

/// A softmax call on fake (never dereferenced) 16-byte-aligned device pointers.
KernelCall call_of(int64_t b, int64_t n, DType dtype = DType::f32) {
  KernelCall call;
  TensorView x;
  x.data = reinterpret_cast<void*>(uintptr_t{0x10000});
  x.dtype = dtype;
  x.sizes = {b, n};
  x.strides = {n, 1};
  TensorView y = x;
  y.data = reinterpret_cast<void*>(uintptr_t{0x7f0000020000});
  call.inputs = {x};
  call.outputs = {y};
  call.attributes = {{"dim", -1}};
  return call;
}

class PackageKernelTest : public ::testing::Test {
 protected:
  void SetUp() override { pkg.write("k.cu", "// not compiled by these tests\n"); }

  PackageManifest load(const json& m) {
    pkg.write_json("kgate.json", m);
    return load_manifest(pkg.path(), testing::catalogue_options());
  }
  std::string manifest_path() const { return (pkg.path() / "kgate.json").string(); }

  /// The message of the Error plan_launches throws (and its kind).
  std::string plan_error(const json& m, const KernelCall& call,
                         ErrorKind expected = ErrorKind::package) {
    const auto manifest = load(m);
    try {
      plan_launches(manifest, testing::softmax_op(), kLowered, call);
    } catch (const Error& e) {
      EXPECT_EQ(static_cast<int>(e.kind()), static_cast<int>(expected)) << e.what();
      return e.what();
    }
    ADD_FAILURE() << "plan_launches did not throw";
    return {};
  }

  TempDir pkg;
};

TEST_F(PackageKernelTest, AFloatExpressionIsEvaluatedPerCallAndRoundedOnce) {
  json m = plan_manifest();
  m.erase("workspace");
  m["launches"] = json::parse(
      R"J([{"kernel": "k<float>", "grid": [1], "block": [32], "args": [{"tensor": "x"}, {"tensor": "y"},
    {"scalar": "1 / sqrt(N)", "type": "f32"}, {"scalar": "rsqrt(N) * (1 - dim) + min(B, 2.5)", "type": "f64"}]}])J");
  const auto manifest = load(m);
  const auto plan = plan_launches(manifest, testing::softmax_op(), kLowered, call_of(3, 300));
  const PlannedLaunch& l = plan.launches.at(0);
  EXPECT_EQ(l.value<float>(2),
            static_cast<float>(1 / std::sqrt(300.0)));               // float64, then one rounding
  EXPECT_DOUBLE_EQ(l.value<double>(3), 2 / std::sqrt(300.0) + 2.5);  // dim = -1 (the call's)
  EXPECT_EQ(l.args[2].description, "scalar \"1 / sqrt(N)\" as f32 (0.0577350259)");
  // What kgate validate --cases prints for a case.
  const Case c = Case::from_id("softmax:f32:B=4,N=64:contiguous:normal:0000000000000001");
  EXPECT_EQ(case_float_scalars(manifest, testing::softmax_op(), c),
            (std::vector<std::string>{
                "launches[0].args[2] \"1 / sqrt(N)\" = 0.125 as f32",
                "launches[0].args[3] \"rsqrt(N) * (1 - dim) + min(B, 2.5)\" = 2.75 as f64"}));
}

TEST_F(PackageKernelTest, PacksArgumentsWithSizesAlignmentAndValues) {
  const auto manifest = load(plan_manifest());
  auto plan = plan_launches(manifest, testing::softmax_op(), kLowered, call_of(3, 300));
  EXPECT_EQ(plan.dtype, DType::f32);
  EXPECT_EQ(plan.symbols, (SymbolValues{{"B", 3}, {"N", 300}, {"dim", -1}}));
  ASSERT_EQ(plan.launches.size(), 2u);

  const PlannedLaunch& l = plan.launches[0];
  EXPECT_EQ(l.name_expression, "k<float>");
  EXPECT_EQ(l.lowered_name, "_Z1kIfEvv");
  EXPECT_EQ(l.grid, (std::array<uint32_t, 3>{2, 3, 1}));
  EXPECT_EQ(l.block, (std::array<uint32_t, 3>{256, 1, 1}));
  EXPECT_EQ(l.shared_mem, 1200u);
  EXPECT_FALSE(l.empty);
  ASSERT_EQ(l.args.size(), 9u);
  // The C parameter layout: each value at an offset aligned to its size.
  const std::vector<std::size_t> offsets = {0, 8, 16, 24, 32, 36, 40, 48, 56};
  const std::vector<std::size_t> sizes = {8, 8, 4, 8, 4, 4, 4, 8, 8};
  for (std::size_t i = 0; i < offsets.size(); ++i) {
    EXPECT_EQ(l.args[i].offset, offsets[i]) << l.args[i].field;
    EXPECT_EQ(l.args[i].size, sizes[i]) << l.args[i].field;
    EXPECT_EQ(l.args[i].alignment, sizes[i]) << l.args[i].field;
    EXPECT_EQ(l.args[i].field, "launches[0].args[" + std::to_string(i) + "]");
  }
  EXPECT_EQ(l.param_buffer_size(), 64u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(l.param_buffer()) % 8, 0u);
  EXPECT_EQ(l.value<uint64_t>(0), 0x10000u);
  EXPECT_EQ(l.value<uint64_t>(1), 0x7f0000020000u);
  EXPECT_EQ(l.value<int32_t>(2), 300);
  EXPECT_EQ(l.value<int64_t>(3), 900);
  EXPECT_EQ(l.value<float>(4), 1.5f);
  EXPECT_EQ(l.value<uint32_t>(5), 7u);
  EXPECT_EQ(l.value<int32_t>(6), -1);
  EXPECT_EQ(l.value<uint64_t>(7), 0u);  // workspace: bound later
  EXPECT_EQ(l.value<double>(8), 0.25);
  EXPECT_EQ(l.args[0].description, "tensor x");
  EXPECT_EQ(l.args[3].description, "shape \"B * N\" as i64");
  EXPECT_EQ(l.args[6].description, "attribute dim as i32");
  EXPECT_EQ(l.args[7].description, "workspace partial");
  EXPECT_EQ(l.args[7].workspace, 0);

  const PlannedLaunch& f = plan.launches[1];
  EXPECT_EQ(f.lowered_name, "finish");
  EXPECT_EQ(f.grid, (std::array<uint32_t, 3>{1, 1, 1}));
  EXPECT_EQ(f.block, (std::array<uint32_t, 3>{3, 1, 1}));
  EXPECT_EQ(f.shared_mem, 0u);
  EXPECT_EQ(f.param_buffer_size(), 24u);
  EXPECT_EQ(f.value<uint64_t>(2), 3u);

  ASSERT_EQ(plan.workspaces.size(), 1u);
  EXPECT_EQ(plan.workspaces[0].name, "partial");
  EXPECT_EQ(plan.workspaces[0].shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(plan.workspaces[0].bytes, 24);
  EXPECT_TRUE(plan.workspaces[0].zero);
  EXPECT_EQ(plan.workspaces[0].start, std::optional<double>(0));

  // Binding the workspace writes its pointer into both launches.
  plan.bind_workspace(0, reinterpret_cast<void*>(uintptr_t{0xABC00}));
  EXPECT_EQ(plan.launches[0].value<uint64_t>(7), 0xABC00u);
  EXPECT_EQ(plan.launches[1].value<uint64_t>(0), 0xABC00u);
  EXPECT_EQ(plan.launches[0].value<double>(8), 0.25);  // neighbours untouched

  // kernelParams: a pointer to each value inside the buffer.
  const auto params = plan.launches[0].kernel_params();
  ASSERT_EQ(params.size(), 9u);
  for (std::size_t i = 0; i < params.size(); ++i)
    EXPECT_EQ(static_cast<const unsigned char*>(params[i]),
              plan.launches[0].param_buffer() + offsets[i]);
  EXPECT_EQ(*static_cast<const int32_t*>(params[2]), 300);
}

TEST_F(PackageKernelTest, PicksTheKernelOfTheCallsDtype) {
  const auto manifest = load(plan_manifest());
  const auto plan =
      plan_launches(manifest, testing::softmax_op(), kLowered, call_of(2, 16, DType::f16));
  EXPECT_EQ(plan.dtype, DType::f16);
  EXPECT_EQ(plan.launches[0].name_expression, "k<__half>");
  EXPECT_EQ(plan.launches[0].lowered_name, "_Z1kI6__halfEvv");
  EXPECT_EQ(plan.launches[1].name_expression, "finish");
}

TEST_F(PackageKernelTest, ZeroGridOrBlockMarksTheLaunchEmpty) {
  const auto manifest = load(plan_manifest());
  const auto plan = plan_launches(manifest, testing::softmax_op(), kLowered, call_of(0, 16));
  EXPECT_TRUE(plan.launches[0].empty);  // grid y = B = 0
  EXPECT_TRUE(plan.launches[1].empty);  // block x = min(1024, B) = 0
  EXPECT_EQ(plan.workspaces[0].bytes, 0);
  EXPECT_FALSE(
      plan_launches(manifest, testing::softmax_op(), kLowered, call_of(1, 16)).launches[1].empty);
}

TEST_F(PackageKernelTest, ValueThatDoesNotFitItsTypeIsAnError) {
  json m = plan_manifest();
  m["launches"][0]["args"][2] = {{"shape", "N * 100000"}, {"type", "i32"}};
  EXPECT_EQ(plan_error(m, call_of(3, 30000)),
            "package plan_pkg (" + manifest_path() +
                "): launches[0].args[2]: shape \"N * 100000\" as i32: the value 3000000000 does "
                "not fit in i32 "
                "(-2147483648 to 2147483647) [B=3, N=30000, dim=-1]");
  m["launches"][0]["args"][2] = {{"shape", "N - 1000"}, {"type", "u64"}};
  EXPECT_EQ(
      plan_error(m, call_of(3, 300)),
      "package plan_pkg (" + manifest_path() +
          "): launches[0].args[2]: shape \"N - 1000\" as u64: the value -700 does not fit in u64 "
          "(0 to 18446744073709551615) [B=3, N=300, dim=-1]");
}

TEST_F(PackageKernelTest, GridAndBlockLimits) {
  json m = plan_manifest();
  // (validate refuses a y-grid of B, which passes 65535 at the op's largest B; this one passes it
  // only for calls validate does not try, so the launch-time check is what stops it)
  m["launches"][0]["grid"] = {"1", "B * (N == 4)"};
  EXPECT_EQ(plan_error(m, call_of(70000, 4)),
            "package plan_pkg (" + manifest_path() +
                "): launches[0].grid[1]: \"B * (N == 4)\" evaluates to 70000; expected 0 (nothing "
                "to launch) to 65535 blocks "
                "in grid y "
                "[B=70000, N=4, dim=-1]");
  m = plan_manifest();
  m["launches"][0]["block"] = {
      64, "min(32, B)"};  // constant blocks are checked by the manifest checker
  EXPECT_EQ(
      plan_error(m, call_of(32, 300)),
      "package plan_pkg (" + manifest_path() +
          "): launches[0].block: 64 x 32 x 1 = 2048 threads per block; CUDA allows at most 1024 "
          "[B=32, N=300, dim=-1]");
  m = plan_manifest();
  m["launches"][1]["block"] = {"B - 4"};
  EXPECT_EQ(plan_error(m, call_of(3, 300)), "package plan_pkg (" + manifest_path() +
                                                "): launches[1].block[0]: \"B - 4\" evaluates to "
                                                "-1; expected 0 (nothing to launch) to 1024 "
                                                "threads in block x [B=3, N=300, dim=-1]");
  m = plan_manifest();
  m["launches"][0]["shared_mem"] = "0 - N";
  EXPECT_EQ(
      plan_error(m, call_of(3, 300)),
      "package plan_pkg (" + manifest_path() +
          "): launches[0].shared_mem: \"0 - N\" evaluates to -300 bytes; expected 0 to 4294967295 "
          "[B=3, N=300, dim=-1]");
}

TEST_F(PackageKernelTest, ExpressionErrorsNameTheField) {
  json m = plan_manifest();
  m["launches"][0]["grid"] = {"N / (B - 3)"};
  const auto msg = plan_error(m, call_of(3, 300));
  EXPECT_NE(msg.find("launches[0].grid[0]: in \"N / (B - 3)\""), std::string::npos) << msg;
  EXPECT_NE(msg.find("by zero"), std::string::npos) << msg;
}

TEST_F(PackageKernelTest, MissingLoweredNameIsAnError) {
  const auto manifest = load(plan_manifest());
  try {
    plan_launches(manifest, testing::softmax_op(), {{"k<float>", "_Z1kIfEvv"}}, call_of(3, 300));
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        "package plan_pkg (" + manifest_path() +
            "): launches[1].kernel: \"finish\" has no lowered name in the compiled package (was it "
            "compiled "
            "from this manifest? recompile with an empty KGATE_CACHE_DIR) [B=3, N=300, dim=-1]");
  }
}

TEST_F(PackageKernelTest, PlanningACallOutsideTheGuardIsRefused) {
  EXPECT_EQ(plan_error(plan_manifest(), call_of(3, 70000), ErrorKind::usage),
            "package plan_pkg: the call is outside the package's guard (N=70000 is above "
            "guard.shapes.N.max=65536); "
            "such calls run the op's reference (KernelInfo::accepts), never the package's kernels");
}

TEST_F(PackageKernelTest, GuardViolationMessages) {
  json m = plan_manifest();
  m["guard"]["shapes"]["N"] = {{"min", 8}, {"max", 8192}, {"multiple_of", 8}};
  const auto manifest = load(m);
  auto why = [&](DType d, int64_t b, int64_t n, Layout l = Layout::contiguous, int rank = 2) {
    return guard_violation(manifest, d, {{"B", b}, {"N", n}}, l, rank);
  };
  EXPECT_EQ(why(DType::f32, 4, 64), "");
  EXPECT_EQ(why(DType::f32, 4, 8192), "");
  EXPECT_EQ(why(DType::f32, 4, 8), "");
  EXPECT_EQ(why(DType::f32, 4, 8193), "N=8193 is above guard.shapes.N.max=8192");
  EXPECT_EQ(why(DType::f32, 4, 8200), "N=8200 is above guard.shapes.N.max=8192");
  EXPECT_EQ(why(DType::f32, 4, 7), "N=7 is below guard.shapes.N.min=8");
  EXPECT_EQ(why(DType::f32, 4, 0), "N=0 is below guard.shapes.N.min=8");
  EXPECT_EQ(why(DType::f32, 4, 257), "N=257 is not a multiple of guard.shapes.N.multiple_of=8");
  EXPECT_EQ(why(DType::bf16, 4, 64), "dtype bf16 is not in guard.dtypes [f32, f16]");
  EXPECT_EQ(why(DType::f32, 4, 64, Layout::strided),
            "layout strided is not in guard.layouts [contiguous]");
  EXPECT_EQ(why(DType::f32, 4, 64, Layout::offset),
            "layout offset is not in guard.layouts [contiguous]");
  EXPECT_EQ(why(DType::f32, 4, 64, Layout::contiguous, 3), "rank 3 is not in guard.ranks [2]");
  // The first violation in the documented order: dtype, rank, layout, shapes.
  EXPECT_EQ(why(DType::bf16, 4, 7, Layout::strided, 3),
            "dtype bf16 is not in guard.dtypes [f32, f16]");
  EXPECT_EQ(guard_violation(manifest, DType::f32, {{"B", 4}}, Layout::contiguous, 2),
            "symbol N has no value");

  // The example package: the N limit of docs/packages.md.
  const auto example = load_manifest(kExample, testing::catalogue_options());
  EXPECT_EQ(guard_violation(example, DType::f32, {{"B", 1}, {"N", 300000}}, Layout::contiguous, 2),
            "N=300000 is above guard.shapes.N.max=262144");
}

TEST_F(PackageKernelTest, CallGuardChecksLayoutsRanksAndAttributes) {
  const auto manifest = load(plan_manifest());
  const auto& op = testing::softmax_op();
  EXPECT_EQ(call_guard_violation(manifest, op, call_of(3, 300)), "");
  EXPECT_EQ(call_layout(call_of(3, 300)), Layout::contiguous);

  KernelCall strided = call_of(3, 300);
  strided.inputs[0].strides = {600, 2};
  EXPECT_EQ(call_layout(strided), Layout::strided);
  EXPECT_EQ(call_guard_violation(manifest, op, strided),
            "layout strided is not in guard.layouts [contiguous]");

  KernelCall offset = call_of(3, 300);
  offset.inputs[0].data = reinterpret_cast<void*>(uintptr_t{0x10004});
  EXPECT_EQ(call_layout(offset), Layout::offset);
  EXPECT_EQ(call_guard_violation(manifest, op, offset),
            "layout offset is not in guard.layouts [contiguous]");

  KernelCall rank3 = call_of(3, 300);
  rank3.inputs[0].sizes = {2, 3, 300};
  rank3.inputs[0].strides = {900, 300, 1};
  EXPECT_EQ(call_guard_violation(manifest, op, rank3),
            "rank 3 is not in guard.ranks [2] (tensor x)");

  KernelCall dim0 = call_of(3, 300);
  dim0.attributes["dim"] = 0;
  EXPECT_EQ(call_guard_violation(manifest, op, dim0),
            "attribute dim=0 differs from the package's attributes.dim=-1");
  KernelCall no_dim = call_of(3, 300);
  no_dim.attributes.clear();
  EXPECT_EQ(call_guard_violation(manifest, op, no_dim),
            "attribute dim is not set by the call (the package needs attributes.dim=-1)");

  EXPECT_EQ(call_guard_violation(manifest, op, call_of(3, 300, DType::bf16)),
            "dtype bf16 is not in guard.dtypes [f32, f16]");
  EXPECT_EQ(call_guard_violation(manifest, op, call_of(3, 65537)),
            "N=65537 is above guard.shapes.N.max=65536");
}

/// plan_manifest() with symbols named the package's own way: rows (y's dim 0) and cols (x's last),
/// at most 1000 cols.
json own_symbol_names_manifest() {
  json m = plan_manifest();
  m["symbols"] = {{"rows", {"y", 0}}, {"cols", {"x", -1}}};
  m["workspace"][0]["shape"] = {"rows", "ceil_div(cols, 256)"};
  m["launches"][0]["grid"] = {"ceil_div(cols, 256)", "rows"};
  m["launches"][0]["shared_mem"] = "cols * 4";
  m["launches"][0]["args"][2]["shape"] = "cols";
  m["launches"][0]["args"][3]["shape"] = "rows * cols";
  m["launches"][1]["block"] = {"min(1024, rows)"};
  m["launches"][1]["args"][2]["shape"] = "rows";
  m["guard"]["shapes"] = {{"cols", {{"min", 1}, {"max", 1000}}}};
  return m;
}

TEST_F(PackageKernelTest, CaseGuardUsesTheOpsShapes) {
  const auto manifest = load(own_symbol_names_manifest());
  const auto& op = testing::softmax_op();
  EXPECT_EQ(op_symbols_of(manifest, op),
            (std::map<std::string, std::string>{{"cols", "N"}, {"rows", "B"}}));
  const Case inside = Case::from_id("softmax:f32:B=4,N=1000:contiguous:normal:0000000000000001");
  const Case above = Case::from_id("softmax:f32:B=4,N=1001:contiguous:normal:0000000000000001");
  const Case strided = Case::from_id("softmax:f16:B=4,N=10:strided:normal:0000000000000001");
  EXPECT_EQ(case_symbol_values(manifest, op, inside),
            (std::map<std::string, int64_t>{{"cols", 1000}, {"rows", 4}}));
  EXPECT_EQ(case_guard_violation(manifest, op, inside), "");
  EXPECT_TRUE(inside_guard(manifest, op, inside));
  EXPECT_EQ(case_guard_violation(manifest, op, above),
            "cols=1001 is above guard.shapes.cols.max=1000");
  EXPECT_EQ(case_guard_violation(manifest, op, strided),
            "layout strided is not in guard.layouts [contiguous]");
}

TEST_F(PackageKernelTest, ASymbolBoundToAnOpDimensionWrittenAsAnExpressionHasItsValue) {
  // x:[B, 2*H] (as a rotary op's [.., 2*D2]): "cols" is 2*H for a case, as it is for a call's
  // tensor. Left out, every case fell outside a guard that names it, and the kernel never ran.
  const auto manifest = load(own_symbol_names_manifest());
  OpSignature op = testing::softmax_op();
  op.inputs[0].shape = {"B", "2*H"};
  const Case c = Case::from_id("softmax:f32:B=4,H=500:contiguous:normal:0000000000000001");
  EXPECT_EQ(case_symbol_values(manifest, op, c),
            (std::map<std::string, int64_t>{{"cols", 1000}, {"rows", 4}}));
  EXPECT_TRUE(inside_guard(manifest, op, c));
  const Case above = Case::from_id("softmax:f32:B=4,H=501:contiguous:normal:0000000000000001");
  EXPECT_EQ(case_guard_violation(manifest, op, above),
            "cols=1002 is above guard.shapes.cols.max=1000");
}

/// A guard with every kind of boundary: N in [8, 8192], a multiple of 8; dtypes f32 and bf16.
json boundary_manifest() {
  json m = json::parse(R"J({
    "format": "kgate-package/1", "name": "bounded", "version": "2.0.0", "op": "softmax",
    "sources": ["k.cu"],
    "symbols": {"B": ["x", 0], "N": ["x", 1]},
    "launches": [{"kernel": "k", "grid": ["B"], "block": ["min(1024, round_up(ceil_div(N, 8), 32))"],
                  "args": [{"tensor": "x"}, {"tensor": "y"}, {"shape": "N", "type": "i32"}]}],
    "guard": {"dtypes": ["f32", "bf16"], "ranks": [2],
              "shapes": {"B": {"min": 1, "max": 2147483647}, "N": {"min": 8, "max": 8192, "multiple_of": 8}},
              "layouts": ["contiguous"],
              "variants": [{"dims": {"B": 8192, "N": 2048}, "dtype": "f32", "calls": 5000},
                           {"dims": {"B": 2048, "N": 8192}, "dtype": "bf16", "calls": 1000}]}
  })J");
  return m;
}

TEST_F(PackageKernelTest, BoundaryCasesProbeBothSidesOfEveryBoundary) {
  const auto manifest = load(boundary_manifest());
  const auto& op = testing::softmax_op();
  const auto cases = guard_boundary_cases(manifest, op, 42);
  ASSERT_FALSE(cases.empty());
  std::map<int64_t, std::string> by_n;  // contiguous f32 cases by N -> family
  std::set<std::string> outside_reasons;
  for (const auto& c : cases) {
    const std::string why = case_guard_violation(manifest, op, c);
    EXPECT_EQ(c.family, why.empty() ? "guard_inside" : "guard_outside") << c.id();
    if (!why.empty()) outside_reasons.insert(why);
    EXPECT_EQ(c.values, Values::normal);
    EXPECT_LE(c.numel_hint(), int64_t{1} << 24);
    if (c.dtype == DType::f32 && c.layout == kgate::Layout::contiguous && c.dim("B") == 3)
      by_n[c.dim("N")] = c.family;
  }
  // max: 8192 inside, 8193 outside; min: 8 inside, 7 outside; multiple_of: 8 and 264 inside, 9 and
  // 265 outside.
  EXPECT_EQ(by_n[8192], "guard_inside");
  EXPECT_EQ(by_n[8193], "guard_outside");
  EXPECT_EQ(by_n[8], "guard_inside");
  EXPECT_EQ(by_n[7], "guard_outside");
  EXPECT_EQ(by_n[9], "guard_outside");
  EXPECT_EQ(by_n[264], "guard_inside");
  EXPECT_EQ(by_n[265], "guard_outside");
  EXPECT_TRUE(outside_reasons.count("N=8193 is above guard.shapes.N.max=8192"));
  EXPECT_TRUE(outside_reasons.count("N=7 is below guard.shapes.N.min=8"));
  EXPECT_TRUE(outside_reasons.count("N=9 is not a multiple of guard.shapes.N.multiple_of=8"));
  EXPECT_TRUE(outside_reasons.count("dtype f16 is not in guard.dtypes [f32, bf16]"));
  EXPECT_TRUE(outside_reasons.count("layout strided is not in guard.layouts [contiguous]"));
  EXPECT_TRUE(outside_reasons.count("layout offset is not in guard.layouts [contiguous]"));
  // Deterministic in the seed; distinct ids.
  const auto again = guard_boundary_cases(manifest, op, 42);
  ASSERT_EQ(again.size(), cases.size());
  std::set<std::string> ids;
  for (std::size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(again[i].id(), cases[i].id());
    ids.insert(cases[i].id());
  }
  EXPECT_EQ(ids.size(), cases.size());
}

TEST_F(PackageKernelTest, BoundaryCasesStayInTheOpsDomain) {
  // The example's N max is the op's max, B's range is wider than the op's: only values the op can
  // take are generated, and the layouts still put cases outside the guard.
  const auto example = load_manifest(kExample, testing::catalogue_options());
  const auto& op = testing::softmax_op();
  const auto cases = guard_boundary_cases(example, op, 1);
  int inside = 0, outside = 0;
  for (const auto& c : cases) {
    EXPECT_GE(c.dim("N"), 1);
    EXPECT_LE(c.dim("N"), 262144);
    EXPECT_GE(c.dim("B"), 1);
    EXPECT_LE(c.dim("B"), 65536);
    (c.family == "guard_inside" ? inside : outside)++;
  }
  EXPECT_GT(inside, 0);
  EXPECT_GT(outside, 0);
}

TEST_F(PackageKernelTest, VariantsTileSizesAndMovingInside) {
  const auto manifest = load(boundary_manifest());
  const auto& op = testing::softmax_op();
  const auto variants = variant_cases(manifest, op, 7);
  ASSERT_EQ(variants.size(), 2u);
  EXPECT_EQ(variants[0].kcase.dim("B"), 8192);
  EXPECT_EQ(variants[0].kcase.dim("N"), 2048);
  EXPECT_EQ(variants[0].kcase.dtype, DType::f32);
  EXPECT_EQ(variants[0].kcase.family, "variant");
  EXPECT_EQ(variants[0].calls, 5000);
  EXPECT_EQ(variants[1].kcase.dtype, DType::bf16);
  EXPECT_EQ(variants[1].calls, 1000);
  EXPECT_TRUE(inside_guard(manifest, op, variants[1].kcase));

  EXPECT_EQ(guard_tile_sizes(manifest, op), (std::vector<int64_t>{8, 8192}));
  const auto example = load_manifest(kExample, testing::catalogue_options());
  EXPECT_EQ(guard_tile_sizes(example, op), (std::vector<int64_t>{262144}));

  auto moved = [&](const std::string& id) {
    const auto c = move_inside_guard(manifest, op, Case::from_id(id));
    return c ? c->id() : std::string("none");
  };
  EXPECT_EQ(moved("softmax:f32:B=128,N=32768:contiguous:normal:0000000000000001"),
            "softmax:f32:B=128,N=8192:contiguous:normal:0000000000000001");
  EXPECT_EQ(moved("softmax:bf16:B=128,N=1001:strided:normal:0000000000000001"),
            "softmax:bf16:B=128,N=1008:contiguous:normal:0000000000000001");
  EXPECT_EQ(moved("softmax:f16:B=128,N=1024:contiguous:normal:0000000000000001"), "none");
}

/// A guard that states what a kernel assumes beyond ranges: rows may be padded but elements in a
/// row are contiguous, the element count is a multiple of 8, the base 16-byte aligned.
TEST_F(PackageKernelTest, ACallOutsideALaunchsAssumptionsIsAPackageDefectNotALaunch) {
  // A binary compiled for N % 16 == 0 (a Triton specialization) behind a guard that does not say
  // so: the call inside the guard reaches the launch, and the plan refuses it, naming the
  // assumption and the values; a call that meets it plans as usual.
  json m = plan_manifest();
  m["launches"][1]["assumes"] = {"N % 16 == 0", "align_y >= 16"};
  EXPECT_NO_THROW(plan_launches(load(m), testing::softmax_op(), kLowered, call_of(4, 64)));
  const std::string e = plan_error(m, call_of(4, 100));
  EXPECT_NE(e.find("launches[1].assumes: launches[1].assumes[0] \"N % 16 == 0\" is 0 (N=100): the "
                   "call is inside the guard but outside the specialization this launch's binary "
                   "was compiled for"),
            std::string::npos)
      << e;
  // A launch that does not run for the call is not judged by its assumptions.
  m["launches"][1]["when"] = {{"if", "N > 1000"}};
  EXPECT_NO_THROW(plan_launches(load(m), testing::softmax_op(), kLowered, call_of(4, 100)));
}

json require_manifest() {
  json m = plan_manifest();
  m["guard"]["layouts"] = {"contiguous", "strided", "offset"};
  m["guard"]["require"] = {"B * N % 8 == 0", "stride_x_1 == 1 && stride_y_1 == 1", "align_x >= 16",
                           "numel_x < 2147483648"};
  return m;
}

TEST_F(PackageKernelTest, RequirePredicatesJudgeTheCallsTensors) {
  const auto manifest = load(require_manifest());
  const auto& op = testing::softmax_op();
  ASSERT_EQ(manifest.guard.require.size(), 4u);
  EXPECT_EQ(call_guard_violation(manifest, op, call_of(4, 300)), "");
  EXPECT_EQ(call_guard_violation(manifest, op, call_of(3, 300)),
            "guard.require[0] \"B * N % 8 == 0\" is 0 (B=3, N=300)");

  // Row-padded rows: unit element stride, row stride > N: inside.
  KernelCall padded = call_of(4, 300);
  padded.inputs[0].strides = {303, 1};
  EXPECT_EQ(call_layout(padded), Layout::strided);
  EXPECT_EQ(call_guard_violation(manifest, op, padded), "");
  // Every other element: outside, naming the strides.
  KernelCall strided = call_of(4, 300);
  strided.inputs[0].strides = {600, 2};
  EXPECT_EQ(
      call_guard_violation(manifest, op, strided),
      "guard.require[1] \"stride_x_1 == 1 && stride_y_1 == 1\" is 0 (stride_x_1=2, stride_y_1=1)");
  // A base 16 bytes past a 256-byte boundary is inside; 4 bytes past is not.
  KernelCall at16 = call_of(4, 300);
  at16.inputs[0].data = reinterpret_cast<void*>(uintptr_t{0x10010});
  EXPECT_EQ(call_guard_violation(manifest, op, at16), "");
  KernelCall at4 = call_of(4, 300);
  at4.inputs[0].data = reinterpret_cast<void*>(uintptr_t{0x10004});
  EXPECT_EQ(call_guard_violation(manifest, op, at4),
            "guard.require[2] \"align_x >= 16\" is 0 (align_x=4)");

  const SymbolValues t = call_tensor_values(op, at16);
  EXPECT_EQ(t.at("numel_x"), 1200);
  EXPECT_EQ(t.at("align_x"), 16);
  EXPECT_EQ(t.at("align_y"), 256);  // capped at kMaxAlignSymbol
  EXPECT_EQ(t.at("stride_x_0"), 300);
  EXPECT_EQ(t.at("stride_y_1"), 1);
  EXPECT_EQ(tensor_symbol_names(op),
            (std::vector<std::string>{"numel_x", "align_x", "stride_x_0", "stride_x_1", "numel_y",
                                      "align_y", "stride_y_0", "stride_y_1"}));
}

TEST_F(PackageKernelTest, CaseTensorValuesFollowTheLayouts) {
  const auto& op = testing::softmax_op();
  auto values = [&](const char* layout, DType d = DType::f32) {
    Case c =
        Case::from_id(std::string("softmax:f32:B=4,N=10:") + layout + ":normal:0000000000000001");
    c.dtype = d;
    return case_tensor_values(op, c);
  };
  auto is = [](const SymbolValues& v, int64_t s0, int64_t s1, int64_t align) {
    return v.at("stride_x_0") == s0 && v.at("stride_x_1") == s1 && v.at("align_x") == align &&
           v.at("numel_x") == 40 && v.at("stride_y_0") == 10 && v.at("align_y") == 256;
  };
  EXPECT_TRUE(is(values("contiguous"), 10, 1, 256));
  EXPECT_TRUE(is(values("strided"), 20, 2, 256));
  EXPECT_TRUE(is(values("offset"), 10, 1, 4));
  EXPECT_TRUE(is(values("offset", DType::f16), 10, 1, 2));
  EXPECT_TRUE(is(values("padded"), 10 + kPaddedLayoutElements, 1, 256));
  EXPECT_TRUE(is(values("offset16"), 10, 1, 16));
  EXPECT_TRUE(is(values("offset16", DType::bf16), 10, 1, 16));
}

TEST_F(PackageKernelTest, BoundaryCasesProbeBothSidesOfEveryRequirePredicate) {
  json m = plan_manifest();
  m["guard"]["layouts"] = {"contiguous", "strided", "offset"};
  m["guard"]["require"] = {"B * N % 8 == 0", "N < 1000 || B == 1", "stride_x_1 == 1",
                           "align_x >= 16"};
  const auto manifest = load(m);
  const auto& op = testing::softmax_op();
  std::set<std::string> reasons;
  std::set<kgate::Layout> inside_layouts, outside_layouts;
  int inside = 0;
  for (const auto& c : guard_boundary_cases(manifest, op, 5)) {
    const std::string why = case_guard_violation(manifest, op, c);
    EXPECT_EQ(c.family, why.empty() ? "guard_inside" : "guard_outside") << c.id();
    if (why.empty()) {
      ++inside;
      inside_layouts.insert(c.layout);
    } else {
      reasons.insert(why.substr(0, why.find(" is 0")));
      outside_layouts.insert(c.layout);
    }
  }
  EXPECT_GT(inside, 0);
  // Each predicate has a case outside it, found by the search (products, "||") or by the layouts.
  EXPECT_TRUE(reasons.count("guard.require[0] \"B * N % 8 == 0\""));
  EXPECT_TRUE(reasons.count("guard.require[1] \"N < 1000 || B == 1\""));
  EXPECT_TRUE(reasons.count("guard.require[2] \"stride_x_1 == 1\""));
  EXPECT_TRUE(reasons.count("guard.require[3] \"align_x >= 16\""));
  // Row-padded and 16-byte (not 256-byte) aligned views are inside; strided and offset are not.
  EXPECT_TRUE(inside_layouts.count(kgate::Layout::padded));
  EXPECT_TRUE(inside_layouts.count(kgate::Layout::offset16));
  EXPECT_TRUE(outside_layouts.count(kgate::Layout::strided));
  EXPECT_TRUE(outside_layouts.count(kgate::Layout::offset));

  // The flip of "N < 1000 || B == 1" is found exactly: N=999 inside and N=1000 outside (B=3).
  std::map<int64_t, std::string> by_n;
  for (const auto& c : guard_boundary_cases(manifest, op, 5))
    if (c.layout == kgate::Layout::contiguous && c.dtype == DType::f32 && c.dim("B") == 3)
      by_n[c.dim("N")] = c.family;
  EXPECT_EQ(by_n.count(999) ? by_n[999] : "missing", "guard_outside");  // 3 * 999 % 8 != 0
  EXPECT_EQ(by_n.count(1000) ? by_n[1000] : "missing", "guard_outside");
}

TEST_F(PackageKernelTest, MovingInsideMeetsTheRequirePredicates) {
  json m = plan_manifest();
  m["guard"]["require"] = {"B * N % 8 == 0"};
  const auto manifest = load(m);
  const auto& op = testing::softmax_op();
  const auto c = move_inside_guard(
      manifest, op, Case::from_id("softmax:f32:B=3,N=1001:strided:normal:0000000000000001"));
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->id(), "softmax:f32:B=8,N=1001:contiguous:normal:0000000000000001");
  EXPECT_TRUE(inside_guard(manifest, op, *c));
}

/// A dispatch on the row length, the dtype and the layout: a vector kernel for short contiguous or
/// offset rows, a row kernel (with the call's strides) otherwise.
json dispatch_manifest() {
  json m = plan_manifest();
  m.erase("workspace");
  m["guard"]["layouts"] = {"contiguous", "strided", "offset"};
  m["launches"] = json::parse(R"J([
    {"kernel": {"f32": "k<float>", "f16": "k<__half>"},
     "when": {"if": "N <= 1024 && N % (16 / dtype_size) == 0", "layouts": ["contiguous", "offset"]},
     "grid": ["ceil_div(B * N / (16 / dtype_size), 256)"], "block": [256],
     "args": [{"tensor": "x"}, {"tensor": "y"}, {"shape": "N / (16 / dtype_size)", "type": "i64"}]},
    {"kernel": "finish",
     "when": {"if": "!(N <= 1024 && N % (16 / dtype_size) == 0)"},
     "grid": ["B"], "block": [256],
     "args": [{"tensor": "x"}, {"tensor": "y"}, {"shape": "N", "type": "i64"},
              {"stride": ["x", 0], "type": "i64"}, {"stride": ["x", -1], "type": "i64"},
              {"stride": ["y", 0], "type": "u32"}]},
    {"kernel": "finish", "when": {"layouts": ["strided"], "if": "N <= 1024 && N % (16 / dtype_size) == 0"},
     "grid": ["B"], "block": [256],
     "args": [{"tensor": "x"}, {"tensor": "y"}, {"shape": "N", "type": "i64"},
              {"stride": ["x", 0], "type": "i64"}, {"stride": ["x", -1], "type": "i64"},
              {"stride": ["y", 0], "type": "u32"}]}
  ])J");
  return m;
}

TEST_F(PackageKernelTest, LaunchesRunWhenTheirConditionHolds) {
  const auto manifest = load(dispatch_manifest());
  const auto& op = testing::softmax_op();
  auto names = [&](const KernelCall& call) {
    const auto plan = plan_launches(manifest, op, kLowered, call);
    std::vector<std::string> out;
    for (const auto& l : plan.launches)
      out.push_back(std::to_string(l.index) + ":" + l.name_expression);
    return out;
  };
  using V = std::vector<std::string>;
  // f32: 4 elements per 16-byte vector; f16: 8.
  EXPECT_EQ(names(call_of(3, 1024)), V{"0:k<float>"});
  EXPECT_EQ(names(call_of(3, 1028)), V{"1:finish"});
  EXPECT_EQ(names(call_of(3, 1022)), V{"1:finish"});
  EXPECT_EQ(names(call_of(3, 1020, DType::f16)), V{"1:finish"});
  EXPECT_EQ(names(call_of(3, 1016, DType::f16)), V{"0:k<__half>"});
  KernelCall offset = call_of(3, 1024);
  offset.inputs[0].data = reinterpret_cast<void*>(uintptr_t{0x10004});
  EXPECT_EQ(names(offset), V{"0:k<float>"});
  KernelCall strided = call_of(3, 1024);
  strided.inputs[0].strides = {2048, 2};
  EXPECT_EQ(names(strided), V{"2:finish"});

  const auto plan = plan_launches(manifest, op, kLowered, call_of(3, 1024, DType::f16));
  EXPECT_EQ(plan.skipped, (std::vector<std::size_t>{1, 2}));
  ASSERT_EQ(plan.launches.size(), 1u);
  EXPECT_EQ(plan.launches[0].index, 0u);
  EXPECT_EQ(plan.launches[0].grid[0], 2u);  // ceil_div(3 * 1024 / 8, 256)
  EXPECT_EQ(plan.launches[0].value<int64_t>(2), 128);
  // The built-in dtype_size is evaluated, not shown among the call's symbols.
  EXPECT_EQ(plan.symbols, (SymbolValues{{"B", 3}, {"N", 1024}, {"dim", -1}}));
}

TEST_F(PackageKernelTest, ACallNoLaunchMatchesFailsNamingTheConditions) {
  json m = dispatch_manifest();
  m["launches"].erase(1);  // no launch for rows that are not whole vectors
  const std::string e = plan_error(m, call_of(3, 1028));
  EXPECT_NE(e.find("launches: no launch runs for this call, so its outputs would stay unwritten: "
                   "launches[0].when.if \"N <= 1024 && N % (16 / dtype_size) == 0\" is 0; "
                   "launches[1].when.layouts does not list contiguous"),
            std::string::npos)
      << e;
  EXPECT_NE(e.find("set guard.unmatched to \"fallback\""), std::string::npos) << e;
  EXPECT_NE(e.find("[B=3, N=1028"), std::string::npos) << e;
  // Without elements to write there is nothing to miss.
  const auto manifest = load(m);
  EXPECT_TRUE(
      plan_launches(manifest, testing::softmax_op(), kLowered, call_of(0, 1028)).launches.empty());
  EXPECT_EQ(call_guard_violation(manifest, testing::softmax_op(), call_of(3, 1028)), "");
}

TEST_F(PackageKernelTest, UnmatchedFallbackPutsTheCallOutsideTheGuard) {
  json m = dispatch_manifest();
  m["launches"].erase(1);
  m["guard"]["unmatched"] = "fallback";
  const auto manifest = load(m);
  const auto& op = testing::softmax_op();
  EXPECT_EQ(call_guard_violation(manifest, op, call_of(3, 1028)),
            "no launch's \"when\" matches the call (guard.unmatched: fallback)");
  EXPECT_EQ(call_guard_violation(manifest, op, call_of(3, 1024)), "");
  Case c;
  c.op = "softmax";
  c.dtype = DType::f32;
  c.layout = kgate::Layout::contiguous;
  c.dims = {{"B", 3}, {"N", 1028}};
  EXPECT_EQ(case_guard_violation(manifest, op, c),
            "no launch's \"when\" matches the call (guard.unmatched: fallback)");
  c.dims = {{"B", 3}, {"N", 1016}};
  EXPECT_EQ(case_guard_violation(manifest, op, c), "");
  m["guard"]["unmatched"] = "ignore";
  pkg.write_json("kgate.json", m);
  const auto problems = check_manifest(pkg.path(), testing::catalogue_options());
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].field, "guard.unmatched");
}

TEST_F(PackageKernelTest, StrideArgumentsAreTheCallsStrides) {
  const auto manifest = load(dispatch_manifest());
  KernelCall strided = call_of(3, 1000);
  strided.inputs[0].strides = {2000, 2};
  strided.outputs[0].strides = {1200, 1};
  const auto plan = plan_launches(manifest, testing::softmax_op(), kLowered, strided);
  ASSERT_EQ(plan.launches.size(), 1u);
  const PlannedLaunch& l = plan.launches[0];
  EXPECT_EQ(l.index, 2u);
  EXPECT_EQ(l.value<int64_t>(3), 2000);
  EXPECT_EQ(l.value<int64_t>(4), 2);
  EXPECT_EQ(l.value<uint32_t>(5), 1200u);
  EXPECT_EQ(l.args[3].description, "stride of x dimension 0 as i64");
  EXPECT_EQ(l.args[4].description, "stride of x dimension -1 as i64");
  EXPECT_EQ(l.args[5].size, 4u);
}

TEST_F(PackageKernelTest, StrideAndConditionErrors) {
  // A stride of a dimension the call's tensor does not have (y is not bound by a symbol, so the
  // guard's ranks do not cover it).
  json m = dispatch_manifest();
  m["launches"][1]["args"][5] = {{"stride", {"y", -2}}, {"type", "u32"}};
  KernelCall flat_y = call_of(3, 1001);
  flat_y.outputs[0].sizes = {3003};
  flat_y.outputs[0].strides = {1};
  EXPECT_EQ(plan_error(m, flat_y),
            "package plan_pkg (" + manifest_path() +
                "): launches[1].args[5]: stride of y dimension -2 as u32: tensor y has rank 1, so "
                "dimension -2 does not exist [B=3, N=1001, dim=-1]");
  // A stride that does not fit its type.
  m = dispatch_manifest();
  KernelCall negative = call_of(3, 1001);
  negative.outputs[0].strides = {-1001, 1};
  EXPECT_EQ(plan_error(m, negative),
            "package plan_pkg (" + manifest_path() +
                "): launches[1].args[5]: stride of y dimension 0 as u32: the value -1001 does not "
                "fit in u32 (0 to 4294967295) [B=3, N=1001, dim=-1]");
  // A condition that cannot be evaluated.
  m = dispatch_manifest();
  m["launches"][1]["when"]["if"] = "N / (B - 3) > 1";
  EXPECT_EQ(plan_error(m, call_of(3, 1000)),
            "package plan_pkg (" + manifest_path() +
                "): launches[1].when.if: in \"N / (B - 3) > 1\" at column 3: division by zero "
                "[B=3, N=1000, dim=-1]");
}

TEST_F(PackageKernelTest, UnpinnedAttributeTakesTheCallsValue) {
  json m = json::parse(R"J({
    "format": "kgate-package/1", "name": "norm_pkg", "version": "1.0.0", "op": "layer_norm",
    "sources": ["k.cu"],
    "symbols": {"B": ["x", 0], "N": ["x", 1]},
    "launches": [{"kernel": "finish", "grid": ["B"], "block": [256],
                  "args": [{"tensor": "x"}, {"tensor": "weight"}, {"tensor": "bias"}, {"tensor": "y"},
                           {"attribute": "eps", "type": "f32"}, {"attribute": "eps", "type": "f64"},
                           {"stride": ["weight", 0], "type": "i64"}]}],
    "guard": {"dtypes": ["f32"], "ranks": [2], "layouts": ["contiguous", "strided", "offset"]}
  })J");
  const auto manifest = load(m);
  const auto& op = testing::layer_norm_op();
  KernelCall call = call_of(2, 64);
  TensorView w = call.inputs[0];
  w.sizes = {64};
  w.strides = {3};
  call.inputs = {call.inputs[0], w, w};
  call.attributes = {{"eps", 1e-3}};
  EXPECT_EQ(call_guard_violation(manifest, op, call), "");  // no eps is pinned: any value runs
  auto plan = plan_launches(manifest, op, kLowered, call);
  EXPECT_EQ(plan.launches[0].value<float>(4), 1e-3f);
  EXPECT_EQ(plan.launches[0].value<double>(5), 1e-3);
  EXPECT_EQ(plan.launches[0].value<int64_t>(6), 3);
  call.attributes.clear();  // the op's default
  plan = plan_launches(manifest, op, kLowered, call);
  EXPECT_EQ(plan.launches[0].value<float>(4), 1e-5f);
  EXPECT_EQ(plan.launches[0].value<double>(5), 1e-5);
}

TEST_F(PackageKernelTest, TileSizesIncludeWhereLaunchConditionsSwitch) {
  json m = dispatch_manifest();
  m["launches"][0]["when"]["if"] = "N > 32 && N <= 1024";
  m["launches"][1]["when"]["if"] = "N <= 32 || N > 1024";
  m["launches"][2]["when"]["if"] = "B > 100";  // not the reduced symbol
  const auto manifest = load(m);
  EXPECT_EQ(guard_tile_sizes(manifest, testing::softmax_op()),
            (std::vector<int64_t>{32, 1024, 65536}));
}

TEST_F(PackageKernelTest, ManifestSizesStartWithTheGridsDivisors) {
  json m = dispatch_manifest();
  m["launches"][0]["when"]["if"] = "N > 32 && N <= 1024";
  m["launches"][1]["grid"] = json::array({"B * ((N + 511) / 512)"});
  const auto sizes = manifest_sizes(load(m), testing::softmax_op());
  std::vector<int64_t> got;
  for (const auto& s : sizes) {
    EXPECT_EQ(s.origin, "manifest");
    got.push_back(s.size);
  }
  // launches[0]'s grid divides B * N by 256 (a flattened tile), launches[1]'s N by 512; then the
  // conditions and the guard.
  EXPECT_EQ(got, (std::vector<int64_t>{256, 512, 32, 1024, 65536}));
  EXPECT_EQ(sizes[1].detail, "launches[1].grid[0] B * ((N + 511) / 512)");
  EXPECT_EQ(sizes[2].detail, "when N > 32 && N <= 1024");
}

TEST_F(PackageKernelTest, KernelInfoOfAPackage) {
  const auto manifest = load(boundary_manifest());
  CompileResult compiled;
  compiled.cubin =
      "\x7f"
      "ELF not really";
  compiled.lowered_names = {{"k", "k"}};
  compiled.key = "0123";
  const KernelInfo k = make_package_kernel(manifest, compiled, testing::softmax_op());
  EXPECT_EQ(k.name, "bounded");
  EXPECT_EQ(k.op, "softmax");
  EXPECT_EQ(k.backend, Backend::cuda);
  EXPECT_EQ(k.dtypes, (std::vector<DType>{DType::f32, DType::bf16}));
  EXPECT_TRUE(k.tile_sizes.empty());  // a package declares none: its manifest's sizes are found
  std::vector<int64_t> found;
  for (const auto& f : k.found_sizes) {
    EXPECT_EQ(f.origin, "manifest");
    found.push_back(f.size);
  }
  EXPECT_EQ(found, (std::vector<int64_t>{8, 8192}));
  EXPECT_TRUE(k.accepts_strided);
  EXPECT_TRUE(k.accepts_unaligned);
  EXPECT_TRUE(k.package);
  EXPECT_EQ(k.source, pkg.path().string());
  ASSERT_TRUE(k.accepts);
  ASSERT_TRUE(k.rejection_reason);
  ASSERT_TRUE(k.launch);
  EXPECT_TRUE(k.accepts(call_of(4, 1024)));
  EXPECT_EQ(k.rejection_reason(call_of(4, 1024)), "");
  EXPECT_FALSE(k.accepts(call_of(4, 1028)));
  EXPECT_EQ(k.rejection_reason(call_of(4, 1028)),
            "N=1028 is not a multiple of guard.shapes.N.multiple_of=8");
  EXPECT_FALSE(k.accepts(call_of(4, 1024, DType::f16)));
  // Its guard's boundary cases come with it, as with a package compiled into the build.
  ASSERT_TRUE(k.guard_cases);
  const auto guard = k.guard_cases(3);
  const auto expected =
      guard_boundary_cases(manifest, testing::softmax_op(), 3, kMaxGuardCaseElements);
  ASSERT_EQ(guard.size(), expected.size());
  ASSERT_FALSE(guard.empty());
  for (size_t i = 0; i < guard.size(); ++i) EXPECT_EQ(guard[i].id(), expected[i].id());

  CompileResult empty;
  EXPECT_THROW(make_package_kernel(manifest, empty, testing::softmax_op()), Error);
}

/// The op catalogue of these tests, as a plain function (CompiledPackage::lookup_op).
const OpSignature* lookup_softmax(const std::string& name) {
  return name == "softmax" ? &testing::softmax_op() : nullptr;
}

/// What kgate-package-source registers for a package's manifest text, with fake host stubs.
struct Compiled {
  std::string text;
  std::vector<CompiledFunction> functions;
  std::vector<int64_t> tiles{256};
  int stub = 0;
  CompiledPackage package(const char* kernel = "rows_kernel") const {
    return {kernel,
            "softmax",
            "kernels/rows/package",
            text.data(),
            text.size(),
            functions.data(),
            functions.size(),
            tiles.data(),
            tiles.size(),
            false,
            false,
            false,
            &lookup_softmax};
  }
};

TEST_F(PackageKernelTest, PackageCompiledIntoTheBuildIsCompletedFromItsManifest) {
  Compiled c;
  c.text = boundary_manifest().dump();
  c.functions = {{"k", &c.stub}};
  KernelInfo k = compiled_package_kernel(c.package());
  // Registered: what needs no catalogue.
  EXPECT_EQ(k.name, "rows_kernel");
  EXPECT_EQ(k.op, "softmax");
  EXPECT_EQ(k.source, "kernels/rows/package");
  EXPECT_FALSE(k.timed);
  EXPECT_TRUE(k.dtypes.empty());
  ASSERT_TRUE(k.complete);
  // Completed: the manifest checked against the op, its guard and launch plan.
  k.complete(k);
  EXPECT_EQ(k.name, "rows_kernel");  // the kernel's name, not the package's ("bounded")
  EXPECT_EQ(k.source, "kernels/rows/package");
  EXPECT_FALSE(k.timed);
  EXPECT_FALSE(k.package);  // replayed with --kernel, not --package
  EXPECT_TRUE(k.code_digest.empty());
  EXPECT_EQ(k.dtypes, (std::vector<DType>{DType::f32, DType::bf16}));
  EXPECT_EQ(k.tile_sizes, (std::vector<int64_t>{256}));  // TILE_SIZES: declared
  ASSERT_EQ(k.found_sizes.size(), 2u);                   // and the guard's: found
  EXPECT_EQ(k.found_sizes[0].size, 8);
  EXPECT_EQ(k.found_sizes[1].size, 8192);
  ASSERT_TRUE(k.accepts);
  EXPECT_TRUE(k.accepts(call_of(4, 1024)));
  EXPECT_EQ(k.rejection_reason(call_of(4, 1028)),
            "N=1028 is not a multiple of guard.shapes.N.multiple_of=8");
  ASSERT_TRUE(k.case_launches);
  ASSERT_TRUE(k.launch);
  // Its correctness cases include both sides of the guard, as kgate check --package's do.
  ASSERT_TRUE(k.guard_cases);
  std::set<std::string> families;
  for (const auto& g : k.guard_cases(1)) families.insert(g.family);
  EXPECT_EQ(families, (std::set<std::string>{"guard_inside", "guard_outside"}));
  EXPECT_EQ(
      k.guard_cases(1).size(),
      guard_boundary_cases(load(boundary_manifest()), testing::softmax_op(), 1, int64_t{1} << 24)
          .size());
}

TEST_F(PackageKernelTest, PackageCompiledIntoTheBuildNamesWhatIsWrong) {
  Compiled c;
  c.text = boundary_manifest().dump();
  // A name expression the build did not compile (the manifest changed after the build).
  KernelInfo k = compiled_package_kernel(c.package());
  try {
    k.complete(k);
    FAIL() << "no error for a kernel without its function";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::package);
    EXPECT_NE(std::string(e.what()).find("kernel \"k\" was not compiled into the build"),
              std::string::npos)
        << e.what();
  }
  // A manifest that does not fit the op: the field, as for kgate validate.
  json m = boundary_manifest();
  m["symbols"]["N"] = json::array({"z", 1});
  c.text = m.dump();
  c.functions = {{"k", &c.stub}};
  KernelInfo bad = compiled_package_kernel(c.package());
  try {
    bad.complete(bad);
    FAIL() << "no error for a manifest naming a tensor the op lacks";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("its manifest, as built:"), std::string::npos) << what;
    EXPECT_NE(what.find("kernels/rows/package/kgate.json: symbols.N"), std::string::npos) << what;
  }
  // Several translation units (a dtype's own options): one nvcc compile cannot give them.
  m = boundary_manifest();
  m["nvrtc_options_for_dtype"] = {{"bf16", {"-DUSE_BF16"}}};
  c.text = m.dump();
  KernelInfo units = compiled_package_kernel(c.package());
  EXPECT_THROW(units.complete(units), Error);
}

TEST_F(PackageKernelTest, ManifestTextIsCheckedWithoutItsFiles) {
  // The bytes of a manifest whose directory does not exist: include_dirs may climb out (the
  // build's own tree), sources are taken as written.
  json m = boundary_manifest();
  m["include_dirs"] = {".", "../../common"};
  m["sources"] = {"missing.cu"};
  ManifestCheckOptions options = testing::catalogue_options();
  options.manifest_text = m.dump();
  PackageManifest out;
  EXPECT_TRUE(check_manifest("/nonexistent/pkg", options, &out).empty());
  EXPECT_EQ(out.sources, (std::vector<std::string>{"missing.cu"}));
  EXPECT_EQ(out.include_dirs, (std::vector<std::string>{".", "../../common"}));
  // Read from disk, the same manifest is refused at both fields.
  pkg.write_json("kgate.json", m);
  const auto problems = check_manifest(pkg.path(), testing::catalogue_options());
  std::set<std::string> fields;
  for (const auto& p : problems) fields.insert(p.field);
  EXPECT_TRUE(fields.count("sources[0]")) << format_problems(problems);
  EXPECT_TRUE(fields.count("include_dirs[1]")) << format_problems(problems);
  // What the schema refuses stays refused: an absolute include directory.
  m["include_dirs"] = {"/usr/include"};
  options.manifest_text = m.dump();
  EXPECT_FALSE(check_manifest("/nonexistent/pkg", options).empty());
}

TEST_F(PackageKernelTest, CodeDigestNamesTheCodeNotThePackage) {
  CompileResult compiled;
  compiled.cubin =
      "\x7f"
      "ELF not really";
  compiled.lowered_names = {{"k", "k"}};
  json m = boundary_manifest();
  const std::string first =
      make_package_kernel(load(m), compiled, testing::softmax_op()).code_digest;
  EXPECT_EQ(first.size(), 64u);
  // Another name, version and description: the same code.
  m["name"] = "bounded_v2";
  m["version"] = "2.0.0";
  m["description"] = "renamed";
  EXPECT_EQ(make_package_kernel(load(m), compiled, testing::softmax_op()).code_digest, first);
  // Another CUBIN, or another launch configuration: other code.
  CompileResult other = compiled;
  other.cubin =
      "\x7f"
      "ELF other";
  EXPECT_NE(make_package_kernel(load(m), other, testing::softmax_op()).code_digest, first);
  m["launches"][0]["block"] = json::array({"128"});
  EXPECT_NE(make_package_kernel(load(m), compiled, testing::softmax_op()).code_digest, first);
}

TEST(CudaCheck, ErrorSummaryDropsKgatesOwnLocation) {
  // A kernel's fault is reported by the CUDA error, not by the kgate call that noticed it.
  const std::string what = cuda::format_api_error(
      "/work/main/runtime/runner.cpp", 245, "cudaStreamSynchronize(stream())",
      "cudaErrorLaunchFailure", "unspecified launch failure", "more detail");
  EXPECT_EQ(cuda::api_error_summary(what), "cudaErrorLaunchFailure (unspecified launch failure)");
  EXPECT_EQ(cuda::api_error_summary("plain words"), "plain words");
  // ATen's message for an error that surfaced in one of its calls: the error, not the advice.
  EXPECT_EQ(cuda::api_error_summary("CUDA error: misaligned address\nCUDA kernel errors might be "
                                    "asynchronously reported at some other API call"),
            "CUDA error: misaligned address");
}

TEST(StartValues, ElementBitsRoundAsTheDeviceTypesDo) {
  EXPECT_EQ(element_bits(DType::f16, 1.0), 0x3c00u);
  EXPECT_EQ(element_bits(DType::f16, -INFINITY), 0xfc00u);
  EXPECT_EQ(element_bits(DType::f16, 65504), 0x7bffu);
  EXPECT_EQ(element_bits(DType::f16, 65520), 0x7c00u);  // rounds past the largest: inf
  EXPECT_EQ(element_bits(DType::f16, 0.1), 0x2e66u);
  EXPECT_EQ(element_bits(DType::f16, std::ldexp(1.0, -24)), 0x0001u);  // the least subnormal
  EXPECT_EQ(element_bits(DType::f16, std::ldexp(1.0, -25)), 0x0000u);  // a tie: to even
  EXPECT_EQ(element_bits(DType::f16, std::ldexp(1.5, -25)), 0x0001u);
  EXPECT_EQ(element_bits(DType::f16, std::ldexp(1023.5, -24)),
            0x0400u);  // carries into the least normal
  EXPECT_EQ(element_bits(DType::f16, -2.0), 0xc000u);
  EXPECT_EQ(element_bits(DType::bf16, 1.0), 0x3f80u);
  EXPECT_EQ(element_bits(DType::bf16, -INFINITY), 0xff80u);
  EXPECT_EQ(element_bits(DType::bf16, 1.0 + std::ldexp(1.0, -8)), 0x3f80u);  // a tie: to even
  EXPECT_EQ(element_bits(DType::f32, -INFINITY), 0xff800000u);
  EXPECT_EQ(element_bits(DType::f64, 1.0), 0x3ff0000000000000u);
  EXPECT_EQ(element_bits(DType::i32, -1), 0xffffffffu);
  EXPECT_EQ(element_bits(DType::i64, -2), 0xfffffffffffffffeu);
}

}  // namespace
}  // namespace kgate::package
