// Anonymous-namespace names normalised (core/anonymous_names.hpp): the path's hash zeroed, the rest
// and the length kept.
#include "core/anonymous_names.hpp"

#include <gtest/gtest.h>

namespace kgate {
namespace {

TEST(AnonymousNames, TheHashAfterThePrefixIsZeroed) {
  // As nvcc mangles a kernel in an anonymous namespace of k.cu (the tail names a symbol of the
  // file).
  EXPECT_EQ(normalized_anonymous_names("_ZN34_GLOBAL__N__03702505_4_k_cu_launch4kernEPf"),
            "_ZN34_GLOBAL__N__00000000_4_k_cu_launch4kernEPf");
  EXPECT_EQ(normalized_anonymous_names(".text._ZN34_GLOBAL__N__85e457ab_4_k_cu_launch4kernEPf"),
            ".text._ZN34_GLOBAL__N__00000000_4_k_cu_launch4kernEPf");
}

TEST(AnonymousNames, AHashTailIsZeroedWhereTheNameEnds) {
  // A tail of 8 hex digits (no external symbol in the file), its end known from the mangled
  // length...
  EXPECT_EQ(normalized_anonymous_names(
                "_ZN55_GLOBAL__N__166114a4_22_CMakeCUDACompilerId_cu_bd57c6234kernEv"),
            "_ZN55_GLOBAL__N__00000000_22_CMakeCUDACompilerId_cu_000000004kernEv");
  // ... or from a character that cannot continue a name.
  EXPECT_EQ(
      normalized_anonymous_names(
          "#define _NV_ANON_NAMESPACE _GLOBAL__N__166114a4_22_CMakeCUDACompilerId_cu_bd57c623\n"),
      "#define _NV_ANON_NAMESPACE _GLOBAL__N__00000000_22_CMakeCUDACompilerId_cu_00000000\n");
  // A tail that is a name is kept.
  EXPECT_EQ(normalized_anonymous_names("_GLOBAL__N__166114a4_4_k_cu_launch)"),
            "_GLOBAL__N__00000000_4_k_cu_launch)");
}

TEST(AnonymousNames, AHashAndDigitsTailIsZeroed) {
  // A file whose every symbol is in the anonymous namespace
  // (examples/consumer/l2_normalize_warp.cu): nvcc ends the name with "_<8 hex>_<digits>", new at
  // every compile. Mangled, its end known from the length (the next component's length, 19, follows
  // at once)...
  EXPECT_EQ(normalized_anonymous_names("_ZN59_GLOBAL__N__35a48c4f_20_l2_normalize_warp_cu_0cd0217a_"
                                       "2351219normalize_rows_warpIfEEvPKT_PS1_llllf"),
            "_ZN59_GLOBAL__N__00000000_20_l2_normalize_warp_cu_00000000_"
            "0000019normalize_rows_warpIfEEvPKT_PS1_llllf");
  // ... or plain, ending where a name cannot go on.
  EXPECT_EQ(normalized_anonymous_names(
                "dispatch_floating<_GLOBAL__N__11930e8e_20_l2_normalize_warp_cu_0cb96671_24086::"),
            "dispatch_floating<_GLOBAL__N__00000000_20_l2_normalize_warp_cu_00000000_00000::");
  // A symbol's name that ends in digits is kept.
  EXPECT_EQ(normalized_anonymous_names("_GLOBAL__N__166114a4_4_k_cu_launch_2)"),
            "_GLOBAL__N__00000000_4_k_cu_launch_2)");
}

TEST(AnonymousNames, EverythingElseIsKept) {
  const std::string other = std::string("no names here\0_GLOBAL__N__xyz _GLOBAL__N__12", 44);
  EXPECT_EQ(normalized_anonymous_names(other), other);
  std::string bytes = "a _ZN34_GLOBAL__N__03702505_4_k_cu_launch4kernEPf b";
  const size_t length = bytes.size();
  normalize_anonymous_names(bytes);
  EXPECT_EQ(bytes.size(), length);
}

}  // namespace
}  // namespace kgate
