// Where a launch came from, in real processes on the simulated CUDA stack: the launcher's file:line (with
// and without libdw, with the shared and the static runtime), the report's records and their schema, the
// per-kernel timing of blocked launches and the driver's error log.
#include <gtest/gtest.h>

#include <dirent.h>

#include <algorithm>
#include <regex>

#include "sim_programs.h"

namespace blockrun::testing {
namespace {

const std::string kCallsiteApp = CUDA_BLOCKRUN_CALLSITE_APP;
const std::string kCallsiteAppStatic = CUDA_BLOCKRUN_CALLSITE_APP_STATIC;
const std::string kCallsiteSource = CUDA_BLOCKRUN_SOURCE_DIR "/tests/programs/callsite_app.cpp";
const std::string kSchema = CUDA_BLOCKRUN_SOURCE_DIR "/docs/report.schema.json";
const std::string kValidator = CUDA_BLOCKRUN_SOURCE_DIR "/tests/report/validate_report.py";

int marker_line(const std::string& marker) {
  return blockrun::testing::marker_line(kCallsiteSource, marker);
}

struct ReportRun {
  ProcessResult process;
  std::vector<std::string> records;  // the report's lines
  std::string path;

  // The first record of `type`, or "".
  std::string record(const std::string& type) const {
    for (const std::string& line : records)
      if (line.rfind("{\"type\":\"" + type + "\"", 0) == 0) return line;
    return "";
  }
};

ReportRun run_with_report(const std::string& program, const std::string& scenario,
                          std::vector<std::string> options, Env env = {}) {
  static int counter = 0;
  ReportRun run;
  run.path = ::testing::TempDir() + "blockrun_report_" + std::to_string(getpid()) + "_" +
             std::to_string(counter++) + ".jsonl";
  unlink(run.path.c_str());
  env["LD_LIBRARY_PATH"] = kSimLib;
  std::vector<std::string> argv = {kWrapper, "--report", run.path};
  argv.insert(argv.end(), options.begin(), options.end());
  argv.insert(argv.end(), {"--", program, scenario});
  run.process = run_process(argv, env);
  std::string text = read_file(run.path);
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    run.records.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return run;
}

// The "callsite" object of the first launch object in `record`.
std::string callsite_of(const std::string& record) {
  size_t at = record.find("\"callsite\":");
  if (at == std::string::npos) return "";
  size_t end = record.find('}', at);
  return record.substr(at, end - at + 1);
}

void expect_valid_report(const ReportRun& run, std::vector<std::string> expected_types) {
  std::vector<std::string> argv = {CUDA_BLOCKRUN_VALIDATOR_PYTHON, kValidator, kSchema, run.path};
  for (const std::string& type : expected_types) argv.insert(argv.end(), {"--expect", type});
  ProcessResult check = run_process(argv, {});
  EXPECT_EQ(check.status, 0) << check.out << check.err;
}

class CallSite : public ::testing::TestWithParam<std::string> {};

TEST_P(CallSite, BlockedFaultNamesTheLaunchersFileAndLine) {
  int line = marker_line("CALLSITE_STENCIL");
  ASSERT_GT(line, 0);
  ReportRun run =
      run_with_report(GetParam(), "blocked", {"--block", "stencil"}, {{"CUDA_SIM_FAULT", "stencil:2"}});
  EXPECT_EQ(run.process.status, 0) << run.process.err;
  std::string first = run.record("first_error");
  ASSERT_FALSE(first.empty()) << run.process.err;
  std::string site = callsite_of(first);
  EXPECT_TRUE(contains(site, "launch_stencil")) << site;
  EXPECT_TRUE(contains(site, "\"file\":\"" + kCallsiteSource + "\",\"line\":" + std::to_string(line) + "}"))
      << site;
  // The static runtime is inside the program: the shim sees its launches at the driver.
  bool shared = GetParam() == kCallsiteApp;
  EXPECT_TRUE(contains(
      first, shared ? "\"error\":\"cudaErrorIllegalAddress\"" : "\"error\":\"CUDA_ERROR_ILLEGAL_ADDRESS\""))
      << first;
  EXPECT_TRUE(contains(first, "\"kernel\":\"stencil(float*, float const*, int, long long)\"")) << first;
  EXPECT_TRUE(contains(first, "\"kernel_mangled\":\"_Z7stencilPfPKfix\"")) << first;
  EXPECT_TRUE(contains(run.process.err, "[cuda-blockrun]   launched at " + kCallsiteSource + ":" +
                                            std::to_string(line) + " in launch_stencil"))
      << run.process.err;
  // The full stack follows: the launcher, then main.
  EXPECT_TRUE(std::regex_search(
      first, std::regex("\"function\":\"launch_stencil[^}]*\\}[\\s\\S]*?\"function\":\"main\"")))
      << first;
  expect_valid_report(run, {"start", "first_error", "blocked_error", "summary"});
}

TEST_P(CallSite, WithoutLibdwFunctionNamesComeFromTheDynamicSymbols) {
  ReportRun run = run_with_report(GetParam(), "blocked", {"--block", "stencil", "--libdw", "off"},
                                  {{"CUDA_SIM_FAULT", "stencil:2"}});
  std::string site = callsite_of(run.record("first_error"));
  EXPECT_TRUE(contains(site, "\"module\":\"" + GetParam() + "\"")) << site;
  EXPECT_TRUE(contains(site, "\"function\":\"launch_stencil\",\"file\":null,\"line\":null}")) << site;
  EXPECT_FALSE(contains(run.process.err, "no file:line")) << "asked for: no note" << run.process.err;
  expect_valid_report(run, {"start", "first_error", "summary"});
}

// libdw that cannot be loaded (here a path that does not exist) is said once, where a call site is first told
// without file:line: what is missing, how to install it, what the log gives instead. Where libdw loads,
// never.
TEST_P(CallSite, ALibdwThatCannotBeLoadedIsSaidOnceWhereFileLineIsFirstMissing) {
  ReportRun run = run_with_report(
      GetParam(), "blocked", {"--block", "stencil", "--log-launches", "--libdw", "/nonexistent/libdw.so.1"},
      {{"CUDA_SIM_FAULT", "stencil:2"}});
  const std::string& err = run.process.err;
  const std::string note =
      "[cuda-blockrun] note: no file:line for call sites: libdw could not be loaded (/nonexistent/libdw.so.1 "
      "not "
      "found: /nonexistent/libdw.so.1: cannot open shared object file: No such file or directory); they are "
      "told "
      "by module offset, with the function's name where the dynamic symbol table has it\n"
      "[cuda-blockrun]   for file:line install elfutils' libdw (Debian/Ubuntu: apt-get install libdw1; "
      "Fedora/RHEL: dnf install elfutils-libs), or name it with --libdw PATH (CUDA_BLOCKRUN_LIBDW); --libdw "
      "off "
      "goes without it and without this note\n";
  // Right after the first launch's line and its call site (--log-launches), and never again.
  EXPECT_TRUE(std::regex_search(
      err, std::regex(
               "\\[cuda-blockrun\\] launch: kernel fill[^\n]*, launch #1 \\(fill#1\\) via [^\n]*\n"
               "\\[cuda-blockrun\\]   launched at launch_fill \\(callsite_app(_static)?\\+0x[0-9a-f]+\\)\n" +
               std::regex_replace(note, std::regex("[.^$|()\\[\\]{}*+?\\\\]"), "\\$&"))))
      << err;
  EXPECT_EQ(err.find("note: no file:line"), err.rfind("note: no file:line")) << err;
  // Without --log-launches: right after the first error's account (its lines are one piece), before the
  // summary.
  ReportRun quiet =
      run_with_report(GetParam(), "blocked", {"--block", "stencil", "--libdw", "/nonexistent/libdw.so.1"},
                      {{"CUDA_SIM_FAULT", "stencil:2"}});
  EXPECT_TRUE(contains(quiet.process.err, "[cuda-blockrun]   launched at launch_stencil ("))
      << quiet.process.err;
  EXPECT_TRUE(contains(quiet.process.err, "(or CUDA_BLOCKRUN_BLOCK='stencil,fill'), or --block all\n" + note +
                                              "[cuda-blockrun] summary: "))
      << quiet.process.err;
  EXPECT_EQ(quiet.process.err.find("note: no file:line"), quiet.process.err.rfind("note: no file:line"));
  ReportRun found = run_with_report(GetParam(), "blocked", {"--block", "stencil", "--log-launches"},
                                    {{"CUDA_SIM_FAULT", "stencil:2"}});
  EXPECT_FALSE(contains(found.process.err, "no file:line")) << found.process.err;
}

TEST_P(CallSite, LaunchThatFailsItselfIsCapturedAtTheLaunch) {
  int line = marker_line("CALLSITE_STENCIL");
  ReportRun run = run_with_report(GetParam(), "config", {});
  std::string first = run.record("first_error");
  bool shared = GetParam() == kCallsiteApp;
  EXPECT_TRUE(contains(
      first, shared ? "\"error\":\"cudaErrorInvalidValue\"" : "\"error\":\"CUDA_ERROR_INVALID_VALUE\""))
      << first;
  // The driver explains it in its error log (CUDA 12.9+), and the report keeps the text.
  EXPECT_TRUE(contains(first, "\"driver_log\":[\"One or more of block dimensions of (2048,1,1)")) << first;
  EXPECT_TRUE(contains(run.process.err, "[cuda-blockrun]   driver log: One or more of block dimensions"))
      << run.process.err;
  EXPECT_TRUE(contains(first, "\"certainty\":\"exact\"")) << first;
  EXPECT_TRUE(contains(callsite_of(first), "\"line\":" + std::to_string(line) + "}")) << first;
  expect_valid_report(run, {"start", "first_error", "summary"});
}

TEST_P(CallSite, EveryLaunchCapturedGivesSuspectsTheirCallSites) {
  int stencil = marker_line("CALLSITE_STENCIL"), fill = marker_line("CALLSITE_FILL");
  ReportRun run =
      run_with_report(GetParam(), "suspects", {"--callsites", "all", "--log-launches", "--breadcrumbs=0"},
                      {{"CUDA_SIM_FAULT", "stencil:2"}});
  std::string first = run.record("first_error");
  EXPECT_TRUE(contains(first, "\"certainty\":\"suspects\"")) << first;
  // Suspects newest last: fill #5 (the last launch before the fault surfaced), stencil #4, ...
  std::regex fill_site("\"seq\":5,[^{]*\"callsite\":\\{[^}]*\"function\":\"launch_fill\",\"file\":\"" +
                       kCallsiteSource + "\",\"line\":" + std::to_string(fill) + "\\}");
  std::regex stencil_site("\"seq\":4,[^{]*\"callsite\":\\{[^}]*\"function\":\"launch_stencil\",\"file\":\"" +
                          kCallsiteSource + "\",\"line\":" + std::to_string(stencil) + "\\}");
  EXPECT_TRUE(std::regex_search(first, fill_site)) << first;
  EXPECT_TRUE(std::regex_search(first, stencil_site)) << first;
  expect_valid_report(run, {"start", "launch", "first_error", "summary"});
}

TEST_P(CallSite, SuspectsNameTheirCallerWithoutAStackWalk) {
  // Default call sites: no stack is walked for launches that succeed, but the return address into the code
  // that called CUDA is kept for every launch, and names the launcher.
  int fill = marker_line("CALLSITE_FILL");
  // Launches #3 to #6 are in flight when the program synchronizes.
  ReportRun run = run_with_report(GetParam(), "suspects", {"--breadcrumbs=0"},
                                  {{"CUDA_SIM_FAULT", "stencil:2"}, kSurfaceAtSync});
  std::string first = run.record("first_error");
  std::regex fill_site("\"seq\":5,[^{]*\"callsite\":\\{[^}]*\"function\":\"launch_fill\",\"file\":\"" +
                       kCallsiteSource + "\",\"line\":" + std::to_string(fill) + "\\},\"stack\":\"caller\"");
  if (GetParam() == kCallsiteApp) {
    EXPECT_TRUE(std::regex_search(first, fill_site)) << first;
  } else {
    // The static runtime is inside the program: the driver's caller is the runtime's own code, which is
    // CUDA's.
    EXPECT_TRUE(contains(first, "\"seq\":5,")) << first;
  }
  expect_valid_report(run, {"start", "first_error", "summary"});
}

INSTANTIATE_TEST_SUITE_P(Runtime, CallSite, ::testing::Values(kCallsiteApp, kCallsiteAppStatic),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param == kCallsiteApp ? std::string("Shared") : std::string("Static");
                         });

TEST(Report, SummaryTimesBlockedKernelsOnTheGpuAndTheWallClock) {
  // Each simulated stencil takes 3 ms on the "GPU" (between the events around it); fill takes no time and is
  // not blocked.
  ReportRun run = run_with_report(kCallsiteApp, "blocked", {"--block", "stencil", "--gpu-time"},
                                  {{"CUDA_SIM_KERNEL_US", "stencil=3000"}});
  EXPECT_EQ(run.process.status, 0) << run.process.err;
  std::string summary = run.record("summary");
  std::smatch row;
  ASSERT_TRUE(std::regex_search(
      summary, row,
      std::regex("\\{\"kernel\":\"stencil\\(float\\*, float const\\*, int, long long\\)\",\"kernel_"
                 "mangled\":\"_Z7stencilPfPKfix\",\"launches\":3,\"blocked\":3,\"gpu_timed\":3,"
                 "\"gpu_ms_total\":([0-9.e+-]+),\"gpu_ms_median\":([0-9.e+-]+),\"gpu_ms_p90\":([0-9.e+-]+),"
                 "\"gpu_ms_max\":([0-9.e+-]+),\"wall_ms_total\":([0-9.e+-]+),\"wall_ms_median\":([0-9.e+-]+),"
                 "\"wall_ms_p90\":([0-9.e+-]+),\"wall_ms_max\":([0-9.e+-]+)\\}")))
      << summary;
  double gpu_total = std::stod(row[1]), gpu_median = std::stod(row[2]), gpu_p90 = std::stod(row[3]),
         gpu_max = std::stod(row[4]);
  double wall_total = std::stod(row[5]), wall_median = std::stod(row[6]), wall_p90 = std::stod(row[7]),
         wall_max = std::stod(row[8]);
  EXPECT_GE(gpu_total, 9.0);
  EXPECT_GE(gpu_max, 3.0);
  EXPECT_GE(wall_total, gpu_total);  // the wall time includes the GPU time
  // Each launch took 3 ms or more, and a median or p90 is within 1/32 of a launch's time, never above the
  // max.
  for (double quantile : {gpu_median, gpu_p90, wall_median, wall_p90}) EXPECT_GE(quantile, 3.0 * 31 / 32);
  EXPECT_LE(gpu_median, gpu_p90);
  EXPECT_LE(gpu_p90, gpu_max);
  EXPECT_LE(wall_median, wall_p90);
  EXPECT_LE(wall_p90, wall_max);
  EXPECT_TRUE(
      contains(summary, "\"launches\":6,\"launches_by_api\":{\"__cudaLaunchKernel\":6},\"blocked\":3,"))
      << summary;
  EXPECT_TRUE(contains(summary,
                       "{\"kernel\":\"fill(float*, int, "
                       "float)\",\"kernel_mangled\":\"_Z4fillPfif\",\"launches\":3,\"blocked\":0,"))
      << summary;
  // The log's table: the top kernels by blocked wall time.
  EXPECT_TRUE(std::regex_search(
      run.process.err,
      std::regex("blocked launches by wall time \\(top 10; GPU time from events around the kernel\\):\n"
                 "\\[cuda-blockrun\\] +[0-9.]+ ms wall \\(median [0-9.]+, p90 [0-9.]+, max [0-9.]+\\), "
                 "GPU [0-9.]+ ms \\(median [0-9.]+, p90 [0-9.]+, max [0-9.]+\\); 3 of 3 launches blocked: "
                 "stencil\\(float\\*, float const\\*, int, long long\\)\n")))
      << run.process.err;
  expect_valid_report(run, {"start", "summary"});

  // Without --gpu-time no event is recorded: wall times only.
  ReportRun wall = run_with_report(kCallsiteApp, "blocked", {"--block", "stencil"},
                                   {{"CUDA_SIM_KERNEL_US", "stencil=3000"}});
  EXPECT_TRUE(contains(wall.record("summary"),
                       "\"launches\":3,\"blocked\":3,\"gpu_timed\":0,\"gpu_ms_total\":0,"
                       "\"gpu_ms_median\":0,\"gpu_ms_p90\":0,\"gpu_ms_max\":0,"))
      << wall.record("summary");
  EXPECT_TRUE(contains(wall.process.err, "no GPU time; 3 of 3 launches blocked: stencil"))
      << wall.process.err;
}

TEST(Report, PathExpandsTheProcessIdAndIsNeverASymbolicLink) {
  std::string dir = ::testing::TempDir();
  std::string link = dir + "blockrun_report_link.jsonl";
  unlink(link.c_str());
  ASSERT_EQ(symlink("/dev/null", link.c_str()), 0);
  Env env = {{"LD_LIBRARY_PATH", kSimLib}};
  ProcessResult refused = run_process({kWrapper, "--report", link, "--", kCallsiteApp, "blocked"}, env);
  EXPECT_EQ(refused.status, 0);
  EXPECT_TRUE(contains(refused.err, "cannot open the report file '" + link +
                                        "' (it is a symbolic link, which the shim never follows)"))
      << refused.err;
  unlink(link.c_str());

  // %p: one file per process, named by its pid, which its start record repeats.
  std::string pattern = dir + "blockrun_report_XXXXXX";
  ASSERT_NE(mkdtemp(pattern.data()), nullptr);
  ProcessResult ok =
      run_process({kWrapper, "--report", pattern + "/r_%p.jsonl", "--", kCallsiteApp, "blocked"}, env);
  EXPECT_EQ(ok.status, 0) << ok.err;
  std::vector<std::string> names;
  if (DIR* listing = opendir(pattern.c_str())) {
    while (dirent* entry = readdir(listing))
      if (entry->d_name[0] != '.') names.push_back(entry->d_name);
    closedir(listing);
  }
  ASSERT_EQ(names.size(), 1u);
  std::smatch number;
  ASSERT_TRUE(std::regex_match(names[0], number, std::regex("r_([0-9]+)\\.jsonl")));
  std::string text = read_file(pattern + "/" + names[0]);
  EXPECT_TRUE(contains(text, "\"pid\":" + number[1].str() + ",")) << text;
  unlink((pattern + "/" + names[0]).c_str());
  rmdir(pattern.c_str());
}

}  // namespace
}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
