// Configuration parsing: defaults, every kind of value, unknown variables, the messages users see.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <utility>

#include "config/config.h"

namespace blockrun {
namespace {

ConfigResult parse(const std::map<std::string, std::string>& environment) {
  std::vector<std::string> variables;
  for (const auto& [variable, value] : environment) variables.push_back(variable);
  return parse_config(
      [&](const std::string& variable) -> std::optional<std::string> {
        auto found = environment.find(variable);
        if (found == environment.end()) return std::nullopt;
        return found->second;
      },
      variables);
}

TEST(Config, DefaultsBlockNothing) {
  ConfigResult result = parse({});
  ASSERT_TRUE(result.errors.empty());
  EXPECT_TRUE(result.config.enabled);
  EXPECT_TRUE(result.config.block.blocks_nothing());
  EXPECT_EQ(result.config.log, "");
  EXPECT_FALSE(result.config.log_launches);
  EXPECT_TRUE(result.config.summary);
}

TEST(Config, ReadsEveryOption) {
  ConfigResult result = parse({{"CUDA_BLOCKRUN", "off"},
                               {"CUDA_BLOCKRUN_BLOCK", "stencil,*gemm*"},
                               {"CUDA_BLOCKRUN_LOG", "/tmp/log.%p"},
                               {"CUDA_BLOCKRUN_LOG_LAUNCHES", "yes"},
                               {"CUDA_BLOCKRUN_SUMMARY", "0"}});
  ASSERT_TRUE(result.errors.empty());
  EXPECT_FALSE(result.config.enabled);
  EXPECT_EQ(result.config.block.describe(), "stencil; *gemm*");
  EXPECT_EQ(result.config.log, "/tmp/log.%p");
  EXPECT_TRUE(result.config.log_launches);
  EXPECT_FALSE(result.config.summary);
}

TEST(Config, InvalidValueNamesVariableValueAndAcceptedForms) {
  ConfigResult result = parse({{"CUDA_BLOCKRUN_LOG_LAUNCHES", "maybe"}, {"CUDA_BLOCKRUN_BLOCK", "a,,b"}});
  ASSERT_EQ(result.errors.size(), 2u);
  EXPECT_EQ(result.errors[0].message(),
            "invalid CUDA_BLOCKRUN_BLOCK='a,,b': at 3: empty rule; accepted: none | all | rules separated by "
            "';' or "
            "',' (docs/policy.md)");
  EXPECT_EQ(result.errors[1].message(), "invalid CUDA_BLOCKRUN_LOG_LAUNCHES='maybe'; accepted: 0 or 1");
}

TEST(Config, RingIsAWholeNumberInRange) {
  EXPECT_EQ(parse({}).config.ring, 1024u);
  EXPECT_EQ(parse({{"CUDA_BLOCKRUN_RING", "8"}}).config.ring, 8u);
  EXPECT_EQ(parse({{"CUDA_BLOCKRUN_RING", "1048576"}}).config.ring, 1048576u);
  for (const char* bad : {"7", "1048577", "", "-5", "1k", " 64", "99999999999"}) {
    ConfigResult result = parse({{"CUDA_BLOCKRUN_RING", bad}});
    ASSERT_EQ(result.errors.size(), 1u) << bad;
    EXPECT_EQ(result.errors[0].message(), std::string("invalid CUDA_BLOCKRUN_RING='") + bad +
                                              "'; accepted: a whole number from 8 to 1048576");
  }
}

TEST(Config, PrintLimitIsAWholeNumberAndZeroMeansNoLimit) {
  EXPECT_EQ(parse({}).config.print_limit, 10u);
  EXPECT_EQ(parse({{"CUDA_BLOCKRUN_PRINT_LIMIT", "0"}}).config.print_limit, 0u);
  EXPECT_EQ(parse({{"CUDA_BLOCKRUN_PRINT_LIMIT", "3"}}).config.print_limit, 3u);
  EXPECT_EQ(parse({{"CUDA_BLOCKRUN_PRINT_LIMIT", "999999999"}}).config.print_limit, 999999999u);
  for (const char* bad : {"", "-1", "ten", " 5", "5 ", "1e3", "1000000000"}) {
    ConfigResult result = parse({{"CUDA_BLOCKRUN_PRINT_LIMIT", bad}});
    ASSERT_EQ(result.errors.size(), 1u) << bad;
    EXPECT_EQ(result.errors[0].message(), std::string("invalid CUDA_BLOCKRUN_PRINT_LIMIT='") + bad +
                                              "'; accepted: a whole number; 0: no limit");
  }
}

const OptionSpec& spec_of(const std::string& variable) {
  for (const OptionSpec& spec : option_specs())
    if (spec.variable == variable) return spec;
  throw std::logic_error("no option " + variable);
}

// A Choice is held as its enum: each word parses to its enumerator and prints back as that word, and the
// accepted text, made from the words, is what the error message, --help and docs/config.md print.
TEST(Config, CallsitesIsOneOfItsWordsHeldAsItsEnum) {
  EXPECT_EQ(Config().callsites, Callsites::Auto);
  EXPECT_EQ(parse({}).config.callsites, Callsites::Auto);
  const std::pair<const char*, Callsites> words[] = {
      {"auto", Callsites::Auto}, {"all", Callsites::All}, {"none", Callsites::None}};
  for (const auto& [word, choice] : words) {
    ConfigResult result = parse({{"CUDA_BLOCKRUN_CALLSITES", word}});
    ASSERT_TRUE(result.errors.empty()) << word;
    EXPECT_EQ(result.config.callsites, choice) << word;
    EXPECT_STREQ(choice_word(choice), word);
  }
  EXPECT_STREQ(spec_of("CUDA_BLOCKRUN_CALLSITES").accepted, "auto | all | none");
  for (const char* bad : {"", "al", "ALL", "auto ", "auto | all"}) {
    ConfigResult result = parse({{"CUDA_BLOCKRUN_CALLSITES", bad}});
    ASSERT_EQ(result.errors.size(), 1u) << bad;
    EXPECT_EQ(result.errors[0].message(),
              std::string("invalid CUDA_BLOCKRUN_CALLSITES='") + bad + "'; accepted: auto | all | none");
  }
}

TEST(Config, BreadcrumbEveryIsAPowerOfTwoHeldAsItsNumber) {
  EXPECT_EQ(Config().breadcrumb_every, BreadcrumbEvery::One);
  const std::pair<int, BreadcrumbEvery> words[] = {
      {1, BreadcrumbEvery::One},       {2, BreadcrumbEvery::Two},      {4, BreadcrumbEvery::Four},
      {8, BreadcrumbEvery::Eight},     {16, BreadcrumbEvery::Sixteen}, {32, BreadcrumbEvery::ThirtyTwo},
      {64, BreadcrumbEvery::SixtyFour}};
  for (const auto& [n, choice] : words) {
    std::string word = std::to_string(n);
    ConfigResult result = parse({{"CUDA_BLOCKRUN_BREADCRUMB_EVERY", word}});
    ASSERT_TRUE(result.errors.empty()) << word;
    EXPECT_EQ(result.config.breadcrumb_every, choice) << word;
    EXPECT_EQ(static_cast<int>(result.config.breadcrumb_every), n);
    EXPECT_EQ(choice_word(choice), word);
  }
  EXPECT_STREQ(spec_of("CUDA_BLOCKRUN_BREADCRUMB_EVERY").accepted, "1 | 2 | 4 | 8 | 16 | 32 | 64");
  for (const char* bad : {"0", "3", "08", "+8", "128", "", "eight", "8 "}) {
    ConfigResult result = parse({{"CUDA_BLOCKRUN_BREADCRUMB_EVERY", bad}});
    ASSERT_EQ(result.errors.size(), 1u) << bad;
    EXPECT_EQ(result.errors[0].message(), std::string("invalid CUDA_BLOCKRUN_BREADCRUMB_EVERY='") + bad +
                                              "'; accepted: 1 | 2 | 4 | 8 | 16 | 32 | 64");
  }
}

// Every Choice of the table: each word of its accepted text is taken by the wrapper's check (check_value),
// and nothing that only begins with one.
TEST(Config, EveryChoiceTakesEachOfItsWordsAndNothingElse) {
  size_t choices = 0;
  for (const OptionSpec& spec : option_specs()) {
    if (spec.kind != OptionKind::Choice) continue;
    ++choices;
    std::string accepted = spec.accepted;
    ASSERT_FALSE(accepted.empty()) << spec.variable;
    for (size_t start = 0; start <= accepted.size();) {
      size_t end = std::min(accepted.find(" | ", start), accepted.size());
      std::string word = accepted.substr(start, end - start);
      EXPECT_FALSE(check_value(spec, word)) << spec.variable << "=" << word;
      EXPECT_TRUE(check_value(spec, word + "x")) << spec.variable << "=" << word << "x";
      start = end + 3;
    }
  }
  EXPECT_GT(choices, 0u);
}

TEST(Config, UnknownVariableIsAnError) {
  ConfigResult result = parse({{"CUDA_BLOCKRUN_BLOK", "all"}});
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0].variable, "CUDA_BLOCKRUN_BLOK");
  EXPECT_NE(result.errors[0].message().find("unknown variable"), std::string::npos);
  EXPECT_NE(result.errors[0].message().find("unknown variable (did you mean 'CUDA_BLOCKRUN_BLOCK'?)"),
            std::string::npos);
  // Nothing near: no guess.
  result = parse({{"CUDA_BLOCKRUN_VERBOSE", "1"}});
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0].message().find("did you mean"), std::string::npos);
}

