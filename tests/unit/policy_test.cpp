// The policy language: parsing (with the position of what is wrong), every kind of term, precedence,
// exclusions, actions and the NCCL default.
#include <gtest/gtest.h>

#include "cuda/names.h"
#include "config/policy.h"

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

const KernelName kStencil = make_kernel_name("_Z7stencilPfPKfix");
const KernelName kFill = make_kernel_name("_Z4fillPfif");
const KernelName kNccl = make_kernel_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL");

LaunchFacts kernel_launch(const KernelName& name, uint64_t sequence = 1, uint64_t ordinal = 1) {
  LaunchFacts facts;
  facts.kernel = &name;
  facts.sequence = sequence;
  facts.kernel_ordinal = ordinal;
  return facts;
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
  EXPECT_TRUE(parse_ok("none").blocks_nothing());
  EXPECT_TRUE(parse_ok("").blocks_nothing());
  Policy all = parse_ok(" all ");
  EXPECT_FALSE(all.blocks_nothing());
  EXPECT_TRUE(all.blocks_kernel(kStencil));
  EXPECT_TRUE(all.per_kernel());
}

TEST(PolicyParse, RulesSplitAtTopLevelSeparators) {
  Policy policy = parse_ok("stencil(float*, float const*, int, long long); *gemm*, foo<int, float>");
  ASSERT_EQ(policy.describe_rules().size(), 3u);
  EXPECT_EQ(policy.describe_rules()[0], "stencil(float*, float const*, int, long long)");
  EXPECT_EQ(policy.describe_rules()[1], "*gemm*");
  EXPECT_EQ(policy.describe_rules()[2], "foo<int, float>");
  EXPECT_TRUE(policy.blocks_kernel(kStencil));
}

// Issue 19: a slip in a word of the policy ran the program without doing what was asked (`stencil abortt`
// blocked nothing: 'abortt' was a second kernel name that no launch has).
TEST(PolicyParse, AMisspelledWordIsRefusedWithTheWordMeant) {
  EXPECT_EQ(
      parse_error("stencil abortt"),
      "at 9 ('abortt'): not a word of the policy (did you mean 'abort'?); actions: block, block-device, "
      "block-alone, log; on error: return, abort, exit=N; for a kernel of that name write kernel=abortt");
  EXPECT_NE(parse_error("stencil blok").find("(did you mean 'block'?)"), std::string::npos);
  EXPECT_NE(parse_error("al").find("(did you mean 'all'?)"), std::string::npos);
  EXPECT_NE(parse_error("stencil retrun").find("(did you mean 'return'?)"), std::string::npos);
  EXPECT_EQ(
      parse_error("famly=cublas"),
      "at 1 ('famly=cublas'): unknown term 'famly=' (did you mean 'family='?); terms are kernel=, regex=, "
      "family=, library=, every=, thread=, stream=, after=, #N, NAME#N, thread#N");
  // A kernel really called so is written kernel=NAME; globs and names with '#' are never taken for words.
  EXPECT_TRUE(parse_ok("kernel=clock").blocks_kernel(make_kernel_name("clock")));
  parse_ok("stencil abort; fill log; blo* return; stencil#2 block-device");
}

TEST(PolicyParse, TwoKernelNamesInOneRuleAreTwoRules) {
  EXPECT_EQ(
      parse_error("stencil fill"),
      "at 9 ('fill'): a rule names one kernel, and 'stencil' is named already; to select both, write two "
      "rules: 'stencil; fill'");
  // A name and a keyed term narrow each other, as before.
  parse_ok("stencil kernel=*float*; stencil regex=sten");
}

