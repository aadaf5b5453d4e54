// The report model's JSON form ("kgate-report/1"), reading it back, merging shards and the exit
// code. The writers of the other formats are in report/.
#include "core/report.hpp"
#include "core/safe_text.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace kgate {
namespace {

using nlohmann::json;

// JSON has no Inf/NaN: write them as strings so nothing is lost.
json number(double v) {
  if (std::isfinite(v)) return v;
  if (std::isnan(v)) return "nan";
  return v > 0 ? "inf" : "-inf";
}

double read_number(const json& j, const char* key, double fallback = 0) {
  if (!j.contains(key)) return fallback;
  const auto& v = j.at(key);
  if (v.is_number()) return v.get<double>();
  if (v.is_string()) {
    const auto s = v.get<std::string>();
    if (s == "nan") return std::nan("");
    if (s == "inf") return INFINITY;
    if (s == "-inf") return -INFINITY;
  }
  return fallback;
}

json stats_json(const ErrorStats& s) {
  return {{"max_abs", number(s.max_abs)},       {"max_rel", number(s.max_rel)},
          {"mismatches", s.mismatches},         {"elements", s.elements},
          {"nan_mismatches", s.nan_mismatches}, {"unwritten", s.unwritten}};
}

ErrorStats stats_from(const json& j) {
  ErrorStats s;
  s.max_abs = read_number(j, "max_abs");
  s.max_rel = read_number(j, "max_rel");
  s.mismatches = j.value("mismatches", int64_t{0});
  s.elements = j.value("elements", int64_t{0});
  s.nan_mismatches = j.value("nan_mismatches", int64_t{0});
  s.unwritten = j.value("unwritten", int64_t{0});
  return s;
}

json case_result_json(const CaseResult& r) {
  json j = {{"case", r.kcase},
            {"outcome", outcome_name(r.outcome)},
            {"rule", reason_name(r.rule)},
            {"observed", number(r.observed)},
            {"allowed", number(r.allowed)},
            {"margin", number(r.margin)},
            {"message", r.message},
            {"vs_reference", stats_json(r.vs_reference)},
            {"vs_oracle", stats_json(r.vs_oracle)},
            {"reference_vs_oracle_max_abs", number(r.reference_vs_oracle_max_abs)},
            {"repro", r.repro},
            {"fallback", r.fallback}};
  if (!r.outside_contract.empty()) j["outside_contract"] = r.outside_contract;
  return j;
}

CaseResult case_result_from(const json& j) {
  CaseResult r;
  r.kcase = j.at("case").get<Case>();
  r.outcome = parse_outcome(j.at("outcome").get<std::string>());
  r.rule = parse_reason(j.value("rule", std::string()), "case " + r.kcase.id());
  r.observed = read_number(j, "observed");
  r.allowed = read_number(j, "allowed");
  r.margin = read_number(j, "margin");
  r.message = j.value("message", std::string());
  if (j.contains("vs_reference")) r.vs_reference = stats_from(j.at("vs_reference"));
  if (j.contains("vs_oracle")) r.vs_oracle = stats_from(j.at("vs_oracle"));
  r.reference_vs_oracle_max_abs = read_number(j, "reference_vs_oracle_max_abs");
  r.repro = j.value("repro", std::string());
  r.fallback = j.value("fallback", false);
  r.outside_contract = j.value("outside_contract", std::string());
  return r;
}

json correctness_json(const CorrectnessReport& c) {
  json failures = json::array();
  for (const auto& f : c.failures) failures.push_back(case_result_json(f));
  json out = {{"cases", c.cases},
              {"passed", c.passed},
              {"failed", c.failed},
              {"worst_margin", number(c.worst_margin)},
              {"failures", failures},
              {"warnings", c.warnings},
              {"fallback", c.fallback},
              {"behaviour_checks", c.behaviour_checks},
              {"reference_errors", c.reference_errors},
              {"skipped", c.skipped},
              {"seconds", number(c.seconds)}};
  if (c.minimal) out["minimal"] = case_result_json(*c.minimal);
  if (!c.faulted.empty()) out["faulted"] = c.faulted;
  if (!c.reference_faulted.empty()) out["reference_faulted"] = c.reference_faulted;
  if (!c.captured.empty()) {
    json captured = json::array();
    for (const auto& r : c.captured) captured.push_back(case_result_json(r));
    out["captured"] = captured;
  }
  if (c.not_run > 0) {
    out["not_run"] = c.not_run;
    out["resume_at"] = c.resume_at;
    if (c.reference_copies_at >= 0) out["reference_copies_at"] = c.reference_copies_at;
  }
  if (!c.null_calibration.empty()) {
    json nc = json::object();
    for (const auto& [null_kernel, families] : c.null_calibration)
      for (const auto& [family, counts] : families)
        nc[null_kernel][family] = {{"cases", counts.first}, {"failed", counts.second}};
    out["null_calibration"] = nc;
  }
  if (!c.coverage.is_null()) out["coverage"] = c.coverage;
  if (!c.contract.is_null()) out["contract"] = c.contract;
  return out;
}

CorrectnessReport correctness_from(const json& c) {
  CorrectnessReport r;
  r.cases = c.value("cases", int64_t{0});
  r.passed = c.value("passed", int64_t{0});
  r.failed = c.value("failed", int64_t{0});
  r.worst_margin = read_number(c, "worst_margin");
  for (const auto& f : c.value("failures", json::array()))
    r.failures.push_back(case_result_from(f));
  if (c.contains("minimal")) r.minimal = case_result_from(c.at("minimal"));
  for (const auto& f : c.value("captured", json::array()))
    r.captured.push_back(case_result_from(f));
  r.warnings = c.value("warnings", std::vector<std::string>{});
  r.fallback = c.value("fallback", int64_t{0});
  r.behaviour_checks = c.value("behaviour_checks", int64_t{0});
  r.reference_errors = c.value("reference_errors", int64_t{0});
  r.skipped = c.value("skipped", int64_t{0});
  r.seconds = read_number(c, "seconds");
  if (c.contains("coverage")) r.coverage = c.at("coverage");
  if (c.contains("contract")) r.contract = c.at("contract");
  r.faulted = c.value("faulted", std::vector<std::string>{});
  r.not_run = c.value("not_run", int64_t{0});
  r.resume_at = c.value("resume_at", int64_t{0});
  r.reference_faulted = c.value("reference_faulted", std::vector<std::string>{});
  r.reference_copies_at = c.value("reference_copies_at", int64_t{-1});
  if (c.contains("null_calibration"))
    for (auto nk = c.at("null_calibration").begin(); nk != c.at("null_calibration").end(); ++nk)
      for (auto f = nk.value().begin(); f != nk.value().end(); ++f)
        r.null_calibration[nk.key()][f.key()] = {f.value().value("cases", int64_t{0}),
                                                 f.value().value("failed", int64_t{0})};
  return r;
}

json samples_json(const std::vector<double>& v) {
  json a = json::array();
  for (double x : v) a.push_back(number(x));
  return a;
}

std::vector<double> samples_from(const json& j) {
  std::vector<double> v;
  for (const auto& x : j) v.push_back(x.is_number() ? x.get<double>() : std::nan(""));
  return v;
}

json speed_json(const SpeedComparison& s) {
  json j = {{"baseline", s.baseline},
            {"case", s.kcase},
            {"decision", outcome_name(s.decision)},
            {"timer", s.timer},
            {"ratio", number(s.ratio)},
            {"ratio_lower", number(s.ratio_lower)},
            {"ratio_upper", number(s.ratio_upper)},
            {"p_value", number(s.p_value)},
            {"p_adjusted", number(s.p_adjusted)},
            {"delta", s.delta},
            {"alpha", s.alpha},
            {"blocks", s.blocks},
            {"dropped_blocks", s.dropped_blocks},
            {"baseline_median_ns", number(s.baseline_median_ns)},
            {"candidate_median_ns", number(s.candidate_median_ns)},
            {"baseline_ns", samples_json(s.baseline_ns)},
            {"candidate_ns", samples_json(s.candidate_ns)},
            {"note", s.note},
            {"seconds", number(s.seconds)},
            {"pools", s.pools},
            {"check_seconds", number(s.check_seconds)},
            {"checks_judged", s.checks_judged}};
  json checked = json::array();
  for (const auto& l : s.checked_launches) checked.push_back({l.block, l.arm, l.launch});
  j["checked_launches"] = checked;
  if (!s.baseline_kernels.empty() || !s.candidate_kernels.empty())
    j["kernels"] = {{"baseline", s.baseline_kernels}, {"candidate", s.candidate_kernels}};
  if (s.sm_clock_max_mhz > 0) j["sm_clock_mhz"] = {s.sm_clock_min_mhz, s.sm_clock_max_mhz};
  if (s.sol_read_bytes + s.sol_written_bytes > 0)
    j["speed_of_light"] = {{"read_bytes", number(s.sol_read_bytes)},
                           {"written_bytes", number(s.sol_written_bytes)},
                           {"ceiling_bytes_per_s", number(s.sol_ceiling_bytes_per_s)},
                           {"candidate_fraction", number(s.sol_candidate_fraction)},
                           {"baseline_fraction", number(s.sol_baseline_fraction)},
                           {"enforced", s.sol_enforced}};
  if (s.wrong_while_timed) j["wrong_while_timed"] = case_result_json(*s.wrong_while_timed);
  j["gates"] = s.gates;
  if (s.budget_grown_s > 0) j["budget_grown_s"] = number(s.budget_grown_s);
  return j;
}

SpeedComparison speed_from(const json& j) {
  SpeedComparison s;
  s.baseline = j.value("baseline", std::string());
  s.kcase = j.at("case").get<Case>();
  s.decision = parse_outcome(j.at("decision").get<std::string>());
  s.timer = j.value("timer", std::string());
  s.ratio = read_number(j, "ratio", 1);
  s.ratio_lower = read_number(j, "ratio_lower");
  s.ratio_upper = read_number(j, "ratio_upper");
  s.p_value = read_number(j, "p_value", 1);
  s.p_adjusted = read_number(j, "p_adjusted", 1);
  s.delta = read_number(j, "delta", 0.02);
  s.alpha = read_number(j, "alpha", 0.05);
  s.blocks = j.value("blocks", int64_t{0});
  s.dropped_blocks = j.value("dropped_blocks", int64_t{0});
  s.baseline_median_ns = read_number(j, "baseline_median_ns");
  s.candidate_median_ns = read_number(j, "candidate_median_ns");
  if (j.contains("baseline_ns")) s.baseline_ns = samples_from(j.at("baseline_ns"));
  if (j.contains("candidate_ns")) s.candidate_ns = samples_from(j.at("candidate_ns"));
  s.note = j.value("note", std::string());
  s.seconds = read_number(j, "seconds");
  s.pools = j.value("pools", 1);
  s.check_seconds = read_number(j, "check_seconds");
  s.checks_judged = j.value("checks_judged", int64_t{0});
  for (const auto& l : j.value("checked_launches", json::array()))
    if (l.is_array() && l.size() == 3)
      s.checked_launches.push_back({l[0].get<int64_t>(), l[1].get<int>(), l[2].get<int64_t>()});
  if (const auto k = j.find("kernels"); k != j.end() && k->is_object()) {
    s.baseline_kernels = k->value("baseline", std::vector<std::string>{});
    s.candidate_kernels = k->value("candidate", std::vector<std::string>{});
  }
  if (const auto c = j.find("sm_clock_mhz"); c != j.end() && c->is_array() && c->size() == 2) {
    s.sm_clock_min_mhz = (*c)[0].get<unsigned>();
    s.sm_clock_max_mhz = (*c)[1].get<unsigned>();
  }
  if (const auto l = j.find("speed_of_light"); l != j.end() && l->is_object()) {
    s.sol_read_bytes = read_number(*l, "read_bytes");
    s.sol_written_bytes = read_number(*l, "written_bytes");
    s.sol_ceiling_bytes_per_s = read_number(*l, "ceiling_bytes_per_s");
    s.sol_candidate_fraction = read_number(*l, "candidate_fraction");
    s.sol_baseline_fraction = read_number(*l, "baseline_fraction");
    s.sol_enforced = l->value("enforced", false);
  }
  if (j.contains("wrong_while_timed"))
    s.wrong_while_timed = case_result_from(j.at("wrong_while_timed"));
  s.gates = j.value("gates", true);
  s.budget_grown_s = read_number(j, "budget_grown_s");
  return s;
}

}  // namespace

