// The wrapper's command line as a user meets it in the first ten minutes (issue 19): --help and --help-all
// (grouped, examples first, every flag of both tables, at most 100 columns), the mistakes it catches before
// anything runs (a missing value, `-b all`, a misspelt flag, a bad --error-exitcode), and a C++ program's own
// runtime under the shim, which carries a private copy of libstdc++.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "config/config.h"
#include "sim_programs.h"

namespace blockrun::testing {
namespace {

const std::string kProbeApp = CUDA_BLOCKRUN_PROBE_APP;  // tests/programs/probe_app.cpp: `loop N`

// The listed flags of the wrapper's own table, read from it as the wrapper reads it.
std::vector<std::string> wrapper_flags() {
  std::vector<std::string> flags;
  enum { Listed, Hidden };
#define CUDA_BLOCKRUN_COMMAND(id, flag, short_flag, value, group, listing, accepted, summary, description) \
  if (listing == Listed) flags.push_back(flag);
#include "../../tools/cuda-blockrun/commands.def"
#undef CUDA_BLOCKRUN_COMMAND
  return flags;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream stream(text);
  for (std::string line; std::getline(stream, line);) lines.push_back(line);
  return lines;
}

TEST(WrapperCommandLine, HelpIsGroupedWithExamplesFirstAndFitsIn100Columns) {
  ProcessResult help = run_process({kWrapper, "--help"}, {});
  ASSERT_EQ(help.status, 0) << help.err;
  EXPECT_EQ(help.err, "");
  EXPECT_EQ(run_process({kWrapper, "-h"}, {}).out, help.out);
  EXPECT_EQ(help.out.rfind("usage: cuda-blockrun [options] [--] program [args...]\n"
                           "       cuda-blockrun report [--json] [--trace OUT.json] [--force] FILE...|DIR\n",
                           0),
            0u)
      << help.out;
  // The examples, then the groups in this order.
  std::vector<std::string> in_order = {"  cuda-blockrun --localize -- python3 train.py\n",
                                       "  cuda-blockrun --breadcrumbs --report r.jsonl -- ./app\n",
                                       "  cuda-blockrun --block 'stencil#13' -- ./app\n",
                                       "\nmodes:\n",
                                       "\npolicy:\n",
                                       "\noutput:\n",
                                       "\nprocess selection:\n",
                                       "\nadvanced:\n",
                                       "\ninformation:\n",
                                       "cuda-blockrun report merges the reports",
                                       "\nreport options:\n  --json ",
                                       "\n  --force                     with --trace: overwrite OUT.json"};
  size_t at = 0;
  for (const std::string& piece : in_order) {
    size_t found = help.out.find(piece, at);
    EXPECT_NE(found, std::string::npos) << "'" << piece << "' missing or out of order in\n" << help.out;
    if (found != std::string::npos) at = found;
  }
  // One line per flag, its summary from column 31; under its group.
  EXPECT_TRUE(contains(help.out,
                       "\noutput:\n  --log FILE                  write the log to FILE instead of standard "
                       "error\n"))
      << help.out;
  EXPECT_TRUE(contains(help.out,
                       "  --error-exitcode N          exit N when the shim saw a CUDA error and the "
                       "program exited 0\n"));
  EXPECT_TRUE(
      contains(help.out, "  --callsites auto|all|none   which launches get their call site captured\n"));
  EXPECT_TRUE(contains(help.out, "\ninformation:\n  -h, --help                  this text\n"));
  for (const OptionSpec& spec : option_specs()) {
    if (*spec.flag) EXPECT_TRUE(contains(help.out, std::string("\n  ") + spec.flag)) << spec.flag;
  }
  for (const std::string& flag : wrapper_flags()) EXPECT_TRUE(contains(help.out, flag)) << flag;
  EXPECT_FALSE(contains(help.out, "--help-man"));  // the build's generators are not listed
  for (const char* flag : {"--help", "--help-all"}) {
    for (const std::string& line : lines_of(run_process({kWrapper, flag}, {}).out))
      EXPECT_LE(line.size(), 100u) << flag << ": " << line;
  }
}

// --help-all: every variable with its default and accepted values, and every long description (wrapped).
TEST(WrapperCommandLine, HelpAllHasEveryOptionsWholeDescription) {
  ProcessResult all = run_process({kWrapper, "--help-all"}, {});
  ASSERT_EQ(all.status, 0) << all.err;
  std::string joined = all.out;  // the wrapped lines joined back
  for (size_t at = joined.find("\n      "); at != std::string::npos; at = joined.find("\n      ", at))
    joined.replace(at, 7, " ");
  for (const OptionSpec& spec : option_specs()) {
    EXPECT_TRUE(contains(joined, spec.variable)) << spec.variable;
    EXPECT_TRUE(contains(joined, spec.description)) << spec.description;
  }
  EXPECT_TRUE(contains(all.out,
                       "  --block RULES\n      CUDA_BLOCKRUN_BLOCK (default: none; accepted: none | all | "
                       "rules separated by ';' or ','\n      (docs/policy.md))\n"))
      << all.out;
  EXPECT_TRUE(contains(all.out,
                       "  CUDA_BLOCKRUN (environment only)\n      default: 1; accepted: 0 or 1\n      0 "
                       "makes the shim fully inert"))
      << all.out;
}

// What the user typed and what the wrapper says, exactly, with exit status 2 and nothing run.
struct Mistake {
  std::vector<std::string> arguments;
  std::string message;
};

TEST(WrapperCommandLine, MistakesAreUsageErrorsBeforeAnythingRuns) {
  const std::string block_values = "none | all | rules separated by ';' or ',' (docs/policy.md)";
  const std::string exit_codes = "a whole number 1-255";
  std::vector<Mistake> mistakes = {
      {{"--block", "--", kProbeApp},
       "option --block needs a value (" + block_values +
           "), not '--'; for a value that starts with --, write --block=VALUE"},
      {{"--log", "--stack", "--", kProbeApp},
       "option --log needs a value (a file path; %p: process id, %r: rank, %h: host name), not '--stack'; "
       "for a "
       "value that starts with --, write --log=VALUE"},
      {{"--error-exitcode", "--", kProbeApp},
       "option --error-exitcode needs a value (" + exit_codes +
           "), not '--'; for a value that starts with --, write --error-exitcode=VALUE"},
      {{"--explain", "--", kProbeApp},
       "option --explain needs a value (a kernel name or NAME#N, and any of #N thread#N family=F "
       "library=CALL stream=0x... thread=N after=SECONDS), not '--'; for a value that starts with --, write "
       "--explain=VALUE"},
      {{"-b", "all", kProbeApp}, "unknown option '-b'"},
      {{"-", kProbeApp}, "unknown option '-'"},
      {{"--breadcrumb", "--", kProbeApp}, "unknown option '--breadcrumb' (did you mean '--breadcrumbs'?)"},
      {{"--breadcrumb=1", kProbeApp}, "unknown option '--breadcrumb=1' (did you mean '--breadcrumbs'?)"},
      {{"-localize", kProbeApp}, "unknown option '-localize' (did you mean '--localize'?)"},
      {{"--help-al"}, "unknown option '--help-al' (did you mean '--help-all'?)"},
      {{"--error-exitcod", "3", kProbeApp},
       "unknown option '--error-exitcod' (did you mean '--error-exitcode'?)"},
      {{"--frobnicate", kProbeApp}, "unknown option '--frobnicate'"},
      {{"--localize=1", kProbeApp}, "option --localize takes no value, not '--localize=1'"},
      {{"--error-exitcode", "0", kProbeApp},
       "--error-exitcode: '0' is not an exit status; accepted: " + exit_codes},
      {{"--error-exitcode", "256", kProbeApp},
       "--error-exitcode: '256' is not an exit status; accepted: " + exit_codes},
      {{"--error-exitcode", "-1", kProbeApp},
       "--error-exitcode: '-1' is not an exit status; accepted: " + exit_codes},
      {{"--error-exitcode=1x", kProbeApp},
       "--error-exitcode: '1x' is not an exit status; accepted: " + exit_codes},
      {{"--error-exitcode=", kProbeApp},
       "--error-exitcode: '' is not an exit status; accepted: " + exit_codes},
  };
  for (const Mistake& mistake : mistakes) {
    std::vector<std::string> argv = {kWrapper};
    argv.insert(argv.end(), mistake.arguments.begin(), mistake.arguments.end());
    argv.push_back("loop");
    argv.push_back("3");
    ProcessResult r = run_process(argv, {{"LD_LIBRARY_PATH", kSimLib}});
    EXPECT_EQ(r.status, 2) << mistake.message;
    EXPECT_EQ(r.err, "cuda-blockrun: " + mistake.message + "\ncuda-blockrun: see `cuda-blockrun --help`\n");
    EXPECT_EQ(r.out, "");  // the program did not run
  }
}

// --error-exitcode N is taken (its effect on a run is the run's business); the program's status is its own.
TEST(WrapperCommandLine, ErrorExitcodeIsAccepted) {
  for (const std::vector<std::string>& flag :
       std::vector<std::vector<std::string>>{{"--error-exitcode", "1"}, {"--error-exitcode=255"}}) {
    std::vector<std::string> argv = {kWrapper};
    argv.insert(argv.end(), flag.begin(), flag.end());
    argv.insert(argv.end(), {"--", "/bin/sh", "-c", "exit 7"});
    ProcessResult r = run_process(argv, {});
    EXPECT_EQ(r.status, 7) << r.err;
    EXPECT_EQ(r.err, "");
  }
}

// The shim carries its own libstdc++ and libgcc, hidden: the program's exceptions (across frames and in a
// thread) and iostreams are its own runtime's, and behave exactly as without the shim.
TEST(WrapperCommandLine, AProgramsOwnCxxRuntimeWorksUnderTheShim) {
  const std::string program = CUDA_BLOCKRUN_CXX_RUNTIME_APP;
  ProcessResult alone = run_alone({program}, {});
  ProcessResult wrapped = run_wrapped({"--block", "all"}, {program}, {});
  EXPECT_EQ(alone.out,
            "caught: thrown after launch 1\ncaught: thrown after launch 2\ncaught: thrown after launch 3\n"
            "thread caught: thrown in a thread\nsynchronize returned 0\ndone\n");
  EXPECT_EQ(wrapped.out, alone.out);
  EXPECT_EQ(wrapped.status, 0) << wrapped.err;
  EXPECT_TRUE(contains(wrapped.err, "[cuda-blockrun] summary: 4 launches, 4 blocked; no CUDA errors"))
      << wrapped.err;
}

}  // namespace
}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
