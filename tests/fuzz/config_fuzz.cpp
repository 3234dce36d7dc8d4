// libFuzzer target: the configuration parser. The input is an environment, one NAME=VALUE per line (any
// bytes; a line without '=' is skipped, as the shim skips such `environ` entries). Beyond "no crash, no
// undefined behaviour, no leak", it checks what config.h promises:
// - every error's message names its variable and contains its value and the accepted forms, and there is
//   an error for exactly the known variables whose value check_value refuses and for each unknown
//   CUDA_BLOCKRUN* variable;
// - a configuration without errors, written back as values (the policy as describe() gives it, ranks as
//   ranges, switches as 0/1) and parsed again, is the same configuration;
// - expand_path gives exactly the documented expansion of %p, %r, %h and %% (so no escape is left
//   unexpanded: the only '%' left come from %% or the host name), for every value as a pattern; for other
//   '%' sequences it promises nothing, so they are only run;
// - rank_from_environment is never negative; selects_process selects exactly the ranks of the set when
//   there is no process pattern, and none outside it with one.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "config/config.h"
#include "cuda/names.h"
#include "config/policy.h"

#define FUZZ_CHECK(condition)                                                                         \
  do {                                                                                                \
    if (!(condition)) {                                                                               \
      std::fprintf(stderr, "config_fuzz: %s:%d: check failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                                   \
    }                                                                                                 \
  } while (0)

namespace {

using blockrun::Config;
using blockrun::ConfigError;
using blockrun::ConfigResult;
using blockrun::OptionSpec;

struct Environment {
  std::vector<std::pair<std::string, std::string>> entries;  // in order, duplicates kept

  // The first entry wins, as with getenv.
  std::optional<std::string> lookup(const std::string& name) const {
    for (const auto& [entry_name, value] : entries)
      if (entry_name == name) return value;
    return std::nullopt;
  }

  // What parse_config_from_environment lists: names with the prefix, duplicates included.
  std::vector<std::string> blockrun_variables() const {
    std::vector<std::string> names;
    for (const auto& entry : entries)
      if (entry.first.rfind("CUDA_BLOCKRUN", 0) == 0) names.push_back(entry.first);
    return names;
  }

  ConfigResult parse() const {
    return blockrun::parse_config([this](const std::string& name) { return lookup(name); },
                                  blockrun_variables());
  }
};

Environment read_environment(std::string_view text) {
  Environment environment;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::string_view line = text.substr(0, end);
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
    size_t equals = line.find('=');
    if (equals == std::string_view::npos) continue;
    environment.entries.emplace_back(std::string(line.substr(0, equals)),
                                     std::string(line.substr(equals + 1)));
  }
  return environment;
}

// A configuration's values as the variables that would give them, one function per kind of options.def.
std::string value_text_Switch(bool flag) {
  return flag ? "1" : "0";
}
std::string value_text_Text(const std::string& text) {
  return text;
}
std::string value_text_Path(const std::string& text) {
  return text;
}
template <class Enum>
std::string value_text_Choice(Enum choice) {
  return blockrun::choice_word(choice);
}
std::string value_text_Regex(const std::string& text) {
  return text;
}
std::string value_text_Policy(const blockrun::Policy& policy) {
  return policy.describe();
}
std::string value_text_Ranks(const blockrun::RankSet& ranks) {
  if (ranks.all) return "all";
  std::string text;
  for (const auto& [low, high] : ranks.ranges) {
    if (!text.empty()) text += ',';
    text += std::to_string(low);
    if (high != low) text += "-" + std::to_string(high);
  }
  return text;
}
std::string value_text_Count(size_t count) {
  return std::to_string(count);
}
std::string value_text_Limit(size_t limit) {
  return std::to_string(limit);
}

bool same_Switch(bool a, bool b) {
  return a == b;
}
bool same_Text(const std::string& a, const std::string& b) {
  return a == b;
}
bool same_Path(const std::string& a, const std::string& b) {
  return a == b;
}
template <class Enum>
bool same_Choice(Enum a, Enum b) {
  return a == b;
}
bool same_Regex(const std::string& a, const std::string& b) {
  return a == b;
}
bool same_Policy(const blockrun::Policy& a, const blockrun::Policy& b) {
  return a.describe_rules() == b.describe_rules() && a.per_kernel() == b.per_kernel() &&
         a.uses_time() == b.uses_time() && a.blocks_nothing() == b.blocks_nothing();
}
bool same_Ranks(const blockrun::RankSet& a, const blockrun::RankSet& b) {
  return a.all == b.all && a.ranges == b.ranges;
}
bool same_Count(size_t a, size_t b) {
  return a == b;
}
bool same_Limit(size_t a, size_t b) {
  return a == b;
}

Environment written_back(const Config& config) {
  Environment environment;
#define CUDA_BLOCKRUN_OPTION(member, kind, variable, flag, group, default_value, accepted, summary, \
                             description)                                                           \
  environment.entries.emplace_back(variable, value_text_##kind(config.member));
#include "config/options.def"
  return environment;
}

bool same_config(const Config& a, const Config& b) {
  bool same = true;
#define CUDA_BLOCKRUN_OPTION(member, kind, variable, flag, group, default_value, accepted, summary,   \
                             description)                                                             \
  if (!same_##kind(a.member, b.member)) {                                                             \
    std::fprintf(stderr, "config_fuzz: %s differs after writing the configuration back\n", variable); \
    same = false;                                                                                     \
  }
#include "config/options.def"
  return same;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

void check_errors(const Environment& environment, const ConfigResult& result) {
  for (const ConfigError& error : result.errors) {
    std::string message = error.message();
    FUZZ_CHECK(!error.variable.empty());
    FUZZ_CHECK(!error.accepted.empty());
    FUZZ_CHECK(message.size() > 8192 || contains(message, blockrun::printable(error.variable)));
    FUZZ_CHECK(message.size() > 8192 || contains(message, "'" + blockrun::printable(error.value) + "'"));
    for (char c : message) FUZZ_CHECK(static_cast<unsigned char>(c) >= 0x20 && c != 0x7f);  // nothing raw
    FUZZ_CHECK(message.size() > 8192 || contains(message, blockrun::printable(error.accepted)));
  }
  auto errors_for = [&](const std::string& variable) {
    size_t count = 0;
    for (const ConfigError& error : result.errors) count += error.variable == variable;
    return count;
  };
  size_t known_errors = 0;
  // The report and the log on one path: one more error, for the report.
  std::optional<std::string> report = environment.lookup("CUDA_BLOCKRUN_REPORT");
  bool same_path = report && !report->empty() && report == environment.lookup("CUDA_BLOCKRUN_LOG") &&
                   report->find('\0') == std::string::npos;
  known_errors += same_path;
  for (const OptionSpec& spec : blockrun::option_specs()) {
    std::optional<std::string> value = environment.lookup(spec.variable);
    bool refused = blockrun::check_value(spec, value.value_or(spec.default_value)).has_value();
    size_t extra = same_path && std::string(spec.variable) == "CUDA_BLOCKRUN_REPORT";
    FUZZ_CHECK(errors_for(spec.variable) == (refused ? 1u : 0u) + extra);
    if (refused) {
      for (const ConfigError& error : result.errors)
        if (error.variable == spec.variable && error.detail != "it is the log file's path")
          FUZZ_CHECK(error.value == value.value_or(spec.default_value));
    }
    known_errors += refused;
  }
  size_t unknown = 0;
  for (const std::string& name : environment.blockrun_variables()) {
    bool known = false;
    for (const OptionSpec& spec : blockrun::option_specs()) known = known || name == spec.variable;
    if (known) continue;
    ++unknown;
    FUZZ_CHECK(errors_for(name) >= 1);
  }
  FUZZ_CHECK(result.errors.size() == known_errors + unknown);
}

// expand_path's documented result: nullopt where the pattern has a '%' sequence it does not document.
// A '%' at the very end stays (the unit tests pin it).
std::optional<std::string> documented_expansion(const std::string& pattern, long pid, long rank,
                                                const std::string& host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%' || i + 1 == pattern.size()) {
      out += pattern[i];
      continue;
    }
    char escape = pattern[++i];
    if (escape == 'p')
      out += std::to_string(pid);
    else if (escape == 'r')
      out += std::to_string(rank);
    else if (escape == 'h')
      out += blockrun::host_for_path(host);
    else if (escape == '%')
      out += '%';
    else
      return std::nullopt;
  }
  return out;
}

void check_expansion(const std::string& pattern, long pid, long rank, const std::string& host) {
  std::string expanded = blockrun::expand_path(pattern, pid, rank, host);
  // The host is one component: no separator, and never "." or "..".
  std::string component = blockrun::host_for_path(host);
  FUZZ_CHECK(component.find('/') == std::string::npos && component != "." && component != ".." &&
             !component.empty());
  if (std::optional<std::string> expected = documented_expansion(pattern, pid, rank, host))
    FUZZ_CHECK(expanded == *expected);
}

long hash_to_long(std::string_view text) {
  uint64_t hash = 1469598103934665603ull;  // FNV-1a
  for (char c : text) hash = (hash ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return static_cast<long>(hash);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool defaults_are_valid = [] {
    for (const OptionSpec& spec : blockrun::option_specs())
      FUZZ_CHECK(!blockrun::check_value(spec, spec.default_value));
    return true;
  }();
  (void)defaults_are_valid;

  std::string_view text(reinterpret_cast<const char*>(data), size);
  Environment environment = read_environment(text);
  ConfigResult result = environment.parse();
  check_errors(environment, result);

  auto lookup = [&](const std::string& name) { return environment.lookup(name); };
  long rank = blockrun::rank_from_environment(lookup);
  FUZZ_CHECK(rank >= 0);

  if (result.errors.empty()) {
    Environment again = written_back(result.config);
    ConfigResult reparsed = again.parse();
    for (const ConfigError& error : reparsed.errors)
      std::fprintf(stderr, "config_fuzz: written back: %s\n", error.message().c_str());
    FUZZ_CHECK(reparsed.errors.empty());
    FUZZ_CHECK(same_config(result.config, reparsed.config));
    Config any_process = result.config;
    any_process.process.clear();
    FUZZ_CHECK(blockrun::selects_process(any_process, "a.out", "./a.out -n 3", rank) ==
               result.config.ranks.contains(rank));
    // The process pattern, whatever it is, against a command line made of the input itself (linear time,
    // src/config/linear_regex.h: no pattern may take longer on some subject).
    bool selected = blockrun::selects_process(result.config, "a.out", std::string(text), rank);
    FUZZ_CHECK(!selected || result.config.ranks.contains(rank));
  }

  long pid = hash_to_long(text);
  std::string host = environment.lookup("HOSTNAME").value_or("node-07");
  check_expansion(std::string(text), pid, rank, host);
  for (const auto& entry : environment.entries) {
    check_expansion(entry.second, pid, rank, host);
    check_expansion(entry.second, std::numeric_limits<long>::min(), -1, entry.first);
  }
  return 0;
}
// SPDX-License-Identifier: MIT
