// kgate merge: the shards of one run joined into one report, concluded as a run is.
#include "cli/commands.hpp"

#include <cstdio>
#include <filesystem>
#include <vector>

#include "cli/report_files.hpp"
#include "core/report.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

int run_merge(const MergeArgs& args) {
  std::vector<RunReport> shards;
  for (const auto& path : args.reports) shards.push_back(load_report(path));
  RunReport report = merge_reports(shards, args.reports);
  fs::create_directories(args.out_dir);
  std::printf("merged %zu report(s): %zu kernel(s)\n", shards.size(), report.kernels.size());
  return conclude(report, args.out_dir, args.inconclusive_fails);
}

}  // namespace kgate::cli
