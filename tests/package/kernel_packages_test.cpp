// Tests of the in-tree kernels' packages (kernels/<op>/package*/ as the build packs them into
// build/kernels/), host side, no GPU: every
// manifest is valid against the real op catalogue, and for calls on both sides of each switch of a
// kernel's launcher (row length, dtype, layout) the package plans the launches that launcher makes:
// the same kernel instance, grid, block and arguments. The packages compile the kernels' own device
// code, so together with `kgate check PKG` on a GPU this checks the in-tree kernels along the
// package path.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "references/catalogue.hpp"
#include "runtime/package/manifest.hpp"
#include "runtime/package/package_kernel.hpp"

namespace kgate::package {
namespace {

namespace fs = std::filesystem;

/// The packed packages (the build's `kgate pack` of each kernels/<op>/package*/).
const fs::path kKernels = fs::path(KGATE_PACKED_KERNELS_DIR);

ManifestCheckOptions real_catalogue() {
  ManifestCheckOptions o;
  o.find_op = [](const std::string& name) { return lookup_op(name); };
  o.load_op_file = [](const std::string& path) { load_op_files(path); };
  for (const auto& op : op_catalogue()) o.known_ops.push_back(op.name);
  return o;
}

/// A package of kernels/, checked against the catalogue, with its op.
struct Loaded {
  PackageManifest manifest;
  const OpSignature* op = nullptr;
  std::map<std::string, std::string> lowered;  ///< each name expression stands for itself
};

Loaded load(const std::string& relative) {
  Loaded l;
  l.manifest = load_manifest(kKernels / relative, real_catalogue());
  l.op = &find_op(l.manifest.op);
  for (const auto& n : l.manifest.name_expressions()) l.lowered[n] = n;
  return l;
}

/// A tensor view on a fake (never dereferenced) device address; row-major strides unless given.
TensorView view(DType dtype, std::vector<int64_t> sizes, std::vector<int64_t> strides = {},
                uintptr_t address = 0x100000) {
  TensorView t;
  t.data = reinterpret_cast<void*>(address);
  t.dtype = dtype;
  t.sizes = sizes;
  if (strides.empty()) {
    strides.assign(sizes.size(), 1);
    for (std::size_t i = sizes.size(); i-- > 1;) strides[i - 1] = strides[i] * sizes[i];
  }
  t.strides = strides;
  return t;
}

/// A call of the op with its default attributes.
KernelCall call_of(const Loaded& l, std::vector<TensorView> inputs,
                   std::vector<TensorView> outputs) {
  KernelCall call;
  call.inputs = std::move(inputs);
  call.outputs = std::move(outputs);
  for (const auto& [name, value] : l.op->attributes) call.attributes[name] = value;
  return call;
}

/// "kernel grid GXxGYxGZ block BXxBYxBZ" of every launch that runs (and is not empty).
std::vector<std::string> launched(const Loaded& l, const KernelCall& call) {
  const LaunchPlan plan = plan_launches(l.manifest, *l.op, l.lowered, call);
  std::vector<std::string> out;
  for (const auto& p : plan.launches) {
    if (p.empty) continue;
    out.push_back(p.name_expression + " grid " + std::to_string(p.grid[0]) + "x" +
                  std::to_string(p.grid[1]) + "x" + std::to_string(p.grid[2]) + " block " +
                  std::to_string(p.block[0]) + "x" + std::to_string(p.block[1]) + "x" +
                  std::to_string(p.block[2]));
  }
  return out;
}

/// The launches that run, planned.
std::vector<PlannedLaunch> running(const Loaded& l, const KernelCall& call) {
  std::vector<PlannedLaunch> out;
  for (auto& p : plan_launches(l.manifest, *l.op, l.lowered, call).launches)
    if (!p.empty) out.push_back(p);
  return out;
}

using Names = std::vector<std::string>;

TEST(KernelPackages, EveryPackageOfKernelsIsValid) {
  int packages = 0;
  for (const auto& op_dir : fs::directory_iterator(kKernels)) {
    if (!op_dir.is_directory()) continue;
    for (const auto& dir : fs::directory_iterator(op_dir.path())) {
      const std::string name = dir.path().filename().string();
      if (!dir.is_directory() || name.rfind("package", 0) != 0) continue;
      const auto problems = check_manifest(dir.path(), real_catalogue());
      EXPECT_TRUE(problems.empty()) << format_problems(problems);
      ++packages;
    }
  }
  EXPECT_GE(packages, 11);  // softmax_block and the ten other cuda kernels
}

TEST(KernelPackages, LogSoftmaxSwitchesOnTheRowLength) {
  const Loaded l = load("log_softmax/package");
  // The launcher: N <= 32, 64, 128, 256, 512, 1024 -> one warp per row (4 rows per 128-thread
  // block) with 1, 2, 4, 8, 16, 32 elements per lane; longer rows -> one 512-thread block per row.
  const std::vector<std::pair<int64_t, std::string>> expected = {
      {1, "warp_rows<float, 1>"},    {32, "warp_rows<float, 1>"},   {33, "warp_rows<float, 2>"},
      {64, "warp_rows<float, 2>"},   {65, "warp_rows<float, 4>"},   {128, "warp_rows<float, 4>"},
      {129, "warp_rows<float, 8>"},  {256, "warp_rows<float, 8>"},  {257, "warp_rows<float, 16>"},
      {512, "warp_rows<float, 16>"}, {513, "warp_rows<float, 32>"}, {1024, "warp_rows<float, 32>"},
      {1025, "block_rows<float>"},   {70000, "block_rows<float>"}};
  for (const auto& [n, kernel] : expected) {
    const bool warp = kernel.rfind("warp", 0) == 0;
    const std::string shape = warp ? " grid 2x1x1 block 128x1x1" : " grid 5x1x1 block 512x1x1";
    const auto x = view(DType::f32, {5, n});
    EXPECT_EQ(launched(l, call_of(l, {x}, {x})),
              Names{"kgate_device::log_softmax_" + kernel + shape})
        << "N=" << n;
  }
  // Arguments: rows, the row length (int for the warp kernels) and the row strides; misaligned rows
  // run too (scalar accesses).
  const auto x = view(DType::bf16, {5, 1000}, {1000, 1}, 0x100002);
  const auto y = view(DType::bf16, {5, 1000}, {1000, 1});
  const auto w = running(l, call_of(l, {x}, {y}));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].name_expression, "kgate_device::log_softmax_warp_rows<__nv_bfloat16, 32>");
  EXPECT_EQ(w[0].value<int64_t>(2), 5);
  EXPECT_EQ(w[0].value<int32_t>(3), 1000);
  EXPECT_EQ(w[0].value<int64_t>(4), 1000);
  EXPECT_EQ(w[0].value<int64_t>(5), 1000);
  // The launcher needs a contiguous last dim: strided calls are outside the guard (reference).
  const auto strided = view(DType::f32, {5, 1000}, {2000, 2});
  EXPECT_EQ(call_guard_violation(l.manifest, *l.op, call_of(l, {strided}, {y})),
            "layout strided is not in guard.layouts [contiguous, offset]");
  // Both sides of every switch get ragged cases.
  EXPECT_EQ(guard_tile_sizes(l.manifest, *l.op),
            (std::vector<int64_t>{32, 64, 128, 256, 512, 1024}));
}

