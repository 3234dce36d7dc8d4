// Issue 17, reliability round two: each defect found by trying to break the shim, as the careless user or the
// attacker did it (tests/programs/probe_app.cpp), on the simulated stack. Each test failed before its fix.
#include <fcntl.h>
#include <signal.h>
#include <gtest/gtest.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>

#include <string>
#include <vector>

#include "report_json.h"
#include "sim_programs.h"
#include "../sanitized_build.h"

namespace {

using namespace blockrun::testing;

const std::string kProbeApp = CUDA_BLOCKRUN_PROBE_APP;
const std::string kLifecycleApp = CUDA_BLOCKRUN_LIFECYCLE_APP;
const std::string kLoadableLibrary = CUDA_BLOCKRUN_DLSYM_PROBE_LIB;  // loaded by nothing but the test
const std::string kSchema = CUDA_BLOCKRUN_SOURCE_DIR "/docs/report.schema.json";
const std::string kValidator = CUDA_BLOCKRUN_SOURCE_DIR "/tests/report/validate_report.py";

// Runs of the exit races: each crashed in about half of the runs before its fix (fewer in the sanitizer
// builds, where a run takes seconds).
constexpr int kExitRaceRuns = kSanitizedBuild ? 3 : 10;

// A fresh directory of the test's own, removed with what is in it.
struct Directory {
  std::string path;
  Directory() {
    std::string pattern = ::testing::TempDir() + "blockrun_hardening_XXXXXX";
    path = mkdtemp(pattern.data());
  }
  ~Directory() { run_process({"/bin/rm", "-rf", path}, {}); }
  std::string operator/(const std::string& name) const { return path + "/" + name; }
};

// The program directly under the preloaded shim (no wrapper), with the shim's variables in `env`.
ProcessResult run_preloaded(const std::vector<std::string>& command, Env env) {
  env["LD_LIBRARY_PATH"] = kSimLib;
  env["LD_PRELOAD"] = kShim;
  return run_process(command, env);
}

// The report's records' `field` (a string, or a whole number as text), in order; "not JSON" for a line that
// is not a JSON object, "none" for a record without the field.
std::vector<std::string> record_fields(const std::string& path, const char* field) {
  std::vector<std::string> values;
  std::string text = read_file(path);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    auto record = blockrun::parse_json(line);
    if (!record) {
      values.push_back("not JSON");
    } else if (!blockrun::member(*record, field)) {
      values.push_back("none");
    } else {
      std::string value = blockrun::string_member(*record, field);
      values.push_back(value.empty() ? blockrun::whole_member(*record, field) : value);
    }
  }
  return values;
}

std::vector<std::string> record_types(const std::string& path) {
  std::vector<std::string> types = record_fields(path, "type");
  std::replace(types.begin(), types.end(), std::string("none"), std::string("not JSON"));
  return types;
}

std::string valid_report_problems(const std::string& path) {
  ProcessResult check = run_process({CUDA_BLOCKRUN_VALIDATOR_PYTHON, kValidator, kSchema, path}, {});
  return check.status == 0 ? "" : check.out + check.err;
}

int count(const std::vector<std::string>& items, const std::string& item) {
  return static_cast<int>(std::count(items.begin(), items.end(), item));
}

// ---- F1: launches during exit, after the shim's statics would have died ----

TEST(Hardening, LaunchesFromAtexitHandlersWithEveryLaunchLoggedAreClean) {
  Directory directory;
  for (int run = 0; run < kExitRaceRuns / 2 + 1; ++run) {
    ProcessResult logged = run_wrapped({"--log-launches"}, {kLifecycleApp}, {});
    EXPECT_EQ(logged.status, 0) << logged.err.substr(logged.err.size() > 2000 ? logged.err.size() - 2000 : 0);
    EXPECT_TRUE(contains(logged.err, "atexit: cudaDeviceSynchronize returned 0\n"));
    ProcessResult to_file =
        run_wrapped({"--log-launches", "--log", directory / "log", "--report", directory / "r.jsonl"},
                    {kLifecycleApp}, {});
    EXPECT_EQ(to_file.status, 0) << to_file.err;
  }
}

