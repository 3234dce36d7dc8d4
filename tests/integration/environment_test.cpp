// Environment errors are not culprits (issue 42, item 1): with no driver, a driver too old for the program's
// runtime, no device, or a failed initialization, the log, the report and --localize say what is wrong with
// the machine and how to fix it, and name no launch as culprit or suspect. Each case is played by the
// simulated stack (tests/sim/README.md: CUDA_SIM_NO_DRIVER, CUDA_SIM_DRIVER_VERSION, CUDA_SIM_INIT_ERROR).
#include <gtest/gtest.h>

#include <cstdio>
#include <ostream>

#include "report_json.h"
#include "sim_programs.h"

namespace blockrun::testing {
namespace {

struct Machine {
  const char* name;
  Env env;
  const char* error;    // the runtime's name of what every launch returns
  const char* problem;  // the start of what the log says is wrong
};

const Machine kMachines[] = {
    {"no_driver", {{"CUDA_SIM_NO_DRIVER", "1"}}, "cudaErrorInsufficientDriver", "no usable CUDA driver"},
    // Driver 535 (CUDA 12.2) under a CUDA 13 runtime.
    {"driver_too_old",
     {{"CUDA_SIM_DRIVER_VERSION", "12020"}},
     "cudaErrorInsufficientDriver",
     "no usable CUDA driver"},
    {"no_device", {{"CUDA_SIM_INIT_ERROR", "no-device"}}, "cudaErrorNoDevice", "no CUDA device"},
    {"driver_mismatch",
     {{"CUDA_SIM_INIT_ERROR", "803"}},
     "cudaErrorSystemDriverMismatch",
     "the NVIDIA kernel module and the user-space driver library are of different versions"},
};

void PrintTo(const Machine& machine, std::ostream* out) {
  *out << machine.name;
}

class EnvironmentError : public ::testing::TestWithParam<Machine> {};

Json first_error_of(const std::string& path) {
  Json found;
  for_each_json_line(read_file(path), [&](Json&& record) {
    if (string_member(record, "type") == "first_error") found = std::move(record);
  });
  return found;
}

TEST_P(EnvironmentError, IsToldWithItsFixAndNamesNoLaunch) {
  const Machine& machine = GetParam();
  std::string report = ::testing::TempDir() + "environment_" + machine.name + ".jsonl";
  std::remove(report.c_str());
  // Breadcrumbs and blocking both: neither may turn the machine's error into a kernel's.
  for (const char* block : {"none", "all"}) {
    ProcessResult r = run_wrapped({"--report", report, "--block", block}, {kApp, "steps"}, machine.env);
    EXPECT_EQ(r.status, 1) << r.err;  // the program's own status: its final copy failed
    EXPECT_TRUE(contains(r.out, std::string("launch 1 returned ")));
    EXPECT_TRUE(contains(r.err, std::string("[cuda-blockrun] first error: ") + machine.error + " ("))
        << r.err;
    EXPECT_TRUE(contains(r.err, std::string("[cuda-blockrun]   not a kernel's fault: ") + machine.problem))
        << r.err;
    EXPECT_TRUE(contains(r.err, "[cuda-blockrun]   to fix it: ")) << r.err;
    for (const char* accusation : {"  in kernel", "suspects", "culprit", "to pin it", "--block '"})
      EXPECT_FALSE(contains(r.err, accusation)) << accusation << "\n" << r.err;

    Json error = first_error_of(report);
    ASSERT_EQ(string_member(error, "type"), "first_error") << r.err;
    EXPECT_EQ(string_member(error, "error"), machine.error);
    EXPECT_EQ(string_member(error, "meaning"), "environment");
    EXPECT_EQ(string_member(error, "certainty"), "suspects");
    EXPECT_TRUE(error.at("launch").is_null());
    EXPECT_TRUE(error.at("surfaced_at_launch").is_null());
    EXPECT_TRUE(error.at("suspects").empty());
    EXPECT_TRUE(error.at("pin_rule").is_null());
    EXPECT_TRUE(error.at("localize_command").is_null());
    const Json* environment = object_member(error, "environment");
    ASSERT_NE(environment, nullptr) << error.dump();
    EXPECT_EQ(string_member(*environment, "problem").rfind(machine.problem, 0), 0u) << error.dump();
    EXPECT_FALSE(string_member(*environment, "fix").empty());
    std::remove(report.c_str());
  }
}

// --localize says so after run 1, names no kernel, and starts no second run.
TEST_P(EnvironmentError, LocalizeSaysNoUsableDriverAndRunsOnce) {
  const Machine& machine = GetParam();
  Env env = machine.env;
  env["TMPDIR"] = ::testing::TempDir();
  ProcessResult r = run_wrapped({"--localize"}, {kApp, "steps"}, env);
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_TRUE(contains(r.err, std::string("[cuda-blockrun] localize: no usable CUDA driver or device, so no "
                                          "kernel is at fault: ") +
                                  machine.error + " ("))
      << r.err;
  EXPECT_TRUE(contains(r.err, std::string("[cuda-blockrun]   ") + machine.problem)) << r.err;
  EXPECT_TRUE(contains(r.err, "[cuda-blockrun]   to fix it: ")) << r.err;
  EXPECT_TRUE(contains(r.err, "[cuda-blockrun]   no second run: it would meet the same machine")) << r.err;
  EXPECT_FALSE(contains(r.err, "localize: run 2")) << r.err;
  EXPECT_FALSE(contains(r.err, "culprit")) << r.err;
  EXPECT_FALSE(contains(r.err, "(unnamed kernel)")) << r.err;
  size_t runs = 0;
  for (size_t at = r.out.find("done\n"); at != std::string::npos; at = r.out.find("done\n", at + 1)) ++runs;
  EXPECT_EQ(runs, 1u) << r.out;
}

INSTANTIATE_TEST_SUITE_P(Machines, EnvironmentError, ::testing::ValuesIn(kMachines),
                         [](const ::testing::TestParamInfo<Machine>& info) { return info.param.name; });

// A program with a working driver is not touched by the new meaning: the same program's kernel fault is still
// its culprit (the control for the cases above).
TEST(EnvironmentErrorControl, AWorkingDriverStillNamesTheCulprit) {
  ProcessResult r = run_wrapped({"--block", "all"}, {kApp, "steps"}, {{"CUDA_SIM_FAULT", "stencil:13"}});
  EXPECT_TRUE(contains(r.err, "[cuda-blockrun]   in kernel stencil(float*, float const*, int, long long)"))
      << r.err;
  EXPECT_FALSE(contains(r.err, "not a kernel's fault")) << r.err;
}

}  // namespace
}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
