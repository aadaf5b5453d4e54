// Case generators, guard boundary cases and shrinking, on synthetic op signatures (no torch).
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/error.hpp"
#include "gates/props/generators.hpp"
#include "gates/props/guard_cases.hpp"
#include "gates/props/shrink.hpp"

namespace kgate::props {
namespace {

OpSignature rows_op() {
  OpSignature op;
  op.name = "rows";
  op.inputs = {{"x", {"B", "N"}}};
  op.outputs = {{"y", {"B", "N"}}};
  op.symbols = {{"B", 1, 4096, 256}, {"N", 1, 100000, 8192}};
  op.reduced_symbol = "N";
  op.dtypes = {DType::f32, DType::bf16};
  op.nan_contract = NanContract::propagate;
  return op;
}

TEST(Generators, AreDeterministicFromTheSeed) {
  KernelTraits t;
  GeneratorOptions o;
  o.seed = 42;
  o.cases = 50;
  const auto a = generate_cases(rows_op(), t, o);
  const auto b = generate_cases(rows_op(), t, o);
  ASSERT_EQ(a.size(), 50u);
  for (size_t i = 0; i < a.size(); ++i) EXPECT_EQ(a[i].id(), b[i].id());
  o.seed = 43;
  const auto c = generate_cases(rows_op(), t, o);
  int same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i].id() == c[i].id();
  EXPECT_LT(same, 5);
}

TEST(Generators, LongFamilyReachesTheDomainsAndTheGuardsMax) {
  KernelTraits t;
  t.tile_sizes = {32, 16384};  // 16384: above typical_max (a guard's max, say); 32: below it
  EXPECT_EQ(long_sizes(*rows_op().symbol("N"), t.tile_sizes),
            (std::vector<int64_t>{100000, 99999, 16384, 16383}));
  // Every length, large-mean, constant and normal rows, in each dtype: 4 x 3 x 2.
  EXPECT_EQ(long_case_count(rows_op(), t), 24);
  const auto f = applicable_families(rows_op(), t);
  EXPECT_NE(std::find(f.begin(), f.end(), "long"), f.end());
  std::set<std::string> seen;
  for (const auto& c : generate_family(rows_op(), t, "long", 24, 7)) {
    EXPECT_EQ(c.family, "long");
    EXPECT_TRUE(c.values == Values::large_mean || c.values == Values::all_equal ||
                c.values == Values::normal)
        << c.id();
    EXPECT_LE(c.dim("B"), 5);
    seen.insert(std::to_string(c.dim("N")) + "/" + values_name(c.values) + "/" +
                dtype_name(c.dtype));
  }
  EXPECT_EQ(seen.size(), 24u);
  // The default budget holds the whole list, taken off the top; a small one a quarter of it.
  GeneratorOptions o;
  o.cases = 64;
  auto count_long = [&] {
    const auto all = generate_cases(rows_op(), t, o);
    EXPECT_EQ(static_cast<int64_t>(all.size()), o.cases);
    return std::count_if(all.begin(), all.end(), [](const Case& c) { return c.family == "long"; });
  };
  EXPECT_EQ(count_long(), 24);
  o.cases = 8;
  EXPECT_EQ(count_long(), 2);
  // Multiples: the value below the max is the multiple below it; no reduced symbol, no family.
  SymbolDomain d{"N", 8, 4096, 512, 8};
  EXPECT_EQ(long_sizes(d, {}), (std::vector<int64_t>{4096, 4088}));
  OpSignature flat = rows_op();
  flat.reduced_symbol.clear();
  EXPECT_EQ(long_case_count(flat, t), 0);
  d.typical_max = 0;  // random cases reach the max already
  EXPECT_TRUE(long_sizes(d, {}).empty());
}

TEST(Generators, StayInTheDomainAndSizeLimit) {
  KernelTraits t;
  GeneratorOptions o;
  o.cases = 200;
  o.max_elements = 1 << 16;
  for (const auto& c : generate_cases(rows_op(), t, o)) {
    EXPECT_GE(c.dim("B"), 1);
    EXPECT_LE(c.dim("B"), 4096);
    EXPECT_GE(c.dim("N"), 1);
    EXPECT_LE(c.dim("N"), 100000);
    EXPECT_LE(c.numel_hint(), int64_t{1} << 16) << c.id();
  }
}

TEST(Generators, RaggedCoversTileEdges) {
  KernelTraits t;
  t.tile_sizes = {32, 1024};
  const auto cases = generate_family(rows_op(), t, "ragged", 200, 1);
  std::set<int64_t> n;
  for (const auto& c : cases) n.insert(c.dim("N"));
  for (int64_t v : {1, 2, 31, 33, 1023, 1025, 2047, 2049})
    EXPECT_TRUE(n.count(v)) << "missing N=" << v;
}

TEST(Generators, DefaultBudgetReachesEveryDeclaredTileEdge) {
  // A kernel wrong only one element past whole blocks (N = 257, 513, ...) passed 64 of 64 default
  // cases when the ragged family walked its sizes smallest-first.
  KernelTraits t;
  t.tile_sizes = {256, 1024};
  for (uint64_t seed : {0, 1, 2, 3, 4}) {
    GeneratorOptions o;
    o.seed = seed;
    const auto cases = generate_cases(rows_op(), t, o);
    std::set<int64_t> n;
    for (const auto& c : cases) n.insert(c.dim("N"));
    for (int64_t v : {255, 257, 1023, 1025, 256, 1024, 1, 2, 3})
      EXPECT_TRUE(n.count(v)) << "seed " << seed << ": no N=" << v;
    const auto cov = edge_coverage(rows_op(), t, seed, cases);
    EXPECT_EQ(cov.symbol, "N");
    EXPECT_TRUE(cov.left_out.empty()) << cov.left_out.front().detail;
    EXPECT_GT(cov.spread_tried, 3);
  }
}

TEST(Generators, RaggedEdgesComeInPrecedence) {
  KernelTraits t;
  t.tile_sizes = {256};
  t.found_sizes = {{1024, "manifest", "grid ceil_div(N, 1024)"}, {128, "observed", "block 128"}};
  const auto e = ragged_edges(*rows_op().symbol("N"), t, 1);
  std::vector<int64_t> head;
  for (size_t i = 0; i < 12; ++i) head.push_back(e[i].size);
  EXPECT_EQ(head, (std::vector<int64_t>{255, 257, 256, 1023, 1025, 1024, 127, 129, 128, 1, 2, 3}));
  EXPECT_GE(e[12].size, 8191) << "then the spread, from the top of its range (typical_max 8192)";
  EXPECT_LE(e.back().size, 8192);
  EXPECT_EQ(e[0].origin, "declared");
  EXPECT_EQ(e[0].detail, "tile 256 - 1");
  EXPECT_EQ(e[4].origin, "manifest");
  EXPECT_EQ(e[4].detail, "grid ceil_div(N, 1024) + 1");
  EXPECT_EQ(e[6].origin, "observed");
  EXPECT_EQ(tile_edge_count(e), 9);
  // Not smallest-first: the spread reaches across the domain within a few sizes.
  int64_t largest = 0;
  for (size_t i = 9; i < 16; ++i) largest = std::max(largest, e[i].size);
  EXPECT_GT(largest, 4000);
  std::set<int64_t> distinct;
  for (const auto& x : e) EXPECT_TRUE(distinct.insert(x.size).second) << x.size;
}

TEST(Generators, RaggedEdgesFollowMultipleOfAndRotateDtypes) {
  SymbolDomain d{"N", 8, 4096, 1024};
  d.multiple_of = 8;
  KernelTraits t;
  t.tile_sizes = {256};
  const auto e = ragged_edges(d, t, 1);
  EXPECT_EQ(e[0].size, 248);
  EXPECT_EQ(e[1].size, 264);
  for (const auto& x : e) EXPECT_EQ(x.size % 8, 0) << x.size;
  // Each edge in a dtype, rotating: 255 and 257 of rows_op get f32 and bf16.
  const auto cases = generate_family(rows_op(), t, "ragged", 4, 1);
  EXPECT_EQ(cases[0].dim("N"), 255);
  EXPECT_NE(cases[0].dtype, cases[1].dtype);
}

TEST(Generators, CoverageSaysWhichEdgesTheBudgetLeftOut) {
  KernelTraits t;
  t.tile_sizes = {64, 128, 256, 512, 1024, 2048, 4096, 8192};  // 24 tile edges
  GeneratorOptions o;
  o.cases = 16;
  const auto cases = generate_cases(rows_op(), t, o);
  const auto cov = edge_coverage(rows_op(), t, 0, cases);
  EXPECT_FALSE(cov.left_out.empty());
  EXPECT_FALSE(cov.tried.empty());
  EXPECT_EQ(cov.tried.front().edge.size, 63);
  EXPECT_EQ(cov.tried.size() + cov.left_out.size(), 24u + 3u);  // and 1, 2, 3
}

TEST(Generators, UnknownFamilyNameIsRefusedNotDropped) {
  GeneratorOptions o;
  o.families = {"bogus"};
  EXPECT_THROW(generate_cases(rows_op(), KernelTraits{}, o), Error);
  o.families = {"huge"};  // known, but not applicable here: nothing generated
  EXPECT_TRUE(generate_cases(rows_op(), KernelTraits{}, o).empty());
}

TEST(Generators, RaggedSizesRespectZeroOnlyWhenAllowed) {
  SymbolDomain with_zero{"N", 0, 100, 0};
  SymbolDomain without{"N", 1, 100, 0};
  const auto a = ragged_sizes(with_zero, {});
  const auto b = ragged_sizes(without, {});
  EXPECT_EQ(a.front(), 0);
  EXPECT_EQ(b.front(), 1);
  EXPECT_EQ(a.back(), 100);
}

TEST(Generators, FamiliesFollowKernelTraits) {
  KernelTraits t;
  t.accepts_unaligned = false;
  // Every kernel gets contiguous tensors that are 16-byte but not 256-byte aligned.
  auto f = applicable_families(rows_op(), t);
  EXPECT_EQ(std::count(f.begin(), f.end(), "layout"), 1);
  for (const auto& c : generate_family(rows_op(), t, "layout", 6, 3))
    EXPECT_EQ(c.layout, Layout::offset16);
  // A kernel that takes strided views also gets row-padded ones, and never a misaligned base.
  t.accepts_strided = true;
  f = applicable_families(rows_op(), t);
  EXPECT_EQ(std::count(f.begin(), f.end(), "layout"), 1);
  std::set<Layout> seen;
  for (const auto& c : generate_family(rows_op(), t, "layout", 9, 3)) seen.insert(c.layout);
  EXPECT_EQ(seen, (std::set<Layout>{Layout::strided, Layout::padded, Layout::offset16}));
  t.accepts_unaligned = true;
  seen.clear();
  for (const auto& c : generate_family(rows_op(), t, "layout", 12, 3)) seen.insert(c.layout);
  EXPECT_EQ(seen,
            (std::set<Layout>{Layout::strided, Layout::offset, Layout::padded, Layout::offset16}));
  auto op = rows_op();
  op.nan_contract = NanContract::ignore;
  f = applicable_families(op, t);
  EXPECT_EQ(std::count(f.begin(), f.end(), "special"), 0);
}

TEST(Generators, DtypesFollowTheKernel) {
  KernelTraits t;
  t.dtypes = {DType::bf16};
  for (const auto& c : generate_family(rows_op(), t, "random", 20, 5))
    EXPECT_EQ(c.dtype, DType::bf16);
  t.dtypes = {DType::f64};  // the op has no f64: nothing to generate
  EXPECT_TRUE(generate_family(rows_op(), t, "random", 20, 5).empty());
}

TEST(Generators, UnknownFamilyIsAUsageError) {
  EXPECT_THROW(generate_family(rows_op(), KernelTraits{}, "fuzzy", 1, 1), Error);
}

TEST(Shrink, FindsTheSmallestTailBug) {
  // A "kernel" that is wrong whenever N is not a multiple of 32 (a dropped ragged tail).
  Case start = Case::from_id("rows:f32:B=300,N=5000:strided:extreme:1");
  start.values = Values::extreme;
  int64_t calls = 0;
  const auto r = shrink(start, rows_op(), {32}, [&](const Case& c) {
    ++calls;
    return c.dim("N") % 32 != 0;
  });
  EXPECT_EQ(r.minimal.dim("B"), 1);
  EXPECT_EQ(r.minimal.dim("N"), 1);
  EXPECT_EQ(r.minimal.layout, Layout::contiguous);
  EXPECT_EQ(r.minimal.values, Values::normal);
  EXPECT_EQ(r.attempts, calls);
}

TEST(Shrink, StopsAtTheTileBoundaryThatMatters) {
  // Wrong only for rows longer than one 1024-wide tile with a remainder.
  Case start = Case::from_id("rows:f32:B=7,N=70001:contiguous:normal:1");
  const auto r = shrink(start, rows_op(), {1024},
                        [](const Case& c) { return c.dim("N") > 1024 && c.dim("N") % 1024 != 0; });
  EXPECT_EQ(r.minimal.dim("N"), 1025);
  EXPECT_EQ(r.minimal.dim("B"), 1);
}

TEST(Shrink, RespectsTheAttemptBudget) {
  Case start = Case::from_id("rows:f32:B=7,N=70001:contiguous:normal:1");
  // B shrinks to 1 (attempt 1); N=1 and N=2 pass (attempts 2, 3); the budget stops it there.
  const auto r = shrink(
      start, rows_op(), {1024}, [](const Case& c) { return c.dim("N") > 1000; }, 3);
  EXPECT_EQ(r.attempts, 3);
  EXPECT_EQ(r.minimal.dim("B"), 1);
  EXPECT_EQ(r.minimal.dim("N"), 70001);
}

// ---- the huge family: one case past 2^31 elements (32-bit index arithmetic) ----

OpSignature big_rows_op() {
  OpSignature op = rows_op();
  op.symbols = {{"B", 1, 65536, 256}, {"N", 1, 262144, 8192}};
  op.dtypes = {DType::f32, DType::bf16};
  return op;
}

TEST(HugeFamily, HoldsATensorJustPast2To31Elements) {
  KernelTraits t;
  t.huge = true;
  std::string why;
  const auto c = huge_case(big_rows_op(), t, 7, &why);
  ASSERT_TRUE(c) << why;
  EXPECT_EQ(c->family, "huge");
  EXPECT_EQ(c->dtype, DType::bf16);  // the fewest bytes for the same indices
  EXPECT_EQ(c->layout, Layout::contiguous);
  const int64_t n = largest_tensor_numel(big_rows_op(), *c);
  EXPECT_GT(n, kHugeElements) << c->id();
  EXPECT_LE(n, kHugeElements + 3 * c->dim("N")) << c->id();  // a few rows past the threshold
  EXPECT_LE(c->dim("B"), 65536);
  EXPECT_LE(c->dim("N"), 262144);
  EXPECT_TRUE(is_huge(big_rows_op(), *c));
  EXPECT_TRUE(in_domain(big_rows_op(), *c));
  // Deterministic, and it replays from its id.
  EXPECT_EQ(huge_case(big_rows_op(), t, 7)->id(), c->id());
  EXPECT_TRUE(is_huge(big_rows_op(), Case::from_id(c->id())));
}

TEST(HugeFamily, WidensTheOtherSymbolsWhenTheLeadingOneTopsOut) {
  OpSignature op = big_rows_op();
  op.symbols = {{"B", 1, 1000, 16}, {"N", 1, 1 << 23, 1024, 8}};  // B*N past 2^31 needs N >= 2^21
  KernelTraits t;
  const auto c = huge_case(op, t, 1);
  ASSERT_TRUE(c);
  EXPECT_LE(c->dim("B"), 1000);
  EXPECT_EQ(c->dim("N") % 8, 0);
  EXPECT_TRUE(is_huge(op, *c)) << c->id();
}

TEST(HugeFamily, AnOpThatCannotHoldItHasNoneAndSaysWhy) {
  std::string why;
  EXPECT_FALSE(huge_case(rows_op(), KernelTraits{}, 1, &why));  // at most 4096 x 100000 elements
  EXPECT_NE(why.find("not past 2^31"), std::string::npos) << why;
  KernelTraits t;
  t.huge = true;
  const auto f = applicable_families(rows_op(), t);
  EXPECT_EQ(std::count(f.begin(), f.end(), "huge"), 0);
}

TEST(HugeFamily, OnlyOnADeviceAndOneCaseLast) {
  KernelTraits t;
  GeneratorOptions o;
  o.cases = 20;
  auto f = applicable_families(big_rows_op(), t);
  EXPECT_EQ(std::count(f.begin(), f.end(), "huge"), 0);  // the cpu backend skips it
  for (const auto& c : generate_cases(big_rows_op(), t, o))
    EXPECT_FALSE(is_huge(big_rows_op(), c)) << c.id();
  t.huge = true;
  f = applicable_families(big_rows_op(), t);
  EXPECT_EQ(std::count(f.begin(), f.end(), "huge"), 1);
  const auto cases = generate_cases(big_rows_op(), t, o);
  ASSERT_EQ(cases.size(), 20u);
  EXPECT_EQ(cases.back().family, "huge");
  EXPECT_EQ(
      std::count_if(cases.begin(), cases.end(), [](const Case& c) { return c.family == "huge"; }),
      1);
  o.families = {"random"};
  for (const auto& c : generate_cases(big_rows_op(), t, o)) EXPECT_NE(c.family, "huge");
}

TEST(HugeFamily, IsJudgedOnSlicesOfIndependentRowsOnly) {
  EXPECT_EQ(slice_symbol(big_rows_op()), "B");
  OpSignature weighted = big_rows_op();
  weighted.inputs.push_back({"weight", {"N"}});  // floating, no B: kept whole
  EXPECT_EQ(slice_symbol(weighted), "B");
  OpSignature varlen = big_rows_op();
  varlen.inputs.push_back({"offsets", {"S"}, "i32"});  // integers that may point along B
  varlen.symbols.push_back({"S", 1, 64, 8});
  EXPECT_EQ(slice_symbol(varlen), "");
  OpSignature in_place = big_rows_op();
  in_place.outputs[0].alias = "x";  // written into its input: sliced as the input is
  EXPECT_EQ(slice_symbol(in_place), "B");
  OpSignature loss = big_rows_op();
  loss.outputs = {{"loss", {"1"}}};  // reduces over every row
  EXPECT_EQ(slice_symbol(loss), "");
}

TEST(HugeFamily, SlicesHoldEveryRowPastTheThresholdAndASampleBefore) {
  KernelTraits t;
  const auto c = *huge_case(big_rows_op(), t, 3);
  const auto rows = huge_rows(big_rows_op(), c, "B");
  const int64_t b = c.dim("B"), first = kHugeElements / c.dim("N");
  ASSERT_TRUE(std::is_sorted(rows.begin(), rows.end()));
  EXPECT_EQ(rows.front(), 0);
  EXPECT_EQ(rows.back(), b - 1);
  for (int64_t r = first; r < b; ++r)
    EXPECT_NE(std::find(rows.begin(), rows.end(), r), rows.end()) << r;
  EXPECT_NE(std::find(rows.begin(), rows.end(), b / 2), rows.end());
  EXPECT_LT(rows.size(), 80u);
}

TEST(HugeFamily, ShrinkingNeverGoesBelowTheThreshold) {
  KernelTraits t;
  const auto c = *huge_case(big_rows_op(), t, 3);
  const auto r = shrink(c, big_rows_op(), {32}, [](const Case&) { return true; });
  EXPECT_TRUE(is_huge(big_rows_op(), r.minimal)) << r.minimal.id();
  EXPECT_LE(r.attempts, 12);
  EXPECT_LT(r.minimal.numel_hint(), c.numel_hint() + 1);
}

// N in [64, 4096], a multiple of 64; f32 only; B <= 100.
GuardModel rows_guard() {
  GuardModel g;
  g.name = "rows_pkg";
  g.shapes = {{"N", 64, 4096, 64}};
  GuardModel::Predicate p;
  p.symbols = {{"B", {100}}};
  p.holds = [](const Case& c) -> std::optional<bool> { return c.dim("B") <= 100; };
  g.require = {p};
  g.admits_dtype = [](DType d) { return d == DType::f32; };
  g.inside = [](const Case& c) {
    const int64_t n = c.dim("N");
    return c.dtype == DType::f32 && n >= 64 && n <= 4096 && n % 64 == 0 && c.dim("B") <= 100 &&
           c.layout == Layout::contiguous;
  };
  return g;
}

std::set<int64_t> values_of(const std::vector<Case>& cases, const std::string& symbol) {
  std::set<int64_t> out;
  for (const auto& c : cases) out.insert(c.dim(symbol));
  return out;
}

TEST(GuardCases, BothSidesOfEveryBoundaryAndFlip) {
  const auto cases = guard_boundary_cases(rows_guard(), rows_op(), 7, int64_t{1} << 24);
  const auto n = values_of(cases, "N");
  for (int64_t v : {63, 64, 65, 4096, 4097}) EXPECT_TRUE(n.count(v)) << "N=" << v;
  const auto b = values_of(cases, "B");
  EXPECT_TRUE(b.count(100));
  EXPECT_TRUE(b.count(101));
  // The bf16 case is outside (the guard admits f32 only); the layouts other than contiguous too.
  bool bf16_outside = false, strided_outside = false, inside = false;
  for (const auto& c : cases) {
    const bool in = rows_guard().inside(c);
    EXPECT_EQ(c.family, in ? "guard_inside" : "guard_outside") << c.id();
    inside = inside || in;
    if (c.dtype == DType::bf16) bf16_outside = !in;
    if (c.layout == Layout::strided) strided_outside = !in;
  }
  EXPECT_TRUE(inside);
  EXPECT_TRUE(bf16_outside);
  EXPECT_TRUE(strided_outside);
  // Deterministic per seed, distinct ids.
  const auto again = guard_boundary_cases(rows_guard(), rows_op(), 7, int64_t{1} << 24);
  ASSERT_EQ(again.size(), cases.size());
  std::set<std::string> ids;
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(cases[i].id(), again[i].id());
    ids.insert(cases[i].id());
  }
  EXPECT_EQ(ids.size(), cases.size());
}