// Issue 40, N12 and N13: the error file's plain line would break the report or the trace; the null device
// keeps nothing, so any output may go there.
TEST(Config, OutputsOnOnePathAreRefusedExceptTheNullDevice) {
  ConfigResult error_in_report =
      parse({{"CUDA_BLOCKRUN_REPORT", "/tmp/r.jsonl"}, {"CUDA_BLOCKRUN_ERROR_FILE", "/tmp/r.jsonl"}});
  ASSERT_EQ(error_in_report.errors.size(), 1u);
  EXPECT_EQ(
      error_in_report.errors[0].message(),
      "invalid CUDA_BLOCKRUN_ERROR_FILE='/tmp/r.jsonl': it is the report file's path; accepted: a path other "
      "than CUDA_BLOCKRUN_REPORT's, or /dev/null");
  ConfigResult error_in_trace =
      parse({{"CUDA_BLOCKRUN_TRACE", "/tmp/t.json"}, {"CUDA_BLOCKRUN_ERROR_FILE", "/tmp/t.json"}});
  ASSERT_EQ(error_in_trace.errors.size(), 1u);
  EXPECT_EQ(error_in_trace.errors[0].variable, "CUDA_BLOCKRUN_ERROR_FILE");
  EXPECT_TRUE(parse({{"CUDA_BLOCKRUN_LOG", "/dev/null"},
                     {"CUDA_BLOCKRUN_REPORT", "/dev/null"},
                     {"CUDA_BLOCKRUN_TRACE", "/dev/null"},
                     {"CUDA_BLOCKRUN_ERROR_FILE", "/dev/null"}})
                  .errors.empty());
  EXPECT_EQ(parse({{"CUDA_BLOCKRUN_LOG", "/tmp/same"}, {"CUDA_BLOCKRUN_REPORT", "/tmp/same"}}).errors.size(),
            1u);
}

