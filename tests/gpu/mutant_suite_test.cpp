// The mutant suite (GPU): every CUDA mutant of tests/mutants must be rejected by the case family it
// names (KernelInfo::expected_catch; "stale" = the random family's cases through
// Runner::check_stale), and every correct twin — and every other in-tree CUDA kernel — must pass
// all the families that apply to it, plus the stale check. Prints a table (mutant, bug class,
// family, caught, cases until caught, rule, minimal case after shrinking) and, when
// KGATE_MUTANT_TABLE names a file, writes it as JSON (merged with the file's rows, so separate
// processes — one per test under CTest — add up).
// Knobs: KGATE_MUTANT_CASES (cases searched per mutant, 64), KGATE_TWIN_CASES (per family and
// twin, 16), KGATE_MUTANT_SEED (1), KGATE_SHRINK_ATTEMPTS (100), KGATE_MAX_ELEMENTS (per input
// tensor, 2^22: ragged walks still reach the longest rows, with fewer of them).
// Without a GPU every test but the registry check is SKIPPED, visibly.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "gates/props/generators.hpp"
#include "gates/props/shrink.hpp"
#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/pipeline.hpp"

namespace kgate {
namespace {

/// One mutant: its correct twin and the bug class it stands for.
struct MutantSpec {
  const char* mutant;
  const char* twin;
  const char* bug;
};

/// How GoogleTest prints a MutantSpec parameter.
void PrintTo(const MutantSpec& spec, std::ostream* os) {
  *os << spec.mutant << " (twin " << spec.twin << ")";
}

const std::vector<MutantSpec>& mutant_specs() {
  static const std::vector<MutantSpec> specs = {
      {"mutant_softmax_tail_dropped", "softmax_block",
       "ragged tail dropped (N % 32 never read or written)"},
      {"mutant_softmax_no_max_sub", "softmax_block",
       "softmax without max-subtraction (exp overflows)"},
      {"mutant_softmax_int32_offset", "softmax_block",
       "row offset in 32-bit int (wraps past 2^31 elements)"},
      {"mutant_layer_norm_one_pass", "layer_norm_block",
       "one-pass variance E[x^2]-E[x]^2 (cancellation)"},
      {"mutant_rms_norm_half_accum", "rms_norm_block",
       "sum of squares accumulated in half/bf16 (long rows)"},
      {"mutant_layer_norm_contiguous", "layer_norm_block",
       "claims strided views, ignores x's strides"},
      {"mutant_silu_and_mul_aligned", "silu_and_mul_vec",
       "16-byte loads from a rounded-down base pointer"},
      {"mutant_silu_and_mul_write_past_end", "silu_and_mul_vec",
       "writes one element past the end of y"},
      {"mutant_gelu_writes_input", "gelu_elementwise", "writes into its input"},
      {"mutant_rms_norm_split_race", "rms_norm_block",
       "blocks of a row combine without atomics (race)"},
      {"mutant_gelu_stale_cache", "gelu_elementwise", "returns a cached output per shape (stale)"},
      {"mutant_log_softmax_nan_dropped", "log_softmax_block", "NaN dropped instead of propagated"},
      {"mutant_layer_norm_no_eps", "layer_norm_block", "eps left out of rsqrt(var + eps)"},
      {"mutant_embedding_int32_indices", "embedding_gather", "int64 indices read as int32"},
      {"mutant_softmax_varlen_long_truncated", "softmax_varlen_block",
       "members over 4096 elements truncated"},
      {"mutant_adaptive_avg_pool2d_floor_end", "adaptive_avg_pool2d_direct",
       "window end rounded down"},
      // An op declared by an op file (kernels/fused_add_rms_norm/fused_add_rms_norm.op.json).
      {"mutant_fused_add_rms_norm_tail_dropped", "fused_add_rms_norm_block",
       "row tail (H % 256) neither normalized nor stored"},
      {"mutant_fused_add_rms_norm_norms_x", "fused_add_rms_norm_block",
       "normalizes x instead of x + residual"},
      // Rotary embedding and cross-entropy, ops declared by op files (kernels/rotary_embedding,
      // kernels/cross_entropy).
      {"mutant_rotary_positions_int32", "rotary_block", "int64 positions read as int32"},
      {"mutant_rotary_last_position", "rotary_block",
       "the cache's last row never used (positions clamped to P-2)"},
      {"mutant_rotary_interleaved_as_half_split", "rotary_interleaved_block",
       "interleaved pairs rotated as half-split pairs"},
      {"mutant_cross_entropy_ignored_counted", "cross_entropy_rows",
       "rows with target == ignore_index counted in the mean"},
      {"mutant_cross_entropy_no_max_sub", "cross_entropy_rows",
       "exp(x) without subtracting the row max"},
      // int8 quantization, top-k and a GEMM, ops declared by op files (kernels/quantize_int8,
      // kernels/topk, kernels/gemm).
      {"mutant_quantize_int8_truncates", "quantize_int8_rows", "x / scale rounded toward zero"},
      {"mutant_quantize_int8_signed_max", "quantize_int8_rows", "scale from max(x), not max(|x|)"},
      {"mutant_topk_tie_index_repeated", "topk_rows",
       "right values, a tied value's index repeated"},
      {"mutant_topk_ties_skipped", "topk_rows", "values equal to the previous one skipped"},
      {"mutant_topk_nan_low", "topk_rows", "NaN taken as the smallest value"},
      {"mutant_matmul_k_tail_dropped", "matmul_tiled", "the last K % 16 products never added"},
      {"mutant_matmul_storage_accum", "matmul_tiled", "accumulation rounded to the storage dtype"},
      // Precision bugs the conditioned rule must catch (its correct corpus is tests/controls).
      {"mutant_matmul_bf16_inputs", "matmul_tiled", "f32 GEMM on inputs rounded to bf16"},
      {"mutant_matmul_tf32", "matmul_tiled", "f32 GEMM on inputs rounded to TF32"},
      {"mutant_rms_norm_f16_sum", "rms_norm_block", "sum of squares accumulated in f16"},
      {"mutant_fused_add_rms_norm_bf16_sumsq", "fused_add_rms_norm_block",
       "per-thread sum of squares kept in bf16 (32 threads a row): wrong only on long rows"},
  };
  return specs;
}

/// The twins, then every other correct in-tree CUDA kernel (all must pass every family).
std::vector<std::string> twin_names() {
  std::vector<std::string> out;
  for (const auto& s : mutant_specs())
    if (std::find(out.begin(), out.end(), s.twin) == out.end()) out.push_back(s.twin);
  std::vector<std::string> others;
  // A control whose op's reference faults on purpose (expected_catch "reference_error") would
  // end this process's CUDA context: it is checked in worker processes (kgate check) instead.
  for (const auto& k : registered_kernels())
    if ((!k.mutant || k.control) && k.backend == Backend::cuda &&
        k.expected_catch != "reference_error" &&
        std::find(out.begin(), out.end(), k.name) == out.end())
      others.push_back(k.name);
  std::sort(others.begin(), others.end());
  out.insert(out.end(), others.begin(), others.end());
  return out;
}

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::max<int64_t>(1, std::atoll(v)) : fallback;
}

int64_t mutant_cases() { return env_int("KGATE_MUTANT_CASES", 64); }
int64_t twin_cases() { return env_int("KGATE_TWIN_CASES", 16); }
int64_t max_elements() { return env_int("KGATE_MAX_ELEMENTS", int64_t{1} << 22); }
uint64_t seed() { return static_cast<uint64_t>(env_int("KGATE_MUTANT_SEED", 1)); }
int64_t shrink_attempts() { return env_int("KGATE_SHRINK_ATTEMPTS", 100); }

/// The family whose cases search a mutant, and whether they go through the stale check.
std::pair<std::string, bool> search_family(const std::string& expected_catch) {
  if (expected_catch == "stale") return {"random", true};
  return {expected_catch, false};
}

struct MutantRow {
  std::string mutant, op, bug, family, twin;
  bool caught = false;
  int64_t cases = 0;         ///< cases run before stopping
  int64_t until_caught = 0;  ///< 1-based index of the first failing case; 0 when none failed
  std::string rule, message, failing_case, minimal_case, minimal_message;
  int64_t shrink_attempts = 0;
  double seconds = 0;
};

struct TwinRow {
  std::string twin, op;
  int64_t cases = 0, failed = 0;
  std::vector<std::string> families;
  std::string first_failure;
  double seconds = 0;
};

std::vector<MutantRow>& mutant_rows() {
  static std::vector<MutantRow> rows;
  return rows;
}

std::vector<TwinRow>& twin_rows() {
  static std::vector<TwinRow> rows;
  return rows;
}

Runner& runner() {
  static std::unique_ptr<Runner> r;
  if (!r) r = std::make_unique<Runner>(Backend::cuda);
  return *r;
}

/// Skips (visibly) without a device; fails when an earlier fault lost the CUDA context.
bool usable_device() {
  std::string why;
  if (!cuda::device_available(&why)) {
    std::printf("[  SKIPPED ] no usable CUDA device: %s\n", why.c_str());
    return false;
  }
  return true;
}

#define KGATE_REQUIRE_DEVICE()                                                              \
  do {                                                                                      \
    if (!usable_device()) GTEST_SKIP() << "no usable CUDA device";                          \
    if (runner().context_lost())                                                            \
      GTEST_FAIL()                                                                          \
          << "an earlier test faulted and lost the CUDA context; run this test alone with " \
             "--gtest_filter";                                                              \
  } while (0)

CaseResult run_case(const KernelInfo& kernel, const Case& c, bool stale) {
  const auto rule = rule_for(find_op(c.op), c.dtype, CheckOptions{});
  return stale ? runner().check_stale(kernel, c, rule) : runner().check_case(kernel, c, rule);
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// ---- JSON and the printed table ------------------------------------------------------------

nlohmann::json to_json(const MutantRow& r) {
  return {{"mutant", r.mutant},
          {"op", r.op},
          {"bug", r.bug},
          {"family", r.family},
          {"twin", r.twin},
          {"caught", r.caught},
          {"cases_run", r.cases},
          {"cases_until_caught", r.until_caught},
          {"rule", r.rule},
          {"message", r.message},
          {"failing_case", r.failing_case},
          {"minimal_case", r.minimal_case},
          {"minimal_message", r.minimal_message},
          {"shrink_attempts", r.shrink_attempts},
          {"seconds", r.seconds}};
}

nlohmann::json to_json(const TwinRow& r) {
  return {{"twin", r.twin},
          {"op", r.op},
          {"families", r.families},
          {"cases", r.cases},
          {"failed", r.failed},
          {"passed", r.failed == 0 && r.cases > 0},
          {"first_failure", r.first_failure},
          {"seconds", r.seconds}};
}

// Adds this process's rows to the JSON file (rows of the same name are replaced).
void write_json(const std::string& path) {
  nlohmann::json doc;
  if (std::ifstream in(path); in) {
    try {
      in >> doc;
    } catch (const std::exception&) {
      doc = nlohmann::json();
    }
  }
  if (!doc.is_object() || doc.value("schema", "") != "kgate-mutant-table/1")
    doc = nlohmann::json::object();
  doc["schema"] = "kgate-mutant-table/1";
  doc["seed"] = seed();
  doc["mutant_cases"] = mutant_cases();
  doc["twin_cases_per_family"] = twin_cases();
  doc["max_elements"] = max_elements();
  auto merge = [&](const char* key, const char* name_key, const std::vector<nlohmann::json>& rows) {
    std::map<std::string, nlohmann::json> by_name;
    if (doc.contains(key) && doc[key].is_array())
      for (const auto& r : doc[key]) by_name[r.value(name_key, "")] = r;
    for (const auto& r : rows) by_name[r.value(name_key, "")] = r;
    nlohmann::json arr = nlohmann::json::array();
    for (auto& [name, r] : by_name) arr.push_back(r);
    doc[key] = arr;
  };
  std::vector<nlohmann::json> m, t;
  for (const auto& r : mutant_rows()) m.push_back(to_json(r));
  for (const auto& r : twin_rows()) t.push_back(to_json(r));
  merge("mutants", "mutant", m);
  merge("twins", "twin", t);
  std::ofstream(path) << doc.dump(2) << "\n";
  std::printf("mutant table written to %s\n", path.c_str());
}

std::string clip(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n - 3) + "...";
}

void print_tables() {
  if (!mutant_rows().empty()) {
    std::printf("\n%-38s %-48s %-8s %-6s %-6s %-12s %s\n", "mutant", "bug class", "family",
                "caught", "cases", "rule", "minimal case");
    for (const auto& r : mutant_rows())
      std::printf("%-38s %-48s %-8s %-6s %-6s %-12s %s\n", r.mutant.c_str(),
                  clip(r.bug, 48).c_str(), r.family.c_str(), r.caught ? "yes" : "NO",
                  r.caught ? std::to_string(r.until_caught).c_str()
                           : ("0/" + std::to_string(r.cases)).c_str(),
                  r.rule.c_str(), r.minimal_case.c_str());
  }
  if (!twin_rows().empty()) {
    std::printf("\n%-28s %-20s %-8s %-8s %s\n", "twin", "op", "cases", "failed", "first failure");
    for (const auto& r : twin_rows())
      std::printf("%-28s %-20s %-8lld %-8lld %s\n", r.twin.c_str(), r.op.c_str(),
                  static_cast<long long>(r.cases), static_cast<long long>(r.failed),
                  clip(r.first_failure, 160).c_str());
  }
  std::fflush(stdout);
}

class TableEnvironment : public ::testing::Environment {
 public:
  void TearDown() override {
    if (mutant_rows().empty() && twin_rows().empty()) return;
    print_tables();
    if (const char* path = std::getenv("KGATE_MUTANT_TABLE"); path && *path) write_json(path);
  }
};

[[maybe_unused]] ::testing::Environment* const kTableEnvironment =
    ::testing::AddGlobalTestEnvironment(new TableEnvironment);

// ---- tests -----------------------------------------------------------------------------------

// Host-only: the table of this file, the registry and the families agree (runs without a GPU).
/// The negative-control corpus (tests/mutants/gelu_games.cu, rms_norm_games.cu): kernels that game
/// the gate, each with the verdict kgate must give it through `kgate check`'s whole pipeline
/// (checks, behaviour checks, checked timing), and a correct control that must pass it.
struct CorpusEntry {
  const char* kernel;
  const char* game;
  bool passes;                     ///< the expected verdict: passes, or fails under one of `rules`
  std::vector<std::string> rules;  ///< the rules of the failure that may catch it
  /// Passing entries: a kernel its timed launches must be seen to start (its work is timed, on
  /// whatever stream or thread it ran), e.g. "gelu_modes". Or "INVALID": its comparison must be
  /// INVALID (exit 3), for the reason this substring of the note names.
  std::string timed = "";
  std::string invalid_because = "";
};

void PrintTo(const CorpusEntry& e, std::ostream* os) { *os << e.kernel; }

const std::vector<CorpusEntry>& corpus() {
  static const std::vector<CorpusEntry> entries = {
      {"control_gelu_correct", "none (the correct control)", true, {}},
      {"mutant_gelu_zeros", "writes zeros", false, {"allclose", "eager_relative"}},
      {"mutant_gelu_returns_input", "returns its input", false, {"allclose", "eager_relative"}},
      {"mutant_gelu_bf16_inside", "computes in bf16 inside an f32 kernel", false, {"allclose"}},
      {"mutant_gelu_approx_1pct",
       "1% of the elements get a cheap approximation",
       false,
       {"allclose", "eager_relative"}},
      {"mutant_gelu_spots_poison",
       "writes only where the output holds the poison",
       false,
       {"written_before"}},
      {"mutant_gelu_timed_shapes",
       "half the work on the timed shapes",
       false,
       {"wrong_while_timed"}},
      {"mutant_gelu_first_calls",
       "right only on its first 64 calls per shape",
       false,
       {"wrong_while_timed"}},
      {"mutant_gelu_caches_by_pointer",
       "caches its output by pointer",
       false,
       {"wrong_while_timed", "stale", "allclose", "eager_relative"}},
      {"mutant_gelu_content_hash",
       "caches its output by a hash of 64 input samples",
       false,
       {"wrong_while_timed"}},
      // Its latency probe also fires on check cases whose inputs miss the L2: caught either way.
      {"mutant_gelu_wrong_after_flush",
       "wrong only right after an L2 flush (timed launches)",
       false,
       {"wrong_while_timed", "eager_relative", "allclose"}},
      {"mutant_gelu_side_stream", "does its work on a side stream", true, {}, "gelu_modes"},
      {"mutant_gelu_side_thread",
       "does its work from a thread of its own",
       true,
       {},
       "(launched by another thread)"},
      {"mutant_gelu_switches_kernels",
       "timed launches start other kernels than warm-up's",
       true,
       {},
       "",
       "the kernels of a timed launch changed"},
      // The game only a reduction can play (tests/mutants/rms_norm_games.cu), and its correct twin.
      {"control_rms_norm_correct",
       "none (the correct twin of the rms_norm entry)",
       true,
       {},
       "rms_norm_every"},
      {"mutant_rms_norm_samples_99pct",
       "touches 99% of the elements (the sum of squares) and rescales",
       false,
       {"allclose", "eager_relative", "conditioned"}},
  };
  return entries;
}

bool in_corpus(const std::string& name) {
  for (const auto& e : corpus())
    if (name == e.kernel) return true;
  return false;
}

class Corpus : public ::testing::TestWithParam<CorpusEntry> {};

TEST_P(Corpus, GetsItsVerdict) {
  KGATE_REQUIRE_DEVICE();
  const CorpusEntry& e = GetParam();
  CheckOptions o;
  o.seed = seed();
  o.cases = 32;
  o.speed_cases = 1;  // one 4M-element shape
  o.timing.interleave.time_budget_s = 2;
  o.shrink = false;
  const KernelReport report = check_kernel(runner(), find_kernel(e.kernel), o);
  const CaseResult* failure = report.correctness.minimal ? &*report.correctness.minimal
                              : report.correctness.failures.empty()
                                  ? nullptr
                                  : &report.correctness.failures.front();
  std::string evidence;
  if (failure) evidence = failure->kcase.id() + ": " + failure->message.substr(0, 160);
  for (const auto& s : report.speed)
    if (evidence.empty() || s.wrong_while_timed)
      evidence = (s.wrong_while_timed ? evidence + " | " : std::string()) + "timed " +
                 s.kcase.id() + ": x" + std::to_string(s.ratio) + " vs eager, " +
                 std::to_string(s.blocks) + " blocks, " +
                 std::to_string(s.checked_launches.size()) + " checked launches, " +
                 outcome_name(s.decision) +
                 (s.candidate_kernels.empty()
                      ? std::string()
                      : ", kernels [" + s.candidate_kernels.front() +
                            (s.candidate_kernels.size() > 1 ? ", ..." : "") + "]") +
                 (s.decision == Outcome::invalid ? ": " + s.note.substr(0, 200) : std::string());
  const std::string rule = failure ? reason_name(failure->rule) : "";
  const char* expected = !e.invalid_because.empty() ? "invalid" : e.passes ? "passed" : "failed";
  const char* verdict = !report.speed.empty() && report.speed[0].decision == Outcome::invalid
                            ? "invalid"
                            : outcome_name(report.outcome);
  std::printf("[ corpus ] %-30s expected %-7s got %-9s rule %-18s %s\n", e.kernel, expected,
              verdict, rule.c_str(), evidence.c_str());
  if (const char* path = std::getenv("KGATE_CORPUS_TABLE"); path && *path) {
    std::ofstream table(path, std::ios::app);
    table << nlohmann::json{{"kernel", e.kernel}, {"game", e.game}, {"expected", expected},
                            {"verdict", verdict}, {"rule", rule},   {"evidence", evidence}}
                 .dump()
          << "\n";
  }
  if (e.passes) {
    EXPECT_NE(report.outcome, Outcome::failed) << evidence;
    EXPECT_EQ(report.correctness.failed, 0) << evidence;
    ASSERT_FALSE(report.speed.empty());
    const SpeedComparison& s = report.speed[0];
    if (!e.invalid_because.empty()) {
      EXPECT_EQ(s.decision, Outcome::invalid) << evidence;
      EXPECT_NE(s.note.find(e.invalid_because), std::string::npos) << s.note;
      return;
    }
    EXPECT_NE(s.decision, Outcome::invalid) << s.note;
    EXPECT_FALSE(s.checked_launches.empty());
    // Its work is timed: the kernels its timed launches started include the one that does it.
    std::string started;
    for (const auto& k : s.candidate_kernels) started += k + "; ";
    if (!e.timed.empty())
      EXPECT_NE(started.find(e.timed), std::string::npos) << "timed launches started: " << started;
    EXPECT_FALSE(s.candidate_kernels.empty()) << "no kernel set recorded";
    return;
  }
  EXPECT_EQ(report.outcome, Outcome::failed) << evidence;
  EXPECT_NE(std::find(e.rules.begin(), e.rules.end(), rule), e.rules.end())
      << e.kernel << " was caught by rule '" << rule
      << "', expected one of the table's: " << evidence;
}

INSTANTIATE_TEST_SUITE_P(Gpu, Corpus, ::testing::ValuesIn(corpus()),
                         [](const ::testing::TestParamInfo<CorpusEntry>& info) {
                           return std::string(info.param.kernel);
                         });

TEST(MutantRegistry, EveryCudaMutantHasATwinAndAFamily) {
  std::set<std::string> listed;
  for (const auto& s : mutant_specs()) {
    listed.insert(s.mutant);
    const KernelInfo& m = find_kernel(s.mutant);
    const KernelInfo& t = find_kernel(s.twin);
    EXPECT_TRUE(m.mutant) << s.mutant << " is not marked mutant";
    EXPECT_FALSE(t.mutant) << s.twin << " (twin of " << s.mutant << ") is marked mutant";
    EXPECT_EQ(m.op, t.op) << s.mutant << " and its twin " << s.twin << " implement different ops";
    EXPECT_EQ(m.backend, Backend::cuda) << s.mutant;
    const std::string family = search_family(m.expected_catch).first;
    const auto families = props::applicable_families(find_op(m.op), traits_of(m));
    EXPECT_NE(std::find(families.begin(), families.end(), family), families.end())
        << s.mutant << ": expected_catch '" << m.expected_catch
        << "' is no family that applies to it";
    EXPECT_FALSE(props::generate_family(find_op(m.op), traits_of(m), family, 4, seed()).empty())
        << s.mutant;
  }
  for (const auto& k : registered_kernels())
    // "isolation" mutants kill their CUDA context: tests/cli/isolation_gpu.sh runs them in workers.
    // "tile_edges" mutants are checked through kgate check at the defaults:
    // tests/edges/edges_gpu.sh.
    if (k.mutant && !k.control && k.backend == Backend::cuda && k.expected_catch != "isolation" &&
        k.expected_catch != "tile_edges" && !in_corpus(k.name)) {
      EXPECT_TRUE(listed.count(k.name))
          << "mutant " << k.name << " is not in tests/gpu/mutant_suite_test.cpp's table";
    }
}

class TwinPasses : public ::testing::TestWithParam<std::string> {};

TEST_P(TwinPasses, EveryFamilyAndTheStaleCheck) {
  KGATE_REQUIRE_DEVICE();
  const auto t0 = std::chrono::steady_clock::now();
  const KernelInfo& twin = find_kernel(GetParam());
  const OpSignature& op = find_op(twin.op);
  const auto traits = traits_of(twin);
  TwinRow row;
  row.twin = twin.name;
  row.op = twin.op;
  auto judge = [&](const Case& c, bool stale) {
    const auto r = run_case(twin, c, stale);
    if (r.outcome ==
        Outcome::skipped) {  // a huge case without the memory for it: said, not counted
      std::printf("[  SKIPPED ] %s on %s: %s\n", twin.name.c_str(), c.id().c_str(),
                  r.message.c_str());
      return;
    }
    ++row.cases;
    if (r.outcome != Outcome::failed) return;
    ++row.failed;
    if (row.first_failure.empty())
      row.first_failure = c.id() + ": [" + std::string(reason_name(r.rule)) + "] " + r.message;
    ADD_FAILURE() << twin.name << " failed " << (stale ? "the stale check on " : "") << c.id()
                  << " [" << reason_name(r.rule) << "]: " << r.message << "\n  repro: " << r.repro;
  };
  for (const auto& family : props::applicable_families(op, traits)) {
    row.families.push_back(family);
    for (const auto& c :
         props::generate_family(op, traits, family, twin_cases(), seed(), max_elements()))
      judge(c, false);
  }
  row.families.push_back("stale");
  auto stale_cases = props::generate_family(
      op, traits, "random", std::min<int64_t>(8, twin_cases()), seed() + 1, max_elements());
  for (const auto& c : stale_cases) judge(c, true);
  row.seconds = seconds_since(t0);
  twin_rows().push_back(row);
  std::printf("twin %s: %lld cases, %lld failed (%.1f s)\n", twin.name.c_str(),
              static_cast<long long>(row.cases), static_cast<long long>(row.failed), row.seconds);
  std::fflush(stdout);
}

INSTANTIATE_TEST_SUITE_P(Gpu, TwinPasses, ::testing::ValuesIn(twin_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

class MutantRejected : public ::testing::TestWithParam<MutantSpec> {};

TEST_P(MutantRejected, ByItsExpectedFamily) {
  KGATE_REQUIRE_DEVICE();
  const auto t0 = std::chrono::steady_clock::now();
  const MutantSpec& spec = GetParam();
  const KernelInfo& mutant = find_kernel(spec.mutant);
  const OpSignature& op = find_op(mutant.op);
  const auto search = search_family(mutant.expected_catch);
  const std::string family = search.first;
  const bool stale = search.second;
  MutantRow row;
  row.mutant = mutant.name;
  row.op = mutant.op;
  row.bug = spec.bug;
  row.family = mutant.expected_catch;
  row.twin = spec.twin;
  const auto cases =
      props::generate_family(op, traits_of(mutant), family, mutant_cases(), seed(), max_elements());
  const CaseResult* failure = nullptr;
  CaseResult result;
  for (const auto& c : cases) {
    ++row.cases;
    result = run_case(mutant, c, stale);
    if (result.outcome == Outcome::failed) {
      failure = &result;
      break;
    }
  }
  if (failure) {
    row.caught = true;
    row.until_caught = row.cases;
    row.rule = reason_name(failure->rule);
    row.message = failure->message;
    row.failing_case = failure->kcase.id();
    row.minimal_case = row.failing_case;
    row.minimal_message = row.message;
    if (failure->rule != Reason::fault && !runner().context_lost()) {
      const auto shrunk = props::shrink(
          failure->kcase, op, mutant.tile_sizes,
          [&](const Case& c) { return run_case(mutant, c, stale).outcome == Outcome::failed; },
          shrink_attempts());
      const auto minimal = run_case(mutant, shrunk.minimal, stale);
      row.minimal_case = shrunk.minimal.id();
      row.minimal_message = "[" + std::string(reason_name(minimal.rule)) + "] " + minimal.message;
      row.shrink_attempts = shrunk.attempts;
    }
  }
  row.seconds = seconds_since(t0);
  mutant_rows().push_back(row);
  std::printf("mutant %s (%s): %s after %lld of %lld %s cases%s, minimal case %s\n  %s\n",
              row.mutant.c_str(), row.bug.c_str(), row.caught ? "caught" : "NOT caught",
              static_cast<long long>(row.until_caught), static_cast<long long>(cases.size()),
              row.family.c_str(), row.caught ? (" [" + row.rule + "]").c_str() : "",
              row.minimal_case.empty() ? "-" : row.minimal_case.c_str(),
              clip(row.minimal_message, 300).c_str());
  std::fflush(stdout);
  EXPECT_TRUE(row.caught) << mutant.name << " (" << spec.bug << ") passed all " << cases.size()
                          << " cases of the '" << family << "' family"
                          << (stale ? " through the stale check" : "")
                          << "; the family is too weak for this bug class (seed " << seed() << ")";
}

INSTANTIATE_TEST_SUITE_P(Gpu, MutantRejected, ::testing::ValuesIn(mutant_specs()),
                         [](const ::testing::TestParamInfo<MutantSpec>& info) {
                           return std::string(info.param.mutant);
                         });

}  // namespace
}  // namespace kgate