TEST(PolicyParse, ErrorsNameThePositionAndWhatIsExpected) {
  EXPECT_EQ(parse_error("a;;b"), "at 3: empty rule");
  EXPECT_EQ(parse_error("stencil; none"), "at 10: 'none' must stand alone");
  EXPECT_EQ(parse_error("sten[cil"), "at 1 ('sten[cil'): unclosed '[' in 'sten[cil'");
  EXPECT_EQ(parse_error("stencil#x"),
            "at 1 ('stencil#x'): expected the kernel's launch number or range after '#' (stencil#13 or "
            "stencil#10-20)");
  EXPECT_EQ(parse_error("all; #20-10"),
            "at 6 ('#20-10'): expected a launch number or range after '#' (#1000 or #1000-2000)");
  EXPECT_EQ(parse_error("family=gpu"),
            "at 1 ('family=gpu'): family must be runtime, driver, cublas or graph");
  EXPECT_EQ(parse_error("stencil exit=300"), "at 9 ('exit=300'): exit status must be 0-255");
  EXPECT_EQ(
      parse_error("colour=red"),
      "at 1 ('colour=red'): unknown term 'colour='; terms are kernel=, regex=, family=, library=, every=, "
      "thread=, stream=, after=, #N, NAME#N, thread#N");
  EXPECT_EQ(parse_error("every=0"), "at 1 ('every=0'): expected a positive number after 'every='");
  EXPECT_EQ(parse_error("after=soon"),
            "at 1 ('after=soon'): expected a duration (500ms, 30s, 2m, 1h) after 'after='");
  EXPECT_EQ(parse_error("stream=zz"), "at 1 ('stream=zz'): expected a stream handle (0x...) after 'stream='");
  EXPECT_EQ(parse_error("!fill abort"), "at 7 ('abort'): an exclusion ('!') takes no action");
  EXPECT_EQ(parse_error("block"),
            "at 1 ('block'): a rule needs something to match (a kernel name, #N, family=, ... or all)");
  EXPECT_NE(parse_error("regex=(").find("at 1 ('regex=('): invalid regular expression"), std::string::npos);
  // Found by the fuzzer when std::regex matched: long numbers in back-references and {n,m}.
  EXPECT_EQ(
      parse_error("regex=f\\88888888888888888888"),
      "at 1 ('regex=f\\88888888888888888888'): invalid regular expression: back-references (\\1) are not "
      "supported: they cannot be matched in linear time (at offset 1)");
  EXPECT_EQ(
      parse_error("regex=a{1,99999999999}"),
      "at 1 ('regex=a{1,99999999999}'): invalid regular expression: repetition counts are limited to 1000 "
      "(at offset 4)");
}

TEST(PolicyMatch, KernelNamesByGlobAndRegex) {
  EXPECT_TRUE(parse_ok("stencil").blocks_kernel(kStencil));
  EXPECT_TRUE(parse_ok("kernel=stencil(float*, float const*, int, long long)").blocks_kernel(kStencil));
  EXPECT_TRUE(parse_ok("_Z7stencil*").blocks_kernel(kStencil));
  EXPECT_FALSE(parse_ok("sten").blocks_kernel(kStencil));
  EXPECT_TRUE(parse_ok("regex=^sten").blocks_kernel(kStencil));
  EXPECT_TRUE(parse_ok("regex=float\\sconst\\*").blocks_kernel(kStencil));  // terms split at blanks: \s
  EXPECT_FALSE(parse_ok("regex=^fill$").blocks_kernel(kStencil));
}

TEST(PolicyMatch, FirstMatchingRuleDecidesAndExclusionsWin) {
  Policy policy = parse_ok("!fill; all");
  EXPECT_FALSE(policy.blocks_kernel(kFill));
  EXPECT_TRUE(policy.blocks_kernel(kStencil));
  Policy reversed = parse_ok("all; !fill");  // `all` matches first
  EXPECT_TRUE(reversed.blocks_kernel(kFill));
  Decision decision = policy.decide(kernel_launch(kStencil));
  EXPECT_EQ(decision.rule, 1);
  EXPECT_EQ(policy.decide(kernel_launch(kFill)).rule, 0);
}

