// Policy parsing and matching: the placeholder language none | all | globs.
#include <gtest/gtest.h>

#include "names.h"
#include "policy.h"

namespace blockrun {
namespace {

Policy parse_ok(const char* text) {
  std::string error;
  std::optional<Policy> policy = Policy::parse(text, &error);
  EXPECT_TRUE(policy.has_value()) << text << ": " << error;
  return policy.value_or(Policy());
}

std::string parse_error(const char* text) {
  std::string error;
  EXPECT_FALSE(Policy::parse(text, &error).has_value()) << text;
  return error;
}

TEST(Glob, MatchesShellStyle) {
  EXPECT_TRUE(glob_match("stencil", "stencil"));
  EXPECT_FALSE(glob_match("stencil", "stencil2"));
  EXPECT_TRUE(glob_match("*gemm*", "sm90_xmma_gemm_f32"));
  EXPECT_TRUE(glob_match("ker?el", "kernel"));
  EXPECT_TRUE(glob_match("k[a-f]rnel", "kernel"));
  EXPECT_FALSE(glob_match("k[!a-f]rnel", "kernel"));
  EXPECT_TRUE(glob_match("ns::*<float>", "ns::kernel<float>"));
  EXPECT_TRUE(glob_match("a\\*b", "a*b"));
  EXPECT_FALSE(glob_match("a\\*b", "axb"));
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_FALSE(glob_match("?", ""));
}

TEST(Glob, LongNamesDoNotBlowUp) {
  std::string name(1 << 20, 'a');
  EXPECT_FALSE(glob_match("*a*a*a*b", name));
  EXPECT_TRUE(glob_match("*a*a*a*", name));
}

TEST(PolicyParse, NoneAndAll) {
  EXPECT_EQ(parse_ok("none").mode(), Policy::Mode::None);
  EXPECT_EQ(parse_ok("").mode(), Policy::Mode::None);
  EXPECT_EQ(parse_ok(" all ").mode(), Policy::Mode::All);
  EXPECT_TRUE(parse_ok("none").blocks_nothing());
}

TEST(PolicyParse, GlobListKeepsCommasInsideBrackets) {
  Policy policy = parse_ok("stencil(float*, int), *gemm*, foo<int, float>");
  ASSERT_EQ(policy.globs().size(), 3u);
  EXPECT_EQ(policy.globs()[0], "stencil(float*, int)");
  EXPECT_EQ(policy.globs()[1], "*gemm*");
  EXPECT_EQ(policy.globs()[2], "foo<int, float>");
}

TEST(PolicyParse, RejectsMalformedInput) {
  EXPECT_EQ(parse_error("a,,b"), "empty entry in the list");
  EXPECT_EQ(parse_error("all,stencil"), "'all' must stand alone, not in a list");
  EXPECT_EQ(parse_error("sten[cil"), "unclosed '[' in 'sten[cil'");
}

TEST(PolicyMatch, MatchesBaseDemangledOrMangledName) {
  KernelName name = make_kernel_name("_Z7stencilPfPKfix");
  EXPECT_TRUE(parse_ok("stencil").blocks_kernel(name));
  EXPECT_TRUE(parse_ok("stencil(float*, float const*, int, long long)").blocks_kernel(name));
  EXPECT_TRUE(parse_ok("_Z7stencil*").blocks_kernel(name));
  EXPECT_FALSE(parse_ok("sten").blocks_kernel(name));
  EXPECT_FALSE(parse_ok("fill,scale").blocks_kernel(name));
  EXPECT_TRUE(parse_ok("all").blocks_kernel(name));
  EXPECT_FALSE(parse_ok("none").blocks_kernel(name));
}

TEST(PolicyMatch, LibraryCallsMatchByApiName) {
  EXPECT_TRUE(parse_ok("cublasSgemm*").blocks_library_call("cublasSgemm_v2"));
  EXPECT_FALSE(parse_ok("stencil").blocks_library_call("cublasSgemm_v2"));
  EXPECT_TRUE(parse_ok("all").blocks_library_call("cublasSgemm_v2"));
}

TEST(Names, BaseNameDropsParametersAndReturnType) {
  EXPECT_EQ(base_name("stencil(float*, int, long long)"), "stencil");
  EXPECT_EQ(base_name("void ns::kernel<float>(float*)"), "ns::kernel<float>");
  EXPECT_EQ(base_name("(anonymous namespace)::kern(int)"), "(anonymous namespace)::kern");
  EXPECT_EQ(base_name("f(void (*)(int))"), "f");
  EXPECT_EQ(base_name("sm90_xmma_gemm_f32f32"), "sm90_xmma_gemm_f32f32");
  EXPECT_EQ(base_name("void k<(int)1>(int)"), "k<(int)1>");
}

TEST(Names, DemanglesOnlyItaniumNames) {
  EXPECT_EQ(demangle("_Z7stencilPfix"), "stencil(float*, int, long long)");
  EXPECT_EQ(demangle("triton_poi_fused_add_0"), "triton_poi_fused_add_0");
  EXPECT_EQ(demangle("_Zbroken"), "_Zbroken");
  KernelName name = make_kernel_name("_Z6kernelIfEvPT_");
  EXPECT_EQ(name.demangled, "void kernel<float>(float*)");
  EXPECT_EQ(name.base, "kernel<float>");
}

}  // namespace
}  // namespace blockrun
