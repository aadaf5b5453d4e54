// The passes that check a decoded manifest (manifest_source.hpp) and build its PackageManifest.
// check_manifest (manifest.cpp) runs them in the order below; each says what it reads from the
// ones before it. They share a CheckState: the problems found, the op looked up and the names
// that expressions may use.
//   manifest_names.cpp     the op and the names: attributes, options, guard dtypes, symbols,
//                          workspaces, output starts
//   manifest_launches.cpp  the launches (kernels, grids, arguments, conditions) and the guard
//   manifest_limits.cpp    what can never run: CUDA's limits for constants, expressions that fail
//                          for every call, and each launch at the largest call the guard admits
//   manifest_files.cpp     the files a package names: sources, binaries, include_dirs, op file,
//                          captured inputs (none are opened for a manifest checked from its bytes)
#pragma once

#include <cstddef>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "runtime/package/manifest.hpp"
#include "runtime/package/manifest_source.hpp"

namespace kgate::package::check {

using source::ManifestSource;
using source::Value;

struct CheckState {
  CheckState(const ManifestCheckOptions& options, PackageManifest& m, std::string file)
      : options(options), m(m), file(std::move(file)) {}

  const ManifestCheckOptions& options;
  PackageManifest& m;
  std::string file;  ///< the manifest's path, for problems
  /// The op the manifest names, once check_op found it in the catalogue (else its tensors and
  /// attributes are only checked for syntax).
  const OpSignature* op = nullptr;
  /// What integer expressions may name: the symbols, then integer attributes, built-in and device
  /// symbols.
  std::set<std::string, std::less<>> known_symbols;
  std::vector<std::string> declared_symbols;  ///< "symbols", in order
  std::set<std::string> workspace_names;
  std::vector<std::string> workspace_fields;  ///< of each workspace of m.workspace ("workspace[2]")
  std::vector<ManifestProblem> problems;      ///< at most kMaxProblems
  std::size_t dropped_problems = 0;

  void problem(const std::string& field, const std::string& message);
  /// The manifest's bytes came with the options: the files it names are not opened.
  bool files_unread() const { return options.manifest_text.has_value(); }

  // What several passes ask.
  std::vector<std::string> op_tensor_names() const;
  /// A tensor name of the op; false (with a problem) when the op has none of that name, false
  /// (silently) when it is not an identifier string (the schema said).
  bool check_tensor_name(const Value& v);
  /// A dtype name; nullopt (and a problem) when it is not one (floating_only: f16, bf16, f32, f64).
  std::optional<DType> dtype_at(const Value& v, bool floating_only);
  /// An integer expression (a string or an integer) whose symbols are known; `tensors`: it may
  /// also name the call's tensor symbols (guard.require, when.if).
  std::optional<Expr> expr_at(const Value& v, bool tensors = false);
  bool is_symbol(const std::string& name) const;
  std::string symbol_list() const;
};

using source::at;
using source::sub;

/// A list in a message, at most 24 items.
std::string join_capped(const std::vector<std::string>& items);
/// NVRTC options from the allow-list; the good ones are returned, the others reported.
std::vector<std::string> option_list(CheckState& st, const std::vector<Value>& options);
/// A dimension index the JSON reader holds as an unsigned number above 2^63 - 1 would read as a
/// negative one (18446744073709551615 as -1, the last dimension): refused, as any index outside
/// -8 to 7 is.
bool dimension_fits(CheckState& st, const Value& v);

// manifest_names.cpp, in order.
/// format, name, version, description and op; the op file (loaded when the options say how) and
/// the op in the catalogue (CheckState::op).
void check_op(const ManifestSource& s, CheckState& st);
/// "attributes": against the op's; reads st.op.
void check_attributes(const ManifestSource& s, CheckState& st);
void check_nvrtc_options(const ManifestSource& s, CheckState& st);
/// guard.dtypes and guard.ranks, which the symbols, per-dtype options and kernels are checked
/// against.
void check_guard_dtypes(const ManifestSource& s, CheckState& st);
void check_dtype_options(const ManifestSource& s, CheckState& st);
/// "symbols": their names (declared even when their binding is wrong) and bindings.
void check_symbols(const ManifestSource& s, CheckState& st);
/// guard.ranks against the ranks of the tensors the symbols bind.
void check_ranks_against_op(CheckState& st);
/// Integer attributes, built-in and device symbols join the names expressions may use.
void declare_expression_names(CheckState& st);
void check_workspace(const ManifestSource& s, CheckState& st);
void check_output_starts(const ManifestSource& s, CheckState& st);

// manifest_launches.cpp
void check_launches(const ManifestSource& s, CheckState& st);
/// guard.shapes, layouts, variants, require and unmatched.
void check_guard(const ManifestSource& s, CheckState& st);
/// A launch's when.layouts inside guard.layouts.
void check_when_layouts(CheckState& st);
/// Every output of the op passed to some kernel.
void check_outputs_bound(const ManifestSource& s, CheckState& st);

// manifest_limits.cpp
/// Evaluates `e` where it can be judged before any call: a constant is evaluated; an expression of
/// symbols is tried at a few values, and an error it gives at all of them is one it gives always.
/// Reports the error and returns nullopt; returns the value of a constant.
std::optional<int64_t> judge(CheckState& st, const Expr& e, const std::string& field);
/// More bytes than any GPU holds (2^48) for `elements` of `dtype`.
bool workspace_too_big(int64_t elements, DType dtype);
/// One launch's settings that can never run (CUDA's limits, expressions that always fail).
void check_launch_settings(CheckState& st, const Launch& launch, const std::string& field);
/// Launch settings and workspaces at the largest call the guard admits.
void check_launches_at_largest_call(const ManifestSource& s, CheckState& st);

// manifest_files.cpp
/// "sources" and the precompiled binaries.
void check_sources(const ManifestSource& s, CheckState& st);
/// After check_launches: each launch's own "cubin" files (Launch::cubins).
void check_launch_binaries(const ManifestSource& s, CheckState& st);
void check_include_dirs(const ManifestSource& s, CheckState& st);
void check_captured_inputs(const ManifestSource& s, CheckState& st);

}  // namespace kgate::package::check
