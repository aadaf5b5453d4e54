#include "core/functional_names.hpp"

#include <algorithm>
#include <cctype>
#include <optional>

namespace kgate {
namespace {

struct Param {
  const char* name;  ///< in torch.nn.functional
  const char* aten;  ///< in the ATen op
};

struct Equivalent {
  const char* name;                 ///< torch.nn.functional.NAME
  const char* aten;                 ///< torch.ATEN
  std::vector<Param> params;        ///< positional or keyword, in order
  size_t required;                  ///< how many of params must be given
  std::vector<Param> keyword_only;  ///< keyword-only parameters passed on by keyword
  std::vector<Param> dropped;  ///< keywords dropped; `aten` holds the one value accepted ("" : any)
  bool swap_first_two = false;  ///< the ATen op takes the first two the other way round
  const char* note = "";        ///< why a third positional argument is refused, where it matters
};

const std::vector<Equivalent>& table() {
  static const std::vector<Equivalent> t = {
      {"softmax",
       "softmax",
       {{"input", "self"}, {"dim", "dim"}},
       2,
       {{"dtype", "dtype"}},
       {{"_stacklevel", ""}},
       false,
       "its third positional parameter is _stacklevel, not dtype: give dtype by keyword"},
      {"log_softmax",
       "log_softmax",
       {{"input", "self"}, {"dim", "dim"}},
       2,
       {{"dtype", "dtype"}},
       {{"_stacklevel", ""}},
       false,
       "its third positional parameter is _stacklevel, not dtype: give dtype by keyword"},
      {"gelu", "gelu", {{"input", "self"}}, 1, {{"approximate", "approximate"}}, {}},
      {"silu", "silu", {{"input", "self"}}, 1, {}, {{"inplace", "False"}}},
      {"relu", "relu", {{"input", "self"}}, 1, {}, {{"inplace", "False"}}},
      {"mish", "mish", {{"input", "self"}}, 1, {}, {{"inplace", "False"}}},
      {"hardswish", "hardswish", {{"input", "self"}}, 1, {}, {{"inplace", "False"}}},
      {"sigmoid", "sigmoid", {{"input", "self"}}, 1, {}, {}},
      {"tanh", "tanh", {{"input", "self"}}, 1, {}, {}},
      {"leaky_relu",
       "leaky_relu",
       {{"input", "self"}, {"negative_slope", "negative_slope"}},
       1,
       {},
       {{"inplace", "False"}}},
      {"elu", "elu", {{"input", "self"}, {"alpha", "alpha"}}, 1, {}, {{"inplace", "False"}}},
      {"softplus",
       "softplus",
       {{"input", "self"}, {"beta", "beta"}, {"threshold", "threshold"}},
       1,
       {},
       {}},
      {"layer_norm",
       "layer_norm",
       {{"input", "input"},
        {"normalized_shape", "normalized_shape"},
        {"weight", "weight"},
        {"bias", "bias"},
        {"eps", "eps"}},
       2,
       {},
       {}},
      {"rms_norm",
       "rms_norm",
       {{"input", "input"},
        {"normalized_shape", "normalized_shape"},
        {"weight", "weight"},
        {"eps", "eps"}},
       2,
       {},
       {}},
      {"group_norm",
       "group_norm",
       {{"input", "input"},
        {"num_groups", "num_groups"},
        {"weight", "weight"},
        {"bias", "bias"},
        {"eps", "eps"}},
       2,
       {},
       {}},
      {"linear", "linear", {{"input", "input"}, {"weight", "weight"}, {"bias", "bias"}}, 2, {}, {}},
      {"scaled_dot_product_attention",
       "scaled_dot_product_attention",
       {{"query", "query"},
        {"key", "key"},
        {"value", "value"},
        {"attn_mask", "attn_mask"},
        {"dropout_p", "dropout_p"},
        {"is_causal", "is_causal"},
        {"scale", "scale"},
        {"enable_gqa", "enable_gqa"}},
       3,
       {},
       {}},
      {"embedding",
       "embedding",
       {{"input", "indices"}, {"weight", "weight"}},
       2,
       {},
       {},
       true,
       "padding_idx, max_norm and the rest are not accepted (max_norm writes into the weight)"},
  };
  return t;
}

const std::string kPrefix = "torch.nn.functional.";

// The index of the ')' that closes the '(' at `open`, past strings and nested brackets; npos if
// none.
size_t closing(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '\'' || c == '"') {
      for (++i; i < s.size() && s[i] != c; ++i)
        if (s[i] == '\\') ++i;
      continue;
    }
    if (c == '#') {  // a comment, to the end of its line
      while (i < s.size() && s[i] != '\n') ++i;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') {
      if (--depth == 0) return c == ')' ? i : std::string::npos;
    }
  }
  return std::string::npos;
}