TEST(Hardening, AThreadCallingExitWhileOthersLaunchKeepsItsStatus) {
  Directory directory;
  for (int run = 0; run < kExitRaceRuns; ++run) {
    std::string report = directory / ("r" + std::to_string(run) + ".jsonl");
    ProcessResult r = run_preloaded({kProbeApp, "thread-calls-exit"}, {{"CUDA_BLOCKRUN_REPORT", report},
                                                                       {"CUDA_BLOCKRUN_LOG_LAUNCHES", "1"},
                                                                       {"CUDA_BLOCKRUN_LOG", "/dev/null"}});
    EXPECT_EQ(r.status, 6) << r.err;
    std::vector<std::string> types = record_types(report);
    EXPECT_EQ(count(types, "fatal_signal"), 0) << read_file(report).substr(0, 2000);
    EXPECT_EQ(count(types, "summary"), 1);
  }
}

// ---- F2: regular expressions from the environment, before main() and at a launch ----

TEST(Hardening, RegularExpressionsThatBacktrackedNeitherHangNorCrash) {
  // Each took from seconds to minutes before main(), or overflowed the stack, with std::regex.
  const std::string xs(28, 'x');
  const std::string long_argument(100000, 'a');
  std::string options;
  for (int i = 1; i <= 2000; ++i) options += "--opt" + std::to_string(10000 + i).substr(1) + "=value ";
  const std::vector<std::pair<std::string, std::string>> cases = {{"(x|x)*y", xs},
                                                                  {".*.*.*z", std::string(400, 'a')},
                                                                  {".*z", long_argument},
                                                                  {"(a|b)*z", long_argument},
                                                                  {"true .*--opt0001", options}};
  for (const auto& [pattern, argument] : cases) {
    ProcessResult r =
        run_preloaded({"/bin/echo", argument.substr(0, 10)}, {{"CUDA_BLOCKRUN_PROCESS", pattern}});
    EXPECT_EQ(r.status, 0) << pattern << ": " << r.err;
    ProcessResult with_argument =
        run_preloaded({"/bin/sh", "-c", "exit 0", argument}, {{"CUDA_BLOCKRUN_PROCESS", pattern}});
    EXPECT_EQ(with_argument.status, 0) << pattern << ": " << with_argument.err;
  }
  // At a launch: a kernel of 26 x's decided by regex=(x|x)*y (35 s before), one of 300 a's by .*.*.*z.
  ProcessResult named = run_preloaded({kProbeApp, "name", std::string(26, 'x'), "3"},
                                      {{"CUDA_BLOCKRUN_BLOCK", "regex=(x|x)*y"}});
  EXPECT_EQ(named.status, 0) << named.err;
  EXPECT_EQ(named.out, "done\n");
  ProcessResult matched = run_preloaded({kProbeApp, "name", std::string(300, 'a') + "z", "2"},
                                        {{"CUDA_BLOCKRUN_BLOCK", "regex=.*.*.*z"}});
  EXPECT_EQ(matched.status, 0) << matched.err;
  EXPECT_TRUE(contains(matched.err, "summary: 2 launches, 2 blocked")) << matched.err;
}

// ---- The loader's locks: the shim's search for a real function while another thread loads a library ----