TEST(PolicyMatch, LaunchNumbersOrdinalsAndEveryN) {
  Policy range = parse_ok("#1000-2000");
  EXPECT_FALSE(range.per_kernel());
  EXPECT_FALSE(range.decide(kernel_launch(kFill, 999)).blocks());
  EXPECT_TRUE(range.decide(kernel_launch(kFill, 1000)).blocks());
  EXPECT_TRUE(range.decide(kernel_launch(kFill, 2000)).blocks());
  EXPECT_FALSE(range.decide(kernel_launch(kFill, 2001)).blocks());
  Policy nth = parse_ok("stencil#13");
  EXPECT_FALSE(nth.decide(kernel_launch(kStencil, 38, 12)).blocks());
  EXPECT_TRUE(nth.decide(kernel_launch(kStencil, 38, 13)).blocks());
  EXPECT_FALSE(nth.decide(kernel_launch(kFill, 38, 13)).blocks());
  // A '#' inside braces belongs to the name (lambdas demangle as `{lambda()#1}`).
  KernelName lambda = make_kernel_name("_ZZ4mainENKUlvE_clEv");
  EXPECT_EQ(lambda.demangled, "main::{lambda()#1}::operator()() const");
  EXPECT_TRUE(parse_ok("main::{lambda()#1}::operator()").blocks_kernel(lambda));
  EXPECT_TRUE(parse_ok("main::{lambda()#1}::operator()#1").decide(kernel_launch(lambda, 1, 1)).blocks());
  Policy every = parse_ok("every=100");
  EXPECT_TRUE(every.decide(kernel_launch(kFill, 300)).blocks());
  EXPECT_FALSE(every.decide(kernel_launch(kFill, 301)).blocks());
}

TEST(PolicyMatch, FamilyLibraryStreamThreadAndTime) {
  LaunchFacts facts = kernel_launch(kStencil);
  facts.family = LaunchFamily::Driver;
  EXPECT_TRUE(parse_ok("family=driver").decide(facts).blocks());
  EXPECT_FALSE(parse_ok("family=runtime").decide(facts).blocks());

  LaunchFacts unit;
  unit.family = LaunchFamily::Cublas;
  unit.library_api = "cublasSgemm_v2";
  unit.library_unit = true;
  EXPECT_TRUE(parse_ok("library=cublasSgemm*").decide(unit).blocks());
  EXPECT_TRUE(parse_ok("library=cublasSgemm*").decide(unit).named);
  EXPECT_TRUE(parse_ok("cublasSgemm_v2").decide(unit).blocks());  // by its API name, as before
  LaunchFacts inside = kernel_launch(kFill);
  inside.library_api = "cublasSgemm_v2";  // a kernel the call launched: `library=` selects the call, not it
  EXPECT_FALSE(parse_ok("library=cublasSgemm*").decide(inside).blocks());
  EXPECT_FALSE(parse_ok("all").decide(unit).named);

  facts.stream = reinterpret_cast<const void*>(0xabc0);
  EXPECT_TRUE(parse_ok("stream=0xabc0").decide(facts).blocks());
  EXPECT_FALSE(parse_ok("stream=0").decide(facts).blocks());
  facts.thread = 3;
  EXPECT_TRUE(parse_ok("thread=3").decide(facts).blocks());
  EXPECT_FALSE(parse_ok("thread=2").decide(facts).blocks());
  Policy later = parse_ok("after=30s");
  EXPECT_TRUE(later.uses_time());
  facts.elapsed_ms = 29999;
  EXPECT_FALSE(later.decide(facts).blocks());
  facts.elapsed_ms = 30000;
  EXPECT_TRUE(later.decide(facts).blocks());
  EXPECT_TRUE(parse_ok("after=500ms").decide(facts).blocks());
  EXPECT_FALSE(parse_ok("after=2m").decide(facts).blocks());
}

TEST(PolicyMatch, AllTermsOfARuleMustMatch) {
  Policy policy = parse_ok("stencil family=runtime #30-40");
  LaunchFacts facts = kernel_launch(kStencil, 38);
  EXPECT_TRUE(policy.decide(facts).blocks());
  facts.family = LaunchFamily::Driver;
  EXPECT_FALSE(policy.decide(facts).blocks());
}

