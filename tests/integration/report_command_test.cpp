// `cuda-blockrun report` against what a user's shell and a job's files give it (issue 40): a trace output
// that names a report (N1), the same report named twice (N10), names that carry terminal control sequences
// (N9, with --explain, the --localize verdict and the shim's log), reports of many launch records read
// without holding them (N4, --localize too), a report without its end (N2); and (issue 42) files that are not
// reports, and the verdict's last line, the command that pins the culprit.
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

// Issue 42: a training job writes metrics.jsonl beside the reports. A file without the tool's start record is
// skipped with a line that says so, given by name or found in a directory, and the exit status is the
// processes' found; it was "the process of metrics.jsonl (no start record): ... killed outright", exit 3.
TEST_F(JobReportCommand, AFileThatIsNotAReportIsSkippedNotTakenForADeadProcess) {
  std::string metrics = write("metrics.jsonl", "{\"step\": 1, \"loss\": 2.3}\n");
  std::string r0 = write("r.0.jsonl", start(0, 10) + kSummary);
  ProcessResult named = run_process({kWrapper, "report", metrics, r0}, {});
  EXPECT_EQ(named.status, 0) << named.out << named.err;
  EXPECT_TRUE(contains(named.out, "1 process (1 report file) on gpu7\nno process failed\n")) << named.out;
  EXPECT_FALSE(contains(named.out, "metrics")) << named.out;
  EXPECT_TRUE(contains(named.err, "cuda-blockrun: report: skipped '" + metrics +
                                      "': not a report of cuda-blockrun (it has no start record)\n"))
      << named.err;

  ProcessResult found = run_process({kWrapper, "report", directory_}, {});
  EXPECT_EQ(found.status, 0) << found.out << found.err;
  EXPECT_TRUE(contains(found.out, "1 process (1 report file) on gpu7\n")) << found.out;
  EXPECT_TRUE(
      contains(found.err, "cuda-blockrun: report: skipped 1 file of '" + directory_ +
                              "' that is not a report of cuda-blockrun (no start record): metrics.jsonl\n"))
      << found.err;

  ProcessResult alone = run_process({kWrapper, "report", metrics}, {});
  EXPECT_EQ(alone.status, 2) << alone.out;
  EXPECT_TRUE(contains(alone.err, "report: none of the files given is a report of cuda-blockrun"))
      << alone.err;
  // A report whose start was lost but which holds the tool's records is still a process (its failure counts).
  std::string headless = write("headless.jsonl", first_error(1000, "stencil") + kSummary);
  EXPECT_EQ(run_process({kWrapper, "report", headless}, {}).status, 1);
}

// Issue 40, N2: a report with a start and no end says only what is known, and its end being unknown (not a
// failure) is exit status 3; a process that ran clean (start and summary, nothing launched) is 0.
TEST_F(JobReportCommand, AReportWithoutAnEndSaysOnlyWhatIsKnown) {
  std::string r0 = write("r.0.jsonl", start(0, 10) + kSummary), r1 = write("r.1.jsonl", start(1, 11));
  ProcessResult merged = run_process({kWrapper, "report", r0, r1}, {});
  EXPECT_EQ(merged.status, 3) << merged.out;
  EXPECT_TRUE(
      contains(merged.out,
               "  rank 1 (pid 11 on gpu7, cuda_app): no end record: the process ended without the shim "
               "writing its end (killed by SIGKILL or the out-of-memory killer, an exit that skipped the "
               "shim's exit code) or is still running; how it ended is unknown\n"))
      << merged.out;
  EXPECT_FALSE(contains(merged.out, "killed outright")) << merged.out;
  EXPECT_EQ(run_process({kWrapper, "report", r0}, {}).status, 0);
}