ExitCode RunReport::exit_code(bool inconclusive_fails) const {
  bool failed = false, regressed = false, inconclusive = false, unchecked = false;
  for (const auto& k : kernels) {
    if (k.outcome == Outcome::unchecked) unchecked = true;
    if (k.outcome == Outcome::failed || k.correctness.failed > 0) failed = true;
    for (const auto& s : k.speed) {
      if (!s.gates) continue;  // informational
      if (s.decision == Outcome::regressed) regressed = true;
      if (s.decision == Outcome::inconclusive || s.decision == Outcome::invalid)
        inconclusive = true;
    }
    if (k.outcome == Outcome::regressed) regressed = true;
    if (k.outcome == Outcome::invalid) inconclusive = true;
  }
  if (failed) return ExitCode::correctness;
  if (regressed) return ExitCode::regression;
  if (unchecked || (inconclusive && inconclusive_fails)) return ExitCode::inconclusive;
  return ExitCode::ok;
}

nlohmann::json to_json(const RunReport& report) {
  const auto& m = report.meta;
  json meta = {{"kgate_version", m.kgate_version},
               {"git_sha", m.git_sha},
               {"command", m.command},
               {"backend", m.backend},
               {"device", m.device},
               {"driver", m.driver},
               {"cuda", m.cuda},
               {"torch", m.torch},
               {"started_at", m.started_at},
               {"seconds", m.seconds},
               {"seed", m.seed},
               {"config", m.config},
               {"clocks", m.clocks}};
  if (!m.base.is_null()) meta["base"] = m.base;
  json kernels = json::array();
  for (const auto& k : report.kernels) {
    json speed = json::array();
    for (const auto& s : k.speed) speed.push_back(speed_json(s));
    json kernel = {{"name", k.name},
                   {"op", k.op},
                   {"backend", k.backend},
                   {"source", k.source},
                   {"outcome", outcome_name(k.outcome)},
                   {"message", k.message},
                   {"seconds", k.seconds},
                   {"correctness", correctness_json(k.correctness)},
                   {"speed", speed}};
    if (!k.worker_device.empty()) {
      kernel["worker"] = {{"device", k.worker_device},
                          {"start_s", number(k.worker_start_s)},
                          {"end_s", number(k.worker_end_s)}};
      if (k.worker_ordinal >= 0) kernel["worker"]["ordinal"] = k.worker_ordinal;
      if (k.worker_started_ahead_s >= 0)
        kernel["worker"]["started_ahead_s"] = number(k.worker_started_ahead_s);
    }
    if (k.worker_output_bytes > 0)
      kernel["worker_output"] = {{"text", k.worker_output},
                                 {"bytes", k.worker_output_bytes},
                                 {"dropped_bytes", k.worker_output_dropped_bytes}};
    if (!k.baseline.empty()) {
      kernel["baseline"] = {{"name", k.baseline}, {"source", k.baseline_source}};
      if (k.baseline_correctness)
        kernel["baseline"]["correctness"] = correctness_json(*k.baseline_correctness);
    }
    if (!k.base.is_null()) kernel["base"] = k.base;
    if (!k.launches.is_null()) kernel["launches"] = k.launches;
    if (!k.cost_s.empty()) {
      json cost = json::object();
      for (const auto& [phase, s] : k.cost_s) cost[phase] = number(s);
      kernel["cost_s"] = cost;
    }
    if (!k.cost_family_s.empty()) {
      json families = json::object();
      for (const auto& [family, sc] : k.cost_family_s)
        families[family] = {{"seconds", number(sc.first)}, {"cases", sc.second}};
      kernel["cost_family_s"] = families;
    }
    if (k.workload_variants > 0) {
      json w = {{"variants", k.workload_variants}, {"calls", k.workload_calls}};
      w["speedup_vs_eager"] =
          k.workload_speedup_vs_eager ? number(*k.workload_speedup_vs_eager) : json(nullptr);
      w["speedup_vs_baseline"] =
          k.workload_speedup_vs_baseline ? number(*k.workload_speedup_vs_baseline) : json(nullptr);
      kernel["workload"] = w;
    }
    kernels.push_back(std::move(kernel));
  }
  json out = {{"schema", kReportSchema},
              {"meta", meta},
              {"exit_code", static_cast<int>(report.exit_code(false))},
              {"kernels", kernels}};
  if (!report.removed.empty()) out["removed"] = report.removed;
  if (!report.not_checked.empty()) out["not_checked"] = report.not_checked;
  if (!report.google_benchmark.empty()) {
    json outputs = json::array();
    for (const auto& g : report.google_benchmark) outputs.push_back(to_json(g));
    out["google_benchmark"] = outputs;
  }
  return out;
}