TEST(PolicyActions, BlockDeviceLogAbortExit) {
  Decision device = parse_ok("stencil block-device").decide(kernel_launch(kStencil));
  EXPECT_EQ(device.action, Action::BlockDevice);
  EXPECT_TRUE(device.blocks());
  Decision logged = parse_ok("stencil log").decide(kernel_launch(kStencil));
  EXPECT_EQ(logged.action, Action::Log);
  EXPECT_FALSE(logged.blocks());
  Decision aborting = parse_ok("stencil abort").decide(kernel_launch(kStencil));
  EXPECT_EQ(aborting.on_error, OnError::Abort);
  EXPECT_EQ(aborting.action, Action::Block);
  Decision exiting = parse_ok("all exit=3").decide(kernel_launch(kFill));
  EXPECT_EQ(exiting.on_error, OnError::Exit);
  EXPECT_EQ(exiting.exit_status, 3);
  EXPECT_EQ(parse_ok("stencil return").decide(kernel_launch(kStencil)).on_error, OnError::Return);
}

// block-alone: a blocking action (the gate is the shim's: shim/launch_gate.h), which the policy says it has.
TEST(PolicyActions, BlockAloneBlocksAndIsTold) {
  Policy alone = parse_ok("stencil#13 block-alone abort; fill");
  EXPECT_TRUE(alone.blocks_alone());
  Decision decision = alone.decide(kernel_launch(kStencil, 38, 13));
  EXPECT_EQ(decision.action, Action::BlockAlone);
  EXPECT_TRUE(decision.blocks());
  EXPECT_EQ(decision.on_error, OnError::Abort);
  EXPECT_EQ(alone.decide(kernel_launch(kFill)).action, Action::Block);
  EXPECT_FALSE(parse_ok("stencil block-device; all").blocks_alone());
  EXPECT_EQ(
      parse_error("stencil block-alnoe"),
      "at 9 ('block-alnoe'): not a word of the policy (did you mean 'block-alone'?); actions: block, "
      "block-device, block-alone, log; on error: return, abort, exit=N; for a kernel of that name write "
      "kernel=block-alnoe");
}

// thread#N: the N-th launch of whichever host thread makes it, so that a rule finds the same launch when the
// threads interleave differently; with a kernel name, that kernel's launch there.
TEST(PolicyMatch, ALaunchByItsNumberAmongItsThreadsLaunches) {
  Policy policy = parse_ok("accumulate thread#31; thread#40-42");
  const KernelName accumulate = make_kernel_name("_Z10accumulatePfi");
  LaunchFacts facts = kernel_launch(accumulate, 100, 77);
  facts.thread_launch = 31;
  for (uint32_t thread : {1u, 2u, 3u}) {  // whichever thread it is
    facts.thread = thread;
    EXPECT_EQ(policy.decide(facts).rule, 0);
  }
  facts.thread_launch = 30;
  EXPECT_FALSE(policy.decide(facts).blocks());
  LaunchFacts other = kernel_launch(kFill, 5, 5);
  other.thread_launch = 31;
  EXPECT_FALSE(policy.decide(other).blocks()) << "thread#31 with a name is that kernel's only";
  other.thread_launch = 41;
  EXPECT_EQ(policy.decide(other).rule, 1);
  EXPECT_FALSE(policy.per_kernel());
  EXPECT_EQ(parse_error("accumulate thread#x"),
            "at 12 ('thread#x'): expected the thread's launch number or range after 'thread#' (thread#31 or "
            "thread#30-40)");
}