TEST(Hardening, LookingForARealFunctionWhileAnotherThreadLoadsALibraryDoesNotDeadlock) {
  // On the H100 (2026-12-05) a first error's symbolizer loading libdw on one thread and a blocked launch's
  // error text looking for cuGetErrorName on another deadlocked the process: find_real opened libcuda from
  // inside a dl_iterate_phdr walk (the loader's two locks, in the order opposite to dlopen's). Here one
  // thread loads and unloads a library while another calls a function the simulated driver lacks, which sends
  // the shim through that search at every call. It hung within the first few thousand calls before the fix;
  // `timeout` ends a hang (status 137) instead of the test.
  const int calls = kSanitizedBuild ? 2000 : 20000;
  ProcessResult r = run_preloaded({"/usr/bin/timeout", "-s", "KILL", "60", kProbeApp, "loader-race",
                                   kLoadableLibrary, std::to_string(calls)},
                                  {});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "done\n") << r.err;
  EXPECT_TRUE(contains(r.err, "cuMemGetInfo_v2"))
      << "the shim did not look for the missing function: " << r.err;
}

// ---- F3: a forked child that dies before any CUDA call ----

TEST(Hardening, AChildThatDiesWithoutCudaWritesNothingOfTheParents) {
  for (const char* scenario : {"fork-crash", "fork-abort"}) {
    Directory directory;
    ProcessResult r = run_preloaded(
        {kProbeApp, scenario},
        {{"CUDA_BLOCKRUN_REPORT", directory / "r.%p.jsonl"}, {"CUDA_BLOCKRUN_LOG", directory / "log.%p"}});
    EXPECT_EQ(r.status, 0) << r.err;
    EXPECT_TRUE(contains(r.out, "child ended by signal")) << r.out;
    ProcessResult listing = run_process({"/bin/sh", "-c", "ls " + directory.path}, {});
    EXPECT_EQ(std::count(listing.out.begin(), listing.out.end(), '\n'), 2)
        << listing.out;  // the parent's two
    ProcessResult reports = run_process({"/bin/sh", "-c", "cat " + directory.path + "/r.*.jsonl"}, {});
    EXPECT_FALSE(contains(reports.out, "fatal_signal")) << reports.out;
    ProcessResult logs = run_process({"/bin/sh", "-c", "cat " + directory.path + "/log.*"}, {});
    EXPECT_FALSE(contains(logs.out, "fatal signal")) << logs.out;
    EXPECT_TRUE(contains(logs.out, "summary: 6 launches, 0 blocked; no CUDA errors")) << logs.out;
  }
}

// ---- F5, F7, F12, F16: what is planted at the path, or given twice ----

TEST(Hardening, AFifoAtTheLogOrReportPathIsRefusedWithoutHanging) {
  Directory directory;
  ASSERT_EQ(mkfifo((directory / "fifo.jsonl").c_str(), 0600), 0);
  ProcessResult report =
      run_preloaded({kProbeApp, "loop", "3"}, {{"CUDA_BLOCKRUN_REPORT", directory / "fifo.jsonl"}});
  EXPECT_EQ(report.status, 0) << report.err;
  EXPECT_TRUE(contains(report.err, "cannot open the report file '" + directory / "fifo.jsonl" +
                                       "' (it is a FIFO (named pipe) that nobody reads, not a regular file); "
                                       "no report is written"))
      << report.err;
  ProcessResult log =
      run_preloaded({kProbeApp, "loop", "3"}, {{"CUDA_BLOCKRUN_LOG", directory / "fifo.jsonl"}});
  EXPECT_EQ(log.status, 0) << log.err;
  EXPECT_TRUE(contains(log.err, "not a regular file); logging to standard error")) << log.err;
  EXPECT_TRUE(contains(log.err, "summary: 3 launches")) << log.err;
}