// Issue 42: the verdict ends with the next step, the command that pins the culprit in the rank that failed
// first (its report's pin rule, with --ranks), or, for a process alone, its --localize command; --json has
// it.
TEST_F(JobReportCommand, TheVerdictEndsWithTheCommandThatPinsTheCulprit) {
  std::string pinned_by_rule = first_error(1000, "stencil");
  pinned_by_rule.replace(pinned_by_rule.find("\"pin_rule\":null"), 15, "\"pin_rule\":\"stencil#13\"");
  std::string r0 = write("r.0.jsonl", start(0, 10) + kSummary);
  std::string r1 = write("r.1.jsonl", start(1, 11) + pinned_by_rule + kSummary);
  ProcessResult merged = run_process({kWrapper, "report", r0, r1}, {});
  EXPECT_EQ(merged.status, 1) << merged.out;
  const std::string pin =
      "to pin it: run the job again with --ranks 1 --block 'stencil#13' added to cuda-blockrun's options, "
      "which "
      "act in rank 1 alone (docs/distributed.md, \"Localizing one rank of a job\")\n";
  EXPECT_TRUE(merged.out.size() > pin.size() && merged.out.substr(merged.out.size() - pin.size()) == pin)
      << merged.out;
  ProcessResult as_json = run_process({kWrapper, "report", "--json", r0, r1}, {});
  EXPECT_TRUE(contains(as_json.out, "\"pin_command\":\"--ranks 1 --block 'stencil#13'\"")) << as_json.out;

  // No rule in the report: every launch of that rank.
  std::string r2 = write("r.2.jsonl", start(2, 12) + first_error(900, "lookup") + kSummary);
  EXPECT_TRUE(contains(run_process({kWrapper, "report", r0, r2}, {}).out,
                       "to pin it: run the job again with --ranks 2 --block all added to"));
  // A process alone: the command its report gives.
  std::string alone = pinned_by_rule;
  alone.replace(alone.find("\"pin_rule\""), 0,
                "\"localize_command\":\"cuda-blockrun --localize -- ./app 3\",");
  std::string r3 = write("alone.jsonl", start(0, 13) + alone + kSummary);
  ProcessResult lone = run_process({kWrapper, "report", r3}, {});
  EXPECT_TRUE(contains(lone.out, "\nto pin it: cuda-blockrun --localize -- ./app 3\n")) << lone.out;
  // Pinned with its call site by blocking: nothing left to pin.
  std::string blocked = first_error(800, "fill");
  blocked.replace(blocked.find("\"breadcrumbs\""), 13, "\"blocking\"");
  std::string r4 = write("r.4.jsonl", start(4, 14) + blocked + kSummary);
  ProcessResult done = run_process({kWrapper, "report", r0, r4}, {});
  EXPECT_EQ(done.status, 1);
  EXPECT_FALSE(contains(done.out, "to pin it")) << done.out;
}

// N4 for --localize: each run's reports are read a piece at a time, as `report` reads them. The program here
// writes its own report of 60,000 launch records (20 MB) where the shim would; the wrapper read it whole.
TEST_F(JobReportCommand, LocalizeReadsTheRunsReportsWithoutHoldingThem) {
  if (kSanitizedBuild)
    GTEST_SKIP() << "AddressSanitizer's quarantine keeps every freed record: peak memory says nothing there";
  auto report = [&](const std::string& name, int launches) {
    std::ofstream file(directory_ + "/" + name, std::ios::binary);
    file << start(0, 10);
    for (int seq = 1; seq <= launches; ++seq) file << launch(static_cast<uint64_t>(seq), 10);
    file << kSummary;
    return directory_ + "/" + name;
  };
  std::string small = report("small.jsonl", 1), big = report("big.jsonl", 60000);
  // `sh -c 'cp FILE REPORT'`, REPORT being the run's CUDA_BLOCKRUN_REPORT with %p made the shell's pid.
  auto localize = [&](const std::string& input) {
    return std::vector<std::string>{
        kWrapper,  "--localize", "--",
        "/bin/sh", "-c",         "cp \"$0\" \"$(printf %s \"$CUDA_BLOCKRUN_REPORT\" | sed \"s/%p/$$/\")\"",
        input};
  };
  ProcessResult said = run_process(localize(big), {});
  EXPECT_EQ(said.status, 0) << said.err;
  EXPECT_TRUE(contains(said.err, "localize: no CUDA error in run 1 (exit status 0): nothing to localize"))
      << said.err;
  long baseline = peak_memory_kb(localize(small)), peak = peak_memory_kb(localize(big));
  ASSERT_GT(baseline, 0);
  EXPECT_LT(peak - baseline, 6 << 10)
      << baseline << " kB for one launch record, " << peak << " kB for 60,000";
}

// N9 in the shim's own log and --explain: a kernel named with ESC ] 0 ; ... BEL and a lone C1 byte (0x9B, CSI
// to a terminal that reads 8-bit controls). The breadcrumbs' hint built the --block rule from the name raw.
TEST_F(JobReportCommand, ControlBytesInNamesAreEscapedInTheShimsLogToo) {
  const std::string evil = "evil\x1b]0;PWNED\x07\x9b";
  auto raw = [](const std::string& text) { return text.find_first_of("\x1b\x07\x9b") != std::string::npos; };
  ProcessResult run = run_wrapped({}, {kProbeApp, "name", evil, "1"}, {{"CUDA_SIM_FAULT", "*"}});
  EXPECT_TRUE(contains(run.err, "found by breadcrumbs")) << run.err;
  EXPECT_TRUE(contains(run.err, "run again with --block 'evil\\x1b]0;PWNED\\x07\\x9b#1'")) << run.err;
  EXPECT_FALSE(raw(run.err)) << run.err;
  ProcessResult explained = run_process({kWrapper, "--block", "all", "--explain", evil}, {});
  EXPECT_EQ(explained.status, 0) << explained.err;
  EXPECT_FALSE(raw(explained.out + explained.err)) << explained.out;
  EXPECT_TRUE(contains(explained.out, "kernel evil\\x1b]0;PWNED\\x07\\x9b, launch #1")) << explained.out;
}