TEST(KernelPackages, SoftmaxSwitchesOnTheRowLength) {
  // Written with launch_defaults and two for_each launches: the same 14 launches as the launcher.
  const Loaded l = load("softmax/package");
  ASSERT_EQ(l.manifest.launches.size(), 14u);
  EXPECT_EQ(l.manifest.launches[3].field, "launches[0]{LO=128,VPT=8}");
  const std::string warp = " grid 2x1x1 block 128x1x1", block = " grid 5x1x1 block 1024x1x1";
  const std::vector<std::pair<int64_t, std::string>> expected = {
      {1, "warp_rows<float, 1>" + warp},         {32, "warp_rows<float, 1>" + warp},
      {33, "warp_rows<float, 2>" + warp},        {512, "warp_rows<float, 16>" + warp},
      {513, "warp_rows<float, 32>" + warp},      {1024, "warp_rows<float, 32>" + warp},
      {1025, "block_rows<float, 2>" + block},    {2048, "block_rows<float, 2>" + block},
      {2049, "block_rows<float, 4>" + block},    {16384, "block_rows<float, 16>" + block},
      {16388, "smem_rows<float, true>" + block}, {16385, "smem_rows<float, false>" + block},
      {49152, "smem_rows<float, true>" + block}, {49153, "long_rows<float>" + block}};
  for (const auto& [n, kernel] : expected) {
    const auto x = view(DType::f32, {5, n});
    EXPECT_EQ(launched(l, call_of(l, {x}, {x})), Names{"kgate_device::softmax_" + kernel})
        << "N=" << n;
  }
  // The warp launches take B first; the others do not, and the long rows take N as i64.
  const auto x = view(DType::f32, {5, 100});
  const auto w = running(l, call_of(l, {x}, {x}));
  ASSERT_EQ(w.size(), 1u);
  EXPECT_EQ(w[0].value<int64_t>(2), 5);
  EXPECT_EQ(w[0].value<int32_t>(3), 100);
  const auto big = view(DType::f32, {2, 60000});
  const auto b = running(l, call_of(l, {big}, {big}));
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].value<int64_t>(2), 60000);
  EXPECT_EQ(b[0].shared_mem, 0u);
  const auto s =
      running(l, call_of(l, {view(DType::f32, {2, 20000})}, {view(DType::f32, {2, 20000})}));
  ASSERT_EQ(s.size(), 1u);
  EXPECT_EQ(s[0].shared_mem, 80000u);
}

