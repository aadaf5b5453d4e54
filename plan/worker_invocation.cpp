// A worker's arguments from its description (worker_invocation.hpp).
#include "plan/worker_invocation.hpp"

#include <cstdio>
#include <utility>

namespace kgate::plan {

WorkerInvocation WorkerInvocation::of_target(const RunRequest& request, Backend backend,
                                             std::vector<std::string> parent_args, std::string only,
                                             std::string out_dir) {
  WorkerInvocation w;
  w.parent_args = std::move(parent_args);
  w.only = std::move(only);
  w.out_dir = std::move(out_dir);
  if (request.backend.empty() && request.packages.empty()) w.backend = backend_name(backend);
  return w;
}

std::vector<std::string> WorkerInvocation::args() const {
  std::vector<std::string> a = parent_args;
  a.insert(a.end(), {"--only", only, "--out", out_dir, "--in-worker"});
  if (task.run_comparisons > 0)
    a.insert(a.end(), {"--run-comparisons", std::to_string(task.run_comparisons)});
  if (task.growth_left_s >= 0) {
    char left[32];
    std::snprintf(left, sizeof left, "%.3f", task.growth_left_s);
    a.insert(a.end(), {"--growth-left", left});
  }
  if (device) a.insert(a.end(), {"--device", std::to_string(*device)});
  if (!task.device_share.empty()) a.insert(a.end(), {"--device-share", task.device_share});
  if (!backend.empty()) a.insert(a.end(), {"--backend", backend});
  if (task.resume_at > 0 || task.reference_copies_at >= 0)
    a.insert(a.end(), {"--resume-at", std::to_string(task.resume_at)});
  if (task.resumed_after_failure) a.push_back("--resumed-after-failure");
  if (task.reference_copies_at >= 0)
    a.insert(a.end(), {"--reference-copies-at", std::to_string(task.reference_copies_at)});
  if (observed_sizes) a.insert(a.end(), {"--observed-sizes", *observed_sizes});
  if (!one_case.empty()) a.insert(a.end(), {"--case", one_case, "--no-speed"});
  return a;
}

}  // namespace kgate::plan