// Issue 40, N12 by another path: the same file named otherwise is refused too, for every pair of outputs: a
// relative and an absolute path, `./` and repeated slashes, a symbolic link to the directory, a hard link,
// `%p` that expands to this process's number, the log and the trace, the trace and the report.
TEST(Config, OneFileByAnotherPathIsRefusedForEveryPairOfOutputs) {
  char pattern[] = "/tmp/blockrun_config_XXXXXX";
  std::string directory = mkdtemp(pattern);
  std::string report = directory + "/r.jsonl";
  std::string linked = directory + "/linked";
  ASSERT_EQ(symlink(directory.c_str(), linked.c_str()), 0);
  ASSERT_EQ(chdir(directory.c_str()), 0);
  std::string pid = std::to_string(getpid());
  auto refused = [](const ConfigResult& result, const std::string& variable) {
    return result.errors.size() == 1 && result.errors[0].variable == variable;
  };
  // Not made yet: by their normalized paths.
  EXPECT_TRUE(refused(parse({{"CUDA_BLOCKRUN_REPORT", report}, {"CUDA_BLOCKRUN_ERROR_FILE", "r.jsonl"}}),
                      "CUDA_BLOCKRUN_ERROR_FILE"));
  EXPECT_TRUE(refused(
      parse({{"CUDA_BLOCKRUN_REPORT", "./r.jsonl"}, {"CUDA_BLOCKRUN_ERROR_FILE", directory + "//r.jsonl"}}),
      "CUDA_BLOCKRUN_ERROR_FILE"));
  EXPECT_TRUE(
      refused(parse({{"CUDA_BLOCKRUN_REPORT", report}, {"CUDA_BLOCKRUN_ERROR_FILE", linked + "/r.jsonl"}}),
              "CUDA_BLOCKRUN_ERROR_FILE"));
  ConfigResult by_pid =
      parse({{"CUDA_BLOCKRUN_REPORT", "r.%p.jsonl"}, {"CUDA_BLOCKRUN_ERROR_FILE", "r." + pid + ".jsonl"}});
  ASSERT_TRUE(refused(by_pid, "CUDA_BLOCKRUN_ERROR_FILE"));
  EXPECT_EQ(
      by_pid.errors[0].message(),
      "invalid CUDA_BLOCKRUN_ERROR_FILE='r." + pid +
          ".jsonl': it is the report file by another path (CUDA_BLOCKRUN_REPORT='r.%p.jsonl'); accepted: a "
          "path other than CUDA_BLOCKRUN_REPORT's, or /dev/null");
  EXPECT_TRUE(refused(parse({{"CUDA_BLOCKRUN_LOG", report}, {"CUDA_BLOCKRUN_TRACE", "./r.jsonl"}}),
                      "CUDA_BLOCKRUN_TRACE"));
  EXPECT_TRUE(refused(parse({{"CUDA_BLOCKRUN_REPORT", report}, {"CUDA_BLOCKRUN_TRACE", "r.jsonl"}}),
                      "CUDA_BLOCKRUN_TRACE"));
  EXPECT_TRUE(refused(parse({{"CUDA_BLOCKRUN_LOG", report}, {"CUDA_BLOCKRUN_ERROR_FILE", "r.jsonl"}}),
                      "CUDA_BLOCKRUN_ERROR_FILE"));
  // Made: by device and inode (a hard link has its own name).
  std::string hard = directory + "/hard.jsonl";
  std::fclose(std::fopen(report.c_str(), "w"));
  ASSERT_EQ(link(report.c_str(), hard.c_str()), 0);
  EXPECT_TRUE(refused(parse({{"CUDA_BLOCKRUN_REPORT", report}, {"CUDA_BLOCKRUN_ERROR_FILE", hard}}),
                      "CUDA_BLOCKRUN_ERROR_FILE"));
  // Two files stay two.
  EXPECT_TRUE(parse({{"CUDA_BLOCKRUN_REPORT", report},
                     {"CUDA_BLOCKRUN_ERROR_FILE", "e.txt"},
                     {"CUDA_BLOCKRUN_LOG", "l.log"},
                     {"CUDA_BLOCKRUN_TRACE", "t.json"}})
                  .errors.empty());
  ASSERT_EQ(chdir("/"), 0);
  std::remove(hard.c_str());
  std::remove(report.c_str());
  std::remove(linked.c_str());
  rmdir(directory.c_str());
}

