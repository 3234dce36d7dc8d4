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
    // `cuda-blockrun report` says the same, and offers nothing to pin.
    ProcessResult verdict = run_process({kWrapper, "report", report}, {});
    EXPECT_EQ(verdict.status, 1) << verdict.out;
    EXPECT_TRUE(contains(verdict.out, std::string("  error: ") + machine.error + " (")) << verdict.out;
    EXPECT_TRUE(contains(verdict.out, std::string("  not a kernel's fault: ") + machine.problem))
        << verdict.out;
    EXPECT_TRUE(contains(verdict.out, "  to fix it: ")) << verdict.out;
    for (const char* accusation : {"culprit", "to pin it", "--localize", "--block"})
      EXPECT_FALSE(contains(verdict.out, accusation)) << accusation << "\n" << verdict.out;
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

// ---- Older drivers (issue 42, item 3): the simulated driver built as driver 535 (CUDA 12.2:
// sim/driver-12020, without the entry points CUDA 12.3+ added) under a program built with CUDA 12.8 (cuda_app
// linked to the simulated libcudart.so.12), which runs there by minor version compatibility. ----

const std::string kAppCuda12 = CUDA_BLOCKRUN_APP_CUDA12;
const std::string kDriver535 = CUDA_BLOCKRUN_SIM_DRIVER_12020_DIR;
const char* const kNotice = "the driver supports CUDA 12.2, older than this shim's newest entry points: ";

size_t count(const std::string& text, const std::string& piece) {
  size_t found = 0;
  for (size_t at = text.find(piece); at != std::string::npos; at = text.find(piece, at + 1)) ++found;
  return found;
}

Json record_of(const std::string& path, const char* type) {
  Json found;
  for_each_json_line(read_file(path), [&](Json&& record) {
    if (string_member(record, "type") == type) found = std::move(record);
  });
  return found;
}

Json start_of(const std::string& path) {
  return record_of(path, "start");
}

std::vector<std::string> missing_entry_points(const Json& record) {
  std::vector<std::string> missing;
  if (const Json* rows = array_member(record, "driver_missing"))
    for (const Json& row : *rows) missing.push_back(string_member(row, "entry_point"));
  return missing;
}

const std::vector<std::string> kMissingOn535 = {"cuKernelGetName", "cuFuncGetName",
                                                "cuStreamGetCaptureInfo_v3", "cuEventElapsedTime_v2",
                                                "cuLogsRegisterCallback"};

// `options` on cuda_app_cuda12 SCENARIO with CUDA_SIM_FAULT=`fault`, on driver 535 (`old_driver`) or the
// current one; the report in `report`.
ProcessResult run_cuda12(bool old_driver, std::vector<std::string> options, const std::string& scenario,
                         const std::string& fault, const std::string& report) {
  std::remove(report.c_str());
  options.insert(options.end(), {"--report", report});
  std::vector<std::string> argv = {kWrapper};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), {"--", kAppCuda12, scenario});
  Env env = {{"LD_LIBRARY_PATH", old_driver ? kDriver535 + ":" + kSimLib : kSimLib}};
  if (!fault.empty()) env["CUDA_SIM_FAULT"] = fault;
  return run_process(argv, env);
}

const char* const kStencilBlocked =
    "[cuda-blockrun]   in kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), (256,1,1), 0, "
    "0x0>>>, launch #38 (stencil#13), blocked";

// On driver 535 the kernels keep their names (from the names they were looked up by), the culprit is pinned
// as on a current driver, --gpu-time times it with the older query, and the log says once what the driver
// lacks.
TEST(OlderDriver, Driver535RunsA12xProgramWithTheFallbacksAndOneNotice) {
  std::string report = ::testing::TempDir() + "older_driver_535.jsonl";
  for (const char* scenario :
       {"direct", "steps"}) {  // CUDA 12's cudaLaunchKernel, and the <<<>>> stub's path
    ProcessResult r = run_cuda12(true, {"--block", "all", "--gpu-time"}, scenario, "stencil:13", report);
    EXPECT_EQ(r.status, 1) << r.err;
    EXPECT_TRUE(contains(r.err, "[cuda-blockrun] first error: cudaErrorIllegalAddress")) << r.err;
    EXPECT_TRUE(contains(r.err, kStencilBlocked)) << scenario << "\n" << r.err;
    EXPECT_FALSE(contains(r.err, "(unnamed kernel)")) << r.err;
    EXPECT_EQ(count(r.err, kNotice), 1u) << r.err;
    EXPECT_TRUE(contains(r.err,
                         "cuLogsRegisterCallback (CUDA 12.9) is missing: the driver's error log, no "
                         "driver_log lines with the first error"))
        << r.err;
    EXPECT_TRUE(contains(r.err,
                         "cuKernelGetName (CUDA 12.3) is missing: kernel names of runtime launches, "
                         "named from the kernel's registration (cuLibraryGetKernel's name) instead"))
        << r.err;

    // Its first CUDA call is a launch, made before the runtime loaded the driver: the summary says it.
    Json summary = record_of(report, "summary");
    EXPECT_EQ(string_member(summary, "cuda_driver_version"), "12.2") << summary.dump();
    EXPECT_EQ(missing_entry_points(summary), kMissingOn535);
    // GPU time of the blocked launches, measured with cuEventElapsedTime.
    double gpu_timed = 0;
    for_each_json_line(read_file(report), [&](Json&& record) {
      if (string_member(record, "type") != "summary") return;
      for (const Json& row : record.at("kernels")) gpu_timed += number_member(row, "gpu_timed");
    });
    EXPECT_GT(gpu_timed, 0) << read_file(report);
  }
  std::remove(report.c_str());
}