TEST(Hardening, AnExistingFileOthersCanReadIsRefusedForPrivateFiles) {
  Directory directory;
  std::string path = directory / "pre.jsonl";
  std::ofstream(path) << "x\n";
  ASSERT_EQ(chmod(path.c_str(), 0666), 0);
  ProcessResult r = run_preloaded({kProbeApp, "loop", "3"},
                                  {{"CUDA_BLOCKRUN_PRIVATE_FILES", "1"}, {"CUDA_BLOCKRUN_REPORT", path}});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err,
                       "(other users may read or write it (mode 0666) and private files were asked for; "
                       "remove it or make it private (chmod 600)); no report is written"))
      << r.err;
  EXPECT_EQ(read_file(path), "x\n");
  if (geteuid() == 0) {  // a file planted by another user
    ASSERT_EQ(chown(path.c_str(), 65534, 65534), 0);
    ProcessResult planted = run_preloaded({kProbeApp, "loop", "3"}, {{"CUDA_BLOCKRUN_REPORT", path}});
    EXPECT_TRUE(contains(planted.err,
                         "(it belongs to another user (uid 65534), not to this one (uid 0)); no "
                         "report is written"))
        << planted.err;
    EXPECT_EQ(read_file(path), "x\n");
  }
}

TEST(Hardening, ASymbolicLinkEarlierInThePathIsNeverFollowed) {
  Directory directory;
  ASSERT_EQ(mkdir((directory / "real").c_str(), 0700), 0);
  ASSERT_EQ(symlink((directory / "real").c_str(), (directory / "link").c_str()), 0);
  ProcessResult r =
      run_preloaded({kProbeApp, "loop", "3"}, {{"CUDA_BLOCKRUN_REPORT", directory / "link" + "/r.jsonl"}});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(contains(r.err, "(its directory " + directory / "link" +
                                  " is a symbolic link, which the shim never follows; without links it is "))
      << r.err;
  struct stat info {};
  EXPECT_NE(stat((directory / "real/r.jsonl").c_str(), &info), 0);
  // Relative paths too, and the same file without the link is used.
  ProcessResult direct =
      run_preloaded({"/bin/sh", "-c", "cd " + directory.path + " && exec " + kProbeApp + " loop 3"},
                    {{"CUDA_BLOCKRUN_REPORT", "real/r.jsonl"}});
  EXPECT_EQ(direct.status, 0) << direct.err;
  EXPECT_EQ(record_types(directory / "real/r.jsonl"), (std::vector<std::string>{"start", "summary"}));
}

TEST(Hardening, TheLogAndTheReportOnOnePathAreRefused) {
  Directory directory;
  ProcessResult same = run_wrapped({"--log", directory / "same.jsonl", "--report", directory / "same.jsonl"},
                                   {kProbeApp, "loop", "3"}, {});
  EXPECT_EQ(same.status, 2) << same.err;
  EXPECT_TRUE(
      contains(same.err, "CUDA_BLOCKRUN_REPORT='" + directory / "same.jsonl" +
                             "': it is the log file's path; accepted: a path other than CUDA_BLOCKRUN_LOG's"))
      << same.err;
  // The same file by two paths: refused before the program runs too (issue 40, N12; before, it was found only
  // when the report was opened, and no report was written).
  ProcessResult aliased =
      run_wrapped({"--log", directory / "same.jsonl", "--report", directory.path + "/./same.jsonl"},
                  {kProbeApp, "loop", "3"}, {});
  EXPECT_EQ(aliased.status, 2) << aliased.err;
  EXPECT_TRUE(
      contains(aliased.err, "CUDA_BLOCKRUN_REPORT='" + directory.path +
                                "/./same.jsonl': it is the log file by another path (CUDA_BLOCKRUN_LOG='" +
                                directory / "same.jsonl" + "')"))
      << aliased.err;
  EXPECT_EQ(aliased.out, "") << "the program ran";
}

// ---- F6: the program's own descriptors ----