// The arguments between `open` and `close`, split at the commas outside brackets and strings.
std::vector<std::string> split_arguments(const std::string& s, size_t open, size_t close) {
  std::vector<std::string> out;
  int depth = 0;
  size_t start = open + 1;
  for (size_t i = open + 1; i < close; ++i) {
    const char c = s[i];
    if (c == '\'' || c == '"') {
      for (++i; i < close && s[i] != c; ++i)
        if (s[i] == '\\') ++i;
      continue;
    }
    if (c == '(' || c == '[' || c == '{') ++depth;
    if (c == ')' || c == ']' || c == '}') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(s.substr(start, i - start));
      start = i + 1;
    }
  }
  const std::string last = s.substr(start, close - start);
  if (last.find_first_not_of(" \t\r\n") != std::string::npos)
    out.push_back(last);  // (a trailing comma)
  return out;
}

std::string trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  const size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

// "name=value" at the top level of an argument (not "=="): the name, and the value in `value`.
std::optional<std::string> keyword_of(const std::string& arg, std::string* value) {
  const std::string t = trim(arg);
  size_t i = 0;
  if (t.empty() || !(std::isalpha(static_cast<unsigned char>(t[0])) || t[0] == '_'))
    return std::nullopt;
  while (i < t.size() && (std::isalnum(static_cast<unsigned char>(t[i])) || t[i] == '_')) ++i;
  size_t j = i;
  while (j < t.size() && (t[j] == ' ' || t[j] == '\t')) ++j;
  if (j >= t.size() || t[j] != '=' || (j + 1 < t.size() && t[j + 1] == '=')) return std::nullopt;
  *value = trim(t.substr(j + 1));
  return t.substr(0, i);
}

std::string accepted_names() {
  std::string out;
  for (const auto& e : table()) out += (out.empty() ? "" : ", ") + std::string(e.name);
  return out;
}

// The call's ATen form, or nullopt with the reason in `why`.
std::optional<std::string> rewrite(const Equivalent& e, const std::vector<std::string>& args,
                                   std::string* why) {
  std::vector<std::optional<std::string>> given(e.params.size());
  std::vector<std::pair<std::string, std::string>> extra;  // keyword-only, passed on
  size_t positional = 0;
  bool seen_keyword = false;
  for (const auto& a : args) {
    std::string value;
    if (const auto name = keyword_of(a, &value)) {
      seen_keyword = true;
      const auto p = std::find_if(e.params.begin(), e.params.end(),
                                  [&](const Param& q) { return *name == q.name; });
      if (p != e.params.end()) {
        const size_t i = static_cast<size_t>(p - e.params.begin());
        if (given[i]) return (*why = "'" + *name + "' is given twice"), std::nullopt;
        given[i] = value;
        continue;
      }
      const auto k = std::find_if(e.keyword_only.begin(), e.keyword_only.end(),
                                  [&](const Param& q) { return *name == q.name; });
      if (k != e.keyword_only.end()) {
        extra.emplace_back(k->aten, value);
        continue;
      }
      const auto d = std::find_if(e.dropped.begin(), e.dropped.end(),
                                  [&](const Param& q) { return *name == q.name; });
      if (d != e.dropped.end() && (std::string(d->aten).empty() || value == d->aten)) continue;
      if (d != e.dropped.end())
        return (*why = "'" + *name + "=" + value + "' is not accepted (only " + d->aten + ")"),
               std::nullopt;
      return (*why = "its parameter '" + *name + "' is not accepted" +
                     (*e.note ? std::string(": ") + e.note : "")),
             std::nullopt;
    }
    if (seen_keyword)
      return (*why = "a positional argument follows a keyword argument"), std::nullopt;
    if (positional >= e.params.size())
      return (*why = "it takes at most " + std::to_string(e.params.size()) +
                     " positional argument(s) here" + (*e.note ? std::string(": ") + e.note : "")),
             std::nullopt;
    given[positional++] = trim(a);
  }
  for (size_t i = 0; i < e.required; ++i)
    if (!given[i])
      return (*why = "'" + std::string(e.params[i].name) + "' must be given"), std::nullopt;
  std::vector<std::string> out;
  bool gap = false;
  std::vector<size_t> order(e.params.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  if (e.swap_first_two && order.size() >= 2) std::swap(order[0], order[1]);
  for (const size_t i : order) {
    if (!given[i]) {
      gap = true;
      continue;
    }
    out.push_back(gap ? std::string(e.params[i].aten) + "=" + *given[i] : *given[i]);
  }
  for (const auto& [name, value] : extra) out.push_back(name + "=" + value);
  std::string text = std::string("torch.") + e.aten + "(";
  for (size_t i = 0; i < out.size(); ++i) text += (i ? ", " : "") + out[i];
  return text;
}

}  // namespace