TEST(KernelPackages, GuardBoundaryCasesKeepTheOpsRelations) {
  // topk's op says K <= N; the guard's boundary N = 1 must not come with K = 3.
  const Loaded l = load("topk/package");
  ASSERT_FALSE(l.op->relations.empty());
  const auto cases = guard_boundary_cases(l.manifest, *l.op, 7);
  ASSERT_FALSE(cases.empty());
  bool n_is_one = false;
  for (const auto& c : cases) {
    EXPECT_LE(c.dim("K"), c.dim("N")) << c.id();
    n_is_one |= c.dim("N") == 1;
  }
  EXPECT_TRUE(n_is_one) << "the guard's lower bound of N is still tested";
}

TEST(KernelPackages, GeluSwitchesOnTheLayout) {
  for (const char* dir : {"gelu/package_gelu_elementwise", "gelu/package_gelu_tanh_elementwise"}) {
    SCOPED_TRACE(dir);
    const Loaded l = load(dir);
    const std::string t = l.manifest.op == "gelu" ? "false" : "true";
    // Contiguous and 16-byte aligned: whole vectors (4 floats), then the 3 elements left.
    const auto x = view(DType::f32, {3, 5});
    auto plan = running(l, call_of(l, {x}, {view(DType::f32, {3, 5}, {}, 0x200000)}));
    ASSERT_EQ(plan.size(), 2u);
    EXPECT_EQ(plan[0].name_expression, "kgate_device::gelu_vec16<float, " + t + ">");
    EXPECT_EQ(plan[0].value<int64_t>(2), 3);
    EXPECT_EQ(plan[1].name_expression, "kgate_device::gelu_flat<float, " + t + ">");
    EXPECT_EQ(plan[1].value<int64_t>(2), 12);
    EXPECT_EQ(plan[1].value<int64_t>(3), 15);
    // f16 fills whole vectors of 8: no remainder launch.
    const auto h = view(DType::f16, {2, 8});
    EXPECT_EQ(launched(l, call_of(l, {h}, {h})),
              Names{"kgate_device::gelu_vec16<__half, " + t + "> grid 1x1x1 block 256x1x1"});
    // Contiguous, misaligned: the scalar kernel over everything.
    plan = running(l, call_of(l, {view(DType::f32, {3, 5}, {}, 0x100004)}, {x}));
    ASSERT_EQ(plan.size(), 1u);
    EXPECT_EQ(plan[0].name_expression, "kgate_device::gelu_flat<float, " + t + ">");
    EXPECT_EQ(plan[0].value<int64_t>(2), 0);
    EXPECT_EQ(plan[0].value<int64_t>(3), 15);
    // Strided: the kernel that takes the strides; grids of 256-thread blocks, at most 2^20.
    plan = running(l, call_of(l, {view(DType::bf16, {3000, 1000}, {2000, 2})},
                              {view(DType::bf16, {3000, 1000}, {}, 0x200000)}));
    ASSERT_EQ(plan.size(), 1u);
    EXPECT_EQ(plan[0].name_expression, "kgate_device::gelu_rows<__nv_bfloat16, " + t + ">");
    EXPECT_EQ(plan[0].grid[0], 11719u);  // ceil(3e6 / 256)
    EXPECT_EQ(plan[0].value<int64_t>(4), 2000);
    EXPECT_EQ(plan[0].value<int64_t>(5), 2);
    EXPECT_EQ(plan[0].value<int64_t>(6), 1000);
    EXPECT_EQ(plan[0].value<int64_t>(7), 1);
    const auto huge = view(DType::f32, {65536, 262144});
    EXPECT_EQ(running(l, call_of(l, {huge}, {huge}))[0].grid[0], 1048576u);
    // The package is built for one GELU: the other approximation falls back.
    KernelCall other = call_of(l, {x}, {x});
    other.attributes["approximate"] = t == "false" ? 1 : 0;
    EXPECT_NE(call_guard_violation(l.manifest, *l.op, other).find("attribute approximate"),
              std::string::npos);
  }
}

