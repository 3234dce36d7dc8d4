// Configuration of cuda-blockrun: the Config struct generated from options.def, and its parser.
// The parser reads through a lookup function so that tests can drive it without touching the
// process environment, and so that the shim and the wrapper give the same verdict on the same input.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "config/policy.h"

namespace blockrun {

enum class OptionKind { Switch, Text, Path, Choice, Policy, Regex, Ranks, Count, Limit };
// The headings of --help and the man page, for options.def's rows and the wrapper's own flags
// (tools/cuda-blockrun/commands.def), in the order they are listed.
enum class OptionGroup { Modes, Policy, Output, Processes, Advanced, Information };

// One row of options.def, as data.
struct OptionSpec {
  const char* field;
  OptionKind kind;
  const char* variable;
  const char* flag;
  OptionGroup group;
  const char* default_value;
  const char* accepted;
  const char* summary;
  const char* description;
};

const std::vector<OptionSpec>& option_specs();

// A set of ranks: `all`, or ranges.
struct RankSet {
  bool all = true;
  std::vector<std::pair<long, long>> ranges;
  bool contains(long rank) const;
};

// The C++ type each kind of option is held in.
template <OptionKind>
struct OptionValue;
template <>
struct OptionValue<OptionKind::Switch> {
  using type = bool;
};
template <>
struct OptionValue<OptionKind::Text> {
  using type = std::string;
};
template <>
struct OptionValue<OptionKind::Path> {
  using type = std::string;
};  // as given: %p, %r, %h unexpanded
template <>
struct OptionValue<OptionKind::Policy> {
  using type = class Policy;
};
template <>
struct OptionValue<OptionKind::Regex> {
  using type = std::string;
};  // compiled where it is used
template <>
struct OptionValue<OptionKind::Ranks> {
  using type = RankSet;
};
template <>
struct OptionValue<OptionKind::Count> {
  using type = size_t;
};
template <>
struct OptionValue<OptionKind::Limit> {
  using type = size_t;
};  // 0: no limit

// Each Choice option's enum class, from its CUDA_BLOCKRUN_CHOICE row (Callsites::All,
// BreadcrumbEvery::Eight).
#define CUDA_BLOCKRUN_CHOICE(field, Enum, words) enum class Enum { words };
#define CUDA_BLOCKRUN_WORD(enumerator, word, value) enumerator = value,
#include "config/options.def"

// A Choice's words with their enumerators, in the order options.def lists them.
template <class Enum>
struct ChoiceWord {
  Enum choice;
  const char* word;
};
template <class Enum>
struct ChoiceWords;
#define CUDA_BLOCKRUN_CHOICE(field, Enum, words)       \
  template <>                                          \
  struct ChoiceWords<Enum> {                           \
    using Choice = Enum;                               \
    static constexpr ChoiceWord<Enum> all[] = {words}; \
  };
#define CUDA_BLOCKRUN_WORD(enumerator, word, value) {Choice::enumerator, word},
#include "config/options.def"

// The word a Choice's variable is set to for `choice`: what prints a configuration back.
template <class Enum>
const char* choice_word(Enum choice) {
  for (const ChoiceWord<Enum>& word : ChoiceWords<Enum>::all)
    if (word.choice == choice) return word.word;
  return "";  // not an enumerator of options.def
}

// A type per option, named as its field, for what is said of one option alone (FieldValue).
namespace option_field {
#define CUDA_BLOCKRUN_OPTION(field, kind, variable, flag, group, default_value, accepted, summary, \
                             description)                                                          \
  struct field;
#include "config/options.def"
}  // namespace option_field

// The C++ type of an option's field: its kind's; a Choice's, its own enum (a Choice without a
// CUDA_BLOCKRUN_CHOICE row has none, and does not compile).
template <class Field, OptionKind kind>
struct FieldValue : OptionValue<kind> {};
#define CUDA_BLOCKRUN_CHOICE(field, Enum, words)               \
  template <>                                                  \
  struct FieldValue<option_field::field, OptionKind::Choice> { \
    using type = Enum;                                         \
  };
