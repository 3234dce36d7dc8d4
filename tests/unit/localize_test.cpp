// Reading report records (src/readers/report_json.h) and the --localize logic over them
// (src/readers/localize.h).
#include <gtest/gtest.h>

#include "report_json.h"
#include "localize.h"

namespace blockrun {
namespace {

TEST(JsonRead, ReadsEveryKindOfValue) {
  std::optional<Json> value = parse_json(
      R"( {"a": [1, -2.5e3, true, false, null], "s": "x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00", "o": {}} )");
  ASSERT_TRUE(value);
  const Json* a = member(*value, "a");
  ASSERT_TRUE(a && a->is_array());
  ASSERT_EQ(a->size(), 5u);
  EXPECT_EQ(number_or((*a)[0]), 1);
  EXPECT_EQ(number_or((*a)[1]), -2500);
  EXPECT_TRUE((*a)[2].is_boolean() && (*a)[2].get<bool>());
  EXPECT_TRUE((*a)[3].is_boolean());
  EXPECT_TRUE((*a)[4].is_null());
  EXPECT_EQ(string_member(*value, "s"), "x\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80");
  EXPECT_TRUE(member(*value, "o")->is_object());
  EXPECT_EQ(member(*value, "missing"), nullptr);
  EXPECT_EQ(string_member(*value, "a", "fallback"), "fallback");  // not a string
  EXPECT_EQ(number_member(*value, "s", 7), 7);
  EXPECT_EQ(object_member(*value, "o"), member(*value, "o"));
  EXPECT_EQ(object_member(*value, "a"), nullptr);  // an array, not an object
  EXPECT_EQ(array_member(*value, "a"), member(*value, "a"));
  EXPECT_EQ(array_member(*value, "missing"), nullptr);
  EXPECT_EQ(whole_member(*parse_json(R"({"seq": 38, "big": 1e15})"), "seq"), "38");
  EXPECT_EQ(whole_member(*parse_json(R"({"seq": 38, "big": 1e15})"), "big"), "1000000000000000");
}

TEST(JsonRead, RefusesWhatIsNotJson) {
  for (const char* text :
       {"", "{", "[1,]", "{\"a\" 1}", "01", "1.", "-", "\"\\x\"", "\"a\nb\"", "tru", "{} x", "\"\\ud800\"",
        "\"\\udc00\"", "[1 2]", "{\"a\":1,}", "\xEF\xBB\xBF{}", "\"\xFF\""}) {
    std::string error;
    EXPECT_FALSE(parse_json(text, &error)) << text;
    EXPECT_FALSE(error.empty()) << text;
  }
  EXPECT_FALSE(parse_json("1e400"));  // JSON, but past a double's range: nlohmann refuses it
  std::string deep(100, '[');
  EXPECT_FALSE(parse_json(deep + std::string(100, ']')));
  std::string fine(60, '[');
  EXPECT_TRUE(parse_json(fine + std::string(60, ']')));
  // The limit exactly: 64 arrays around the innermost, and no value inside that.
  EXPECT_TRUE(parse_json(std::string(65, '[') + std::string(65, ']')));
  EXPECT_FALSE(parse_json(std::string(66, '[') + std::string(66, ']')));
  EXPECT_FALSE(parse_json(std::string(65, '[') + "1" + std::string(65, ']')));
}

// clang-format off
const char* kUnpinned = R"json({"type":"first_error","time":20.5,"error":"cudaErrorIllegalAddress","code":700,"message":"an illegal memory access was encountered","surfaced_api":"cudaMemcpy","how":"surfaced at a later call","certainty":"suspects","launch":null,"suspects":[{"seq":53,"kernel":"stencil(float*)","kernel_base":"stencil","kernel_launch":18,"stream":"0x0"},{"seq":54,"kernel":"scale(float*)","kernel_base":"scale","kernel_launch":18,"stream":"0x0"}],"pin_rule":"stencil,scale"})json";
const char* kPinned = R"json({"type":"first_error","time":30,"error":"cudaErrorIllegalAddress","code":700,"message":"an illegal memory access was encountered","surfaced_api":"cudaStreamSynchronize","how":"blocking synchronize after the launch","certainty":"exact","launch":{"seq":38,"kernel":"stencil(float*)","kernel_base":"stencil","kernel_launch":13,"stream":"0x0","grid":[4096,1,1],"block":[256,1,1],"shared_memory":1024,"callsite":{"function":"run","file":"/src/app.cu","line":22,"module":"/bin/app","offset":"0x10"},"python_callsite":{"file":"train.py","line":8,"function":"pick"}},"suspects":[],"pin_rule":null})json";
// clang-format on

RunFinding finding(std::vector<std::pair<std::string, std::string>> reports) {
  return find_first_error(reports);
}

TEST(Localize, TheEarliestFirstErrorOfAllProcessesCounts) {
  std::string later = std::string(kPinned) + "\n";
  std::string earlier = std::string("{\"type\":\"start\",\"time\":1}\nnot json, a report cut short\n") +
                        kUnpinned + "\n{\"type\":\"summary\",\"time\":40}\n";
  RunFinding found = finding({{"run1.200.jsonl", later}, {"run1.100.jsonl", earlier}});
  ASSERT_TRUE(found.found);
  EXPECT_EQ(found.report, "run1.100.jsonl");
  EXPECT_EQ(found.reports, 2u);
  EXPECT_EQ(found.unreadable, 1u);
  EXPECT_FALSE(is_exact(found.first_error));
  EXPECT_EQ(second_run_policy(found.first_error), "stencil block-alone,scale block-alone");
  EXPECT_FALSE(finding({{"run1.1.jsonl", "{\"type\":\"summary\"}\n"}}).found);
}

TEST(Localize, ACulpritFoundByBreadcrumbsIsRunAgainForItsCallSite) {
  // clang-format off
  Json crumbs = *parse_json(R"json({"type":"first_error","error":"cudaErrorIllegalAddress","code":700,"certainty":"exact","method":"breadcrumbs","launch":{"seq":38,"kernel_base":"stencil","stack":"caller"},"pin_rule":"stencil#13"})json");
  Json walked = *parse_json(R"json({"type":"first_error","certainty":"exact","method":"breadcrumbs","launch":{"seq":38,"kernel_base":"stencil","stack":"full"},"pin_rule":"stencil#13"})json");
  // clang-format on
  EXPECT_TRUE(is_exact(crumbs));
  EXPECT_TRUE(needs_second_run(crumbs));
  EXPECT_EQ(second_run_policy(crumbs), "stencil#13 block-alone");
  EXPECT_FALSE(needs_second_run(walked));  // --callsites all: the full stack is there already
  EXPECT_FALSE(needs_second_run(*parse_json(kPinned)));
  EXPECT_TRUE(needs_second_run(*parse_json(kUnpinned)));
  EXPECT_EQ(compare_runs(crumbs, finding({{"r2", std::string(kPinned)}})), SecondRun::Pinned);
}

TEST(Localize, ACulpritFoundByBreadcrumbsWithItsLinesKeptNeedsNoSecondRun) {
  auto crumbs = [](const std::string& launch) {
    return *parse_json(
        R"json({"type":"first_error","certainty":"exact","method":"breadcrumbs","launch":{"seq":38,"kernel_base":"stencil","stack":"caller",)json" +
        launch + "}}");
  };
  const std::string own_caller = R"json("callsite":{"function":"run","file":"/src/app.cu","line":22})json";
  const std::string library_caller =
      R"json("callsite":{"function":"at::launch","file":null,"line":null})json";
  const std::string line = R"json("python_callsite":{"file":"train.py","line":8,"function":"pick"})json";
  // A C++ program: the caller with file:line is the call site.
  EXPECT_FALSE(needs_second_run(crumbs(own_caller + R"(,"python_status":"no python")")));
  EXPECT_FALSE(has_python_line(crumbs(own_caller + R"(,"python_status":"no python")")));
  // A C++ worker thread of a Python program likewise.
  EXPECT_FALSE(needs_second_run(crumbs(own_caller + R"(,"python_status":"no python thread state")")));
  // The caller is a library's (no file:line; the static runtime gives none at all): run again for the stack.
  EXPECT_TRUE(needs_second_run(crumbs(library_caller + R"(,"python_status":"no python")")));
  EXPECT_TRUE(needs_second_run(crumbs(R"("callsite":null,"python_status":"no python")")));
  // A Python program: its line kept for the launch is what a second run would add, whatever the caller.
  EXPECT_FALSE(needs_second_run(crumbs(library_caller + "," + line)));
  EXPECT_TRUE(has_python_line(crumbs(library_caller + "," + line)));
  EXPECT_TRUE(needs_second_run(crumbs(
      own_caller +
      R"json(,"python_callsite":null,"python_status":"line not kept (too many distinct lines)")json")));
  EXPECT_TRUE(
      needs_second_run(crumbs(own_caller + R"(,"python_callsite":null,"python_status":"unavailable")")));
}

TEST(Localize, WithoutAPinRuleTheSecondRunBlocksAll) {
  Json error = *parse_json(R"({"type":"first_error","certainty":"suspects","launch":null,"pin_rule":null})");
  EXPECT_EQ(second_run_policy(error), "all block-alone");
}

TEST(Localize, ComparesTheSecondRunWithTheFirst) {
  Json first = *parse_json(kUnpinned);
  EXPECT_EQ(compare_runs(first, finding({})), SecondRun::NoFault);
  EXPECT_EQ(compare_runs(first, finding({{"r2", std::string(kPinned)}})), SecondRun::Pinned);
  EXPECT_EQ(compare_runs(first, finding({{"r2", std::string(kUnpinned)}})), SecondRun::NotPinned);
  std::string other_kernel = kPinned;
  other_kernel.replace(other_kernel.find("\"kernel_base\":\"stencil\""), 23, "\"kernel_base\":\"gather\" ");
  EXPECT_EQ(compare_runs(first, finding({{"r2", other_kernel}})), SecondRun::Diverged);
  // kPinned with its error replaced by `error` ("name\",\"code\":number").
  auto pinned_with = [](const std::string& error) {
    std::string record = kPinned;
    const std::string own = "cudaErrorIllegalAddress\",\"code\":700";
    return record.replace(record.find(own), own.size(), error);
  };
  EXPECT_EQ(compare_runs(first, finding({{"r2", pinned_with("cudaErrorAssert\",\"code\":710")}})),
            SecondRun::Diverged);
  EXPECT_EQ(compare_runs(first, finding({{"r2", pinned_with("cudaErrorIllegalInstruction\",\"code\":715")}})),
            SecondRun::Diverged);
  // One bad memory access coded differently by the GPU in the two runs (the H200 gave 717, then 700): pinned,
  // and said as such; in a kernel run 1 did not point at, diverged.
  for (const char* recoded :
       {"cudaErrorInvalidAddressSpace\",\"code\":717", "cudaErrorMisalignedAddress\",\"code\":716",
        "cudaErrorLaunchFailure\",\"code\":719"}) {
    std::string other_access = pinned_with(recoded);
    EXPECT_EQ(compare_runs(first, finding({{"r2", other_access}})), SecondRun::PinnedRecoded) << recoded;
    other_access.replace(other_access.find("\"kernel_base\":\"stencil\""), 23, "\"kernel_base\":\"gather\" ");
    EXPECT_EQ(compare_runs(first, finding({{"r2", other_access}})), SecondRun::Diverged) << recoded;
  }
  // The same error seen through the driver in the second run: the same code, named differently.
  std::string through_driver = kPinned;
  through_driver.replace(through_driver.find("cudaErrorIllegalAddress"), 23, "CUDA_ERROR_ILLEGAL_ADDRESS");
  EXPECT_EQ(compare_runs(first, finding({{"r2", through_driver}})), SecondRun::Pinned);
}

// A graph replay pinned by breadcrumbs whose failed node is not known needs a second run with breadcrumbs
// inside the graph; once the node is known, the verdict names it and where it was captured.
TEST(Localize, AGraphReplayNeedsItsNodeAndTheVerdictNamesIt) {
  // clang-format off
  std::string replay = R"json({"type":"first_error","time":1,"error":"cudaErrorIllegalAddress","code":700,"message":"m","surfaced_api":"cudaStreamSynchronize","certainty":"exact","method":"breadcrumbs","launch":{"seq":5,"api":"cuGraphLaunch","kernel":null,"stream":"0x1","callsite":{"function":"main","file":"/src/app.cu","line":40},"python_callsite":null,"graph":{"replay":2,"capture":{"how":"captured","begun_at":{"callsite":{"function":"main","file":"/src/app.cu","line":30},"python_callsite":null},"launches":2,"captured":[{"position":1,"kernel":"fill(float*)","callsite":{"function":"main","file":"/src/app.cu","line":31},"python_callsite":null},{"position":2,"kernel":"lookup(float*)","callsite":null,"python_callsite":{"file":"model.py","line":17}}],"failed_node":null}}},"suspects":[],"pin_rule":"cuGraphLaunch"})json";
  // clang-format on
  Json unknown = *parse_json(replay);
  EXPECT_TRUE(needs_second_run(unknown));
  EXPECT_TRUE(second_run_wants_graph_breadcrumbs(unknown));
  EXPECT_EQ(second_run_policy(unknown), "cuGraphLaunch block-alone");
  std::string known = replay;
  known.replace(known.find("\"failed_node\":null"), 18,
                "\"failed_node\":{\"method\":\"breadcrumbs\",\"certainty\":\"exact\",\"positions\":[2]}");
  std::vector<std::string> lines = describe_culprit(*parse_json(known));
  ASSERT_EQ(lines.size(), 5u);
  EXPECT_EQ(lines[0], "graph launch cuGraphLaunch, launch #5, stream 0x1");
  EXPECT_EQ(lines[3], "graph: replay 2 of the graph captured at /src/app.cu:30 in main");
  EXPECT_EQ(lines[4], "node 2 of 2: kernel lookup(float*), captured at python model.py:17");
  EXPECT_FALSE(second_run_wants_graph_breadcrumbs(*parse_json(kPinned)));
}

TEST(Localize, DescribesTheCulpritAndTheSuspects) {
  std::vector<std::string> lines = describe_culprit(*parse_json(kPinned));
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_EQ(lines[0],
            "kernel stencil(float*)<<<(4096,1,1), (256,1,1), 1024, 0x0>>>, launch #38 (stencil#13)");
  EXPECT_EQ(lines[1],
            "error: cudaErrorIllegalAddress (an illegal memory access was encountered), returned by "
            "cudaStreamSynchronize");
  EXPECT_EQ(lines[2], "launched at /src/app.cu:22 in run");
  EXPECT_EQ(lines[3], "python: train.py:8 in pick");
  std::vector<std::string> suspects = describe_suspects(*parse_json(kUnpinned));
  ASSERT_EQ(suspects.size(), 2u);
  // A record without its configuration (a report cut short) is told without one, never with a guessed one.
  EXPECT_EQ(suspects[1], "kernel scale(float*), launch #54 (scale#18), stream 0x0");
}

// A kernel a cuBLAS GEMM launched: the verdict names the call with its shape (issue 16, item 5).
TEST(Localize, AKernelALibraryCallLaunchedIsToldWithTheCall) {
  // clang-format off
  std::string gemm = R"json({"type":"first_error","time":1,"error":"cudaErrorIllegalAddress","code":700,"message":"m","surfaced_api":"cudaStreamSynchronize","certainty":"exact","method":"blocking","launch":{"seq":7,"api":"cuLaunchKernelEx","kernel":"sm90_xmma_gemm_f32f32","kernel_base":"sm90_xmma_gemm_f32f32","kernel_launch":1,"stream":"0x0","grid":[8,8,4],"block":[128,1,1],"shared_memory":0,"library_call":{"api":"cublasSgemm_v2","m":512,"n":256,"k":128,"transa":"N","transb":"T"},"callsite":{"function":"main","file":"/src/gemm.cu","line":12}},"suspects":[],"pin_rule":null})json";
  // clang-format on
  std::vector<std::string> lines = describe_culprit(*parse_json(gemm));
  ASSERT_GE(lines.size(), 1u);
  EXPECT_EQ(
      lines[0],
      "kernel sm90_xmma_gemm_f32f32<<<(8,8,4), (128,1,1), 0, 0x0>>>, launched by cublasSgemm_v2 m=512 n=256 "
      "k=128 transa=N transb=T, launch #7 (sm90_xmma_gemm_f32f32#1)");
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
