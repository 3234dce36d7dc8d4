// Parsing and documentation of the options declared in options.def.
#include "config/config.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>

#include "config/linear_regex.h"
#include "cuda/names.h"
#include "report/output_file.h"
#include "config/suggest.h"

extern char** environ;

namespace blockrun {

namespace {

constexpr const char* kPrefix = variable::enabled;  // every variable starts with it

std::optional<bool> parse_switch(const std::string& value) {
  static const char* const kTrue[] = {"1", "true", "yes", "on"};
  static const char* const kFalse[] = {"0", "false", "no", "off"};
  for (const char* word : kTrue)
    if (strcasecmp(value.c_str(), word) == 0) return true;
  for (const char* word : kFalse)
    if (strcasecmp(value.c_str(), word) == 0) return false;
  return std::nullopt;
}

// A decimal count in [8, 2^20]: enough to name suspects, small enough that a typo cannot exhaust memory.
std::optional<size_t> parse_count(const std::string& value) {
  if (value.empty() || value.size() > 7 || value.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  size_t count = std::stoul(value);
  if (count < 8 || count > (size_t{1} << 20)) return std::nullopt;
  return count;
}

// A decimal limit: 0 (no limit) or up to 9 digits, which no list printed in a log reaches.
std::optional<size_t> parse_limit(const std::string& value) {
  if (value.empty() || value.size() > 9 || value.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoul(value);
}

// The parsers of each kind: the value into `out`, or the error naming the variable, value and accepted forms.
using Parsed = std::optional<ConfigError>;

ConfigError refused(const OptionSpec& spec, const std::string& value, const std::string& detail = "") {
  return ConfigError{spec.variable, value, spec.accepted, detail};
}

Parsed parse_Switch(const OptionSpec& spec, const std::string& value, bool* out) {
  std::optional<bool> parsed = parse_switch(value);
  if (!parsed) return refused(spec, value);
  *out = *parsed;
  return std::nullopt;
}

Parsed parse_Text(const OptionSpec&, const std::string& value, std::string* out) {
  *out = value;
  return std::nullopt;
}

Parsed parse_Path(const OptionSpec& spec, const std::string& value, std::string* out) {
  if (value.find('\0') != std::string::npos) return refused(spec, value);
  // Every % begins an escape that expand_path knows: `x.%j.jsonl` wrote a file literally named so, the job id
  // the user meant silently lost (issue 42).
  for (size_t at = value.find('%'); at != std::string::npos; at = value.find('%', at + 2)) {
    char next = at + 1 < value.size() ? value[at + 1] : '\0';
    if (next == 'p' || next == 'r' || next == 'h' || next == '%') continue;
    return refused(
        spec, value,
        (next ? "unknown escape '%" + std::string(1, next) + "'" : std::string("a '%' at the end")) +
            " (the known escapes: %p the process id, %r the rank, %h the host name, %% a % sign)");
  }
  *out = value;
  return std::nullopt;
}

template <class Enum>
Parsed parse_Choice(const OptionSpec& spec, const std::string& value, Enum* out) {
  for (const ChoiceWord<Enum>& word : ChoiceWords<Enum>::all) {
    if (value == word.word) {
      *out = word.choice;
      return std::nullopt;
    }
  }
  return refused(spec, value);
}

Parsed parse_Policy(const OptionSpec& spec, const std::string& value, Policy* out) {
  std::string detail;
  std::optional<Policy> policy = Policy::parse(value, &detail);
  if (!policy) return refused(spec, value, detail);
  *out = std::move(*policy);
  return std::nullopt;
}

Parsed parse_Regex(const OptionSpec& spec, const std::string& value, std::string* out) {
  std::string detail;
  if (!Regex::compile(value, &detail)) return refused(spec, value, detail);
  *out = value;
  return std::nullopt;
}

Parsed parse_Ranks(const OptionSpec& spec, const std::string& value, RankSet* out) {
  std::string detail;
  std::optional<RankSet> ranks = parse_ranks(value, &detail);
  if (!ranks) return refused(spec, value, detail);
  *out = std::move(*ranks);
  return std::nullopt;
}

Parsed parse_Count(const OptionSpec& spec, const std::string& value, size_t* out) {
  std::optional<size_t> count = parse_count(value);
  if (!count) return refused(spec, value);
  *out = *count;
  return std::nullopt;
}

Parsed parse_Limit(const OptionSpec& spec, const std::string& value, size_t* out) {
  std::optional<size_t> limit = parse_limit(value);
  if (!limit) return refused(spec, value);
  *out = *limit;
  return std::nullopt;
}

// Parses `value` for the option `spec` names into its field of `config` (each value parsed once).
Parsed set_option(Config& config, const OptionSpec& spec, const std::string& value) {
#define CUDA_BLOCKRUN_OPTION(member, kind, variable, flag, group, default_value, accepted, summary, \
                             description)                                                           \
  if (std::strcmp(spec.field, #member) == 0) return parse_##kind(spec, value, &config.member);
#include "config/options.def"
  return refused(spec, value, "not an option of options.def");
}

// An option's `accepted` text: its row's, or a Choice's words joined by " | " (made at compile time: each
// word after a " | ", and the first one's skipped).
template <class Field>
constexpr const char* accepted_text(const char* row) {
  return row;
}
#define CUDA_BLOCKRUN_CHOICE(field, Enum, words)                          \
  template <>                                                             \
  constexpr const char* accepted_text<option_field::field>(const char*) { \
    return (words) + 3;                                                   \
  }
#define CUDA_BLOCKRUN_WORD(enumerator, word, value) " | " word
#include "config/options.def"

// A Choice's accepted text written by hand would be one more list of its words to keep in step.
#define CUDA_BLOCKRUN_OPTION(field, kind, variable, flag, group, default_value, accepted, summary, \
                             description)                                                          \
  static_assert(OptionKind::kind != OptionKind::Choice || sizeof(accepted) == 1,                   \
                variable ": a Choice's accepted text is \"\", made from its words");
#include "config/options.def"

}  // namespace

const std::vector<OptionSpec>& option_specs() {
  static const std::vector<OptionSpec> specs = {
// clang-format off
#define CUDA_BLOCKRUN_OPTION(field, kind, variable, flag, group, default_value, accepted, summary, description) \
  {#field, OptionKind::kind, variable, flag, OptionGroup::group, default_value, \
   accepted_text<option_field::field>(accepted), summary, description},
  // clang-format on
#include "config/options.def"
  };
  return specs;
}

std::string ConfigError::message() const {
  // Control bytes escaped: the message goes to a terminal, where ESC and BEL sequences from the environment
  // would set its title or clear its screen (issue 17, F17).
  std::string text = "invalid " + variable + "='" + value + "'";
  if (!detail.empty()) text += ": " + detail;
  text += "; accepted: " + accepted;
  return printable(text, 8192);
}

Config::Config() {
  for (const OptionSpec& spec : option_specs()) set_option(*this, spec, spec.default_value);  // valid: tested
}

std::optional<ConfigError> check_value(const OptionSpec& spec, const std::string& value) {
#define CUDA_BLOCKRUN_OPTION(member, kind, variable, flag, group, default_value, accepted, summary, \
                             description)                                                           \
  if (std::strcmp(spec.field, #member) == 0) {                                                      \
    decltype(Config::member) scratch{};                                                             \
    return parse_##kind(spec, value, &scratch);                                                     \
  }
#include "config/options.def"
  return refused(spec, value, "not an option of options.def");
}

namespace {

// `path` made absolute, its directory by its real path where it exists (a symbolic link above it, `..`),
// else by its text without `.` components and repeated slashes: two spellings of one file not made yet.
std::string normalized_path(const std::string& path) {
  size_t slash = path.rfind('/');
  std::string directory = slash == std::string::npos ? "." : slash == 0 ? "/" : path.substr(0, slash);
  std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (char* real = realpath(directory.c_str(), nullptr)) {
    std::string resolved = real;
    std::free(real);
    return (resolved == "/" ? "" : resolved) + "/" + name;
  }
  std::string absolute = path;
  if (path.empty() || path[0] != '/') {
    char here[4096];
    absolute = std::string(getcwd(here, sizeof here) ? here : ".") + "/" + path;
  }
  std::string out;
  size_t start = 0;
  while (start <= absolute.size()) {
    size_t end = absolute.find('/', start);
    if (end == std::string::npos) end = absolute.size();
    std::string part = absolute.substr(start, end - start);
    if (!part.empty() && part != ".") out += "/" + part;
    start = end + 1;
  }
  return out;
}

// Whether two outputs' paths name one file: by device and inode where both exist (a symbolic or hard link, a
// relative and an absolute path), else by their normalized paths (issue 40, N12).
bool same_file_by_path(const std::string& a, const std::string& b) {
  if (a == b) return true;
  struct stat first {};
  struct stat second {};
  if (stat(a.c_str(), &first) == 0 && stat(b.c_str(), &second) == 0)
    return first.st_dev == second.st_dev && first.st_ino == second.st_ino;
  return normalized_path(a) == normalized_path(b);
}

std::string this_host() {
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 ? name : "unknown-host";
}

}  // namespace

ConfigResult parse_config(const EnvLookup& lookup, const std::vector<std::string>& variables) {
  ConfigResult result;
  for (const OptionSpec& spec : option_specs()) {
    std::optional<std::string> value = lookup(spec.variable);
    if (!value) continue;  // the default, from Config()
    if (std::optional<ConfigError> error = set_option(result.config, spec, *value))
      result.errors.push_back(*error);
  }
  // Two outputs in one file mix their contents: the log's lines in the report make it invalid JSON lines
  // (issue 17, F16), and so would the error file's plain line in the report or the trace, or the trace in the
  // log (issue 40, N12). One file by another path is one too: a symbolic or hard link, a relative and an
  // absolute path, `%p` expanded to this process's own number (checked again, by identity, where the files
  // are opened). The null device keeps nothing: any output may go there (N13).
  long pid = static_cast<long>(getpid());
  long rank = rank_from_environment(lookup);
  std::string host;
  auto clash = [&](const char* variable, const std::string& path, const char* other_variable,
                   const std::string& other_path, const char* other_file) {
    if (path.empty() || other_path.empty()) return;
    if (host.empty()) host = this_host();
    std::string expanded = expand_path(path, pid, rank, host);
    std::string other_expanded = expand_path(other_path, pid, rank, host);
    if (is_null_device(expanded.c_str()) || !same_file_by_path(expanded, other_expanded)) return;
    std::string problem = std::string("it is the ") + other_file + " file";
    problem += path == other_path
                   ? "'s path"
                   : std::string(" by another path (") + other_variable + "='" + other_path + "')";
    result.errors.push_back(ConfigError{
        variable, path, std::string("a path other than ") + other_variable + "'s, or /dev/null", problem});
  };
  const Config& config = result.config;
  clash(variable::report, config.report, variable::log, config.log, "log");
  clash(variable::trace, config.trace, variable::log, config.log, "log");
  clash(variable::trace, config.trace, variable::report, config.report, "report");
  clash(variable::error_file, config.error_file, variable::log, config.log, "log");
  clash(variable::error_file, config.error_file, variable::report, config.report, "report");
  clash(variable::error_file, config.error_file, variable::trace, config.trace, "trace");
  std::vector<std::string> known;
  for (const OptionSpec& spec : option_specs()) known.emplace_back(spec.variable);
  for (const std::string& variable : variables) {
    if (std::find(known.begin(), known.end(), variable) != known.end()) continue;
    std::string names;
    for (const std::string& name : known) names += (names.empty() ? "" : ", ") + name;
    std::optional<std::string> value = lookup(variable);
    result.errors.push_back(ConfigError{variable, value.value_or(""), "one of the known variables: " + names,
                                        "unknown variable" + did_you_mean(variable, known)});
  }
  return result;
}

bool switched_off(const EnvLookup& lookup) {
  std::optional<std::string> value = lookup(variable::enabled);
  return value && parse_switch(*value) == false;
}

ConfigResult parse_config_from_environment() {
  std::vector<std::string> variables;
  for (char** entry = environ; entry && *entry; ++entry) {
    if (std::strncmp(*entry, kPrefix, std::strlen(kPrefix)) != 0) continue;
    const char* equals = std::strchr(*entry, '=');
    if (equals) variables.emplace_back(*entry, equals - *entry);
  }
  return parse_config(
      [](const std::string& variable) -> std::optional<std::string> {
        const char* value = std::getenv(variable.c_str());
        if (!value) return std::nullopt;
        return std::string(value);
      },
      variables);
}

std::string host_for_path(const std::string& host) {
  std::string out;
  for (char c : host)
    out += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '-' || c == '_' ? c : '_';
  if (out.empty() || out == "." || out == "..") out = "_" + out;
  return out;
}

std::string expand_path(const std::string& pattern, long pid, long rank, const std::string& host) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size()) {
      char next = pattern[++i];
      if (next == 'p')
        out += std::to_string(pid);
      else if (next == 'r')
        out += std::to_string(rank);
      else if (next == 'h')
        out += host_for_path(host);
      else if (next == '%')
        out += '%';
      else
        out += std::string("%") + next;
      continue;
    }
    out += pattern[i];
  }
  return out;
}