// A graph capture on driver 535: the graph launch is tied to its capture with the CUDA 11.3 query, as on a
// current driver with _v3.
TEST(OlderDriver, Driver535TiesAGraphLaunchToItsCapture) {
  std::string report = ::testing::TempDir() + "older_driver_capture.jsonl";
  std::string capture[2];
  for (bool old_driver : {false, true}) {
    ProcessResult r = run_cuda12(old_driver, {"--block", "cuGraphLaunch", "--breadcrumbs=0"}, "capture",
                                 "stencil:1", report);
    Json error;
    for_each_json_line(read_file(report), [&](Json&& record) {
      if (string_member(record, "type") == "first_error") error = std::move(record);
    });
    const Json* launch = object_member(error, "launch");
    ASSERT_NE(launch, nullptr) << r.err;
    const Json* graph = object_member(*launch, "graph");
    ASSERT_NE(graph, nullptr) << r.err;
    const Json* seen = object_member(*graph, "capture");
    ASSERT_NE(seen, nullptr) << "the graph launch is not tied to its capture: " << r.err;
    for (const Json& launch : seen->at("captured"))
      capture[old_driver] += string_member(launch, "kernel") + " at line " +
                             whole_member(*object_member(launch, "callsite"), "line") + "\n";
    // cudaStreamCreate came first: the runtime had loaded the driver when the shim started, and the start
    // record says what it lacks.
    Json start = start_of(report);
    EXPECT_EQ(string_member(start, "cuda_driver_version"), old_driver ? "12.2" : "13.0") << start.dump();
    EXPECT_EQ(missing_entry_points(start), old_driver ? kMissingOn535 : std::vector<std::string>{});
    EXPECT_EQ(count(r.err, kNotice), old_driver ? 1u : 0u) << r.err;
  }
  EXPECT_EQ(capture[0], capture[1]);
  EXPECT_TRUE(contains(capture[1], "stencil(float*, float const*, int, long long) at line")) << capture[1];
  std::remove(report.c_str());
}

// A program built with CUDA 12.8 on a current driver: intercepted as a CUDA 13 one, and nothing to tell.
TEST(OlderDriver, A12xProgramOnTheCurrentDriverIsInterceptedAsACuda13One) {
  std::string report = ::testing::TempDir() + "cuda12_on_580.jsonl";
  for (const char* scenario : {"direct", "steps"}) {
    ProcessResult r = run_cuda12(false, {"--block", "all"}, scenario, "stencil:13", report);
    EXPECT_TRUE(contains(r.err, kStencilBlocked)) << scenario << "\n" << r.err;
    EXPECT_FALSE(contains(r.err, "older than this shim's newest entry points")) << r.err;
    Json summary = record_of(report, "summary");
    EXPECT_EQ(string_member(summary, "cuda_driver_version"), "13.0") << summary.dump();
    EXPECT_TRUE(summary.at("driver_missing").empty()) << summary.dump();
    // The runtime's version as its file name (libcudart.so.12) tells it (src: loaded_runtime_version).
    EXPECT_EQ(string_member(start_of(report), "cuda_runtime_version"), "12.0");
  }
  std::remove(report.c_str());
}

// --version lists the driver's CUDA version and, per feature, what it has or what stands in.
TEST(OlderDriver, VersionListsTheDriversFeatures) {
  ProcessResult old = run_process({kWrapper, "--version"}, {{"LD_LIBRARY_PATH", kDriver535 + ":" + kSimLib}});
  EXPECT_TRUE(contains(old.out, "(built against CUDA 13.0; driver supports CUDA 12.2)\n")) << old.out;
  EXPECT_TRUE(contains(old.out,
                       "\n  kernel names of runtime launches: yes, by cuLibraryGetKernel (cuKernelGetName "
                       "needs CUDA 12.3): "))
      << old.out;
  EXPECT_TRUE(
      contains(old.out, "\n  --gpu-time: yes, by cuEventElapsedTime (cuEventElapsedTime_v2 needs CUDA 12.8)"))
      << old.out;
  EXPECT_TRUE(contains(old.out, "\n  the driver's error log: no (cuLogsRegisterCallback needs CUDA 12.9): "))
      << old.out;
  ProcessResult current = run_process({kWrapper, "--version"}, {{"LD_LIBRARY_PATH", kSimLib}});
  EXPECT_TRUE(contains(current.out, "(built against CUDA 13.0; driver supports CUDA 13.0)\n")) << current.out;
  EXPECT_TRUE(contains(current.out, "\n  the driver's error log: yes (cuLogsRegisterCallback)\n"))
      << current.out;
  EXPECT_EQ(count(current.out, ": yes ("), 5u) << current.out;
}

}  // namespace
}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
