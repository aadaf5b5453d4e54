// What one kernel of a CUBIN runs, as a digest: its SASS and what the SASS reads of the module,
// without the parts that change with the build directory or with the other kernels of the file.
// Host code only (an ELF reader): it runs and is tested without a GPU.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace kgate::cuda {

/// Per-function digests of one CUBIN (an ELF of machine code for one architecture).
struct CubinFunctions {
  /// Function name (as the CUBIN spells it: mangled) -> 64 hex digits. Every function with code
  /// (a `.text.NAME` section) has one.
  std::map<std::string, std::string> digests;
  /// Why the bytes could not be read as a CUBIN; digests is empty then.
  std::string error;
};

/// A function's digest covers: its code (`.text.NAME` and its flags, which hold the register
/// count), its attributes (`.nv.info.NAME`), the sizes of its shared, local and parameter memory,
/// its relocations by symbol name, the same for every function its relocations reach (a
/// non-inlined callee), and the module's data (constant banks, initialised globals). It leaves
/// out line and debug information (`-lineinfo`, `-G`), symbol and string tables, the tool notes,
/// and the sections of functions it does not reach: one source built in two directories, or with
/// line information, gives the same digests, and a change to one kernel leaves another's digest
/// alone unless it shares data with it (or shifts the symbol numbers its attributes name).
/// Anonymous-namespace names are read normalised (core/anonymous_names.hpp), in the digests and
/// in the keys: launch records look a function up by its normalised name.
CubinFunctions cubin_function_digests(std::string_view cubin);

}  // namespace kgate::cuda