TEST(KernelPackages, SiluAndMulVectorizesWhenHFillsWholeVectors) {
  const Loaded l = load("silu_and_mul/package");
  auto call = [&](DType d, int64_t b, int64_t h, uintptr_t x_address = 0x100000) {
    return call_of(l, {view(d, {b, 2 * h}, {}, x_address)}, {view(d, {b, h}, {}, 0x200000)});
  };
  EXPECT_EQ(launched(l, call(DType::f32, 3, 8)),
            Names{"kgate_device::silu_and_mul_vec16<float> grid 1x1x1 block 256x1x1"});
  EXPECT_EQ(running(l, call(DType::f32, 3, 8))[0].value<int64_t>(3), 2);  // vectors per half-row
  EXPECT_EQ(launched(l, call(DType::f32, 3, 12)),
            Names{"kgate_device::silu_and_mul_vec16<float> grid 1x1x1 block 256x1x1"});
  EXPECT_EQ(launched(l, call(DType::f16, 3, 12)),  // 12 is not a multiple of 8 halves
            Names{"kgate_device::silu_and_mul_scalar<__half> grid 1x1x1 block 256x1x1"});
  EXPECT_EQ(launched(l, call(DType::bf16, 3, 16)),
            Names{"kgate_device::silu_and_mul_vec16<__nv_bfloat16> grid 1x1x1 block 256x1x1"});
  EXPECT_EQ(launched(l, call(DType::f32, 3, 8, 0x100004)),  // misaligned
            Names{"kgate_device::silu_and_mul_scalar<float> grid 1x1x1 block 256x1x1"});
  const auto strided = call_of(l, {view(DType::f32, {3, 16}, {32, 2})}, {view(DType::f32, {3, 8})});
  const auto plan = running(l, strided);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].name_expression, "kgate_device::silu_and_mul_scalar<float>");
  EXPECT_EQ(plan[0].value<int64_t>(2), 3);
  EXPECT_EQ(plan[0].value<int64_t>(3), 8);
  EXPECT_EQ(plan[0].value<int64_t>(4), 32);
  EXPECT_EQ(plan[0].value<int64_t>(5), 2);
  EXPECT_EQ(plan[0].value<int64_t>(6), 8);
  EXPECT_EQ(plan[0].value<int64_t>(7), 1);
  EXPECT_TRUE(launched(l, call(DType::f32, 0, 8)).empty());  // B = 0: nothing to launch
}

