// `cuda-blockrun report` against what a user's shell and a job's files give it (issue 40): a trace output
// that names a report (N1), the same report named twice (N10), names that carry terminal control sequences
// (N9, with --explain and the --localize verdict), and reports of many launch records read without holding
// them (N4).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "sim_programs.h"
#include "../sanitized_build.h"

namespace blockrun::testing {
namespace {

const std::string kProbeApp = CUDA_BLOCKRUN_PROBE_APP;

// A fresh directory of the test's own, removed with it.
class JobReportCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = ::testing::TempDir() + "report_command_" + std::to_string(getpid()) + "_" +
                 ::testing::UnitTest::GetInstance()->current_test_info()->name();
    run_process({"/bin/rm", "-rf", directory_}, {});
    mkdir(directory_.c_str(), 0755);
  }
  void TearDown() override { run_process({"/bin/rm", "-rf", directory_}, {}); }

  std::string write(const std::string& name, const std::string& text) const {
    std::string path = directory_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }

  std::string directory_;
};

std::string start(int rank, int pid, const std::string& process = "cuda_app") {
  return "{\"type\":\"start\",\"time\":100,\"host\":\"gpu7\",\"pid\":" + std::to_string(pid) +
         ",\"rank\":" + std::to_string(rank) + ",\"run\":\"job-1\",\"process\":\"" + process + "\"}\n";
}

// A first error at `time`, pinned to `kernel` (a JSON string's contents) by breadcrumbs.
std::string first_error(double time, const std::string& kernel) {
  return "{\"type\":\"first_error\",\"time\":" + std::to_string(time) +
         ",\"error\":\"cudaErrorIllegalAddress\",\"message\":\"an illegal memory access was encountered\","
         "\"surfaced_api\":\"cudaStreamSynchronize\",\"how\":\"h\",\"certainty\":\"exact\",\"method\":"
         "\"breadcrumbs\",\"launch\":{\"seq\":38,\"kernel\":\"" +
         kernel + "\",\"kernel_base\":\"" + kernel +
         "\",\"kernel_launch\":13,\"stream\":\"0x0\",\"grid\":[64,1,1],\"block\":[128,1,1],\"shared_memory\":"
         "0,"
         "\"collective\":null},\"suspects\":[],\"pin_rule\":null}\n";
}

// A launch record as the shim writes them with --log-launches (a little shorter).
std::string launch(uint64_t seq, int pid) {
  return "{\"type\":\"launch\",\"time\":100.5,\"pid\":" + std::to_string(pid) +
         ",\"began_ns\":" + std::to_string(seq * 1000) + ",\"ended_ns\":" + std::to_string(seq * 1000 + 400) +
         ",\"outcome\":\"launched\",\"launch\":{\"seq\":" + std::to_string(seq) +
         ",\"thread\":1,\"api\":\"cudaLaunchKernel\",\"kernel\":\"stencil(float*, float const*, int, long "
         "long)\",\"kernel_base\":\"stencil\",\"kernel_launch\":" +
         std::to_string(seq) +
         ",\"stream\":\"0x0\",\"grid\":[4096,1,1],\"block\":[256,1,1],\"shared_memory\":0,\"callsite\":{"
         "\"function\":\"run_steps(int)\",\"file\":\"/src/tests/programs/cuda_app.cpp\",\"line\":117}}}\n";
}

const std::string kSummary = "{\"type\":\"summary\",\"time\":300,\"launches\":60}\n";