bool RankSet::contains(long rank) const {
  if (all) return true;
  for (const auto& [low, high] : ranges) {
    if (rank >= low && rank <= high) return true;
  }
  return false;
}

std::optional<RankSet> parse_ranks(const std::string& text, std::string* error) {
  RankSet set;
  if (text == "all" || text.empty()) return set;
  set.all = false;
  size_t offset = 0;
  for (const std::string& piece : split_top_level(text, ",")) {
    char* end = nullptr;
    long low = std::strtol(piece.c_str(), &end, 10);
    long high = low;
    bool ok = end != piece.c_str() && low >= 0;
    if (ok && *end == '-') {
      const char* rest = end + 1;
      high = std::strtol(rest, &end, 10);
      ok = end != rest && high >= low;
    }
    if (!ok || *end) {
      *error = "at " + std::to_string(text.find(piece, offset) + 1) + " ('" + piece + "'): expected N or A-B";
      return std::nullopt;
    }
    offset = text.find(piece, offset) + piece.size();
    set.ranges.emplace_back(low, high);
  }
  return set;
}

std::string new_run_id(const EnvLookup& lookup, const std::string& host, long pid, long parent_pid,
                       long time) {
  auto set = [&](const char* variable) { return lookup(variable).value_or(""); };
  // torchrun's workers are children of its agent, one per host and run; without --rdzv-id its id is "none".
  if (std::string torch = set("TORCHELASTIC_RUN_ID"); !torch.empty()) {
    return torch == "none" ? "torchelastic-" + host + "-" + std::to_string(parent_pid)
                           : "torchelastic-" + torch;
  }
  if (std::string slurm = set("SLURM_JOB_ID"); !slurm.empty()) {
    std::string step = set("SLURM_STEP_ID");
    return "slurm-" + slurm + (step.empty() ? "" : "." + step);
  }
  if (std::string ompi = set("OMPI_MCA_ess_base_jobid"); !ompi.empty()) return "ompi-" + ompi;
  return host_for_path(host) + "-" + std::to_string(time) + "-" + std::to_string(pid);
}