RunReport merge_reports(const std::vector<RunReport>& shards,
                        const std::vector<std::string>& names) {
  if (shards.empty()) throw_usage("nothing to merge: give the shards' report.json files");
  if (names.size() != shards.size())
    throw Error(ErrorKind::internal, "merge_reports: one name per shard");
  RunReport out;
  out.meta = shards.front().meta;
  out.meta.seconds = 0;
  std::map<std::string, std::string> owner;  // kernel -> the file that holds it
  for (size_t i = 0; i < shards.size(); ++i) {
    const RunReport& r = shards[i];
    if (r.meta.seed != out.meta.seed)
      throw_usage(names[i] + " ran with seed " + std::to_string(r.meta.seed) + " but " +
                  names.front() + " with " + std::to_string(out.meta.seed) +
                  ": shards of one run share their seed (pass the same --seed)");
    const auto base_sha = [](const RunMeta& m) {
      return m.base.is_object() ? m.base.value("sha", std::string()) : std::string();
    };
    if (base_sha(r.meta) != base_sha(out.meta))
      throw_usage(names[i] + " was paired with base " +
                  (base_sha(r.meta).empty() ? "(none)" : base_sha(r.meta)) + " but " +
                  names.front() + " with " +
                  (base_sha(out.meta).empty() ? "(none)" : base_sha(out.meta)) +
                  ": shards of one run share their base build (the same --baseline-build)");
    if (r.meta.backend != out.meta.backend)
      throw_usage(names[i] + " ran on the " + r.meta.backend + " backend but " + names.front() +
                  " on " + out.meta.backend + ": shards of one run share their backend");
    for (const auto& k : r.kernels) {
      const auto [it, fresh] = owner.emplace(k.name, names[i]);
      if (!fresh)
        throw_usage("kernel '" + k.name + "' is in both " + it->second + " and " + names[i] +
                    ": each kernel belongs to one shard (same --shard twice, or overlapping "
                    "--kernel lists?)");
      out.kernels.push_back(k);
    }
    out.google_benchmark.insert(out.google_benchmark.end(), r.google_benchmark.begin(),
                                r.google_benchmark.end());
    if (i == 0) out.removed = r.removed;  // every shard lists the same removed kernels
    out.meta.seconds = std::max(out.meta.seconds, r.meta.seconds);
    if (out.meta.device.empty()) out.meta.device = r.meta.device;
  }
  // Not checked: what no shard checked, once.
  std::set<std::string> listed;
  for (const auto& r : shards)
    for (const auto& n : r.not_checked) {
      const std::string name = n.value("name", std::string());
      if (!owner.count(name) && listed.insert(name).second) out.not_checked.push_back(n);
    }
  out.meta.config["merged_from"] = names;
  return out;
}

