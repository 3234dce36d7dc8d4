// Issue 17, reliability round two: each defect found by trying to break the shim, as the careless user or the
// attacker did it (tests/programs/probe_app.cpp), on the simulated stack. Each test failed before its fix.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <string>
#include <vector>

#include "json_read.h"
#include "sim_programs.h"

namespace {

using namespace blockrun::testing;

const std::string kProbeApp = CUDA_BLOCKRUN_PROBE_APP;
const std::string kLifecycleApp = CUDA_BLOCKRUN_LIFECYCLE_APP;
const std::string kSchema = CUDA_BLOCKRUN_SOURCE_DIR "/docs/report.schema.json";
const std::string kValidator = CUDA_BLOCKRUN_SOURCE_DIR "/tests/report/validate_report.py";

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

// The report's records' types, in order; "not JSON" for a line that is not a JSON object.
std::vector<std::string> record_types(const std::string& path) {
  std::vector<std::string> types;
  std::string text = read_file(path);
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    auto record = blockrun::parse_json(line);
    types.push_back(record && record->get("type") ? record->text("type") : "not JSON");
  }
  return types;
}

std::string valid_report_problems(const std::string& path) {
  ProcessResult check = run_process({"/usr/bin/python3", kValidator, kSchema, path}, {});
  return check.status == 0 ? "" : check.out + check.err;
}

int count(const std::vector<std::string>& items, const std::string& item) {
  return static_cast<int>(std::count(items.begin(), items.end(), item));
}

// ---- F1: launches during exit, after the shim's statics would have died ----

TEST(Hardening, LaunchesFromAtexitHandlersWithEveryLaunchLoggedAreClean) {
  Directory directory;
  for (int run = 0; run < 5; ++run) {
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
  for (int run = 0; run < 10; ++run) {
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

}  // namespace
