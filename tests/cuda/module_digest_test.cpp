// Module code digests (runtime/cuda/module_digest.hpp) of one source built as a module object in
// two directories, with an anonymous namespace, a static and an external kernel: the same code has
// one digest, with line information (-lineinfo, -g -G) too, and a change of code has another. No
// GPU needed.
#include "runtime/cuda/module_digest.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kgate::cuda {
namespace {

std::string digest(const std::string& variant, const std::string& where) {
  const std::string d =
      module_code_digest(std::string(KGATE_TEST_CUBINS) + "/anon_" + variant + "_" + where + ".o");
  EXPECT_EQ(d.size(), 64u) << variant << " " << where << ": not built, or no ELF";
  return d;
}

TEST(ModuleDigest, OneSourceBuiltInTwoDirectoriesIsTheSameCode) {
  // nvcc names the anonymous namespace after the source's path (_GLOBAL__N__<hash>_...), in host
  // .rodata and in the CUBIN and PTX of .nv_fatbin.
  EXPECT_EQ(digest("plain", "one"), digest("plain", "two_deeper"));
  EXPECT_EQ(digest("lineinfo", "one"), digest("lineinfo", "two_deeper"));
  EXPECT_EQ(digest("debug", "one"), digest("debug", "two_deeper"));
}

TEST(ModuleDigest, AModuleWithNoExternalSymbolIsTheSameCodeToo) {
  // Its anonymous namespace's name ends "_<8 hex>_<digits>", new at every compile.
  const auto only = [](const std::string& name) {
    return module_code_digest(std::string(KGATE_TEST_CUBINS) + "/anon_only_" + name + ".o");
  };
  ASSERT_EQ(only("plain_one").size(), 64u);
  EXPECT_EQ(only("plain_one"), only("plain_two_deeper"));
  EXPECT_EQ(only("change_one"), only("change_two_deeper"));
  EXPECT_NE(only("plain_one"), only("change_one"));
}

TEST(ModuleDigest, TheSourcePathsLengthIsNoChange) {
  // Directories of 1 to 8 letters: the path in each fatbinary entry's header pads to 8 bytes, and
  // a PTX entry's options move with it.
  const std::string first = module_code_digest(std::string(KGATE_TEST_CUBINS) + "/anon_pad1.o");
  ASSERT_EQ(first.size(), 64u);
  for (int len = 2; len <= 8; ++len)
    EXPECT_EQ(module_code_digest(std::string(KGATE_TEST_CUBINS) + "/anon_pad" +
                                 std::to_string(len) + ".o"),
              first)
        << "directory of " << len << " letters";
}

TEST(ModuleDigest, AChangeOfCodeIsAChange) {
  EXPECT_NE(digest("change", "one"), digest("plain", "one"));
  EXPECT_EQ(digest("change", "one"), digest("change", "two_deeper"));
  // Device code compiled for debugging (-G) is other code.
  EXPECT_NE(digest("debug", "one"), digest("plain", "one"));
}

TEST(ModuleDigest, AFileThatIsNoElfHasNone) {
  EXPECT_EQ(module_code_digest(std::string(KGATE_TEST_CUBINS) + "/missing.o"), "");
}

TEST(ModuleDigest, SourcePathsInTheCodeMakeTwoBuildsDifferAndAreNamed) {
  // __FILE__ by its absolute path: the same code built in two directories is two digests, and
  // embedded_source_paths names the paths (check_plan's warning); mapped out, one digest.
  const std::string dir = KGATE_TEST_CUBINS;
  const auto object = [&](const std::string& name) { return dir + "/file_" + name + ".so"; };
  EXPECT_NE(module_code_digest(object("plain_one")),
            module_code_digest(object("plain_two_deeper")));
  EXPECT_EQ(embedded_source_paths(object("plain_one")),
            std::vector<std::string>{dir + "/one/file_paths.cpp"});
  EXPECT_EQ(embedded_source_paths(object("plain_two_deeper")),
            std::vector<std::string>{dir + "/two/deeper/file_paths.cpp"});
  EXPECT_EQ(module_code_digest(object("mapped_one")),
            module_code_digest(object("mapped_two_deeper")));
  EXPECT_TRUE(embedded_source_paths(object("mapped_one")).empty());
}

TEST(CanonicalPtx, DebugSectionsAndLineInformationGoCodeStays) {
  const std::string head =
      ".version 9.0\n.file 1 \"/a/k.cu\"\n.visible .entry k()\n{\n.loc 1 3 1\n  ret;\n}\n";
  const std::string debug = ".section .debug_str\n{\n  .b8 47,97,0\n}\n";
  EXPECT_EQ(canonical_ptx(head), ".version 9.0\n.visible .entry k()\n{\n  ret;\n}\n");
  // A debug section whose brace opens on the next line, then code: the code after it still counts.
  const std::string after = ".visible .entry m()\n{\n  ret;\n}\n";
  const std::string changed = ".visible .entry m()\n{\n  exit;\n}\n";
  EXPECT_EQ(canonical_ptx(head + debug + after), canonical_ptx(head) + after);
  EXPECT_NE(canonical_ptx(head + debug + after), canonical_ptx(head + debug + changed));
  EXPECT_EQ(canonical_ptx(head + ".section .debug_abbrev { .b8 1 }\n" + after),
            canonical_ptx(head) + after);
}

TEST(CanonicalFatbin, BytesItCannotReadStayAsTheyAre) {
  EXPECT_EQ(canonical_fatbin("not a fatbin at all"), "raw\nnot a fatbin at all");
}

}  // namespace
}  // namespace kgate::cuda