// The rule that pins candidates: a kernel several threads launch is named by its thread's launch number.
TEST(PinRule, AKernelOfSeveralThreadsIsPinnedByItsThreadsLaunchNumber) {
  EXPECT_EQ(
      pin_rule({{"accumulate", 0, 31}, {"accumulate", 0, 30}, {"stencil", 13, 0}, {"fill", 0, 0}}, false),
      "accumulate thread#31,accumulate thread#30,stencil#13,fill");
  EXPECT_EQ(pin_rule({{"accumulate", 0, 31}}, true), "all");
  // Every rule it makes parses, and blocks what it names.
  Policy pinned = parse_ok(pin_rule({{"accumulate", 0, 31}, {"stencil", 13, 0}}, false).c_str());
  const KernelName accumulate = make_kernel_name("_Z10accumulatePfi");
  LaunchFacts facts = kernel_launch(accumulate, 90, 60);
  facts.thread_launch = 31;
  EXPECT_TRUE(pinned.decide(facts).blocks());
}

TEST(PolicyNccl, NcclKernelsAreNotBlockedUnlessNamed) {
  EXPECT_TRUE(is_nccl_kernel(kNccl));
  EXPECT_FALSE(is_nccl_kernel(kStencil));
  EXPECT_FALSE(parse_ok("all").blocks_kernel(kNccl));
  EXPECT_FALSE(parse_ok("*").blocks_kernel(kNccl));
  EXPECT_TRUE(parse_ok("ncclDevKernel*").blocks_kernel(kNccl));
  EXPECT_TRUE(parse_ok("regex=^nccl").blocks_kernel(kNccl));
  EXPECT_FALSE(parse_ok("!ncclDev*; all").blocks_kernel(kNccl));  // an exclusion names it, but blocks nothing
}

// The engine decides with a cached per-kernel name mask and compiled bounds: the answers must be the
// same as deciding from scratch, for every kind of term.
TEST(PolicyCache, MaskedDecisionsEqualFullDecisions) {
  const char* policies[] = {"stencil#13 abort; !fill; all",
                            "#10-20; every=7; thread=2",
                            "family=driver stencil",
                            "regex=^s.*l$ #5-9",
                            "stream=0x10 block-device; fill log",
                            "after=1s; ncclDev*",
                            "library=cublas*; all",
                            "stencil #3-4 #4-8",
                            "thread=0",
                            "stencil thread#3-9 block-alone; thread#12; thread#1-4 thread#3-20"};
  const KernelName* kernels[] = {&kStencil, &kFill, &kNccl};
  for (const char* text : policies) {
    Policy policy = parse_ok(text);
    for (const KernelName* kernel : kernels) {
      uint64_t mask = policy.name_mask(*kernel);
      for (uint64_t sequence = 1; sequence < 30; ++sequence) {
        LaunchFacts facts = kernel_launch(*kernel, sequence, sequence % 15);
        facts.family = sequence % 2 ? LaunchFamily::Runtime : LaunchFamily::Driver;
        facts.thread = static_cast<uint32_t>(sequence % 3);
        facts.thread_launch = sequence / 2;
        facts.stream = reinterpret_cast<const void*>(sequence % 4 == 0 ? 0x10 : 0x20);
        facts.elapsed_ms = sequence * 100;
        Decision full = policy.decide(facts);
        facts.name_mask = &mask;
        facts.nccl = is_nccl_kernel(*kernel) ? 1 : 0;
        Decision cached = policy.decide(facts);
        EXPECT_EQ(cached.action, full.action) << text << " " << kernel->base << " #" << sequence;
        EXPECT_EQ(cached.rule, full.rule) << text << " " << kernel->base << " #" << sequence;
        EXPECT_EQ(cached.on_error, full.on_error) << text;
      }
    }
  }
}

