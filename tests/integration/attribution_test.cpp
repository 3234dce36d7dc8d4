// Never confidently wrong (issue 16), on the simulated stack as the H200 behaves: a kernel's fault surfaces
// at the program's next call of any kind (CUDA_SIM_FAULT_SURFACES=next-call). Each scenario has one known
// faulting launch (stencil, the line marked FAULT_LAUNCH in tests/programs/cuda_app.cpp) and a different
// first call to see the error: the next launch (on the same stream or another), an allocation, a synchronous
// copy, an event query, or none at all (exit). Every mode runs on every scenario; a first error that calls
// any launch but the faulting one exact fails, and so does a missing one.
#include <gtest/gtest.h>

#include <cstdio>
#include <regex>
#include <string>
#include <vector>

#include "report_json.h"
#include "sim_programs.h"

namespace blockrun::testing {
namespace {

struct Scenario {
  const char* name;
  const char* fault;         // CUDA_SIM_FAULT
  uint64_t faulting_launch;  // the stencil launch that faults: its launch number of that kernel
  const char* surfaced_api;  // the call that first returns the error, as the report names it
};

const Scenario kScenarios[] = {
    {"fault-then-launch", "stencil:1", 1, "__cudaLaunchKernel"},
    {"fault-then-launch-other-stream", "stencil:1", 1, "__cudaLaunchKernel"},
    {"fault-then-launch-many", "stencil:2", 2, "__cudaLaunchKernel"},
    {"fault-then-alloc", "stencil:1", 1, "cuMemAlloc_v2"},
    {"fault-then-copy", "stencil:1", 1, "cudaMemcpy"},
    {"fault-then-event-query", "stencil:1", 1, "cudaEventQuery"},
    {"fault-then-exit", "stencil:1", 1, "cuStreamQuery"},
};

struct Mode {
  const char* name;
  std::vector<std::string> options;
  bool must_be_exact;  // the mode proves the culprit on these single-stream-at-a-time programs
};

const Mode kModes[] = {
    {"nothing-blocked", {"--breadcrumbs=0"}, false},
    {"breadcrumbs", {"--breadcrumbs"}, true},
    // Blocking stencil alone: the launches before it were not synchronized, so its failure is proved its own
    // only with breadcrumbs; either way it must be the named launch.
    {"block-stencil", {"--block", "stencil", "--breadcrumbs=0"}, false},
    {"block-stencil-breadcrumbs", {"--block", "stencil", "--breadcrumbs"}, true},
    {"block-all", {"--block", "all", "--breadcrumbs=0"}, true},
};

// The report's first_error record (a null value where there is none).
Json first_error_of(const std::string& path) {
  Json found;
  for_each_json_line(read_file(path), [&](Json&& record) {
    if (string_member(record, "type") == "first_error") found = std::move(record);
  });
  return found;
}

bool is_faulting_launch(const Json& launch, const Scenario& scenario) {
  return string_member(launch, "kernel_base") == "stencil" &&
         static_cast<uint64_t>(number_member(launch, "kernel_launch")) == scenario.faulting_launch;
}

void PrintTo(const Scenario& scenario, std::ostream* out) {
  *out << scenario.name;
}

// A scenario's name as a test name (letters, digits and underscores).
std::string test_name(const char* scenario) {
  std::string name;
  for (const char* c = scenario; *c; ++c) name += std::isalnum(static_cast<unsigned char>(*c)) ? *c : '_';
  return name;
}

class Attribution : public ::testing::TestWithParam<Scenario> {};

TEST_P(Attribution, EveryModeNamesTheFaultingLaunchOrNoneExactly) {
  const Scenario& scenario = GetParam();
  Env fault = {{"CUDA_SIM_FAULT", scenario.fault}};
  ProcessResult alone = run_alone({kApp, scenario.name}, fault);
  for (const Mode& mode : kModes) {
    SCOPED_TRACE(std::string("mode ") + mode.name);
    std::string report = ::testing::TempDir() + "attribution_" + scenario.name + "_" + mode.name + ".jsonl";
    std::remove(report.c_str());
    std::vector<std::string> options = mode.options;
    options.insert(options.end(), {"--report", report});
    ProcessResult r = run_wrapped(options, {kApp, scenario.name}, fault);
    // Unblocked, the program sees what it sees alone; blocked, what CUDA_LAUNCH_BLOCKING=1 would show it.
    if (mode.options.front() != "--block") {
      EXPECT_EQ(r.status, alone.status) << r.err;
      EXPECT_EQ(r.out, alone.out) << r.err;
    }
    Json error = first_error_of(report);
    ASSERT_EQ(string_member(error, "type"), "first_error") << "no first error in " << report << "\n" << r.err;
    const Json* launch = object_member(error, "launch");
    bool exact = string_member(error, "certainty") == "exact";
    if (exact) {
      ASSERT_NE(launch, nullptr);
      EXPECT_TRUE(is_faulting_launch(*launch, scenario))
          << "WRONG EXACT: " << string_member(*launch, "kernel_base") << " launch "
          << whole_member(*launch, "kernel_launch") << "\n"
          << r.err;
    }
    if (mode.must_be_exact) EXPECT_TRUE(exact) << r.err;
    // Not exact: the faulting launch is the named one or among the suspects.
    bool listed = launch && is_faulting_launch(*launch, scenario);
    if (const Json* suspects = array_member(error, "suspects"))
      for (const Json& suspect : *suspects) listed = listed || is_faulting_launch(suspect, scenario);
    EXPECT_TRUE(listed) << r.err;
    // A launch that only returned the error is never named.
    if (const Json* refused = object_member(error, "surfaced_at_launch")) {
      EXPECT_FALSE(launch && number_member(*launch, "seq") == number_member(*refused, "seq")) << r.err;
      EXPECT_NE(string_member(*refused, "kernel_base"), "stencil") << r.err;
    }
    if (mode.options.front() != "--block") {
      EXPECT_EQ(string_member(error, "surfaced_api"), scenario.surfaced_api) << r.err;
    }
    if (std::string(scenario.name) == "fault-then-exit" && mode.options.front() != "--block") {
      EXPECT_TRUE(contains(r.err, "surfaced only at exit")) << r.err;
    }
  }
}

// --localize gives the verdict of --breadcrumbs, in one run: the faulting launch and its line.
TEST_P(Attribution, LocalizeNamesTheFaultingLaunchAndItsLineInOneRun) {
  const Scenario& scenario = GetParam();
  Env env = {{"CUDA_SIM_FAULT", scenario.fault}, {"TMPDIR", ::testing::TempDir()}};
  ProcessResult r = run_wrapped({"--localize"}, {kApp, scenario.name}, env);
  const std::string source = CUDA_BLOCKRUN_SOURCE_DIR "/tests/programs/cuda_app.cpp";
  const char* marker = scenario.faulting_launch == 2 ? "FAULT_LAUNCH_MANY" : "FAULT_LAUNCH";
  EXPECT_TRUE(
      contains(r.err,
               "localize: culprit: kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), "
               "(256,1,1), 0, "))
      << r.err;
  EXPECT_TRUE(std::regex_search(
      r.err, std::regex("localize: culprit: kernel stencil\\([^\n]*>>>, launch #[0-9]+ \\(stencil#" +
                        std::to_string(scenario.faulting_launch) + "\\)\n")))
      << r.err;
  EXPECT_TRUE(contains(r.err, "launched at " + source + ":" + std::to_string(marker_line(source, marker))))
      << r.err;
  EXPECT_TRUE(contains(r.err, "No second run needed.")) << r.err;
}

// What proves a side stream's work complete before the main stream's faulting launch (`cuda_app
// side-stream`): with only that launch blocked (its synchronize fails), the fill on the side stream is a
// suspect unless something proved it complete. An event waited for by the main stream proves it once the main
// stream got past the wait (its first stencil's blocked synchronize succeeded), and so do the event's own
// synchronize or query and a device synchronize. A wait made before the fill, a synchronous copy (the default
// stream only) and a device-to-device copy (it waits for nothing) prove nothing of it.
struct Ordering {
  const char* order;
  bool proves_fill;
};

const Ordering kOrderings[] = {
    {"wait", true},        {"event-sync", true}, {"event-query", true}, {"device-sync", true},
    {"wait-first", false}, {"copy-dtoh", false}, {"copy-dtod", false},  {"none", false},
};

void PrintTo(const Ordering& ordering, std::ostream* out) {
  *out << ordering.order;
}

class SideStream : public ::testing::TestWithParam<Ordering> {};

TEST_P(SideStream, AnotherStreamsLaunchIsASuspectUntilSomethingProvedItComplete) {
  const Ordering& ordering = GetParam();
  Env fault = {{"CUDA_SIM_FAULT", "stencil:2"}};
  std::string report = ::testing::TempDir() + "side_stream_" + ordering.order + ".jsonl";
  std::remove(report.c_str());
  ProcessResult r = run_wrapped({"--block", "stencil", "--breadcrumbs=0", "--report", report},
                                {kApp, "side-stream", ordering.order}, fault);
  EXPECT_TRUE(contains(r.out, "done")) << r.out << r.err;
  Json error = first_error_of(report);
  ASSERT_EQ(string_member(error, "type"), "first_error") << r.err;
  const Json* launch = object_member(error, "launch");
  ASSERT_NE(launch, nullptr) << r.err;
  EXPECT_EQ(string_member(*launch, "kernel_base"), "stencil") << r.err;
  EXPECT_EQ(whole_member(*launch, "kernel_launch"), "2") << r.err;
  bool fill_suspected = false;
  if (const Json* suspects = array_member(error, "suspects"))
    for (const Json& suspect : *suspects)
      fill_suspected = fill_suspected || string_member(suspect, "kernel_base") == "fill";
  EXPECT_EQ(string_member(error, "certainty"), ordering.proves_fill ? "exact" : "suspects") << r.err;
  EXPECT_EQ(fill_suspected, !ordering.proves_fill) << r.err;
}

INSTANTIATE_TEST_SUITE_P(Ordering, SideStream, ::testing::ValuesIn(kOrderings),
                         [](const ::testing::TestParamInfo<Ordering>& info) {
                           return test_name(info.param.order);
                         });

INSTANTIATE_TEST_SUITE_P(Surfacing, Attribution, ::testing::ValuesIn(kScenarios),
                         [](const ::testing::TestParamInfo<Scenario>& info) {
                           return test_name(info.param.name);
                         });

}  // namespace
}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
