// kgate pack: a source package made self-contained. A package that kgate checks or validates reads
// no file outside its directory, but in a source tree several packages share headers. A *source*
// package may therefore list include directories outside it ("include_dirs": ["../../common"]);
// packing copies the package and those headers into a new directory, rewrites those entries to the
// copies, and records where every file came from and its SHA-256 (kgate-pack.json). The packed
// package is then an ordinary one: every path stays inside it. A package whose sources only nvcc
// compiles ("build") is compiled there into a fatbin it ships (nvcc_build.hpp).
#pragma once

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace kgate::package {

/// The record beside a packed package's manifest.
inline constexpr const char* kPackRecordFileName = "kgate-pack.json";

struct PackedFile {
  std::string path;    ///< in the packed package, relative to it
  std::string from;    ///< where it was copied from, relative to the source package
  std::string sha256;  ///< of its bytes
};

struct PackResult {
  std::vector<PackedFile> files;
  std::vector<std::string> rewritten;  ///< "include_dirs[1]: ../../common -> _packed/common"
  bool accepted = true;                ///< false: `accept` refused it, `out` is as it was
};

/// Packs the source package `src` into `out`. `out` must not exist, be an empty directory, or be an
/// earlier packed package (it holds kgate-pack.json), which is replaced; the new package is written
/// beside it and renamed into place, so a failure leaves `out` as it was. Throws Error(package)
/// with the manifest field and the fix for what cannot be packed (a missing file, an include
/// directory that is absolute or not a directory, a source outside the package: only include
/// directories may be outside). The packed package is not validated here (the caller does: kgate
/// pack validates it). `accept`, when given, is asked about the new package once it is at `out`,
/// the earlier one still kept aside: false puts `out` back as it was (absent, or the earlier
/// package) and sets PackResult::accepted to false, so a pack that fails its validation loses
/// nothing either.
PackResult pack_package(const std::filesystem::path& src, const std::filesystem::path& out,
                        const std::function<bool(const PackResult&)>& accept = {});

/// For a packed package (one with kgate-pack.json): each recorded file that is missing or whose
/// SHA-256 differs from the record ("_packed/common/kgate_device.cuh (changed)"), i.e. the package
/// was edited after packing. Empty when it is as packed, or not a packed package. An unreadable
/// record is one entry naming it.
std::vector<std::string> pack_drift(const std::filesystem::path& dir);

}  // namespace kgate::package