#include "config/options.def"

// The configuration: one field per row of options.def, of its FieldValue type, named as the row's `field`.
struct Config {
#define CUDA_BLOCKRUN_OPTION(field, kind, variable, flag, group, default_value, accepted, summary, \
                             description)                                                          \
  FieldValue<option_field::field, OptionKind::kind>::type field{};
#include "config/options.def"
  // Every option at its default, parsed from options.def's text.
  Config();
};

// Each option's environment variable by its field's name (variable::block is "CUDA_BLOCKRUN_BLOCK"), so
// that code naming one cannot misspell it.
namespace variable {
#define CUDA_BLOCKRUN_OPTION(field, kind, variable_name, flag, group, default_value, accepted, summary, \
                             description)                                                               \
  constexpr const char* field = variable_name;
#include "config/options.def"
}  // namespace variable

// A configuration value that cannot be used: names the variable, the value and what is accepted.
struct ConfigError {
  std::string variable;
  std::string value;
  std::string accepted;
  std::string detail;  // optional: what exactly is wrong
  std::string message() const;
};

// Returns the value of an environment variable, or nullopt where it is unset.
using EnvLookup = std::function<std::optional<std::string>(const std::string& variable)>;

struct ConfigResult {
  Config config;
  std::vector<ConfigError> errors;  // empty when the configuration is valid
};

// Parses every option of options.def. `variables` lists the names of all variables present in the
// environment that start with CUDA_BLOCKRUN; an unknown one is an error (a typo must not pass
// silently as "no policy").
ConfigResult parse_config(const EnvLookup& lookup, const std::vector<std::string>& variables);

// The same, from the real process environment (`environ`).
ConfigResult parse_config_from_environment();

// Whether CUDA_BLOCKRUN switches the tool off (0, false, no, off): then nothing else is read, so that a stale
// or misspelt variable in a job's environment cannot stop its processes (issue 17, F14).
bool switched_off(const EnvLookup& lookup);

// Parses one value of an option; used by the parser and by the wrapper for its flags.
std::optional<ConfigError> check_value(const OptionSpec& spec, const std::string& value);

// Expands %p (process id), %r (rank), %h (host name, host_for_path) and %% in a log path.
std::string expand_path(const std::string& pattern, long pid, long rank = 0, const std::string& host = "");
// The host name as one file-name component: every byte but letters, digits, '.', '-' and '_' becomes '_',
// and ".", ".." and "" get a leading '_', so that a host name (a container's is anyone's to set) cannot move
// a file out of its directory (issue 17, F13).
std::string host_for_path(const std::string& host);

// A run id for CUDA_BLOCKRUN_RUN_ID, where it is not set: one the processes of a job share, from the launcher
// (torchrun's TORCHELASTIC_RUN_ID, or its agent's process id where the id is the default "none"; Slurm's job
// and step; Open MPI's job id), else `host`-`time`-`pid` of this invocation.
std::string new_run_id(const EnvLookup& lookup, const std::string& host, long pid, long parent_pid,
                       long time);

// This process's rank, from the first of RANK, LOCAL_RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_PROCID
// that is set to a number; nullopt where none is (a process outside a launcher's job).
std::optional<long> rank_variable(const EnvLookup& lookup);
// The same, 0 where none is set (the rank --ranks and %r take then).
long rank_from_environment(const EnvLookup& lookup);

// Whether the configuration selects this process (its name, command line and rank).
bool selects_process(const Config& config, const std::string& name, const std::string& command_line,
                     long rank);

std::optional<RankSet> parse_ranks(const std::string& text, std::string* error);

// The configuration reference as Markdown (docs/config.md); the wrapper's --help, man page and completions
// are made from option_specs() by tools/cuda-blockrun/help.cpp.
std::string configuration_reference_markdown();

}  // namespace blockrun
// SPDX-License-Identifier: MIT