TEST(Hardening, TheShimsFilesNeverTakeTheProgramsDescriptors) {
  Directory directory;
  // (a) stdout closed: the report must not take descriptor 1 and receive the program's output.
  std::string report = directory / "closed-stdout.jsonl";
  ProcessResult closed = run_preloaded({"/bin/sh", "-c", "exec \"$0\" loop 3 >&-", kProbeApp},
                                       {{"CUDA_BLOCKRUN_REPORT", report}});
  EXPECT_EQ(valid_report_problems(report), "");
  EXPECT_EQ(record_types(report), (std::vector<std::string>{"start", "summary"}));
  // (b) no policy, stderr closed and the program's data file at descriptor 2: the data file is the program's,
  // and standard error is not kept open behind the program's back.
  std::string data = directory / "data.txt";
  ProcessResult closefd2 = run_preloaded({kProbeApp, "closefd2", data}, {});
  EXPECT_EQ(closefd2.status, 0);
  EXPECT_EQ(closefd2.out, "data file fd 2\ndone\n");
  EXPECT_EQ(read_file(data), "program data\n");
  EXPECT_EQ(closefd2.err, "");  // the program closed the stderr the shim would have written to
  // (c) every descriptor >= 3 closed mid-run and a file of the program's opened at the report's number: the
  // program's file stays its own, and the report goes on (the path is opened again).
  std::string data3 = directory / "data3.txt";
  std::string report3 = directory / "midway.jsonl";
  ProcessResult midway = run_preloaded({kProbeApp, "closeall-midway", data3},
                                       {{"CUDA_BLOCKRUN_REPORT", report3}, {"CUDA_SIM_FAULT", "stencil"}});
  EXPECT_EQ(midway.status, 0) << midway.err;
  EXPECT_EQ(read_file(data3), "program data\n");
  EXPECT_EQ(record_types(report3), (std::vector<std::string>{"start", "first_error", "summary"}));
}

// ---- F10: a file-size limit and a full disk ----

TEST(Hardening, AFileSizeLimitNeverKillsTheProgramAndRecordsStayWhole) {
  Directory directory;
  std::string report = directory / "fs.jsonl", log = directory / "fs.log";
  ProcessResult r = run_preloaded(
      {kProbeApp, "fsize", "65536"},
      {{"CUDA_BLOCKRUN_REPORT", report}, {"CUDA_BLOCKRUN_LOG_LAUNCHES", "1"}, {"CUDA_BLOCKRUN_LOG", log}});
  EXPECT_EQ(r.status, 0) << r.err;  // 153 (SIGXFSZ) before
  EXPECT_EQ(r.out, "done\n");
  for (const std::string& path : {report, log}) {
    std::string text = read_file(path);
    EXPECT_LE(text.size(), 65536u);
    EXPECT_GT(text.size(), 60000u) << path;
    EXPECT_EQ(text.back(), '\n') << path;  // no record cut
  }
  for (const std::string& type : record_types(report)) EXPECT_NE(type, "not JSON");
}

TEST(Hardening, AFullDiskLeavesNoRecordCut) {
  Directory directory;
  std::string small = directory / "small";
  ASSERT_EQ(mkdir(small.c_str(), 0700), 0);
  if (mount("tmpfs", small.c_str(), "tmpfs", 0, "size=100k") != 0)
    GTEST_SKIP() << "cannot mount a tmpfs here";
  std::string report = small + "/full.jsonl";
  ProcessResult r = run_preloaded({kProbeApp, "loop", "2000"}, {{"CUDA_BLOCKRUN_REPORT", report},
                                                                {"CUDA_BLOCKRUN_LOG_LAUNCHES", "1"},
                                                                {"CUDA_BLOCKRUN_LOG", "/dev/null"}});
  std::string text = read_file(report);
  umount(small.c_str());
  EXPECT_EQ(r.status, 0) << r.err;
  ASSERT_FALSE(text.empty());
  EXPECT_EQ(text.back(), '\n');
}

// ---- F4, F8, F11, F15: signals ----

