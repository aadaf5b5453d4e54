// kgate check's plan: the base, the packages, the backend, the kernels and their pairing, decided
// before anything runs (check_plan.hpp).
#include "cli/check_plan.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iterator>
#include <set>

#include "cli/output.hpp"
#include "core/captured.hpp"
#include "core/error.hpp"
#include "core/op_file.hpp"
#include "core/safetensors.hpp"
#include "core/sha256.hpp"
#include "references/catalogue.hpp"
#include "runtime/cuda/device.hpp"
#include "runtime/torch_op.hpp"

namespace kgate::cli {
namespace fs = std::filesystem;

const KernelInfo* CheckPlan::package_baseline(const LoadedPackage& p) const {
  if (baseline) return &baseline->kernel;
  const auto b = base_packages.find(p.kernel.name);
  return b == base_packages.end() ? nullptr : &b->second.kernel;
}

const KernelInfo* CheckPlan::base_of_kernel(const KernelInfo& k) const {
  const auto b = base_of.find(k.name);
  return b == base_of.end() ? nullptr : b->second;
}

int64_t CheckPlan::timed_pairs() const {
  // Against eager alone; against base and eager; or not at all (the base's code is the head's).
  const auto comparisons = [](const KernelInfo& k, const KernelInfo* b) -> int64_t {
    if (!b) return 1;
    return same_code(k, *b) ? 0 : 2;
  };
  int64_t pairs = 0;
  for (const auto& p : packages) pairs += comparisons(p.kernel, package_baseline(p));
  for (const KernelInfo* k : selected) pairs += comparisons(*k, base_of_kernel(*k));
  return pairs;
}

nlohmann::json CheckPlan::base_record(const KernelInfo& k, const KernelReport& kr,
                                      bool quiet) const {
  if (!base) return nullptr;
  const auto it = base_of.find(k.name);
  if (it == base_of.end()) return {{"status", "new"}};
  const KernelInfo& b = *it->second;
  // UNCHANGED where the pipeline said so (same code digest and, on the GPU, the same launches);
  // without a speed phase, where the code digests are equal.
  std::string status = "paired";
  const bool any_speed =
      std::any_of(kr.speed.begin(), kr.speed.end(),
                  [&](const SpeedComparison& s) { return s.baseline == b.name; });
  const bool unchanged_entry =
      std::any_of(kr.speed.begin(), kr.speed.end(), [&](const SpeedComparison& s) {
        return s.baseline == b.name && s.decision == Outcome::unchanged;
      });
  if (unchanged_entry || (!any_speed && same_code(k, b))) status = "unchanged";
  if (kr.baseline_correctness && kr.baseline_correctness->failed > 0) status = "base_failed";
  nlohmann::json record =
      kr.base.is_object() ? kr.base : nlohmann::json::object();  // the pipeline's (launches)
  record.update({{"name", b.name},
                 {"source", b.source},
                 {"module", base->module_of.at(b.name)},
                 {"digest", b.code_digest},
                 {"status", status}});
  // The base commit's op definition where it differs from the head's (op_file_differences): not an
  // error, both sides were judged under the head's; the report lists the fields.
  const std::string* head_text = op_file_text(k.op);  // the definition both were judged under
  if (const auto text = base->op_file_text.find(b.name);
      text != base->op_file_text.end() && head_text) {
    const auto fields = op_file_differences(text->second, *head_text);
    if (!fields.empty()) {
      record["op_file_changed"] = fields;
      std::string list;
      for (const auto& f : fields) list += (list.empty() ? "" : ", ") + f;
      if (!quiet)
        std::fprintf(stderr,
                     "kgate: %s: the base's op file differs from the head's in %s; both are judged "
                     "under the head's\n",
                     k.name.c_str(), list.c_str());
    }
  }
  return record;
}

// Why two builds of a torch library differ where their code may not: they hold the absolute paths
// of their sources (TORCH_LIBRARY and TORCH_CHECK record __FILE__) and the paths differ, file for
// file. "" when they do not.
static std::string source_paths_apart(const std::vector<std::string>& head,
                                      const std::vector<std::string>& base) {
  const auto paths = [](const std::vector<std::string>& files) {
    std::vector<std::string> out;
    for (const auto& f : files)
      for (auto& p : cuda::embedded_source_paths(f)) out.push_back(std::move(p));
    return out;
  };
  const auto h = paths(head), b = paths(base);
  if (h.empty() || b.empty() || h == b) return "";  // (sorted, as embedded_source_paths gives them)
  std::set<std::string> names_h, names_b;
  for (const auto& p : h) names_h.insert(fs::path(p).filename().string());
  for (const auto& p : b) names_b.insert(fs::path(p).filename().string());
  if (names_h != names_b) return "";
  std::vector<std::string> only_h, only_b;
  std::set_difference(h.begin(), h.end(), b.begin(), b.end(), std::back_inserter(only_h));
  std::set_difference(b.begin(), b.end(), h.begin(), h.end(), std::back_inserter(only_b));
  return "the head's and the base's torch libraries hold their sources' absolute paths (" +
         only_h.front() + " and " + only_b.front() +
         "), so the same code built in two directories differs and is timed: build both with "
         "-ffile-prefix-map=<source dir>=. (kgate_reproducible_paths(target) in CMake) for "
         "UNCHANGED to hold";
}

void load_base(const CheckArgs& args, CheckPlan& plan, std::vector<std::string>& readable) {
  // The base build, loaded before the sandbox (its modules are mapped executable).
  if (!args.baseline_build.empty()) {
    plan.base = load_base_build(args.baseline_build, KGATE_VERSION);
    // ci/gate.sh --against says why it has no base build to give (a ref it could not fetch or
    // build).
    if (const char* why = std::getenv("KGATE_BASE_ERROR"); why && *why && !plan.base->error.empty())
      plan.base->error = std::string(why) + " (" + plan.base->error + ")";
    if (!plan.base->error.empty() && args.require_base)
      throw_usage("--require-base: the base build cannot be used: " + plan.base->error);
    if (!plan.base->error.empty() && !args.in_worker())
      std::fprintf(
          stderr,
          "kgate: the base build cannot be used (%s): every kernel is gated against eager alone\n",
          plan.base->error.c_str());
    const HeadBuild head = head_build(KGATE_VERSION);
    plan.head_digests = head.digests;
    plan.head_build_record = head.build;
    // Built differently (another compiler, flags, build type or architectures): the comparison
    // measures the build as much as the change.
    if (plan.base->error.empty())
      for (const auto& d : build_differences(head.build, plan.base->build)) {
        if (args.require_base)
          throw_usage("--require-base: the base was built differently from the head: " + d);
        plan.base->warnings.push_back("the base was built differently from the head: " + d);
      }
    readable.push_back(args.baseline_build);
  }
  // The base of each torch op: its library built at the base commit, loaded under renamed
  // namespaces. Its code digest is the libraries' (a change anywhere in them times every op).
  if (!args.baseline_torch_libraries.empty()) {
    if (!plan.base) plan.base.emplace();
    for (const auto& p : args.baseline_torch_libraries)
      for (const auto& head : loaded_torch_libraries())
        if (fs::weakly_canonical(p) == fs::path(head))
          throw_usage("--baseline-torch-library " + p +
                      " is the head's library (--torch-library): give the base "
                      "commit's build of it");
    try {
      std::vector<std::string> old_libraries;
      for (const auto& p : args.baseline_torch_libraries)
        old_libraries.push_back(fs::absolute(p).string());
      const auto libraries_digest = [](const std::vector<std::string>& files) {
        std::string joined;
        for (const auto& f : files) {
          const std::string d = cuda::module_code_digest(f);
          if (d.empty()) return std::string();
          joined += d;
        }
        return sha256_hex(joined);
      };
      const std::string base_digest = libraries_digest(old_libraries);
      const std::string head_digest = libraries_digest(loaded_torch_libraries());
      if (!base_digest.empty() && base_digest != head_digest)
        if (const std::string why = source_paths_apart(loaded_torch_libraries(), old_libraries);
            !why.empty())
          plan.base->warnings.push_back(why);
      std::string listed;
      for (const auto& f : old_libraries) listed += (listed.empty() ? "" : ", ") + f;
      for (auto& k : base_torch_op_kernels(old_libraries)) {
        k.code_digest = base_digest;
        plan.head_digests[k.name] = head_digest;
        plan.base->module_of[k.name] = listed;
        plan.base->kernels[k.name] = std::move(k);
      }
      plan.base->torch_libraries = old_libraries;
    } catch (const Error& e) {
      if (args.require_base) throw;
      const std::string why = e.what();
      if (args.baseline_build.empty()) plan.base->error = why;
      else plan.base->warnings.push_back(why + " (the torch ops are gated against eager alone)");
      if (!args.in_worker())
        std::fprintf(stderr, "kgate: %s: the torch ops are gated against eager alone\n",
                     why.c_str());
    }
  }
}

std::optional<int> load_run_packages(const CheckArgs& args, CheckPlan& plan,
                                     kgate::plan::DeviceProbe& device) {
  // Packages first: an invalid package is a package error (exit 4), with or without a GPU (which
  // choose_backend says next).
  if (!args.request.packages.empty()) {
    const bool have_device = device.present();
    const std::string arch = !args.request.arch.empty() ? args.request.arch
                             : have_device              ? device_arch()
                                                        : "sm_90";
    auto loaded = load_packages(args.request.packages, arch, have_device, args.quiet);
    if (!loaded) return static_cast<int>(ExitCode::usage);
    plan.packages = std::move(*loaded);
    if (!args.baseline_package.empty()) {
      plan.baseline = load_package(args.baseline_package, arch, args.quiet);
      if (!plan.baseline) return static_cast<int>(ExitCode::usage);
      plan.baseline->kernel.name =
          plan.baseline->manifest.name + "@" + plan.baseline->manifest.version;
      for (const auto& p : plan.packages)
        if (p.manifest.op != plan.baseline->manifest.op)
          throw_usage("package " + p.manifest.name + " implements op '" + p.manifest.op +
                      "' but the baseline " + args.baseline_package + " implements '" +
                      plan.baseline->manifest.op + "': a baseline must implement the same op");
    }
    if (!args.baseline_packages.empty()) {
      // The base's tree: each package of the run paired with its namesake there, as a base.
      if (!args.baseline_package.empty())
        throw_usage(
            "--baseline-package and --baseline-packages: give one (a package for every package of "
            "the run, or a tree to find each one's namesake in)");
      if (!plan.base) plan.base.emplace();
      plan.base->dir = args.baseline_packages;
      for (const auto& [name, dir] : package_tree(args.baseline_packages)) {
        const auto head =
            std::find_if(plan.packages.begin(), plan.packages.end(),
                         [&](const LoadedPackage& p) { return p.manifest.name == name; });
        if (head == plan.packages.end()) {
          plan.base_packages_removed.push_back({{"name", name}, {"source", dir}});
          continue;
        }
        auto b = load_package(dir, arch, args.quiet);
        if (!b) return static_cast<int>(ExitCode::usage);
        if (b->manifest.op != head->manifest.op)
          throw_usage("package " + name + " implements op '" + head->manifest.op +
                      "' but its namesake in " + args.baseline_packages + " (" + dir +
                      ") implements '" + b->manifest.op + "': a base must implement the same op");
        b->kernel.name = b->manifest.name + "@" + b->manifest.version;
        plan.base->module_of[b->kernel.name] = dir;
        plan.base_packages.emplace(head->kernel.name, std::move(*b));
      }
    }
  }
  return std::nullopt;
}

std::optional<int> choose_backend(const CheckArgs& args, CheckPlan& plan,
                                  kgate::plan::DeviceProbe& device) {
  const kgate::plan::BackendChoice choice = kgate::plan::choose_backend(args.request, device);
  plan.backend = choice.backend;
  return announce(choice);
}

// A kernel of the build that this run's backend leaves out, with the command that checks it.
static void note_not_checked(const KernelInfo& k, CheckPlan& plan) {
  const std::string backend = backend_name(k.backend);
  plan.not_checked.push_back(
      {{"name", k.name},
       {"backend", backend},
       {"why", "a " + backend + " kernel; this run checks the " +
                   std::string(backend_name(plan.backend)) + " backend"},
       {"command", torch_op_memory_note(k.name)
                       ? "kgate check --backend " + backend + torch_op_repro_options(k.name)
                       : "kgate check --backend " + backend + " --kernel '" + k.name + "'"}});
}

void select_run_kernels(const CheckArgs& args, CheckPlan& plan) {
  if (args.request.kernels.empty()) {
    // Packages or torch ops named on the command line are what the run checks; otherwise every
    // in-tree kernel of the backend.
    if (plan.torch_ops) {
      for (const auto& k : registered_kernels())
        if (torch_op_memory_note(k.name) && k.backend == plan.backend) plan.selected.push_back(&k);
        else if (torch_op_memory_note(k.name)) note_not_checked(k, plan);
      if (plan.selected.empty())
        throw_usage(std::string("no --torch-op runs on the ") + backend_name(plan.backend) +
                    " backend (a cpu op is given as cpu/NS::OP=...)");
    } else if (plan.packages.empty()) {
      plan.selected = kgate::plan::select_kernels({}, plan.backend);
      for (const auto& k : registered_kernels())
        if (k.backend != plan.backend && !k.mutant && !torch_op_memory_note(k.name))
          note_not_checked(k, plan);
    }
  } else {
    plan.selected = kgate::plan::select_kernels(args.request.kernels, plan.backend);
  }
  if (plan.selected.empty() && plan.packages.empty())
    throw_usage(std::string("no kernels to check on the ") + backend_name(plan.backend) +
                " backend");
}

void pair_with_base(const CheckArgs& args, CheckPlan& plan) {
  // Pairing with the base build: each head kernel with its namesake (or its --pair), under the
  // head's code digest (a copy of the kernel that carries it).
  if (plan.base && plan.base->error.empty()) {
    std::map<std::string, std::string> pair_of;  // head -> base name
    for (const auto& p : args.pairs) {
      const auto eq = p.find('=');
      if (eq == std::string::npos || eq == 0 || eq + 1 == p.size())
        throw_usage("--pair " + p +
                    ": expected NEW=OLD (the head's kernel name, '=', its name in the base build)");
      pair_of[p.substr(0, eq)] = p.substr(eq + 1);
    }
    std::set<std::string> paired_bases;
    for (auto& k : plan.selected) {
      const auto named = pair_of.find(k->name);
      const std::string old_name = named == pair_of.end() ? k->name : named->second;
      const auto it = plan.base->kernels.find(old_name);
      if (it == plan.base->kernels.end()) {
        if (named != pair_of.end())
          throw_usage("--pair " + k->name + "=" + old_name + ": the base build has no kernel '" +
                      old_name + "'");
        continue;
      }
      if (it->second.op != k->op || it->second.backend != k->backend)
        throw_usage("kernel '" + k->name + "' (" + k->op + ", " + backend_name(k->backend) +
                    ") is paired with base '" + old_name + "' (" + it->second.op + ", " +
                    backend_name(it->second.backend) +
                    "): a base must implement the same op on the same backend");
      KernelInfo& copy = plan.with_digest.emplace_back(*k);
      const auto digest = plan.head_digests.find(k->name);
      copy.code_digest =
          digest == plan.head_digests.end() || args.time_unchanged ? std::string() : digest->second;
      k = &copy;
      plan.base_of[copy.name] = &it->second;
      paired_bases.insert(old_name);
    }
    // What the head dropped (a full run only: --kernel picks some on purpose).
    if (args.request.kernels.empty() && plan.packages.empty())
      for (const auto& [name, bk] : plan.base->kernels)
        if (!paired_bases.count(name) && bk.backend == plan.backend && !bk.mutant)
          plan.removed.push_back({{"name", name}, {"source", bk.source}});
  }
  // --baseline-packages: each package with its namesake's package (timed unless UNCHANGED).
  for (auto& p : plan.packages)
    if (const auto b = plan.base_packages.find(p.kernel.name); b != plan.base_packages.end()) {
      if (args.time_unchanged) p.kernel.code_digest.clear();
      plan.base_of[p.kernel.name] = &b->second.kernel;
    }
  for (const auto& r : plan.base_packages_removed) plan.removed.push_back(r);
}

void check_captured_files(const CheckArgs& args, const CheckPlan& plan) {
  for (const auto& f : args.options.captured) {
    std::vector<std::pair<std::string, std::string>> kernel_ops;  // (kernel, op)
    for (const KernelInfo* k : plan.selected) kernel_ops.emplace_back(k->name, k->op);
    for (const auto& p : plan.packages) kernel_ops.emplace_back(p.kernel.name, p.kernel.op);
    bool applies = false;
    for (const auto& [name, op] : kernel_ops) {
      if (!captured_cases(find_op(op), {f}, args.options.seed, name).empty()) applies = true;
    }
    if (!applies)
      throw_usage("--captured " + f.path + ": its __metadata__ names op '" +
                  read_safetensors_header(f.path).metadata.at("op") +
                  "', which no kernel of this run implements");
  }
}

namespace {

// Keeps the kernels and packages whose names `keep` accepts, in their order.
void keep_named(CheckPlan& plan, const std::function<bool(const std::string&)>& keep) {
  plan.selected.erase(std::remove_if(plan.selected.begin(), plan.selected.end(),
                                     [&](const KernelInfo* k) { return !keep(k->name); }),
                      plan.selected.end());
  plan.packages.erase(std::remove_if(plan.packages.begin(), plan.packages.end(),
                                     [&](const LoadedPackage& p) { return !keep(p.kernel.name); }),
                      plan.packages.end());
}

}  // namespace

void keep_share(const CheckArgs& args, CheckPlan& plan) {
  if (!args.request.shard.empty()) {  // this runner's share of the kernels and packages
    const kgate::plan::Shard shard = kgate::plan::parse_shard(args.request.shard);
    std::vector<std::string> names;
    for (const KernelInfo* k : plan.selected) names.push_back(k->name);
    for (const auto& p : plan.packages) names.push_back(p.kernel.name);
    const auto mine = kgate::plan::shard_names(names, shard);
    const std::set<std::string> kept(mine.begin(), mine.end());
    keep_named(plan, [&](const std::string& name) { return kept.count(name) > 0; });
    if (!args.quiet && !args.in_worker())
      std::fprintf(stderr, "kgate: shard %d/%d: %zu of %zu kernel(s)/package(s)%s\n", shard.index,
                   shard.count, mine.size(), names.size(),
                   mine.empty() ? " (nothing to check: an empty report is written)" : "");
  }
  if (!args.request.only.empty()) {  // a worker: keep only its kernel or package
    keep_named(plan, [&](const std::string& name) { return name == args.request.only; });
    if (plan.selected.size() + plan.packages.size() != 1)
      throw_usage("--only " + args.request.only + ": no such kernel or package in this run");
  }
}

}  // namespace kgate::cli