// N1: `report --trace crash.*.jsonl` makes the shell's first report the trace's file. A file that is not a
// trace of this command is not overwritten (unless --force), and a report read is never the trace's file.
TEST_F(JobReportCommand, TheTraceNeverOverwritesAReport) {
  const std::string rank0 = start(0, 10) + first_error(1000, "stencil") + kSummary;
  std::string r0 = write("crash.0.jsonl", rank0), r1 = write("crash.1.jsonl", start(1, 11) + kSummary);
  ProcessResult glob = run_process({kWrapper, "report", "--trace", r0, r1}, {});
  EXPECT_EQ(glob.status, 2) << glob.err;
  EXPECT_TRUE(contains(glob.err, "report: '" + r0 +
                                     "' exists and is not a trace written by `cuda-blockrun report --trace`: "
                                     "not overwritten (give another file, or --force to overwrite it)"))
      << glob.err;
  EXPECT_EQ(read_file(r0), rank0);

  // The same file by another name, or in a directory read: refused even with --force.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--trace", directory_ + "/./crash.0.jsonl", r0, r1},
        {"--force", "--trace",
         directory_ + "/../" + directory_.substr(directory_.rfind('/') + 1) + "/crash.0.jsonl", directory_},
        {"--trace", r1, "--force", r0, r1}}) {
    std::vector<std::string> argv = {kWrapper, "report"};
    argv.insert(argv.end(), args.begin(), args.end());
    ProcessResult same = run_process(argv, {});
    EXPECT_EQ(same.status, 2) << same.err;
    EXPECT_TRUE(contains(same.err, "' is the report '")) << same.err;
    EXPECT_TRUE(contains(same.err, "which it would overwrite: give the trace a file of its own")) << same.err;
  }
  EXPECT_EQ(read_file(r0), rank0);

  // A trace this command wrote is written again; another file only with --force.
  std::string trace = directory_ + "/job.json";
  EXPECT_EQ(run_process({kWrapper, "report", "--trace", trace, r0, r1}, {}).status, 1);
  ProcessResult again = run_process({kWrapper, "report", "--trace", trace, r0, r1}, {});
  EXPECT_EQ(again.status, 1) << again.err;
  EXPECT_TRUE(contains(again.err, "cuda-blockrun: trace: 0 launches of 2 processes written to " + trace))
      << again.err;
  std::string notes = write("notes.txt", "mine\n");
  EXPECT_EQ(run_process({kWrapper, "report", "--trace", notes, r0, r1}, {}).status, 2);
  EXPECT_EQ(read_file(notes), "mine\n");
  ProcessResult forced = run_process({kWrapper, "report", "--trace", notes, "--force", r0, r1}, {});
  EXPECT_EQ(forced.status, 1) << forced.err;
  EXPECT_EQ(read_file(notes).rfind("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"cuda-blockrun "
                                   "report --trace\"",
                                   0),
            0u);
  ProcessResult lone_force = run_process({kWrapper, "report", "--force", r0}, {});
  EXPECT_EQ(lone_force.status, 2);
  EXPECT_TRUE(contains(lone_force.err, "report: --force is for --trace OUT")) << lone_force.err;
}

// N10: one report named twice (by two spellings, or in a directory and by itself) is one process, not the
// culprit failing again "+0.000 s" after itself.
TEST_F(JobReportCommand, OneReportNamedTwiceIsReadOnce) {
  std::string r0 = write("r.0.jsonl", start(0, 10) + first_error(1000, "stencil") + kSummary);
  write("r.1.jsonl", start(1, 11) + kSummary);
  for (const std::vector<std::string>& names :
       {std::vector<std::string>{r0, directory_ + "/./r.0.jsonl", directory_ + "/r.1.jsonl"},
        {directory_, r0}}) {
    std::vector<std::string> argv = {kWrapper, "report"};
    argv.insert(argv.end(), names.begin(), names.end());
    ProcessResult merged = run_process(argv, {});
    EXPECT_EQ(merged.status, 1) << merged.err;
    EXPECT_TRUE(contains(merged.out, "2 processes (2 report files) on gpu7\n")) << merged.out;
    EXPECT_FALSE(contains(merged.out, "+0.000 s")) << merged.out;
    EXPECT_FALSE(contains(merged.out, "after it:")) << merged.out;
    EXPECT_TRUE(contains(merged.err, "' is the same file as '")) << merged.err;
    EXPECT_TRUE(contains(merged.err, "': read once")) << merged.err;
  }
}