RunReport report_from_json(const nlohmann::json& j) {
  const auto schema = j.value("schema", std::string());
  if (schema.rfind("kgate-report/1", 0) != 0)
    throw_usage("not a kgate report: \"schema\" is '" + schema + "', expected 'kgate-report/1'");
  RunReport r;
  const auto& m = j.at("meta");
  r.meta.kgate_version = m.value("kgate_version", std::string());
  r.meta.git_sha = m.value("git_sha", std::string());
  r.meta.command = m.value("command", std::string());
  r.meta.backend = m.value("backend", std::string());
  r.meta.device = m.value("device", std::string());
  r.meta.driver = m.value("driver", std::string());
  r.meta.cuda = m.value("cuda", std::string());
  r.meta.torch = m.value("torch", std::string());
  r.meta.started_at = m.value("started_at", std::string());
  r.meta.seconds = m.value("seconds", 0.0);
  r.meta.seed = m.value("seed", uint64_t{0});
  r.meta.config = m.value("config", json::object());
  r.meta.clocks = m.value("clocks", json::object());
  if (m.contains("base")) r.meta.base = m.at("base");
  for (const auto& kj : j.at("kernels")) {
    KernelReport k;
    k.name = kj.at("name").get<std::string>();
    k.op = kj.value("op", std::string());
    k.backend = kj.value("backend", std::string());
    k.source = kj.value("source", std::string());
    k.outcome = parse_outcome(kj.at("outcome").get<std::string>());
    k.message = kj.value("message", std::string());
    k.seconds = kj.value("seconds", 0.0);
    if (kj.contains("worker") && kj.at("worker").is_object()) {
      const auto& w = kj.at("worker");
      k.worker_device = w.value("device", std::string());
      k.worker_start_s = read_number(w, "start_s");
      k.worker_end_s = read_number(w, "end_s");
      k.worker_ordinal = w.value("ordinal", -1);
      k.worker_started_ahead_s = read_number(w, "started_ahead_s", -1);
    }
    if (kj.contains("worker_output")) {
      const auto& w = kj.at("worker_output");
      k.worker_output = w.value("text", std::string());
      k.worker_output_bytes = w.value("bytes", uint64_t{0});
      k.worker_output_dropped_bytes = w.value("dropped_bytes", uint64_t{0});
    }
    k.correctness = correctness_from(kj.at("correctness"));
    for (const auto& s : kj.value("speed", json::array())) k.speed.push_back(speed_from(s));
    if (kj.contains("baseline")) {
      const auto& b = kj.at("baseline");
      k.baseline = b.value("name", std::string());
      k.baseline_source = b.value("source", std::string());
      if (b.contains("correctness")) k.baseline_correctness = correctness_from(b.at("correctness"));
    }
    if (kj.contains("base")) k.base = kj.at("base");
    if (kj.contains("launches")) k.launches = kj.at("launches");
    if (const auto c = kj.find("cost_s"); c != kj.end() && c->is_object())
      for (const auto& [phase, s] : c->items())
        if (s.is_number()) k.cost_s[phase] = s.get<double>();
    if (const auto c = kj.find("cost_family_s"); c != kj.end() && c->is_object())
      for (const auto& [family, f] : c->items())
        if (f.is_object())
          k.cost_family_s[family] = {f.value("seconds", 0.0), f.value("cases", int64_t{0})};
    if (kj.contains("workload")) {
      const auto& w = kj.at("workload");
      k.workload_variants = w.value("variants", int64_t{0});
      k.workload_calls = w.value("calls", int64_t{0});
      if (w.contains("speedup_vs_eager") && !w.at("speedup_vs_eager").is_null())
        k.workload_speedup_vs_eager = read_number(w, "speedup_vs_eager");
      if (w.contains("speedup_vs_baseline") && !w.at("speedup_vs_baseline").is_null())
        k.workload_speedup_vs_baseline = read_number(w, "speedup_vs_baseline");
    }
    r.kernels.push_back(std::move(k));
  }
  if (j.contains("google_benchmark") && j.at("google_benchmark").is_array())
    for (const auto& g : j.at("google_benchmark"))
      r.google_benchmark.push_back(google_benchmark_from_json(g));
  if (j.contains("removed") && j.at("removed").is_array()) r.removed = j.at("removed");
  if (j.contains("not_checked") && j.at("not_checked").is_array())
    r.not_checked = j.at("not_checked");
  return r;
}

}  // namespace kgate
