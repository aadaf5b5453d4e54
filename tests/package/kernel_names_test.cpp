// Kernels of a binary named by their C++ names (runtime/package/kernel_names.hpp), and a fatbin's
// images read on the host (kernel_binary.hpp). The symbols are nvcc 13's for the fixture
// tests/precompiled/nvcc_norm.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/package/kernel_binary.hpp"
#include "runtime/package/kernel_names.hpp"

namespace kgate::package {
namespace {

const std::string kHalf = "_ZN5mylib4norm13RmsNormKernelILi8E6__halfEEvPKT0_S5_PS3_lf";
const std::string kFloat = "_ZN5mylib4norm13RmsNormKernelILi8EfEEvPKT0_S4_PS2_lf";
// Two overloads of one template, both instantiated for float.
const std::string kFill2 = "_ZN5mylib4norm4FillIfEEvPT_l";
const std::string kFill3 = "_ZN5mylib4norm4FillIfEEvPT_lS3_";

TEST(KernelNames, DemangledWithoutReturnTypeAndParameters) {
  EXPECT_EQ(kernel_cpp_name(kHalf), "mylib::norm::RmsNormKernel<8, __half>");
  EXPECT_EQ(kernel_cpp_name(kFloat), "mylib::norm::RmsNormKernel<8, float>");
  EXPECT_EQ(demangled_symbol(kFill2), "void mylib::norm::Fill<float>(float*, long)");
  EXPECT_EQ(kernel_cpp_name("softmax_pre_f16"), "softmax_pre_f16");  // extern "C": as it is
}

TEST(KernelNames, SpellingsAreNormalised) {
  EXPECT_EQ(normalised_kernel_name(" ns :: k < 8 , half > "), "ns::k<8,__half>");
  EXPECT_EQ(normalised_kernel_name("k<8u, uint32_t, std::int64_t, unsigned>"),
            "k<8,unsigned int,long,unsigned int>");
  EXPECT_EQ(normalised_kernel_name("k<(char)65, 0x10, long int, signed int>"), "k<65,16,long,int>");
  EXPECT_EQ(normalised_kernel_name("::k<nv_bfloat16, uint8_t, size_t>"),
            "k<__nv_bfloat16,unsigned char,unsigned long>");
  // A name that merely contains a type's name is left alone.
  EXPECT_EQ(normalised_kernel_name("my::half_kernel<halfway>"), "my::half_kernel<halfway>");
}

TEST(KernelNames, CppNamesFindTheirSymbol) {
  const std::vector<std::string> symbols = {kFill2, kFill3, kFloat, kHalf};
  for (const std::string name :
       {"mylib::norm::RmsNormKernel<8, __half>", "mylib::norm::RmsNormKernel<8, half>",
        "mylib::norm::RmsNormKernel<8u,half>", "::mylib::norm::RmsNormKernel< 8 , __half >"})
    EXPECT_EQ(match_kernel_name(name, symbols), std::vector<std::string>{kHalf}) << name;
  EXPECT_EQ(match_kernel_name("mylib::norm::RmsNormKernel<8, float>", symbols),
            std::vector<std::string>{kFloat});
  // A symbol names itself, as before.
  EXPECT_EQ(match_kernel_name(kFloat, symbols), std::vector<std::string>{kFloat});
}

TEST(KernelNames, AMissingNameListsTheCandidates) {
  const std::vector<std::string> symbols = {kFill2, kFill3, kFloat, kHalf};
  const std::string name = "mylib::norm::RmsNormKernel<4, float>";
  const auto matches = match_kernel_name(name, symbols);
  EXPECT_TRUE(matches.empty());
  const std::string message = kernel_name_problem(name, matches, symbols, "k.fatbin");
  EXPECT_NE(message.find("kernel \"mylib::norm::RmsNormKernel<4, float>\" is not in \"k.fatbin\"; "
                         "did you mean \"mylib::norm::RmsNormKernel<8, float>\"?"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("\"mylib::norm::RmsNormKernel<8, __half>\""), std::string::npos)
      << message;
  EXPECT_NE(message.find("\"mylib::norm::Fill<float>\""), std::string::npos) << message;
}

TEST(KernelNames, OverloadsAreAmbiguousUnlessTheParametersAreGiven) {
  const std::vector<std::string> symbols = {kFill2, kFill3, kFloat};
  const auto matches = match_kernel_name("mylib::norm::Fill<float>", symbols);
  ASSERT_EQ(matches.size(), 2u);
  const std::string message =
      kernel_name_problem("mylib::norm::Fill<float>", matches, symbols, "k.fatbin");
  EXPECT_NE(message.find("names 2 kernels of \"k.fatbin\""), std::string::npos) << message;
  EXPECT_NE(message.find("mylib::norm::Fill<float>(float*, long)"), std::string::npos) << message;
  EXPECT_NE(message.find(kFill3), std::string::npos) << message;
  EXPECT_EQ(match_kernel_name("mylib::norm::Fill<float>(float*, int64_t, float*)", symbols),
            std::vector<std::string>{kFill3});
}

/// A fatbin of two images: an uncompressed "CUBIN" (its bytes only) and an LZ4-compressed PTX.
std::string fatbin_of(const std::string& elf, const std::string& ptx_lz4, std::size_t ptx_size) {
  const auto le = [](uint64_t v, int bytes) {
    std::string s;
    for (int i = 0; i < bytes; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
    return s;
  };
  const auto entry = [&](uint16_t kind, const std::string& payload, uint64_t flags, uint64_t full) {
    std::string e = le(kind, 2) + le(0x0101, 2) + le(0x40, 4) + le(payload.size(), 8) +
                    le(payload.size(), 4) + le(0, 4) + le(0x10008, 4) + le(90, 4) + le(0, 8) +
                    le(flags, 8) + le(0, 8) + le(full, 8);
    return e + payload;
  };
  const std::string entries = entry(2, elf, 0x11, 0) + entry(1, ptx_lz4, 0x11 | 0x2000, ptx_size);
  return le(0xBA55ED50, 4) + le(1, 2) + le(16, 2) + le(entries.size(), 8) + entries;
}

/// One LZ4 sequence: literals, then (unless `match` is 0) a copy of `match` bytes from `offset`
/// back.
std::string lz4_sequence(const std::string& literals, std::size_t offset, std::size_t match) {
  const auto length = [](std::size_t n, std::string& out) {  // the bytes past a nibble of 15
    for (n -= 15; n >= 255; n -= 255) out.push_back(static_cast<char>(255));
    out.push_back(static_cast<char>(n));
  };
  std::string out;
  const std::size_t m = match ? match - 4 : 0;
  out.push_back(static_cast<char>((std::min<std::size_t>(literals.size(), 15) << 4) |
                                  std::min<std::size_t>(m, 15)));
  if (literals.size() >= 15) length(literals.size(), out);
  out += literals;
  if (!match) return out;
  out.push_back(static_cast<char>(offset & 0xff));
  out.push_back(static_cast<char>(offset >> 8));
  if (m >= 15) length(m, out);
  return out;
}

TEST(Fatbin, ImagesAreReadAndLz4Decompressed) {
  const std::string head = ".version 8.0\n.target sm_90\n", entry = ".entry k_f32(\n)\n{\n}\n";
  const std::string ptx = head + entry + entry;
  // The second .entry block as a copy of the first, but its last 5 bytes (literals end a block).
  const std::string lz4 = lz4_sequence(head + entry, entry.size(), entry.size() - 5) +
                          lz4_sequence(entry.substr(entry.size() - 5), 0, 0);
  const std::string fatbin = fatbin_of("not an elf", lz4, ptx.size());
  const auto images = fatbin_images(fatbin);
  ASSERT_TRUE(images);
  ASSERT_EQ(images->size(), 2u);
  EXPECT_FALSE((*images)[0].ptx);
  EXPECT_EQ((*images)[0].arch, 90u);
  EXPECT_EQ((*images)[0].data, "not an elf");
  EXPECT_TRUE((*images)[1].ptx);
  EXPECT_FALSE((*images)[1].compressed);
  EXPECT_EQ((*images)[1].data, ptx);
  const auto names = fatbin_kernel_names(fatbin, 90);
  ASSERT_TRUE(names);
  EXPECT_EQ(*names, std::vector<std::string>{"k_f32"});  // (each name once)
  // A broken LZ4 stream: the image is unreadable, not misread.
  const auto broken = fatbin_images(fatbin_of("not an elf", lz4.substr(0, 9), ptx.size()));
  ASSERT_TRUE(broken);
  EXPECT_TRUE((*broken)[1].compressed);
  EXPECT_FALSE(
      fatbin_images("\x7f"
                    "ELF and more bytes than a header"));
}

}  // namespace
}  // namespace kgate::package
