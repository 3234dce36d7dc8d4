// The writers alone (src/report/): values in, JSON records and log text out, with no engine. A finding with
// a culprit and one with suspects, as the first_error record and the log tell them.
#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <memory>
#include <sstream>
#include <string>

#include "cuda/names.h"
#include "report/error_writer.h"
#include "report/launch_writer.h"

namespace blockrun {
namespace {

class WritersTest : public ::testing::Test {
 protected:
  WritersTest() {
    stencil.name = make_kernel_name("_Z7stencilPfi");
    record.sequence = 51;
    record.kernel_ordinal = 13;
    record.kernel = &stencil;
    record.api = "cudaLaunchKernel";
    record.grid = {4096, 1, 1};
    record.block = {256, 1, 1};
    record.thread = 1;
    auto sink = std::make_shared<spdlog::sinks::ostream_sink_st>(log_);
    logger = std::make_shared<spdlog::logger>("test", sink);
    logger->set_pattern("%v");
  }

  LaunchView view() const {
    LaunchView launch;
    launch.record = &record;
    return launch;
  }

  Finding finding() const {
    Finding found;
    found.api = "cudaDeviceSynchronize";
    found.result = ErrorCode{Layer::Runtime, 700};
    found.text = ErrorText{"cudaErrorIllegalAddress", "an illegal memory access was encountered"};
    found.meaning = ErrorMeaning::Asynchronous;
    found.how = "surfaced at a later call";
    found.pin_rule = "stencil";
    return found;
  }

  KernelInfo stencil;
  LaunchRecord record;
  std::ostringstream log_;
  std::shared_ptr<spdlog::logger> logger;
};

TEST_F(WritersTest, ALaunchIsOneObjectWithItsKernelAndConfiguration) {
  JsonWriter json;
  write_launch(json, view());
  std::string text = json.text();
  EXPECT_EQ(
      text.find("{\"seq\":51,\"api\":\"cudaLaunchKernel\",\"driver_api\":null,\"kernel\":\"stencil(float*, "
                "int)\""),
      0u)
      << text;
  EXPECT_NE(text.find("\"kernel_launch\":13"), std::string::npos) << text;
  EXPECT_NE(text.find("\"grid\":[4096,1,1],\"block\":[256,1,1]"), std::string::npos) << text;
  EXPECT_NE(text.find("\"stack\":\"none\",\"frames\":null"), std::string::npos) << text;
  EXPECT_NE(text.find("\"python_status\":\"not captured\"}"), std::string::npos) << text;
}

TEST_F(WritersTest, AnExactCulpritIsToldAsExactWithoutAPinRule) {
  Finding found = finding();
  found.found_by = FoundBy::Blocking;
  found.launch_told = true;
  found.how = "blocking synchronize after the launch";
  found.exact = true;
  found.culprit = std::make_unique<LaunchView>(view());
  std::string text = first_error_json(found, 4242);
  EXPECT_NE(text.find("\"pid\":4242,\"error\":\"cudaErrorIllegalAddress\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"certainty\":\"exact\",\"method\":\"blocking\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"suspects\":[],\"pin_rule\":null"), std::string::npos) << text;
  EXPECT_EQ(first_error_summary(found), "cudaErrorIllegalAddress at launch #51");
  log_first_error(*logger, found, false, 10);
  EXPECT_EQ(log_.str().substr(0, log_.str().find('\n')),
            "first error: cudaErrorIllegalAddress (an illegal memory access was encountered), returned by "
            "cudaDeviceSynchronize (blocking synchronize after the launch)");
  EXPECT_NE(log_.str().find("  in kernel stencil(float*, int)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #51 "
                            "(stencil#13)\n"),
            std::string::npos)
      << log_.str();
}

TEST_F(WritersTest, SuspectsAreListedWithTheRuleThatPinsThem) {
  Finding found = finding();
  found.suspects.push_back(view());
  found.pin_rule_useful = true;
  found.tally = SuspectTally{1, false, 1};
  found.advice = pin_advice({"./app", "--steps", "it's 3"}, false, found.pin_rule, found.tally);
  std::string text = first_error_json(found, 4242);
  EXPECT_NE(text.find("\"certainty\":\"suspects\",\"method\":\"host\""), std::string::npos) << text;
  EXPECT_NE(text.find("\"launch\":null"), std::string::npos) << text;
  EXPECT_NE(text.find("\"pin_rule\":\"stencil\",\"unfinished_launches\":1,\"suspects_cut\":false,"
                      "\"pin_rule_covers\":true,\"localize_command\":\"cuda-blockrun --localize -- ./app "
                      "--steps 'it'\\\\''s 3'\""),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("breadcrumbs_lost"), std::string::npos) << text;  // breadcrumbs were not read
  log_first_error(*logger, found, false, 10);
  EXPECT_NE(log_.str().find("  culprit unknown (no blocked launch failed); suspects:"), std::string::npos);
  EXPECT_NE(log_.str().find("  to pin it: cuda-blockrun --localize -- ./app --steps 'it'\\''s 3'\n"
                            "  or run again with --block 'stencil' (or CUDA_BLOCKRUN_BLOCK='stencil'), "
                            "or --block all\n"),
            std::string::npos)
      << log_.str();
}

// A hint that, followed, pins nothing is a defect: where launches that could have faulted were no longer
// kept, the rule made from those on record is not offered, and the log says how many could have.
TEST_F(WritersTest, ARuleThatCannotCoverEveryLaunchThatCouldHaveFaultedIsNotOffered) {
  Finding found = finding();
  found.suspects.push_back(view());
  found.pin_rule_useful = true;
  found.tally = SuspectTally{8, true, 1};
  found.advice = pin_advice({"python3", "train.py"}, false, found.pin_rule, found.tally);
  std::string text = first_error_json(found, 4242);
  EXPECT_NE(text.find("\"unfinished_launches\":8,\"suspects_cut\":true,\"pin_rule_covers\":false,"
                      "\"localize_command\":\"cuda-blockrun --localize -- python3 train.py\""),
            std::string::npos)
      << text;
  log_first_error(*logger, found, false, 10);
  EXPECT_NE(
      log_.str().find("  more than 8 launches since the last completed synchronize could have faulted (the "
                      "older ones were not kept); the newest 1 are shown\n"
                      "  to pin it: cuda-blockrun --localize -- python3 train.py\n"
                      "  or run again with --block all\n"),
      std::string::npos)
      << log_.str();
  EXPECT_EQ(log_.str().find("--block 'stencil'"), std::string::npos) << log_.str();
}

// A rank of a job does not know the job's command: the hint names the job's.
TEST_F(WritersTest, ARankIsToldToLocalizeItsJob) {
  Finding found = finding();
  found.suspects.push_back(view());
  found.pin_rule_useful = true;
  found.tally = SuspectTally{1, false, 1};
  found.advice = pin_advice({"python3", "train.py"}, true, found.pin_rule, found.tally);
  EXPECT_NE(first_error_json(found, 4242).find("\"localize_command\":null"), std::string::npos);
  log_first_error(*logger, found, false, 10);
  EXPECT_NE(log_.str().find("  to pin it: run the job's command again under cuda-blockrun --localize "
                            "(docs/distributed.md)\n"),
            std::string::npos)
      << log_.str();
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