// Issue 42: `--report 'x.%j.jsonl'` wrote a file named so. An unknown escape, or a % at the end, is refused
// with the known ones; %% and the three escapes are kept for expand_path.
TEST(Config, AnUnknownEscapeInAPathIsRefusedWithTheKnownOnes) {
  ConfigResult unknown = parse({{"CUDA_BLOCKRUN_REPORT", "x.%j.jsonl"}});
  ASSERT_EQ(unknown.errors.size(), 1u);
  EXPECT_EQ(
      unknown.errors[0].message(),
      "invalid CUDA_BLOCKRUN_REPORT='x.%j.jsonl': unknown escape '%j' (the known escapes: %p the process id, "
      "%r the rank, %h the host name, %% a % sign); accepted: a file path; %p: process id, %r: rank, %h: "
      "host name");
  for (const char* variable : {"CUDA_BLOCKRUN_LOG", "CUDA_BLOCKRUN_TRACE", "CUDA_BLOCKRUN_ERROR_FILE"})
    EXPECT_EQ(parse({{variable, "/tmp/a%"}}).errors.size(), 1u) << variable;
  EXPECT_TRUE(parse({{"CUDA_BLOCKRUN_LOG", "/tmp/100%%.%h.%r.%p.log"}}).errors.empty());
  EXPECT_TRUE(parse({{"CUDA_BLOCKRUN_LOG", "/tmp/%%p"}}).errors.empty());
}

