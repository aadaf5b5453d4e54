// References as people write them: `torch.nn.functional.softmax(x, dim=-1)`. kgate compiles op
// files' references with TorchScript's C++ frontend, where `torch.nn.functional` is not defined
// ("attribute lookup is not defined on builtin"); only `torch.*` (ATen's ops) is. A call of a
// `torch.nn.functional` name in a table of tested equivalents is rewritten to its ATen op, where
// the arguments given mean the same there; any other is refused, naming what to write instead. A
// blind rewrite would be wrong: F.softmax's third positional argument is `_stacklevel`,
// torch.softmax's is `dtype`; F.embedding takes (input, weight), torch.embedding (weight, input).
// Torch-free.
#pragma once

#include <string>
#include <vector>

namespace kgate {

/// The accepted names and what each becomes, one line each ("softmax(input, dim, dtype=) ->
/// torch.softmax"), for messages and the docs.
const std::vector<std::string>& functional_equivalents();

/// `source` with every call of a `torch.nn.functional` name rewritten to its ATen op. Line breaks
/// are kept, so TorchScript's line numbers still count in the source as written. A call that cannot
/// be rewritten is a problem ("line 3: torch.nn.functional.normalize is not accepted: ..."), listed
/// in `problems`; its text is left as it was.
std::string rewrite_functional_calls(const std::string& source, std::vector<std::string>* problems);

}  // namespace kgate