// A kernel name with a quote in it (C++ template arguments: pick<'a'>): the log's `--block '...'` hint is
// still one shell argument, and the command it gives, pasted into a shell, blocks that launch.
TEST_F(JobReportCommand, AHintForAKernelNamedWithAQuoteWorksPastedIntoAShell) {
  const std::string name = "pick<'a'>";
  ProcessResult run = run_wrapped({}, {kProbeApp, "name", name, "1"}, {{"CUDA_SIM_FAULT", "*"}});
  EXPECT_TRUE(contains(run.err, "found by breadcrumbs")) << run.err;
  const std::string hint = "--block 'pick<'\\''a'\\''>#1'";
  ASSERT_TRUE(contains(run.err, hint)) << run.err;
  // The hint followed as printed, through /bin/sh.
  ProcessResult pinned = run_process(
      {"/bin/sh", "-c", "exec \"$0\" " + hint + " -- \"$1\" name \"$2\" 1", kWrapper, kProbeApp, name},
      {{"CUDA_SIM_FAULT", "*"}, {"LD_LIBRARY_PATH", kSimLib}});
  EXPECT_TRUE(contains(pinned.err, "in kernel pick<'a'>")) << pinned.err;
  EXPECT_TRUE(contains(pinned.err, ", blocked")) << pinned.err;
  EXPECT_TRUE(contains(pinned.err, "1 blocked")) << pinned.err;
}

// Issue 42, no silent outcomes: a run whose program never called CUDA wrote no report and said nothing. The
// program the wrapper started says so in one line; a program whose child wrote the report does not.
TEST_F(JobReportCommand, ARunThatWroteNoReportBecauseItNeverCalledCudaSaysSo) {
  std::string report = directory_ + "/r.jsonl";
  for (bool error_exitcode : {false, true}) {
    std::vector<std::string> options = {"--report", report};
    if (error_exitcode) options.insert(options.end(), {"--error-exitcode", "9"});
    // bash, which ends by exit(3) (dash ends by _exit(2), which runs no exit code of the shim's, and
    // coreutils' echo closes standard error before it).
    ProcessResult quiet = run_wrapped(options, {"/bin/bash", "-c", "echo 1; true"}, {});
    EXPECT_EQ(quiet.status, 0) << quiet.err;
    EXPECT_EQ(quiet.out, "1\n");
    EXPECT_EQ(quiet.err, "[cuda-blockrun] no report was written to '" + report +
                             "': the program never called CUDA (a report is begun at a process's first CUDA "
                             "call)\n");
    EXPECT_NE(access(report.c_str(), F_OK), 0);
  }
  // The shell never calls CUDA; its child writes the report (%p: the child's own file): nothing to say.
  std::string per_process = directory_ + "/r.%p.jsonl";
  ProcessResult shell =
      run_wrapped({"--report", per_process}, {"/bin/bash", "-c", "\"$0\" steps; true", kApp}, {});
  EXPECT_EQ(shell.status, 0) << shell.err;
  EXPECT_FALSE(contains(shell.err, "no report was written")) << shell.err;
  ProcessResult used = run_wrapped({"--report", report}, {kApp, "steps"}, {});
  EXPECT_FALSE(contains(used.err, "no report was written")) << used.err;
  // Without the wrapper (a preloaded shim, or the program's children) nothing is said.
  EXPECT_EQ(run_process({"/bin/bash", "-c", "echo 1; true"},
                        {{"LD_PRELOAD", kShim}, {"CUDA_BLOCKRUN_REPORT", directory_ + "/p.jsonl"}})
                .err,
            "");
}

// Issue 42: `--report 'x.%j.jsonl'` wrote a file named so. An unknown % escape is refused before the program
// runs, with the known ones.
TEST_F(JobReportCommand, AnUnknownEscapeInAPathIsRefusedBeforeTheProgramRuns) {
  std::string marker = directory_ + "/ran";
  for (const char* flag : {"--report", "--log", "--trace"}) {
    ProcessResult refused =
        run_wrapped({flag, directory_ + "/x.%j.jsonl"}, {"/bin/sh", "-c", "touch \"$0\"", marker}, {});
    EXPECT_EQ(refused.status, 2) << flag;
    EXPECT_TRUE(
        contains(refused.err, "='" + directory_ +
                                  "/x.%j.jsonl': unknown escape '%j' (the known escapes: %p the process "
                                  "id, %r the rank, %h the host name, %% a % sign)"))
        << refused.err;
    EXPECT_NE(access(marker.c_str(), F_OK), 0) << flag << ": the program ran";
  }
}

}  // namespace
}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