TEST(Names, BaseNameDropsParametersAndReturnType) {
  EXPECT_EQ(base_name("stencil(float*, int, long long)"), "stencil");
  EXPECT_EQ(base_name("void ns::kernel<float>(float*)"), "ns::kernel<float>");
  EXPECT_EQ(base_name("(anonymous namespace)::kern(int)"), "(anonymous namespace)::kern");
  EXPECT_EQ(base_name("f(void (*)(int))"), "f");
  EXPECT_EQ(base_name("sm90_xmma_gemm_f32f32"), "sm90_xmma_gemm_f32f32");
  // A lambda's braces nest as the policy's terms do (one definition: opens_nesting): the blank inside them
  // is not the one before the name.
  EXPECT_EQ(base_name("void at::native::{lambda(int) const#1}::operator()(int)"),
            "at::native::{lambda(int) const#1}::operator()");
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

namespace blockrun {
namespace {

// Issue 17, F2: what std::regex took exponential or polynomial time on (or overflowed the stack with) is
// decided at once, on the names the probes used.
TEST(PolicyRegex, PatternsThatBacktrackedAreDecidedAtOnce) {
  for (const char* pattern : {"(x|x)*y", "(a|aa)*c", ".*.*.*z", "(a*)*b", "n+*y", "(a+)+b"}) {
    std::string error;
    std::optional<Policy> policy = Policy::parse(std::string("regex=") + pattern, &error);
    ASSERT_TRUE(policy) << pattern << ": " << error;
    KernelName kernel = make_kernel_name(std::string(100000, 'x').c_str());
    LaunchFacts facts;
    facts.kernel = &kernel;
    EXPECT_FALSE(policy->decide(facts).blocks()) << pattern;
  }
}

}  // namespace
}  // namespace blockrun

namespace blockrun {
namespace {

TEST(Nccl, TheCollectiveComesFromTheKernelName) {
  auto collective = [](const char* mangled) -> std::string {
    const char* found = nccl_collective(make_kernel_name(mangled));
    return found ? found : "(none)";
  };
  // NCCL 2.19+ (mangled, with its argument storage), and as some tools print them (unmangled).
  EXPECT_EQ(collective("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"),
            "AllReduce");
  EXPECT_EQ(collective("_Z44ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL24ncclDevKernelArgsStorageILm4096EE"),
            "ReduceScatter");
  EXPECT_EQ(collective("_Z36ncclDevKernel_Reduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE"),
            "Reduce");
  EXPECT_EQ(collective("_Z22ncclDevKernel_SendRecv24ncclDevKernelArgsStorageILm4096EE"), "SendRecv");
  EXPECT_EQ(collective("ncclDevKernel_Broadcast_RING_LL"), "Broadcast");
  // Older NCCL.
  EXPECT_EQ(collective("_Z39ncclKernel_AllGather_RING_LL_Sum_int8_t12ncclWorkElem"), "AllGather");
  EXPECT_EQ(collective("_Z33ncclAllReduceRingLLKernel_sum_f3214CollectiveArgs"), "AllReduce");
  // The generic kernels run whatever work they are given; other kernels are not NCCL's.
  EXPECT_EQ(collective("_Z21ncclDevKernel_Generic24ncclDevKernelArgsStorageILm4096EE"), "(none)");
  EXPECT_EQ(collective("_Z7stencilPfPKfix"), "(none)");
  EXPECT_EQ(collective("_Z9AllReducePf"), "(none)");
}

}  // namespace
}  // namespace blockrun

namespace blockrun {
namespace {

// The pin rule the first error's report suggests, as the policy parser reads it back.
TEST(PolicyPinRule, BlocksEachTargetOnItsOwn) {
  EXPECT_EQ(pin_rule({{"stencil", 13}, {"fill", 0}, {"stencil", 13}, {"cublasSgemm_v2", 0}}, false),
            "stencil#13,fill,cublasSgemm_v2");
  EXPECT_EQ(pin_rule({{"stencil", 13}}, true), "all");
  EXPECT_EQ(pin_rule({{"", 0}, {"cuGraphLaunch", 0}}, false), "cuGraphLaunch");
  std::string error;
  std::optional<Policy> policy = Policy::parse(pin_rule({{"stencil", 13}, {"fill", 0}}, false), &error);
  ASSERT_TRUE(policy) << error;
  KernelName stencil = make_kernel_name("_Z7stencilPfPKfix");
  LaunchFacts facts;
  facts.kernel = &stencil;
  facts.kernel_ordinal = 13;
  EXPECT_TRUE(policy->decide(facts).blocks());
  facts.kernel_ordinal = 12;
  EXPECT_FALSE(policy->decide(facts).blocks());
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
