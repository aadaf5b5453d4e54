#include "runtime/cuda/cubin_digest.hpp"

#include <elf.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <vector>

#include "core/anonymous_names.hpp"
#include "core/sha256.hpp"

namespace kgate::cuda {
namespace {

struct Section {
  std::string name;
  Elf64_Shdr header{};
};

bool starts_with(const std::string& s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

// Sections that hold one function's parts, by prefix ("" when the section is not one).
constexpr std::string_view kPerFunction[] = {".text.", ".nv.info.", ".nv.shared.", ".nv.constant0.",
                                             ".nv.local."};

std::string function_of(const std::string& section) {
  if (starts_with(section, ".nv.shared.reserved."))
    return "";  // the module's reserved shared memory
  for (const auto prefix : kPerFunction)
    if (starts_with(section, prefix) && section.size() > prefix.size())
      return section.substr(prefix.size());
  return "";
}

// Sections that change with the build and not with what runs: names and symbols (numbered per
// file), line and debug information, tool notes, and the call graph and attributes tables that name
// functions by symbol number.
bool left_out(const std::string& name) {
  static const std::set<std::string> exact = {".shstrtab",     ".strtab",        ".symtab",
                                              ".symtab_shndx", ".nv.info",       ".nv.callgraph",
                                              ".nv.prototype", ".nv.rel.action", ".note.nv.tkinfo"};
  if (exact.count(name)) return true;
  for (const std::string_view prefix : {".debug", ".nv_debug", ".nv.debug"})
    if (starts_with(name, prefix)) return true;
  return false;
}

class Reader {
 public:
  explicit Reader(std::string_view bytes) : bytes_(bytes) {}

  std::string read() {
    if (bytes_.size() < sizeof(Elf64_Ehdr) || std::memcmp(bytes_.data(), ELFMAG, SELFMAG) != 0)
      return "not an ELF file";
    Elf64_Ehdr eh;
    std::memcpy(&eh, bytes_.data(), sizeof eh);
    if (eh.e_ident[EI_CLASS] != ELFCLASS64) return "not a 64-bit ELF file";
    if (eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shnum == 0 || eh.e_shstrndx >= eh.e_shnum ||
        eh.e_shoff > bytes_.size() ||
        static_cast<uint64_t>(eh.e_shnum) * sizeof(Elf64_Shdr) > bytes_.size() - eh.e_shoff)
      return "its section headers lie outside the file";
    sections_.resize(eh.e_shnum);
    for (size_t i = 0; i < sections_.size(); ++i)
      std::memcpy(&sections_[i].header, bytes_.data() + eh.e_shoff + i * sizeof(Elf64_Shdr),
                  sizeof(Elf64_Shdr));
    for (const auto& s : sections_)
      if (s.header.sh_type != SHT_NOBITS && !within(s.header.sh_offset, s.header.sh_size))
        return "a section lies outside the file";
    const std::string_view names = contents(sections_[eh.e_shstrndx].header);
    for (auto& s : sections_) s.name = string_at(names, s.header.sh_name);
    for (size_t i = 0; i < sections_.size(); ++i) {
      by_name_[sections_[i].name] = i;
      if (sections_[i].header.sh_type == SHT_SYMTAB) read_symbols(sections_[i].header);
      if (sections_[i].header.sh_type == SHT_REL || sections_[i].header.sh_type == SHT_RELA)
        relocations_for_[sections_[i].header.sh_info].push_back(&sections_[i]);
    }
    return "";
  }

  std::map<std::string, std::string> digests() const {
    // The module's part, shared by every function: what no function owns and nothing leaves out.
    Sha256 module;
    module.field("kgate-cubin-module/1");
    for (const auto& s : sections_) {
      if (s.name.empty() || left_out(s.name) || !function_of(s.name).empty()) continue;
      if (s.header.sh_type == SHT_REL || s.header.sh_type == SHT_RELA) {
        if (s.header.sh_info < sections_.size()) {
          const std::string& target = sections_[s.header.sh_info].name;
          if (left_out(target) || !function_of(target).empty())
            continue;  // a function's, or left out
        }
        module.field(s.name).field(relocations(s.header));
        continue;
      }
      add_section(module, s);
    }
    const std::string module_digest = module.hex();

    std::map<std::string, std::string> out;
    for (const auto& s : sections_) {
      if (!starts_with(s.name, ".text.") || s.name.size() <= 6) continue;
      const std::string name = s.name.substr(6);
      Sha256 h;
      h.field("kgate-cubin-function/1").field(name).field(module_digest);
      for (const auto& f : reached_from(name)) add_function(h, f);
      out[name] = h.hex();
    }
    return out;
  }

 private:
  struct Symbol {
    std::string name;
    uint16_t section = 0;
  };

  bool within(uint64_t offset, uint64_t size) const {
    return offset <= bytes_.size() && size <= bytes_.size() - offset;
  }
  std::string_view contents(const Elf64_Shdr& h) const {
    if (h.sh_type == SHT_NOBITS || !within(h.sh_offset, h.sh_size)) return {};
    return bytes_.substr(h.sh_offset, h.sh_size);
  }
  static std::string string_at(std::string_view table, uint64_t offset) {
    if (offset >= table.size()) return "";
    const char* p = table.data() + offset;
    return std::string(p, strnlen(p, table.size() - offset));
  }

  void read_symbols(const Elf64_Shdr& symtab) {
    const std::string_view strings = symtab.sh_link < sections_.size()
                                         ? contents(sections_[symtab.sh_link].header)
                                         : std::string_view();
    const std::string_view table = contents(symtab);
    for (size_t off = 0; off + sizeof(Elf64_Sym) <= table.size(); off += sizeof(Elf64_Sym)) {
      Elf64_Sym sym;
      std::memcpy(&sym, table.data() + off, sizeof sym);
      Symbol s{string_at(strings, sym.st_name), sym.st_shndx};
      // A section symbol is named by its section.
      if (s.name.empty() && ELF64_ST_TYPE(sym.st_info) == STT_SECTION &&
          sym.st_shndx < sections_.size())
        s.name = sections_[sym.st_shndx].name;
      symbols_.push_back(std::move(s));
    }
  }

  const Symbol* symbol(uint64_t index) const {
    return index < symbols_.size() ? &symbols_[index] : nullptr;
  }

  // A relocation section with its symbols named instead of numbered.
  std::string relocations(const Elf64_Shdr& h) const {
    const bool rela = h.sh_type == SHT_RELA;
    const size_t size = rela ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
    const std::string_view table = contents(h);
    std::string out;
    for (size_t off = 0; off + size <= table.size(); off += size) {
      Elf64_Rela r{};
      std::memcpy(&r, table.data() + off, size);
      const Symbol* s = symbol(ELF64_R_SYM(r.r_info));
      out += std::to_string(r.r_offset) + " " + std::to_string(ELF64_R_TYPE(r.r_info)) + " " +
             (rela ? std::to_string(r.r_addend) : std::string("-")) + " " +
             (s ? s->name : std::string("?")) + "\n";
    }
    return out;
  }

  // A function's attribute table (.nv.info.NAME) with the symbol numbers it holds replaced by the
  // symbols' names: they shift when another function or a debug section is added to the file.
  // Entries: a format byte, an attribute byte, then two bytes (formats 1 to 3: none, one or two
  // bytes of value, in a 4-byte entry) or a 16-bit size and that many bytes (format 4). The raw
  // bytes where it does not parse.
  std::string attributes(std::string_view info) const {
    constexpr uint8_t kParamCbank = 0x0a;  // {symbol of the parameter bank, offset, size}
    constexpr uint8_t kExterns = 0x0f;     // {symbol}...
    std::string out;
    size_t off = 0;
    while (off + 2 <= info.size()) {
      const auto format = static_cast<uint8_t>(info[off]);
      const auto attribute = static_cast<uint8_t>(info[off + 1]);
      off += 2;
      std::string_view value;
      if (format >= 1 && format <= 3) {
        if (off + 2 > info.size()) return std::string(info);
        value = info.substr(off, 2);
        off += 2;
      } else if (format == 4) {
        if (off + 2 > info.size()) return std::string(info);
        uint16_t n = 0;
        std::memcpy(&n, info.data() + off, 2);
        off += 2;
        if (off + n > info.size()) return std::string(info);
        value = info.substr(off, n);
        off += n;
      } else {
        return std::string(info);
      }
      out += std::to_string(format) + ":" + std::to_string(attribute) + "=";
      const bool numbered = format == 4 && (attribute == kParamCbank || attribute == kExterns);
      for (size_t i = 0; i < value.size(); i += 4) {
        if (numbered && (attribute == kExterns || i == 0) && i + 4 <= value.size()) {
          uint32_t index = 0;
          std::memcpy(&index, value.data() + i, 4);
          const Symbol* s = symbol(index);
          out += "<" + (s ? s->name : std::string("?")) + ">";
        } else {
          out += to_hex(value.substr(i, 4));
        }
      }
      out += "\n";
    }
    return off == info.size() ? out : std::string(info);
  }

  // The relocation sections that apply to section `target`.
  std::vector<const Section*> relocations_of(size_t target) const {
    const auto it = relocations_for_.find(target);
    return it == relocations_for_.end() ? std::vector<const Section*>() : it->second;
  }

  // `name` and every function its relocations reach, transitively.
  std::set<std::string> reached_from(const std::string& name) const {
    std::set<std::string> seen{name};
    std::vector<std::string> todo{name};
    while (!todo.empty()) {
      const std::string f = todo.back();
      todo.pop_back();
      const auto text = by_name_.find(".text." + f);
      if (text == by_name_.end()) continue;
      for (const Section* rel : relocations_of(text->second)) {
        const bool rela = rel->header.sh_type == SHT_RELA;
        const size_t size = rela ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel);
        const std::string_view table = contents(rel->header);
        for (size_t off = 0; off + size <= table.size(); off += size) {
          Elf64_Rela r{};
          std::memcpy(&r, table.data() + off, size);
          const Symbol* s = symbol(ELF64_R_SYM(r.r_info));
          if (!s || s->section >= sections_.size()) continue;
          const std::string callee = starts_with(sections_[s->section].name, ".text.")
                                         ? sections_[s->section].name.substr(6)
                                         : std::string();
          if (!callee.empty() && seen.insert(callee).second) todo.push_back(callee);
        }
      }
    }
    return seen;
  }

  void add_section(Sha256& h, const Section& s) const {
    h.field(s.name).field(std::to_string(s.header.sh_type));
    if (s.header.sh_type == SHT_NOBITS) h.field("size " + std::to_string(s.header.sh_size));
    else h.field(contents(s.header));
  }

  void add_function(Sha256& h, const std::string& f) const {
    h.field("function").field(f);
    for (const auto prefix : kPerFunction) {
      const auto it = by_name_.find(std::string(prefix) + f);
      if (it == by_name_.end()) continue;
      const Section& s = sections_[it->second];
      if (prefix == ".text.") {
        // The flags hold the register count; the code its bytes; the relocations name what it
        // calls.
        h.field(s.name)
            .field("flags " + std::to_string(s.header.sh_flags))
            .field(contents(s.header));
        for (const Section* rel : relocations_of(it->second))
          h.field(rel->name).field(relocations(rel->header));
      } else if (prefix == ".nv.constant0." || s.header.sh_type == SHT_NOBITS) {
        h.field(s.name).field("size " +
                              std::to_string(s.header.sh_size));  // parameter bank: its size
      } else if (prefix == ".nv.info.") {
        h.field(s.name).field(attributes(contents(s.header)));
      } else {
        add_section(h, s);
      }
    }
  }

  std::string_view bytes_;
  std::vector<Section> sections_;
  std::map<std::string, size_t> by_name_;
  std::vector<Symbol> symbols_;
  std::map<uint64_t, std::vector<const Section*>>
      relocations_for_;  // target section -> its relocations
};

}  // namespace

CubinFunctions cubin_function_digests(std::string_view cubin) {
  CubinFunctions out;
  // Anonymous-namespace names carry a hash of the source's path: the same code built elsewhere
  // must digest the same (the names, normalised, are also the keys).
  const std::string bytes = normalized_anonymous_names(cubin);
  Reader reader(bytes);
  out.error = reader.read();
  if (out.error.empty()) out.digests = reader.digests();
  return out;
}

}  // namespace kgate::cuda
