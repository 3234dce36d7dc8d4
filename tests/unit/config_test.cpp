// Configuration parsing: defaults, every kind of value, unknown variables, the messages users see.
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "config.h"

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
  EXPECT_EQ(
      result.errors[0].message(),
      "invalid CUDA_BLOCKRUN_BLOCK='a,,b': at 3: empty rule; accepted: none | all | rules separated by ';' or "
      "',' (docs/policy.md)");
  EXPECT_EQ(result.errors[1].message(), "invalid CUDA_BLOCKRUN_LOG_LAUNCHES='maybe'; accepted: 0 or 1");
}

TEST(Config, UnknownVariableIsAnError) {
  ConfigResult result = parse({{"CUDA_BLOCKRUN_BLOK", "all"}});
  ASSERT_EQ(result.errors.size(), 1u);
  EXPECT_EQ(result.errors[0].variable, "CUDA_BLOCKRUN_BLOK");
  EXPECT_NE(result.errors[0].message().find("unknown variable"), std::string::npos);
  EXPECT_NE(result.errors[0].message().find("CUDA_BLOCKRUN_BLOCK"), std::string::npos);
}

TEST(Config, ExpandsProcessIdInPaths) {
  EXPECT_EQ(expand_path("/tmp/blockrun.%p.log", 4242), "/tmp/blockrun.4242.log");
  EXPECT_EQ(expand_path("100%%-%p", 7), "100%-7");
  EXPECT_EQ(expand_path("plain", 7), "plain");
  EXPECT_EQ(expand_path("end%", 7), "end%");
}

TEST(Config, HelpListsEveryVariable) {
  std::string help = configuration_help_text();
  for (const OptionSpec& spec : option_specs()) EXPECT_NE(help.find(spec.variable), std::string::npos);
}

// docs/config.md is generated from the table; it must not drift from it.
TEST(Config, ConfigurationReferenceIsCurrent) {
  std::ifstream file(CUDA_BLOCKRUN_SOURCE_DIR "/docs/config.md");
  ASSERT_TRUE(file) << "docs/config.md is missing";
  std::stringstream text;
  text << file.rdbuf();
  EXPECT_EQ(text.str(), configuration_reference_markdown())
      << "regenerate it: build/bin/cuda-blockrun --help-config-markdown > docs/config.md";

  // The README carries the same table.
  std::ifstream readme_file(CUDA_BLOCKRUN_SOURCE_DIR "/README.md");
  std::stringstream readme;
  readme << readme_file.rdbuf();
  std::string reference = configuration_reference_markdown();
  std::string table = reference.substr(reference.find("| variable |"));
  EXPECT_NE(readme.str().find(table), std::string::npos) << "README.md's configuration table differs from:\n"
                                                         << table;
}

}  // namespace
}  // namespace blockrun