TEST(Config, ExpandsProcessIdInPaths) {
  EXPECT_EQ(expand_path("/tmp/blockrun.%p.log", 4242), "/tmp/blockrun.4242.log");
  EXPECT_EQ(expand_path("100%%-%p", 7), "100%-7");
  EXPECT_EQ(expand_path("plain", 7), "plain");
  EXPECT_EQ(expand_path("end%", 7), "end%");
}

// docs/config.md is generated from the table; it must not drift from it.
TEST(Config, ConfigurationReferenceIsCurrent) {
  std::ifstream file(CUDA_BLOCKRUN_SOURCE_DIR "/docs/config.md");
  ASSERT_TRUE(file) << "docs/config.md is missing";
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str(), configuration_reference_markdown())
      << "regenerate it: build/bin/cuda-blockrun --help-config-markdown > docs/config.md";
}

}  // namespace
}  // namespace blockrun

namespace blockrun {
namespace {

TEST(ConfigProcess, RanksAndProcessSelection) {
  std::string error;
  std::optional<RankSet> ranks = parse_ranks("0,2-3", &error);
  ASSERT_TRUE(ranks) << error;
  EXPECT_TRUE(ranks->contains(0));
  EXPECT_FALSE(ranks->contains(1));
  EXPECT_TRUE(ranks->contains(3));
  EXPECT_FALSE(ranks->contains(4));
  EXPECT_TRUE(parse_ranks("all", &error)->contains(99));
  EXPECT_FALSE(parse_ranks("1,x", &error));
  EXPECT_EQ(error, "at 3 ('x'): expected N or A-B");
  EXPECT_FALSE(parse_ranks("3-1", &error));
  EXPECT_EQ(error, "at 1 ('3-1'): expected N or A-B");

  Config config;
  config.ranks = *parse_ranks("1", &error);
  EXPECT_FALSE(selects_process(config, "python3", "python3 train.py", 0));
  EXPECT_TRUE(selects_process(config, "python3", "python3 train.py", 1));
  config.ranks = RankSet{};
  config.process = "train\\.py";
  EXPECT_TRUE(selects_process(config, "python3", "python3 train.py --lr 1", 0));
  EXPECT_FALSE(selects_process(config, "python3", "python3 eval.py", 0));
  config.process = "^python";
  EXPECT_TRUE(selects_process(config, "python3", "/usr/bin/python3 x", 0));
}

TEST(ConfigProcess, RankComesFromTheFirstLauncherVariableSet) {
  auto lookup_of = [](std::map<std::string, std::string> environment) {
    return [environment](const std::string& variable) -> std::optional<std::string> {
      auto found = environment.find(variable);
      if (found == environment.end()) return std::nullopt;
      return found->second;
    };
  };
  EXPECT_EQ(rank_from_environment(lookup_of({})), 0);
  EXPECT_EQ(rank_from_environment(lookup_of({{"RANK", "3"}, {"LOCAL_RANK", "1"}})), 3);
  EXPECT_EQ(rank_from_environment(lookup_of({{"LOCAL_RANK", "1"}})), 1);
  EXPECT_EQ(rank_from_environment(lookup_of({{"OMPI_COMM_WORLD_RANK", "5"}})), 5);
  EXPECT_EQ(rank_from_environment(lookup_of({{"PMI_RANK", "6"}})), 6);
  EXPECT_EQ(rank_from_environment(lookup_of({{"SLURM_PROCID", "7"}})), 7);
  EXPECT_EQ(rank_from_environment(lookup_of({{"RANK", "x"}, {"SLURM_PROCID", "2"}})), 2);
}

TEST(ConfigProcess, PathsExpandPidRankAndHost) {
  EXPECT_EQ(expand_path("/tmp/%h.%r.%p.log", 42, 3, "node7"), "/tmp/node7.3.42.log");
  EXPECT_EQ(expand_path("%q", 1, 0, "h"), "%q");
  // Issue 17, F13: a host name cannot move the file out of its directory.
  EXPECT_EQ(expand_path("/dir/reports/%h.jsonl", 1, 0, "../../escaped"), "/dir/reports/.._.._escaped.jsonl");
  EXPECT_EQ(expand_path("/d/%h/r", 1, 0, ".."), "/d/_../r");
  EXPECT_EQ(expand_path("/d/%h", 1, 0, ""), "/d/_");
  EXPECT_EQ(expand_path("/d/%h", 1, 0, "gpu-07.cluster_a"), "/d/gpu-07.cluster_a");
  EXPECT_EQ(expand_path("/d/%h", 1, 0, "a b\n\x1b"), "/d/a_b__");
}

TEST(ConfigProcess, InvalidRegexAndRanksAreRefused) {
  ConfigResult result = parse({{"CUDA_BLOCKRUN_PROCESS", "(unclosed"}, {"CUDA_BLOCKRUN_RANKS", "one"}});
  ASSERT_EQ(result.errors.size(), 2u);
  EXPECT_EQ(result.errors[0].variable, "CUDA_BLOCKRUN_PROCESS");
  EXPECT_NE(result.errors[0].message().find("accepted: a regular expression (ECMAScript syntax"),
            std::string::npos);
  EXPECT_EQ(result.errors[1].message(),
            "invalid CUDA_BLOCKRUN_RANKS='one': at 1 ('one'): expected N or A-B; accepted: all | N | A-B, "
            "comma-separated");
}

// The processes of one job share a run id; two invocations outside a launcher do not (issue 19).
TEST(Config, NewRunIdIsTheJobsWhereALauncherGivesOne) {
  auto lookup = [](std::map<std::string, std::string> env) {
    return [env](const std::string& variable) -> std::optional<std::string> {
      auto found = env.find(variable);
      return found == env.end() ? std::nullopt : std::optional<std::string>(found->second);
    };
  };
  EXPECT_EQ(new_run_id(lookup({{"TORCHELASTIC_RUN_ID", "f00d"}}), "gpu7", 10, 5, 100), "torchelastic-f00d");
  // torchrun's default id is "none": its agent, the parent of every local rank, tells the run apart.
  EXPECT_EQ(new_run_id(lookup({{"TORCHELASTIC_RUN_ID", "none"}}), "gpu7", 10, 5, 100), "torchelastic-gpu7-5");
  EXPECT_EQ(new_run_id(lookup({{"SLURM_JOB_ID", "77"}, {"SLURM_STEP_ID", "2"}}), "gpu7", 10, 5, 100),
            "slurm-77.2");
  EXPECT_EQ(new_run_id(lookup({{"OMPI_MCA_ess_base_jobid", "836632577"}}), "gpu7", 10, 5, 100),
            "ompi-836632577");
  EXPECT_EQ(new_run_id(lookup({}), "gpu/7", 10, 5, 100), "gpu_7-100-10");
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