const std::vector<std::string>& functional_equivalents() {
  static const std::vector<std::string> lines = [] {
    std::vector<std::string> out;
    for (const auto& e : table()) {
      std::string sig = std::string(e.name) + "(";
      for (size_t i = 0; i < e.params.size(); ++i)
        sig += (i ? ", " : "") + std::string(e.params[i].name);
      for (const auto& k : e.keyword_only) sig += std::string(", ") + k.name + "=";
      out.push_back(sig + ") -> torch." + e.aten);
    }
    return out;
  }();
  return lines;
}

std::string rewrite_functional_calls(const std::string& source,
                                     std::vector<std::string>* problems) {
  std::string out;
  size_t pos = 0;
  while (true) {
    const size_t at = source.find(kPrefix, pos);
    if (at == std::string::npos) break;
    const size_t line_start =
        source.rfind('\n', at) == std::string::npos ? 0 : source.rfind('\n', at) + 1;
    const int line = 1 + static_cast<int>(std::count(source.begin(),
                                                     source.begin() + static_cast<long>(at), '\n'));
    // In a comment: left alone.
    if (source.find('#', line_start) < at) {
      out += source.substr(pos, at + kPrefix.size() - pos);
      pos = at + kPrefix.size();
      continue;
    }
    size_t name_end = at + kPrefix.size();
    while (name_end < source.size() &&
           (std::isalnum(static_cast<unsigned char>(source[name_end])) || source[name_end] == '_'))
      ++name_end;
    const std::string name = source.substr(at + kPrefix.size(), name_end - at - kPrefix.size());
    size_t open = name_end;
    while (open < source.size() && (source[open] == ' ' || source[open] == '\t')) ++open;
    const auto entry = std::find_if(table().begin(), table().end(),
                                    [&](const Equivalent& e) { return name == e.name; });
    const size_t close =
        open < source.size() && source[open] == '(' ? closing(source, open) : std::string::npos;
    std::string why;
    std::optional<std::string> call;
    if (entry == table().end())
      why =
          "is not accepted (references compile without Python, where torch.nn.functional is not "
          "defined); accepted: " +
          accepted_names() + "; elsewhere write the ATen op (torch." + name +
          "(...), where it exists) or the formula";
    else if (close == std::string::npos)
      why = "is not called here (kgate rewrites calls of it to torch." + std::string(entry->aten) +
            "(...))";
    else if (!(call = rewrite(*entry, split_arguments(source, open, close), &why)))
      why = "cannot be rewritten to torch." + std::string(entry->aten) + ": " + why;
    if (!call) {
      if (problems)
        problems->push_back("line " + std::to_string(line) + ": torch.nn.functional." + name + " " +
                            why);
      out += source.substr(pos, name_end - pos);
      pos = name_end;
      continue;
    }
    // The same number of line breaks, inside the parentheses: TorchScript's line numbers still
    // count in the source as written.
    const std::string original = source.substr(at, close + 1 - at);
    const auto breaks = std::count(original.begin(), original.end(), '\n') -
                        std::count(call->begin(), call->end(), '\n');
    out += source.substr(pos, at - pos) + *call +
           std::string(static_cast<size_t>(std::max<long>(0, breaks)), '\n') + ")";
    pos = close + 1;
  }
  out += source.substr(pos);
  return out;
}

}  // namespace kgate
