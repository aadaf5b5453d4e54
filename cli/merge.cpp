// kgate merge: the shards of one run joined into one report, concluded as a run is.
#include "cli/commands.hpp"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <filesystem>
#include <vector>

#include "cli/report_files.hpp"
#include "core/report.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

CLI::App* add_merge_command(CLI::App& app, MergeArgs& args) {
  auto* cmd = app.add_subcommand(
      "merge",
      "Join the reports of the shards of one run (kgate check --shard i/n) into one, "
      "with the multiple-comparison correction over all of them");
  cmd->add_option("reports", args.reports, "The shards' report.json files")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--out", args.out_dir,
                  "Directory for the joined report.json, junit.xml and summary.md")
      ->capture_default_str();
  add_format_option(*cmd, args.formats, format_names(report::file_writers()));
  cmd->add_flag("--inconclusive-fails", args.inconclusive_fails,
                "Exit 3 when a speed decision is inconclusive");
  return cmd;
}

int run_merge(const MergeArgs& args) {
  std::vector<RunReport> shards;
  for (const auto& path : args.reports) shards.push_back(load_report(path));
  RunReport report = merge_reports(shards, args.reports);
  fs::create_directories(args.out_dir);
  std::printf("merged %zu report(s): %zu kernel(s)\n", shards.size(), report.kernels.size());
  return conclude(report, args.out_dir, args.inconclusive_fails,
                  chosen_writers(report::file_writers(), args.formats));
}

}  // namespace kgate::cli