TEST(Hardening, ASignalWhileTheFirstErrorIsWrittenWaitsForItsRecord) {
  Directory directory;
  std::string report = directory / "r.jsonl";
  // The "libdw" sends SIGTERM as it is loaded, in the middle of the first error's record.
  ProcessResult r = run_preloaded({kApp, "steps"}, {{"CUDA_SIM_FAULT", "stencil:1"},
                                                    {"CUDA_BLOCKRUN_BLOCK", "all"},
                                                    {"CUDA_BLOCKRUN_REPORT", report},
                                                    {"CUDA_BLOCKRUN_LIBDW", CUDA_BLOCKRUN_SIGTERM_ON_LOAD}});
  EXPECT_EQ(r.status, 128 + SIGTERM) << r.err;
  EXPECT_EQ(record_types(report), (std::vector<std::string>{"start", "first_error", "fatal_signal"}));
  // Each record says whose it is (a report file may be shared by several processes), the signal's too.
  std::vector<std::string> pids = record_fields(report, "pid");
  ASSERT_EQ(pids.size(), 3u);
  EXPECT_NE(pids[0], "none");
  EXPECT_EQ(pids, std::vector<std::string>(3, pids[0])) << read_file(report);
  EXPECT_TRUE(contains(read_file(report), "\"signal\":\"SIGTERM\"")) << read_file(report);
  EXPECT_TRUE(contains(r.err, "first error: cudaErrorIllegalAddress")) << r.err;
  EXPECT_EQ(valid_report_problems(report), "");  // SIGTERM is in the schema (F8)
}

TEST(Hardening, TheSignalHandlersRecordIsValidUtf8) {
  Directory directory;
  std::string accents;
  for (int i = 0; i < 200; ++i) accents += "\xc3\xa9";
  for (const std::string& name : {"a" + accents, std::string("k\xff\xfe_bad"), "b" + accents + "\xe2\x82"}) {
    std::string report = directory / ("r" + std::to_string(name.size()) + ".jsonl");
    ProcessResult r = run_preloaded(
        {kProbeApp, "name-fault-abort", name},
        {{"CUDA_BLOCKRUN_BREADCRUMBS", "1"}, {"CUDA_SIM_FAULT", "*"}, {"CUDA_BLOCKRUN_REPORT", report}});
    EXPECT_EQ(r.status, 128 + SIGABRT) << r.err;
    std::vector<std::string> types = record_types(report);
    EXPECT_EQ(count(types, "fatal_signal"), 1) << read_file(report);
    EXPECT_EQ(valid_report_problems(report), "") << read_file(report);
  }
}

TEST(Hardening, ASignalTheProgramIgnoresIsNoDeath) {
  Directory directory;
  std::string report = directory / "r.jsonl";
  ProcessResult r = run_preloaded({kProbeApp, "segv-ignored"}, {{"CUDA_BLOCKRUN_REPORT", report}});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "survived SIGSEGV\ndone\n");
  EXPECT_FALSE(contains(r.err, "fatal signal")) << r.err;
  EXPECT_EQ(record_types(report), (std::vector<std::string>{"start", "summary"}));
}

// ---- F14: switched off means off ----

TEST(Hardening, SwitchedOffTheShimReadsNothingElse) {
  for (const auto& [variable, value] :
       std::vector<std::pair<std::string, std::string>>{{"CUDA_BLOCKRUN_BLOCK", "#-5"},
                                                        {"CUDA_BLOCKRUN_RING", "1"},
                                                        {"CUDA_BLOCKRUN_FOO", "1"},
                                                        {"CUDA_BLOCKRUN_PROCESS", "(a+)+\\1"}}) {
    ProcessResult r = run_preloaded({kProbeApp, "loop", "3"}, {{"CUDA_BLOCKRUN", "0"}, {variable, value}});
    EXPECT_EQ(r.status, 0) << variable << ": " << r.err;
    EXPECT_EQ(r.out, "done\n");
    EXPECT_EQ(r.err, "");
    // Switched on, the same variable is refused before main().
    EXPECT_EQ(run_preloaded({kProbeApp, "loop", "3"}, {{variable, value}}).status, 2) << variable;
  }
}

// ---- F9, F18: the wrapper ----