// N9: kernel and process names are the program's: their control bytes (ESC, BEL, a C1 CSI) are printed
// escaped by `report`, --explain and the --localize verdict, never raw.
TEST_F(JobReportCommand, ControlBytesInNamesAreEscapedInEveryVerdict) {
  const std::string evil_json =
      "evil\\u001b]0;PWNED\\u0007\xc2\x9b"
      "2J";
  std::string r0 = write("r.0.jsonl", start(0, 10, "app\\u001b[31m") + first_error(1000, evil_json));
  ProcessResult merged = run_process({kWrapper, "report", r0}, {});
  EXPECT_EQ(merged.status, 1) << merged.err;
  auto raw = [](const std::string& text) {
    return text.find_first_of("\x1b\x07") != std::string::npos || contains(text, "\xc2\x9b");
  };
  EXPECT_FALSE(raw(merged.out)) << merged.out;
  EXPECT_TRUE(contains(merged.out, "first to fail: rank 0 (pid 10 on gpu7, app\\x1b[31m)")) << merged.out;
  EXPECT_TRUE(contains(merged.out, "kernel evil\\x1b]0;PWNED\\x07\\xc2\\x9b2J")) << merged.out;

  const std::string evil = "evil\x1b]0;PWNED\x07";
  ProcessResult explained = run_process({kWrapper, "--block", "all", "--explain", evil}, {});
  EXPECT_EQ(explained.status, 0) << explained.err;
  EXPECT_FALSE(raw(explained.out + explained.err)) << explained.out;
  EXPECT_TRUE(contains(explained.out, "kernel evil\\x1b]0;PWNED\\x07, launch #1")) << explained.out;
  ProcessResult refused = run_process({kWrapper, "--explain", evil + "#\x1b[2J"}, {});
  EXPECT_EQ(refused.status, 2);
  EXPECT_FALSE(raw(refused.err)) << refused.err;

  ProcessResult localized =
      run_wrapped({"--localize"}, {kProbeApp, "name", evil, "1"}, {{"CUDA_SIM_FAULT", "*"}});
  // The wrapper's verdict, after run 1's own log (the shim's lines, which are not the wrapper's).
  size_t verdict = localized.err.find("[cuda-blockrun] localize: run 1 ended");
  ASSERT_NE(verdict, std::string::npos) << localized.err;
  EXPECT_FALSE(raw(localized.err.substr(verdict))) << localized.err;
  EXPECT_TRUE(contains(localized.err.substr(verdict),
                       "[cuda-blockrun] localize: culprit: kernel evil\\x1b]0;PWNED\\x07<<<"))
      << localized.err;
}

// The peak resident memory of `argv` (kB), its output discarded.
long peak_memory_kb(const std::vector<std::string>& argv) {
  std::vector<char*> pointers;
  std::vector<std::string> arguments = argv;
  for (std::string& argument : arguments) pointers.push_back(argument.data());
  pointers.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int spawned = posix_spawn(&pid, pointers[0], &actions, nullptr, pointers.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) return -1;
  int status = 0;
  struct rusage usage {};
  if (wait4(pid, &status, 0, &usage) != pid) return -1;
  return usage.ru_maxrss;
}

// N4: the verdict needs first errors, ends and counts, not every launch record; the trace is written as the
// records are read. Memory stays where it is for a report of one launch record and of 60,000 (20 MB): the
// whole file was read into memory, and with --trace every record kept as a JSON value (5x its size).
TEST_F(JobReportCommand, MemoryDoesNotGrowWithTheLaunchRecords) {
  if (kSanitizedBuild)
    GTEST_SKIP() << "AddressSanitizer's quarantine keeps every freed record: peak memory says nothing there";
  auto report = [&](const std::string& name, int launches) {
    std::ofstream file(directory_ + "/" + name, std::ios::binary);
    file << start(0, 10);
    for (int seq = 1; seq <= launches; ++seq) file << launch(static_cast<uint64_t>(seq), 10);
    file << first_error(1000, "stencil") << kSummary;
    return directory_ + "/" + name;
  };
  std::string small = report("small.jsonl", 1), big = report("big.jsonl", 60000);
  struct stat big_status {};
  ASSERT_EQ(stat(big.c_str(), &big_status), 0);
  ASSERT_GT(big_status.st_size, 18 << 20);
  const long kMarginKb = 6 << 10;  // a third of the report: the old reading took all of it, or 5x
  for (bool trace : {false, true}) {
    auto command = [&](const std::string& input) {
      std::vector<std::string> argv = {kWrapper, "report"};
      if (trace) argv.insert(argv.end(), {"--trace", directory_ + "/t.json"});
      argv.push_back(input);
      return argv;
    };
    long baseline = peak_memory_kb(command(small)), peak = peak_memory_kb(command(big));
    ASSERT_GT(baseline, 0);
    EXPECT_LT(peak - baseline, kMarginKb) << (trace ? "--trace: " : "verdict: ") << baseline << " kB for one "
                                          << "launch record, " << peak << " kB for 60,000";
  }
  ProcessResult traced = run_process({kWrapper, "report", "--trace", directory_ + "/t.json", big}, {});
  EXPECT_TRUE(contains(traced.err, "trace: 60000 launches of 1 process written to ")) << traced.err;
}

}  // namespace
}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