TEST(KernelPackages, NormsTakeEpsFromTheCallAndEveryStride) {
  const Loaded ln = load("layer_norm/package");
  const auto x = view(DType::f16, {7, 300}, {600, 2});
  const auto w = view(DType::f16, {300}, {3});
  KernelCall call = call_of(ln, {x, w, view(DType::f16, {300})}, {view(DType::f16, {7, 300})});
  call.attributes["eps"] = 1e-3;
  auto plan = running(ln, call);
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].name_expression, "kgate_device::layer_norm_rows<__half>");
  EXPECT_EQ(plan[0].grid[0], 7u);
  EXPECT_EQ(plan[0].block[0], 256u);
  EXPECT_EQ(plan[0].value<int64_t>(4), 300);
  EXPECT_EQ(plan[0].value<float>(5), 1e-3f);
  const std::vector<int64_t> strides = {600, 2, 3, 1, 300, 1};  // x row, x col, w, b, y row, y col
  for (std::size_t i = 0; i < strides.size(); ++i)
    EXPECT_EQ(plan[0].value<int64_t>(6 + i), strides[i]);

  const Loaded rn = load("rms_norm/package");
  plan = running(rn, call_of(rn, {x, w}, {view(DType::f16, {7, 300})}));
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].name_expression, "kgate_device::rms_norm_rows<__half>");
  EXPECT_EQ(plan[0].value<float>(4), 1e-6f);  // the op's default eps

  const Loaded gn = load("group_norm/package");
  const auto gx = view(DType::f32, {2, 4, 3, 10});
  const auto gw = view(DType::f32, {4, 3});
  plan = running(gn, call_of(gn, {gx, gw, gw}, {gx}));
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].name_expression, "kgate_device::group_norm_groups<float>");
  EXPECT_EQ(plan[0].grid[0], 8u);  // B * G
  EXPECT_EQ(plan[0].block[0], 512u);
  EXPECT_EQ(plan[0].value<int64_t>(5), 4);   // G
  EXPECT_EQ(plan[0].value<int64_t>(6), 10);  // HW
  EXPECT_EQ(plan[0].value<int64_t>(7), 30);  // CG * HW
  EXPECT_EQ(plan[0].value<int64_t>(8), 120);
  EXPECT_EQ(plan[0].value<int64_t>(19), 1);
  EXPECT_EQ(plan[0].param_buffer_size(), 4 * 8 + 8 + 15 * 8u);  // the float is padded to 8
}

TEST(KernelPackages, EmbeddingCopiesBitsOfTheElementSize) {
  const Loaded l = load("embedding/package");
  auto call = [&](DType d, int64_t t) {
    return call_of(l, {view(d, {50, 64}), view(DType::i64, {t})}, {view(d, {t, 64})});
  };
  EXPECT_EQ(launched(l, call(DType::f32, 1000)),
            Names{"kgate_device::embedding_rows<unsigned int> grid 125x1x1 block 256x1x1"});
  EXPECT_EQ(launched(l, call(DType::bf16, 9)),
            Names{"kgate_device::embedding_rows<unsigned short> grid 2x1x1 block 256x1x1"});
  EXPECT_TRUE(launched(l, call(DType::f16, 0)).empty());
  const auto plan = running(l, call(DType::f16, 9));
  EXPECT_EQ(plan[0].value<int64_t>(3), 9);   // T
  EXPECT_EQ(plan[0].value<int64_t>(4), 50);  // V
  EXPECT_EQ(plan[0].value<int64_t>(5), 64);  // D
}

TEST(KernelPackages, SoftmaxVarlenLaunchesABlockPerMember) {
  const Loaded l = load("softmax_varlen/package");
  auto call = [&](int64_t t, int64_t offsets) {
    return call_of(l, {view(DType::f32, {t}, {2}), view(DType::i32, {offsets})},
                   {view(DType::f32, {t})});
  };
  const auto plan = running(l, call(1000, 5));
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].grid[0], 4u);
  EXPECT_EQ(plan[0].block[0], 512u);
  EXPECT_EQ(plan[0].value<int64_t>(3), 2);
  EXPECT_EQ(plan[0].value<int64_t>(4), 1);
  EXPECT_TRUE(launched(l, call(0, 5)).empty());  // every member empty
}

TEST(KernelPackages, AdaptiveAvgPool2dNeedsAnInputPlane) {
  const Loaded l = load("adaptive_avg_pool2d/package");
  const auto y = view(DType::f32, {2, 3, 4, 5});
  auto plan = running(l, call_of(l, {view(DType::f32, {2, 3, 17, 19})}, {y}));
  ASSERT_EQ(plan.size(), 1u);
  EXPECT_EQ(plan[0].grid[0], 1u);  // 120 cells
  const std::vector<int64_t> values = {2, 3, 17, 19, 4, 5, 969, 323, 19, 1, 60, 20, 5, 1};
  for (std::size_t i = 0; i < values.size(); ++i)
    EXPECT_EQ(plan[0].value<int64_t>(2 + i), values[i]);
  EXPECT_EQ(
      call_guard_violation(l.manifest, *l.op, call_of(l, {view(DType::f32, {2, 3, 0, 19})}, {y})),
      "H=0 is below guard.shapes.H.min=1");
}

}  // namespace
}  // namespace kgate::package
