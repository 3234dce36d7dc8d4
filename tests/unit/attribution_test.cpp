// Attribution of the first error (issue 16): the table of error meanings, and the rule that a call which only
// returned an earlier kernel's sticky error, a launch included, is where it surfaced, never its culprit. Each
// test reads the report's first_error record: which launch it names, and whether it calls it exact.
#include <gtest/gtest.h>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "cuda/cuda_errors.h"
#include "engine.h"
#include "launch_path.h"
#include "report/report_file.h"
#include "report_json.h"

namespace blockrun {
namespace {

const void* const kStreamA = reinterpret_cast<const void*>(0xa000);
const void* const kStreamB = reinterpret_cast<const void*>(0xb000);
constexpr ErrorCode kIllegalAddress{Layer::Runtime, 700};

TEST(ErrorMeaning, KernelFaultsAreAsynchronousInBothNumberings) {
  for (int code : {700, 702, 710, 714, 715, 716, 717, 718, 719}) {
    EXPECT_EQ(error_meaning({Layer::Runtime, code}), ErrorMeaning::Asynchronous) << code;
    EXPECT_EQ(error_meaning({Layer::Driver, code}), ErrorMeaning::Asynchronous) << code;
  }
}

TEST(ErrorMeaning, BadMemoryAccessesAreTheirFourAsynchronousCodes) {
  for (int code : {700, 716, 717, 719}) {
    EXPECT_TRUE(is_bad_memory_access(code)) << code;
    EXPECT_EQ(error_meaning({Layer::Driver, code}), ErrorMeaning::Asynchronous) << code;
  }
  // an assert, an illegal instruction, a hardware stack error, an invalid value, unknown
  for (int code : {710, 715, 714, 1, 999, 0}) EXPECT_FALSE(is_bad_memory_access(code)) << code;
}

TEST(ErrorMeaning, ALaunchsOwnErrorsAreItsOwn) {
  // invalid value, out of memory, invalid configuration, out of resources, no binary, invalid handle, not
  // supported, a capture invalidated, a cooperative launch too large
  for (int code : {1, 2, 9, 98, 209, 400, 701, 720, 801, 900, 901, 907}) {
    EXPECT_EQ(error_meaning({Layer::Runtime, code}), ErrorMeaning::Own) << code;
  }
  EXPECT_EQ(error_meaning({Layer::Cublas, 7}), ErrorMeaning::Own);  // CUBLAS_STATUS_INVALID_VALUE
}

TEST(ErrorMeaning, UnknownCodesAreNeverOwn) {
  EXPECT_EQ(error_meaning({Layer::Driver, 999}), ErrorMeaning::Unknown);
  EXPECT_EQ(error_meaning({Layer::Runtime, 12345}), ErrorMeaning::Unknown);  // a newer CUDA's
  EXPECT_EQ(error_meaning({Layer::Cublas, 13}), ErrorMeaning::Unknown);      // EXECUTION_FAILED
  EXPECT_TRUE(may_have_surfaced({Layer::Driver, 999}));
  EXPECT_FALSE(may_have_surfaced({Layer::Driver, 2}));
  EXPECT_FALSE(may_have_surfaced({}));
}

// docs/report.md lists every asynchronous and unknown row of the table, and nothing else as such.
TEST(ErrorMeaning, TheReportDocumentationListsTheTable) {
  std::ifstream in(std::string(CUDA_BLOCKRUN_SOURCE_DIR) + "/docs/report.md");
  std::stringstream text;
  text << in.rdbuf();
  std::string docs = text.str();
  int listed = 0;
#define CUDA_BLOCKRUN_ERROR(meaning, number, runtime_name, driver_name) \
  if (ErrorMeaning::meaning != ErrorMeaning::Own) {                     \
    ++listed;                                                           \
    EXPECT_NE(docs.find("| " #number " | "), std::string::npos)         \
        << #number " is missing from docs/report.md";                   \
  }
#include "cuda/cuda_errors.def"
  size_t rows = 0;
  for (size_t at = docs.find("| asynchronous |"); at != std::string::npos;
       at = docs.find("| asynchronous |", at + 1))
    ++rows;
  for (size_t at = docs.find("| unknown |"); at != std::string::npos; at = docs.find("| unknown |", at + 1))
    ++rows;
  for (size_t at = docs.find("| environment |"); at != std::string::npos;
       at = docs.find("| environment |", at + 1))
    ++rows;
  EXPECT_EQ(rows, static_cast<size_t>(listed));
}

// No usable driver or device (issue 42): in both numberings, never a kernel's (not even possibly), and each
// such row says its problem and its fix; a kernel built without code for this GPU stays its launch's own.
TEST(ErrorMeaning, EnvironmentErrorsAreNoKernelsAndSayTheirFix) {
  for (int code : {3, 35, 36, 46, 100, 222, 803, 804, 805}) {
    EXPECT_EQ(error_meaning({Layer::Runtime, code}), ErrorMeaning::Environment) << code;
    EXPECT_EQ(error_meaning({Layer::Driver, code}), ErrorMeaning::Environment) << code;
    EXPECT_FALSE(may_have_surfaced({Layer::Runtime, code})) << code;
  }
  EXPECT_EQ(error_meaning({Layer::Runtime, 209}), ErrorMeaning::Own);  // cudaErrorNoKernelImageForDevice
  EXPECT_EQ(error_meaning({Layer::Runtime, 101}), ErrorMeaning::Own);  // cudaErrorInvalidDevice
  EXPECT_STREQ(error_meaning_name(ErrorMeaning::Environment), "environment");
#define CUDA_BLOCKRUN_ERROR(meaning, number, runtime_name, driver_name)                            \
  if (ErrorMeaning::meaning == ErrorMeaning::Environment) {                                        \
    EnvironmentAdvice advice = environment_advice(ClassifiedError({Layer::Runtime, number}));      \
    EXPECT_NE(std::string(advice.problem), "") << #number " has no CUDA_BLOCKRUN_ENVIRONMENT row"; \
    EXPECT_NE(std::string(advice.fix), "") << #number;                                             \
  }
#include "cuda/cuda_errors.def"
  EXPECT_EQ(std::string(environment_advice(ClassifiedError({Layer::Runtime, 700})).problem), "");
}

class AttributionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char name[] = "/tmp/attribution_test.XXXXXX";
    int fd = mkstemp(name);
    ASSERT_GE(fd, 0);
    close(fd);
    path_ = name;
  }
  void TearDown() override { std::remove(path_.c_str()); }

  // `breadcrumbs`: with four breadcrumb slots (this->slots_).
  std::unique_ptr<Engine> make(const char* policy, bool breadcrumbs) {
    Config config;
    std::string error;
    config.block = *Policy::parse(policy, &error);
    config.breadcrumbs = breadcrumbs;
    config.ring = breadcrumbs ? 256 : 0;
    auto logger =
        std::make_shared<spdlog::logger>("test", std::make_shared<spdlog::sinks::ostream_sink_mt>(log_));
    logger->set_pattern("%v");
    auto engine = std::make_unique<Engine>(config, logger, [](ErrorCode code) {
      return ErrorText{"error " + std::to_string(code.code), "?"};
    });
    std::string problem;
    engine->start(ProcessInfo{}, ReportFile::open(path_, false, &problem), nullptr);
    if (breadcrumbs) engine->set_breadcrumbs(slots_, 4);
    fill_ = kernel(*engine, 0x10, "_Z4fillPfif");
    stencil_ = kernel(*engine, 0x20, "_Z7stencilPfix");
    scale_ = kernel(*engine, 0x30, "_Z5scalePfif");
    return engine;
  }

  const KernelInfo* kernel(Engine& engine, uintptr_t handle, const char* mangled) {
    return engine.launch_path().kernel(reinterpret_cast<const void*>(handle), [=] { return mangled; });
  }

  Launch begin(Engine& engine, const KernelInfo* kernel, const void* stream) {
    LaunchRequest request;
    request.api = "cudaLaunchKernel";
    request.kernel = kernel;
    request.stream = stream;
    return engine.launch_path().begin_launch(request);
  }

  // A launch that returned `result`; with breadcrumbs, its stream write lands when `completes` (the launch
  // and everything before it on its stream ran) and never after a launch that returned an error.
  Launch run(Engine& engine, const KernelInfo* kernel, const void* stream, bool completes = false,
             ErrorCode result = {}) {
    Launch l = begin(engine, kernel, stream);
    int32_t slot = result.ok() ? engine.launch_path().breadcrumb_slot(l) : -1;
    if (slot >= 0) engine.launch_path().breadcrumb_enqueued(l);  // the shim's write call succeeded
    engine.end_launch(l, result, BlockOutcome::NotBlocked, ErrorCode{}, nullptr);
    if (slot >= 0 && completes) slots_[slot] = l.record.sequence;
    return l;
  }

  // The report's first_error record (a null value where there is none).
  Json first_error() const {
    std::ifstream in(path_);
    std::stringstream text;
    text << in.rdbuf();
    Json found;
    for_each_json_line(text.str(), [&](Json&& record) {
      if (string_member(record, "type") == "first_error") found = std::move(record);
    });
    return found;
  }
  static uint64_t culprit(const Json& record) {
    const Json* launch = object_member(record, "launch");
    return launch ? static_cast<uint64_t>(number_member(*launch, "seq")) : 0;
  }
  static std::vector<uint64_t> suspects(const Json& record) {
    std::vector<uint64_t> found;
    if (const Json* list = array_member(record, "suspects"))
      for (const Json& suspect : *list) found.push_back(static_cast<uint64_t>(number_member(suspect, "seq")));
    return found;
  }

  std::string path_;
  std::ostringstream log_;
  uint64_t slots_[4] = {};
  const KernelInfo *fill_ = nullptr, *stencil_ = nullptr, *scale_ = nullptr;
};

// PyTorch checks each launch: the kernel of op N faults, the launch of op N+1 returns the sticky error. That
// launch never ran; without breadcrumbs the culprit is unknown and the earlier launches are the suspects.
TEST_F(AttributionTest, ALaunchReturningAStickyErrorIsWhereItSurfacedNotTheCulprit) {
  auto engine = make("none", false);
  run(*engine, fill_, nullptr);                           // #1
  run(*engine, stencil_, nullptr);                        // #2 faults
  run(*engine, scale_, nullptr, false, kIllegalAddress);  // #3 refused
  Json record = first_error();
  EXPECT_EQ(string_member(record, "certainty"), "suspects");
  EXPECT_EQ(string_member(record, "meaning"), "asynchronous");
  EXPECT_EQ(culprit(record), 0u) << "no launch may be named when none is known";
  EXPECT_EQ(suspects(record), (std::vector<uint64_t>{1, 2})) << "the refused launch never ran";
  const Json* where = object_member(record, "surfaced_at_launch");
  ASSERT_NE(where, nullptr);
  EXPECT_EQ(number_member(*where, "seq"), 3);
  EXPECT_NE(string_member(record, "how").find("surfaced at the launch of scale (launch #3)"),
            std::string::npos)
      << string_member(record, "how");
  EXPECT_NE(log_.str().find("surfaced at kernel scale(float*, int, float)<<<(1,1,1), (1,1,1), 0, 0x0>>>, "
                            "launch #3 (scale#1): "),
            std::string::npos)
      << log_.str();
}

// With breadcrumbs the same launch pattern names op N exactly: its stream write never landed.
TEST_F(AttributionTest, BreadcrumbsNameTheKernelBeforeTheRefusedLaunch) {
  auto engine = make("none", true);
  run(*engine, fill_, nullptr, true);                     // #1 completed
  run(*engine, stencil_, nullptr, false);                 // #2 faulted: its write never lands
  run(*engine, scale_, nullptr, false, kIllegalAddress);  // #3 refused
  Json record = first_error();
  EXPECT_EQ(string_member(record, "certainty"), "exact");
  EXPECT_EQ(string_member(record, "method"), "breadcrumbs");
  EXPECT_EQ(culprit(record), 2u);
}

// The faulting kernel ran on stream A; the refused launch was on stream B. B's stream has no unfinished
// launch of its own once the refused one is left out, so the breadcrumbs still name A's exactly.
TEST_F(AttributionTest, ARefusedLaunchOnAnotherStreamIsNoCandidate) {
  auto engine = make("none", true);
  run(*engine, fill_, kStreamB, true);                     // #1 B, completed
  run(*engine, fill_, kStreamA, true);                     // #2 A, completed
  run(*engine, stencil_, kStreamA, false);                 // #3 A faulted
  run(*engine, scale_, kStreamB, false, kIllegalAddress);  // #4 B refused
  Json record = first_error();
  EXPECT_EQ(string_member(record, "certainty"), "exact");
  EXPECT_EQ(culprit(record), 3u);
}

// A launch's own error (a bad configuration) is still its own, exactly.
TEST_F(AttributionTest, ALaunchsOwnErrorNamesItExactly) {
  auto engine = make("none", true);
  run(*engine, fill_, nullptr, true);
  run(*engine, stencil_, nullptr, false, ErrorCode{Layer::Runtime, 9});  // invalid configuration
  Json record = first_error();
  EXPECT_EQ(string_member(record, "certainty"), "exact");
  EXPECT_EQ(string_member(record, "method"), "launch");
  EXPECT_EQ(culprit(record), 2u);
}

// An unknown code is never exact, even when the breadcrumbs single out one launch.
TEST_F(AttributionTest, AnUnknownCodeIsNeverExact) {
  auto engine = make("none", true);
  run(*engine, fill_, nullptr, true);
  run(*engine, stencil_, nullptr, false);
  engine->observe_error("cudaStreamSynchronize", ErrorCode{Layer::Runtime, 999}, nullptr, false);
  Json record = first_error();
  EXPECT_EQ(string_member(record, "certainty"), "suspects");
  EXPECT_EQ(culprit(record), 0u);
  EXPECT_EQ(suspects(record), (std::vector<uint64_t>{2}));
}

// A call's own error is no kernel's: the breadcrumbs' unfinished launch (still running) is not blamed.
TEST_F(AttributionTest, ACallsOwnErrorBlamesNoRunningKernel) {
  auto engine = make("none", true);
  run(*engine, fill_, nullptr, true);
  run(*engine, stencil_, nullptr, false);  // still running
  engine->observe_error("cudaMemcpyAsync", ErrorCode{Layer::Runtime, 1}, nullptr, false);
  Json record = first_error();
  EXPECT_EQ(string_member(record, "certainty"), "suspects");
  EXPECT_EQ(culprit(record), 0u);
}

// A blocked launch whose synchronize fails is exact only when nothing else, on any stream, was unfinished.
TEST_F(AttributionTest, ABlockedLaunchIsNotExactWhileAnotherStreamHadWorkInFlight) {
  auto engine = make("stencil", false);
  run(*engine, fill_, kStreamB);  // #1 on B: not known to have completed
  Launch blocked = begin(*engine, stencil_, kStreamA);
  engine->end_launch(blocked, ErrorCode{}, BlockOutcome::Synchronized, kIllegalAddress,
                     "cudaStreamSynchronize");
  Json record = first_error();
  EXPECT_EQ(string_member(record, "certainty"), "suspects");
  EXPECT_EQ(culprit(record), 2u);
  EXPECT_EQ(suspects(record), (std::vector<uint64_t>{1}));
}

TEST_F(AttributionTest, ABlockedLaunchIsExactWhenBreadcrumbsShowEveryOtherStreamDone) {
  auto engine = make("stencil", true);
  run(*engine, fill_, kStreamB, true);  // #1 on B, completed
  Launch blocked = begin(*engine, stencil_, kStreamA);
  if (engine->launch_path().breadcrumb_slot(blocked) >= 0) engine->launch_path().breadcrumb_enqueued(blocked);
  engine->end_launch(blocked, ErrorCode{}, BlockOutcome::Synchronized, kIllegalAddress,
                     "cudaStreamSynchronize");
  Json record = first_error();
  EXPECT_EQ(string_member(record, "certainty"), "exact");
  EXPECT_EQ(culprit(record), 2u);
}

// The calls that only touch the device (an allocation, an event): their own errors are the program's, a
// sticky error surfacing there is the first error.
TEST_F(AttributionTest, AWatchedCallIgnoresItsOwnErrorsAndTakesAStickyOne) {
  auto engine = make("none", false);
  run(*engine, stencil_, nullptr);                                                    // #1 faults
  engine->watch_error("cuMemAlloc_v2", ErrorCode{Layer::Driver, 2}, nullptr, false);  // out of memory
  EXPECT_FALSE(engine->has_first_error());
  engine->watch_error("cuMemAlloc_v2", ErrorCode{Layer::Driver, 700}, nullptr, false);
  Json record = first_error();
  EXPECT_EQ(string_member(record, "surfaced_api"), "cuMemAlloc_v2");
  EXPECT_EQ(suspects(record), (std::vector<uint64_t>{1}));
}

// A kernel that faulted after the program's last CUDA call: the shim's check at exit still reports it.
TEST_F(AttributionTest, AStickyErrorSeenOnlyAtExitIsTheFirstError) {
  auto engine = make("none", true);
  run(*engine, fill_, nullptr, true);
  run(*engine, stencil_, nullptr, false);
  engine->check_at_exit("cuStreamQuery", ErrorCode{Layer::Driver, 600});  // not ready: nothing
  EXPECT_FALSE(engine->has_first_error());
  engine->check_at_exit("cuStreamQuery", ErrorCode{Layer::Driver, 700});
  Json record = first_error();
  EXPECT_EQ(string_member(record, "how"), "surfaced only at exit: no call of the program returned it");
  EXPECT_EQ(string_member(record, "certainty"), "exact");
  EXPECT_EQ(culprit(record), 2u);
  engine->finish();
  EXPECT_NE(log_.str().find("surfaced only at exit"), std::string::npos) << log_.str();
}

TEST_F(AttributionTest, TheExitCheckChangesNothingAfterAFirstError) {
  auto engine = make("none", false);
  run(*engine, stencil_, nullptr);
  engine->observe_error("cudaDeviceSynchronize", kIllegalAddress, nullptr, false);
  engine->check_at_exit("cuStreamQuery", ErrorCode{Layer::Driver, 700});
  EXPECT_EQ(string_member(first_error(), "surfaced_api"), "cudaDeviceSynchronize");
  EXPECT_EQ(engine->later_errors(), 0u) << "the shim's own check is not one of the program's errors";
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