std::optional<long> rank_variable(const EnvLookup& lookup) {
  for (const char* variable : {"RANK", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    std::optional<std::string> value = lookup(variable);
    if (!value || value->empty()) continue;
    char* end = nullptr;
    long rank = std::strtol(value->c_str(), &end, 10);
    if (end && *end == '\0' && rank >= 0) return rank;
  }
  return std::nullopt;
}

long rank_from_environment(const EnvLookup& lookup) {
  return rank_variable(lookup).value_or(0);
}

bool selects_process(const Config& config, const std::string& name, const std::string& command_line,
                     long rank) {
  if (!config.ranks.contains(rank)) return false;
  if (config.process.empty()) return true;
  std::string problem;
  std::optional<Regex> pattern = Regex::compile(config.process, &problem);
  if (!pattern) return false;  // checked at parse time; cannot happen
  // Both subjects cut to the window, as kernel names are: a search takes time in proportion to its subject.
  return pattern->search(std::string_view(name).substr(0, kRegexSubjectWindow)) ||
         pattern->search(std::string_view(command_line).substr(0, kRegexSubjectWindow));
}

std::string configuration_reference_markdown() {
  std::string out =
      "# Configuration reference\n\n"
      "Generated from `src/config/options.def` by `cuda-blockrun --help-config-markdown`; a test keeps this "
      "file "
      "in step with the table.\n\n"
      "Every option is an environment variable read by the preloaded shim, so it can be set per process "
      "(in a job script, a launcher's environment, or through the `cuda-blockrun` wrapper's flag). "
      "An invalid value, or an unknown `CUDA_BLOCKRUN*` variable, stops the program before `main` with "
      "exit status 2 and a message naming the variable, the value and the accepted forms.\n\n"
      "| variable | wrapper flag | default | accepted | meaning |\n"
      "|---|---|---|---|---|\n";
  auto cell = [](std::string text) {  // a '|' would end the table cell
    for (size_t at = text.find('|'); at != std::string::npos; at = text.find('|', at + 2))
      text.replace(at, 1, "\\|");
    return text;
  };
  for (const OptionSpec& spec : option_specs()) {
    std::string flag = *spec.flag ? "`" + std::string(spec.flag) + "`" : "";
    std::string default_value = *spec.default_value ? "`" + std::string(spec.default_value) + "`" : "(empty)";
    out += "| `" + std::string(spec.variable) + "` | " + flag + " | " + default_value + " | " +
           cell(spec.accepted) + " | " + cell(spec.description) + " |\n";
  }
  return out;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