TEST(Hardening, AnInstallPathTheLoaderWouldSplitIsRefused) {
  for (const std::string& prefix : {"my tools", "a:b"}) {
    Directory directory;
    std::string root = directory / prefix;
    for (const std::string& sub : {root, root + "/bin", root + "/lib"})
      ASSERT_EQ(mkdir(sub.c_str(), 0700), 0);
    ASSERT_EQ(run_process({"/bin/cp", kWrapper, root + "/bin/"}, {}).status, 0);
    ASSERT_EQ(run_process({"/bin/cp", kShim, root + "/lib/"}, {}).status, 0);
    ProcessResult r =
        run_process({root + "/bin/cuda-blockrun", "--block", "all", "--", kProbeApp, "loop", "3"},
                    {{"LD_LIBRARY_PATH", kSimLib}});
    EXPECT_EQ(r.status, 2) << r.err;
    EXPECT_TRUE(contains(r.err, "holds a space or a colon, where the loader splits LD_PRELOAD")) << r.err;
    EXPECT_EQ(r.out, "");  // not run unobserved
  }
}

TEST(Hardening, TheWrapperTakesNoOptionAsAValueAndNoJunkAsANumber) {
  ProcessResult dashes = run_wrapped({"--block"}, {kProbeApp, "loop", "3"}, {});
  EXPECT_EQ(dashes.status, 2);
  EXPECT_TRUE(contains(dashes.err, "option --block needs a value")) << dashes.err;
  EXPECT_TRUE(contains(dashes.err, "not '--'; for a value that starts with --, write --block=VALUE"))
      << dashes.err;
  EXPECT_EQ(dashes.out, "");
  ProcessResult flag = run_process({kWrapper, "--log", "--stack", "--", kProbeApp, "loop", "3"}, {});
  EXPECT_EQ(flag.status, 2);
  EXPECT_TRUE(contains(flag.err, "option --log needs a value")) << flag.err;
  // The description, the term refused, and the part before the number it needs.
  struct Bad {
    const char* description;
    const char* term;
    const char* before;
  };
  for (const Bad& bad : {Bad{"stencil #zzz", "#zzz", "#"}, Bad{"#-1", "#-1", "#"},
                         Bad{"stencil #99999999999999999999", "#99999999999999999999", "#"},
                         Bad{"stencil#abc", "stencil#abc", "stencil#"},
                         Bad{"stencil#-1", "stencil#-1", "stencil#"}, Bad{"stencil#", "stencil#", "stencil#"},
                         Bad{"stencil#99999999999999999999", "stencil#99999999999999999999", "stencil#"}}) {
    ProcessResult explain =
        run_process({kWrapper, "--block", "stencil#13", "--explain", bad.description}, {});
    EXPECT_EQ(explain.status, 2) << bad.description << ": " << explain.out;
    EXPECT_EQ(explain.out, "") << bad.description;
    EXPECT_TRUE(contains(explain.err, std::string("--explain: '") + bad.term +
                                          "' needs a whole number after '" + bad.before + "'"))
        << bad.description << ": " << explain.err;
  }
  ProcessResult good = run_process({kWrapper, "--block", "stencil#13", "--explain", "stencil#13"}, {});
  EXPECT_EQ(good.status, 0) << good.err;
  EXPECT_TRUE(contains(good.out, "  decided by rule 1: 'stencil#13'\n")) << good.out;
}

// ---- F17: configuration errors reach a terminal ----

TEST(Hardening, ConfigurationErrorsEscapeControlBytes) {
  ProcessResult r = run_preloaded({"/bin/true"}, {{"CUDA_BLOCKRUN_BLOCK", "a\x1b]0;pwned\x07\x1b[2J"}});
  EXPECT_EQ(r.status, 2);
  EXPECT_TRUE(contains(r.err, "invalid CUDA_BLOCKRUN_BLOCK='a\\x1b]0;pwned\\x07\\x1b[2J'")) << r.err;
  EXPECT_EQ(r.err.find('\x1b'), std::string::npos);
}

}  // namespace
// SPDX-License-Identifier: MIT