TEST(GuardCases, StayWithinTheOpsDomainAndTheElementCap) {
  GuardModel g = rows_guard();
  g.shapes = {{"N", 1, 100000, 1}};  // the op's own bounds: 0 and 100001 cannot be made
  const auto cases = guard_boundary_cases(g, rows_op(), 1, 200000);
  for (const auto& c : cases) {
    EXPECT_GE(c.dim("N"), 1);
    EXPECT_LE(c.dim("N"), 100000);
    EXPECT_LE(c.dim("B") * c.dim("N"), 200000) << c.id();
  }
  EXPECT_TRUE(values_of(cases, "N").count(100000));
}

// A package guarding a head size at exactly 128, on an op whose D comes in steps of 2 (rotary):
// the boundary cases try 126 and 130, never 127 or 129 (the op's reference cannot run them), and
// the other symbols' inside values are in the op's steps too.
TEST(GuardCases, KeepTheOpsSteps) {
  OpSignature op = rows_op();
  op.symbols = {{"B", 1, 4096, 256}, {"D", 2, 256, 128}, {"N", 1, 100000, 8192}};
  op.symbols[1].multiple_of = 2;
  op.symbols[2].multiple_of = 4;
  op.inputs = {{"x", {"B", "N", "D"}}};
  op.outputs = {{"y", {"B", "N", "D"}}};
  GuardModel g = rows_guard();
  g.shapes = {{"D", 128, 128, 1}};
  g.require.clear();
  g.inside = [](const Case& c) { return c.dim("D") == 128 && c.dtype == DType::f32; };
  const auto cases = guard_boundary_cases(g, op, 3, int64_t{1} << 24);
  const auto d = values_of(cases, "D");
  for (int64_t v : {126, 128, 130}) EXPECT_TRUE(d.count(v)) << "D=" << v;
  for (const auto& c : cases) {
    EXPECT_EQ(c.dim("D") % 2, 0) << c.id();
    EXPECT_EQ(c.dim("N") % 4, 0) << c.id();
  }
  EXPECT_EQ(in_steps(127, 2), (std::vector<int64_t>{126, 128}));
  EXPECT_EQ(in_steps(128, 2), (std::vector<int64_t>{128}));
  EXPECT_EQ(in_steps(-1, 4), (std::vector<int64_t>{-4, 0}));
}

TEST(GuardCases, PickValueFindsTheNearestMultipleInRange) {
  EXPECT_EQ(pick_value(264, 64, 4096, 64), 320);
  EXPECT_EQ(pick_value(5000, 64, 4096, 64), 4096);
  EXPECT_EQ(pick_value(3, 1, 10, 1), 3);
  EXPECT_EQ(pick_value(3, 5, 7, 8), std::nullopt);
}

}  // namespace
}  // namespace kgate::props
