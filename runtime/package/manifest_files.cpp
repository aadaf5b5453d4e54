// The files a manifest names: sources, precompiled binaries, include_dirs and captured inputs,
// each inside the package and named once (manifest_check.hpp lists the passes). A manifest checked
// from its bytes (a package compiled into the build) opens none of them: its paths are taken as
// written.
#include <map>
#include <set>

#include "core/captured.hpp"
#include "core/error.hpp"
#include "core/safe_text.hpp"
#include "runtime/package/manifest_check.hpp"
#include "runtime/package/package_files.hpp"

namespace kgate::package::check {

namespace fs = std::filesystem;

namespace {

/// The usable paths of a list of package-relative paths, with their fields; `kind` selects include
/// dirs, sources or data files.
std::vector<Value> check_paths(CheckState& st, const source::PathList& list, PathKind kind) {
  std::vector<Value> out;
  if (list.count > kMaxPathEntries) {
    st.problem(list.key, "lists " + std::to_string(list.count) + " paths; expected at most " +
                             std::to_string(kMaxPathEntries));
    return out;
  }
  std::map<fs::path, std::string> seen_files;  // canonical path -> how the manifest named it
  for (const Value& v : list.paths) {
    const std::string& rel = v.text;
    if (st.files_unread()) {
      out.push_back(v);
      continue;
    }
    fs::path resolved;
    const std::string err = package_path_problem(st.m.dir, rel, kind, &resolved);
    if (!err.empty()) {
      // An include directory outside: a source package, which kgate pack makes self-contained.
      const bool outside = kind == PathKind::directory && climbs(rel);
      st.problem(
          v.field,
          err + (outside ? "; a source package whose include_dirs reach outside it is packed "
                           "first: kgate pack SRC OUT copies those headers in"
                         : ""));
      continue;
    }
    // Two names (links) of one file: 2,000 symbolic links to one source once took 4.4 GB.
    if (auto [pos, fresh] = seen_files.emplace(resolved, rel); !fresh) {
      st.problem(v.field, quote_untrusted(rel) + " is the same file as " +
                              quote_untrusted(pos->second) +
                              " (through a link); list each file once");
      continue;
    }
    out.push_back(v);
  }
  return out;
}

std::vector<std::string> texts(const std::vector<Value>& values) {
  std::vector<std::string> out;
  for (const auto& v : values) out.push_back(v.text);
  return out;
}

/// A precompiled binary's path, or "" (with a problem) when it is not a usable file of the package.
std::string binary_path(CheckState& st, const Value& v) {
  if (st.files_unread()) return v.text;
  const std::string err = package_path_problem(st.m.dir, v.text, PathKind::binary, nullptr);
  if (!err.empty()) {
    st.problem(v.field, err);
    return {};
  }
  return v.text;
}

}  // namespace

/// "cubin": {"sm_90": "k.sm_90.cubin"}, "fatbin": "k.fatbin", "ptx": "k.ptx": precompiled kernels,
/// then "sources".
void check_sources(const ManifestSource& s, CheckState& st) {
  for (const auto& b : s.cubins)
    if (auto path = binary_path(st, b.path); !path.empty()) st.m.cubins[b.arch] = path;
  if (s.fatbin) st.m.fatbin = binary_path(st, *s.fatbin);
  if (s.ptx) st.m.ptx = binary_path(st, *s.ptx);
  if (s.build_compiler) st.m.build_compiler = s.build_compiler->text;
  st.m.sources = texts(check_paths(st, s.sources, PathKind::source));
}

void check_launch_binaries(const ManifestSource& s, CheckState& st) {
  // check_launches made one Launch per LaunchSource, in order.
  for (std::size_t i = 0; i < s.launches.size() && i < st.m.launches.size(); ++i)
    for (const auto& b : s.launches[i].cubins)
      if (auto path = binary_path(st, b.path); !path.empty())
        st.m.launches[i].cubins[b.arch] = path;
}

void check_include_dirs(const ManifestSource& s, CheckState& st) {
  const auto dirs = check_paths(st, s.include_dirs, PathKind::directory);
  st.m.include_dirs = texts(dirs);
  if (st.files_unread()) return;
  std::size_t files = 0;
  std::uintmax_t bytes = 0;
  for (const Value& dir : dirs) {
    std::vector<PackageFile> headers;
    const std::string err = scan_include_dir(st.m.dir, dir.text, headers, files, bytes);
    if (!err.empty()) st.problem(dir.field, err);
  }
}

/// "captured_inputs": ["captured/llama_b4.safetensors"]: one call's input tensors per file, run
/// as fixed cases; each must fit the op (tensor names, dtypes, shapes; core/captured.hpp).
void check_captured_inputs(const ManifestSource& s, CheckState& st) {
  const auto files = texts(check_paths(st, s.captured_inputs, PathKind::data));
  const std::set<std::string> usable(files.begin(), files.end());
  for (const Value& v : s.captured_inputs.paths) {
    const std::string& rel = v.text;
    if (!usable.count(rel)) continue;
    if (rel.find(':') != std::string::npos) {
      st.problem(v.field, quote_untrusted(rel) +
                              " holds a ':', which case ids cannot carry; rename the file");
      continue;
    }
    if (st.op && !st.files_unread()) {
      try {
        captured_case(*st.op, rel, (st.m.dir / rel).string(), 0);
      } catch (const Error& e) {
        st.problem(v.field, e.what());
        continue;
      }
    }
    st.m.captured_inputs.push_back(rel);
  }
}

}  // namespace kgate::package::check
