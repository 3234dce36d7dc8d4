// What the wrapper says about itself, all made from its two tables of flags (src/config/options.def: the
// shim's options; commands.def: the wrapper's own): --help, --help-all, the man page and the bash and zsh
// completions (the build makes those three with the hidden flags), and --list-hooks and --version.
#include <dlfcn.h>

#include <cctype>
#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "cli.h"
#include "cuda/driver_features.h"
#include "hook_list.h"

#ifndef CUDA_BLOCKRUN_VERSION
#define CUDA_BLOCKRUN_VERSION "unknown"
#endif
#ifndef CUDA_BLOCKRUN_CUDA_VERSION
#define CUDA_BLOCKRUN_CUDA_VERSION "unknown"
#endif

namespace blockrun::cli {

const std::vector<CommandSpec>& command_specs() {
  static const std::vector<CommandSpec> specs = {
// clang-format off
#define CUDA_BLOCKRUN_COMMAND(id, flag, short_flag, value, group, listing, accepted, summary, description) \
  {Command::id, flag, short_flag, value, OptionGroup::group, Listing::listing, accepted, summary, description},
#include "commands.def"
#undef CUDA_BLOCKRUN_COMMAND
      // clang-format on
  };
  return specs;
}

const std::vector<ReportFlagSpec>& report_flag_specs() {
  static const std::vector<ReportFlagSpec> specs = {
#define CUDA_BLOCKRUN_REPORT_FLAG(id, flag, value, summary) {ReportFlag::id, flag, value, summary},
#include "report_flags.def"
#undef CUDA_BLOCKRUN_REPORT_FLAG
  };
  return specs;
}

std::string report_flags_usage() {
  std::string out;
  for (const ReportFlagSpec& spec : report_flag_specs()) {
    if (spec.id == ReportFlag::help) continue;
    out +=
        std::string(out.empty() ? "" : " ") + "[" + spec.flag + (*spec.value ? " " : "") + spec.value + "]";
  }
  return out;
}

namespace {

constexpr size_t kWidth = 100;  // --help, --help-all and the completions' lines, at most
constexpr OptionGroup kGroups[] = {OptionGroup::Modes,     OptionGroup::Policy,   OptionGroup::Output,
                                   OptionGroup::Processes, OptionGroup::Advanced, OptionGroup::Information};

const char* heading(OptionGroup group) {
  switch (group) {
    case OptionGroup::Modes:
      return "modes";
    case OptionGroup::Policy:
      return "policy";
    case OptionGroup::Output:
      return "output";
    case OptionGroup::Processes:
      return "process selection";
    case OptionGroup::Advanced:
      return "advanced";
    case OptionGroup::Information:
      return "information";
  }
  return "";
}

// A flag of either table, as the help, the man page and the completions show it.
struct Flag {
  OptionGroup group;
  std::string flag;        // --block
  std::string short_flag;  // -h, or ""
  std::string value;       // RULES; "" for a flag without value; "[=0|1]" for a switch
  std::string summary;
  std::string description;
  const OptionSpec* option = nullptr;  // the row of options.def, or none for the wrapper's own
  std::string accepted;
  std::string choices;  // a Choice's words, separated by spaces
  bool path = false;    // its value is a file
};

// The value's name in --help: from the option's kind (a Choice's words themselves).
std::string value_name(const OptionSpec& spec) {
  switch (spec.kind) {
    case OptionKind::Switch:
      return "[=0|1]";
    case OptionKind::Path:
      return "FILE";
    case OptionKind::Policy:
      return "RULES";
    case OptionKind::Regex:
      return "REGEX";
    case OptionKind::Ranks:
      return "RANKS";
    case OptionKind::Count:
    case OptionKind::Limit:
      return "N";
    case OptionKind::Text:
      return "VALUE";
    case OptionKind::Choice:
      break;
  }
  std::string words = spec.accepted;
  for (size_t at = words.find(" | "); at != std::string::npos; at = words.find(" | "))
    words.replace(at, 3, "|");
  return words;
}

// Every listed flag of both tables, each table in its order.
const std::vector<Flag>& flags() {
  static const std::vector<Flag> all = [] {
    std::vector<Flag> out;
    for (const OptionSpec& spec : option_specs()) {
      if (!*spec.flag) continue;  // a variable only
      Flag flag{spec.group,   spec.flag,        "",    value_name(spec),
                spec.summary, spec.description, &spec, spec.accepted};
      if (spec.kind == OptionKind::Choice) {
        flag.choices = value_name(spec);
        for (char& c : flag.choices) c = c == '|' ? ' ' : c;
      }
      flag.path = spec.kind == OptionKind::Path;
      out.push_back(flag);
    }
    for (const CommandSpec& spec : command_specs()) {
      if (spec.listing == Listing::Hidden) continue;
      out.push_back(Flag{spec.group, spec.flag, spec.short_flag, spec.value, spec.summary, spec.description,
                         nullptr, spec.accepted});
    }
    return out;
  }();
  return all;
}

// report's flags (report_flags.def), as --help, the man page and the completions show them.
const std::vector<Flag>& report_flags() {
  static const std::vector<Flag> all = [] {
    std::vector<Flag> out;
    for (const ReportFlagSpec& spec : report_flag_specs()) {
      Flag flag{OptionGroup::Information, spec.flag, "", spec.value, spec.summary, spec.summary};
      flag.path = std::string_view(spec.value).find(".json") != std::string_view::npos;
      out.push_back(flag);
    }
    return out;
  }();
  return all;
}

// `-h, --help`, `--block RULES`, `--stack[=0|1]`.
std::string head(const Flag& flag) {
  std::string text = flag.short_flag.empty() ? "" : flag.short_flag + ", ";
  text += flag.flag;
  if (!flag.value.empty()) text += (flag.value[0] == '[' ? "" : " ") + flag.value;
  return text;
}

// `text` in lines of at most kWidth columns, each indented by `indent` spaces (a word longer than a line
// stands alone on its own).
std::string wrap(const std::string& text, size_t indent) {
  std::string out, line(indent, ' ');
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(' ', start);
    if (end == std::string::npos) end = text.size();
    std::string word = text.substr(start, end - start);
    start = end + 1;
    if (word.empty()) continue;
    if (line.size() > indent && line.size() + 1 + word.size() > kWidth) {
      out += line + "\n";
      line = std::string(indent, ' ');
    }
    line += (line.size() > indent ? " " : "") + word;
  }
  return out + line + "\n";
}

struct Example {
  const char* command;
  const char* what;
};
constexpr Example kExamples[] = {
    {"cuda-blockrun --localize -- python3 train.py",
     "which launch caused the first CUDA error: one run, then a second blocking only the suspects"},
    {"cuda-blockrun --breadcrumbs --report r.jsonl -- ./app",
     "name the first launch that did not complete, blocking nothing; the events as JSON lines"},
    {"cuda-blockrun --block 'stencil#13' -- ./app",
     "block only the 13th launch of kernel stencil, so that its error is pinned to it"},
};

constexpr const char* kIntroduction =
    "Runs program with the cuda-blockrun shim preloaded: it names every CUDA kernel launch, makes the "
    "launches the policy selects blocking, and pins the first CUDA error to the launch that caused it.";
constexpr const char* kReportCommand =
    "cuda-blockrun report merges the reports (--report) of every process of a job, given as files or a "
    "directory of them, into one verdict: which process failed first and its culprit, the command that pins "
    "it in that rank, and what became of the others (docs/distributed.md). A file that is not a report of "
    "this tool (no start record: a metrics file beside the reports) is skipped with a line that says so. "
    "--json prints the verdict as one JSON object. --trace OUT.json also writes the job's timeline, a "
    "process per rank, from reports written with --log-launches (docs/trace.md); it never overwrites a "
    "report, nor, without --force, a file that is not such a trace. Exit status: 0 every process found ran "
    "clean, 1 one failed, 3 none failed but one's end is unknown (its report has no end record), 2 nothing "
    "could be read. (A program named `report` is run with `cuda-blockrun -- report`.)";
constexpr const char* kEnvironment =
    "Every option is also an environment variable (--help-all names them), read by the shim in each process "
    "it is loaded into; flags given here override the environment. The configuration: docs/config.md; the "
    "policy language: docs/policy.md.";
constexpr const char* kExitStatus =
    "the program's own; 2 for an invalid option or a program that cannot be found; with --error-exitcode N, "
    "N "
    "when the shim saw a CUDA error and the program exited 0.";

// The whole story of one flag (--help-all): its variable, default and accepted values, its description.
std::string full_entry(const Flag& flag) {
  std::string out = "  " + head(flag) + "\n";
  if (flag.option) {
    const OptionSpec& spec = *flag.option;
    out += wrap(std::string(spec.variable) +
                    " (default: " + (*spec.default_value ? spec.default_value : "empty") +
                    "; accepted: " + spec.accepted + ")",
                6);
  } else if (!flag.accepted.empty()) {
    out += wrap("the wrapper's own (accepted: " + flag.accepted + ")", 6);
  }
  return out + wrap(flag.description, 6);
}

// One line of --help: the flag, and its summary from column 31 (on the next line after a long flag).
std::string summary_entry(const Flag& flag) {
  constexpr size_t kColumn = 30;
  std::string text = "  " + head(flag);
  if (text.size() + 2 > kColumn) return text + "\n" + wrap(flag.summary, kColumn);
  std::string line = wrap(flag.summary, kColumn);
  return text + line.substr(text.size());
}

}  // namespace

std::vector<std::string> known_flags() {
  std::vector<std::string> out;
  for (const Flag& flag : flags()) out.push_back(flag.flag);
  return out;
}

void print_usage(FILE* out, bool all) {
  std::string text =
      "usage: cuda-blockrun [options] [--] program [args...]\n"
      "       cuda-blockrun report " +
      report_flags_usage() + " FILE...|DIR\n\n" + wrap(kIntroduction, 0) + "\nexamples:\n";
  for (const Example& example : kExamples)
    text += "  " + std::string(example.command) + "\n" + wrap(example.what, 6);
  for (OptionGroup group : kGroups) {
    text += std::string("\n") + heading(group) + ":\n";
    for (const Flag& flag : flags()) {
      if (flag.group == group) text += all ? full_entry(flag) : summary_entry(flag);
    }
    if (!all) continue;
    for (const OptionSpec& spec : option_specs()) {  // the variables without a flag
      if (spec.group == group && !*spec.flag) {
        text += "  " + std::string(spec.variable) + " (environment only)\n" +
                wrap(std::string("default: ") + (*spec.default_value ? spec.default_value : "empty") +
                         "; accepted: " + spec.accepted,
                     6) +
                wrap(spec.description, 6);
      }
    }
  }
  text += "\n" + wrap(kReportCommand, 0) + "\nreport options:\n";
  for (const Flag& flag : report_flags()) text += summary_entry(flag);
  text += "\n" + wrap(kEnvironment, 0) + wrap(std::string("exit status: ") + kExitStatus, 0);
  std::fputs(text.c_str(), out);
}

// ---- the man page ----

namespace {

// `text` with its first letter a capital, for the man page's headings and paragraphs.
std::string sentence(std::string text) {
  if (!text.empty()) text[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(text[0])));
  return text;
}

// Text for roff: backslashes and minus signs escaped (so that flags copied from the page are real hyphens),
// and a leading '.' or '\'' kept from reading as a request.
std::string roff(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\\')
      out += "\\e";
    else if (c == '-')
      out += "\\-";
    else
      out += c;
  }
  if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
  return out;
}

// `\fB\-\-block\fR \fIRULES\fR`, `\fB\-\-stack\fR[=0|1]`.
std::string roff_head(const Flag& flag) {
  std::string text = flag.short_flag.empty() ? "" : "\\fB" + roff(flag.short_flag) + "\\fR, ";
  text += "\\fB" + roff(flag.flag) + "\\fR";
  if (flag.value.empty()) return text;
  if (flag.value[0] == '[') return text + roff(flag.value);
  return text + " \\fI" + roff(flag.value) + "\\fR";
}

std::string man_options() {
  std::string out = ".SH OPTIONS\n";
  for (OptionGroup group : kGroups) {
    out += ".SS " + sentence(heading(group)) + "\n";
    for (const Flag& flag : flags()) {
      if (flag.group != group) continue;
      out += ".TP\n" + roff_head(flag) + "\n" + roff(flag.description) + "\n";
      if (flag.option) {
        const OptionSpec& spec = *flag.option;
        out += ".br\n" +
               roff(std::string("Variable: ") + spec.variable +
                    "; default: " + (*spec.default_value ? spec.default_value : "empty") +
                    "; accepted: " + spec.accepted + ".") +
               "\n";
      } else if (!flag.accepted.empty()) {
        out += ".br\n" + roff("Accepted: " + flag.accepted + ".") + "\n";
      }
    }
  }
  return out;
}

// report's flags in the SYNOPSIS: `.RB [ \-\-trace\ \fIOUT.json\fR ]` a line each.
std::string man_report_synopsis() {
  std::string out;
  for (const Flag& flag : report_flags()) {
    if (flag.flag == "--help") continue;
    out += ".RB [ " + roff(flag.flag) + (flag.value.empty() ? "" : "\\ \\fI" + roff(flag.value) + "\\fR") +
           " ]\n";
  }
  return out;
}

// report's flags, a subsection of OPTIONS.
std::string man_report_options() {
  std::string out = ".SS Report (cuda\\-blockrun report)\n";
  for (const Flag& flag : report_flags())
    out += ".TP\n" + roff_head(flag) + "\n" + roff(sentence(flag.summary)) + ".\n";
  return out;
}

std::string man_environment() {
  std::string out =
      ".SH ENVIRONMENT\n" +
      roff(
          "Every option is an environment variable, read by the shim in each process it is loaded into "
          "(LD_PRELOAD=libcuda_blockrun.so works without the wrapper); the wrapper's flags override them. An "
          "invalid value, or an unknown CUDA_BLOCKRUN* variable, stops the program before main with exit "
          "status 2 and a message naming the variable, the value and the accepted forms.") +
      "\n";
  for (const OptionSpec& spec : option_specs()) {
    out += ".TP\n.B " + roff(spec.variable) + "\n";
    std::string text = *spec.flag ? "As " + std::string(spec.flag) + "." : spec.description;
    text += std::string(" Default: ") + (*spec.default_value ? spec.default_value : "empty") +
            "; accepted: " + spec.accepted + ".";
    out += roff(text) + "\n";
  }
  return out;
}

std::string man_examples() {
  std::string out = ".SH EXAMPLES\n";
  for (const Example& example : kExamples)
    out += ".PP\n" + roff(sentence(example.what)) + ":\n.PP\n.RS\n.nf\n" + roff(example.command) +
           "\n.fi\n.RE\n";
  return out;
}

}  // namespace

std::string man_page() {
  std::string out =
      ".TH CUDA\\-BLOCKRUN 1 \"\" \"cuda\\-blockrun " + roff(CUDA_BLOCKRUN_VERSION) +
      "\" \"User Commands\"\n"
      ".nh\n"  // file names and flags are not hyphenated
      ".SH NAME\n"
      "cuda\\-blockrun \\- pin the first CUDA error of a program to the kernel launch that "
      "caused it\n"
      ".SH SYNOPSIS\n"
      ".B cuda\\-blockrun\n"
      ".RI [ options ]\n"
      ".RB [ \\-\\- ]\n"
      ".I program\n"
      ".RI [ args ...]\n"
      ".br\n"
      ".B cuda\\-blockrun report\n" +
      man_report_synopsis() +
      ".IR FILE ...| DIR\n"
      ".SH DESCRIPTION\n" +
      roff(kIntroduction) + "\n.PP\n" + roff(kReportCommand) + "\n" + man_options() + man_report_options() +
      man_environment() + ".SH \"EXIT STATUS\"\n" + roff(sentence(kExitStatus)) + "\n" + man_examples() +
      ".SH \"SEE ALSO\"\n" +
      roff(
          "The documentation, in share/doc/cuda-blockrun/ of the installation (docs/ of the "
          "source): README.md; install.md; config.md (every option); policy.md (the --block "
          "language); localize.md (--localize, breadcrumbs); report.md (the report; its JSON schema "
          "is share/cuda-blockrun/report.schema.json); distributed.md (jobs, cuda-blockrun "
          "report); callsites.md.") +
      "\n";
  return out;
}

// ---- the completions ----

namespace {

// The flags, separated by spaces, that `select` picks.
template <typename Select>
std::string flag_words(Select select) {
  std::string out;
  for (const Flag& flag : flags()) {
    if (!select(flag)) continue;
    if (!flag.short_flag.empty()) out += (out.empty() ? "" : " ") + flag.short_flag;
    out += (out.empty() ? "" : " ") + flag.flag;
  }
  return out;
}

// `a|b|c` for a bash case pattern.
std::string case_pattern(const std::string& words) {
  std::string out = words;
  for (char& c : out) c = c == ' ' ? '|' : c;
  return out;
}

bool takes_value(const Flag& flag) {
  return !flag.value.empty() && flag.value[0] != '[';
}

}  // namespace

std::string bash_completion() {
  std::string report_words;
  for (const Flag& flag : report_flags()) report_words += (report_words.empty() ? "" : " ") + flag.flag;
  std::string valued = case_pattern(flag_words(takes_value));
  std::string paths = case_pattern(flag_words([](const Flag& flag) { return flag.path; }));
  std::string choices;
  for (const Flag& flag : flags()) {
    if (!flag.choices.empty())
      choices += "    " + flag.flag + ") mapfile -t COMPREPLY < <(compgen -W '" + flag.choices +
                 "' -- \"$cur\"); return ;;\n";
  }
  return "# bash completion for cuda-blockrun, made by `cuda-blockrun --help-bash-completion` from its "
         "tables of\n"
         "# flags (src/config/options.def, tools/cuda-blockrun/commands.def): edit those, not this.\n"
         "_cuda_blockrun() {\n"
         "  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]} i program=0\n"
         "  # --flag=value: bash splits it at '='\n"
         "  if [[ $cur == = ]]; then cur=; elif [[ $prev == = ]]; then prev=${COMP_WORDS[COMP_CWORD - 2]}; "
         "fi\n"
         "  if [[ ${COMP_WORDS[1]} == report ]] && ((COMP_CWORD > 1)); then\n"
         "    if [[ $cur == -* ]]; then mapfile -t COMPREPLY < <(compgen -W '" +
         report_words +
         "' -- \"$cur\");\n"
         "    else compopt -o filenames 2>/dev/null; mapfile -t COMPREPLY < <(compgen -f -- \"$cur\"); fi\n"
         "    return\n"
         "  fi\n"
         "  # Where the program begins: after `--`, or at the first word that is neither a flag nor a "
         "value.\n"
         "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
         "    case ${COMP_WORDS[i]} in\n"
         "      --) program=$((i + 1)); break ;;\n"
         "      =) ((i++)) ;;\n"
         "      " +
         valued +
         ") [[ ${COMP_WORDS[i + 1]} == = ]] && ((i++)); ((i++)) ;;\n"
         "      -*) ;;\n"
         "      *) program=$i; break ;;\n"
         "    esac\n"
         "  done\n"
         "  if ((program > 0 && COMP_CWORD >= program)); then\n"
         "    if ((COMP_CWORD == program)); then mapfile -t COMPREPLY < <(compgen -c -- \"$cur\");\n"
         "    elif declare -F _command_offset >/dev/null; then _command_offset \"$program\";\n"
         "    else compopt -o filenames; mapfile -t COMPREPLY < <(compgen -f -- \"$cur\"); fi\n"
         "    return\n"
         "  fi\n"
         "  case $prev in\n"
         "    " +
         paths + ") compopt -o filenames; mapfile -t COMPREPLY < <(compgen -f -- \"$cur\"); return ;;\n" +
         choices + "    " + valued +
         ") return ;;  # free-form values: nothing to offer\n"
         "  esac\n"
         "  if [[ $cur == -* ]]; then\n"
         "    mapfile -t COMPREPLY < <(compgen -W '" +
         flag_words([](const Flag&) { return true; }) +
         "' -- \"$cur\")\n"
         "    return\n"
         "  fi\n"
         "  mapfile -t COMPREPLY < <(compgen -c -- \"$cur\")\n"
         "  ((COMP_CWORD == 1)) && [[ report == \"$cur\"* ]] && COMPREPLY+=(report)\n"
         "}\n"
         "complete -F _cuda_blockrun cuda-blockrun\n";
}

namespace {

// A summary inside a zsh _arguments spec, itself in single quotes: no quote, no bracket left bare.
std::string zsh_text(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '\'')
      out += "'\\''";
    else if (c == '[' || c == ']' || c == '\\')
      out += std::string("\\") + c;
    else
      out += c;
  }
  return out;
}

// One _arguments spec: `'*--block=[summary]:rules: '`, `'--log=[summary]:file:_files'`, `'--stack[summary]'`.
std::string zsh_spec(const Flag& flag) {
  std::string summary = "[" + zsh_text(flag.summary) + "]";
  std::string repeat = flag.flag == "--block" ? "*" : "";
  if (flag.flag == "--help" || flag.flag == "--help-all" || flag.flag == "--version" ||
      flag.flag == "--list-hooks")
    repeat = "(- *)";
  std::string names = flag.short_flag.empty()
                          ? "'" + repeat + flag.flag
                          : "'" + repeat + "'{" + flag.short_flag + "," + flag.flag + "}'";
  if (!takes_value(flag)) return names + summary + "'";
  std::string value = zsh_text(flag.value);
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  std::string action = flag.path ? "_files" : !flag.choices.empty() ? "(" + flag.choices + ")" : " ";
  return names + "=" + summary + ":" + value + ":" + action + "'";
}

}  // namespace

std::string zsh_completion() {
  std::string report_specs;
  for (const Flag& flag : report_flags()) report_specs += "      " + zsh_spec(flag) + " \\\n";
  std::string specs;
  for (const Flag& flag : flags()) specs += "    " + zsh_spec(flag) + " \\\n";
  return "#compdef cuda-blockrun\n"
         "# zsh completion for cuda-blockrun, made by `cuda-blockrun --help-zsh-completion` from its tables "
         "of\n"
         "# flags (src/config/options.def, tools/cuda-blockrun/commands.def): edit those, not this.\n"
         "_cuda-blockrun_program() {\n"
         "  _alternative 'commands:command:_command_names -e' 'report:subcommand:(report)'\n"
         "}\n"
         "_cuda-blockrun() {\n"
         "  if [[ ${words[2]} == report ]] && ((CURRENT > 2)); then\n"
         "    shift words; ((CURRENT--))\n"
         "    _arguments \\\n" +
         report_specs +
         "      '*:report file or directory:_files'\n"
         "    return\n"
         "  fi\n"
         "  _arguments -S \\\n" +
         specs +
         "    '1:program:_cuda-blockrun_program' \\\n"
         "    '*::program arguments:_normal'\n"
         "}\n"
         "_cuda-blockrun \"$@\"\n";
}

// ---- --list-hooks, --version ----

void list_hooks() {
  std::printf("%-32s %-9s %-17s %-11s %s\n", "symbol", "layer", "kind", "stream 0", "reachable by");
  for (const blockrun::HookEntry& hook : blockrun::kHookList) {
    // Every hook is an exported symbol and is answered by the dlsym interposer on its library's handle;
    // driver functions are also handed out by the cuGetProcAddress wrappers.
    bool driver = std::strcmp(hook.layer, "Driver") == 0;
    std::printf("%-32s %-9s %-17s %-11s %s\n", hook.name, hook.layer, hook.kind, hook.stream,
                driver ? "symbol, dlsym, cuGetProcAddress" : "symbol, dlsym");
  }
  std::printf("\n%zu CUDA symbols, and the loader's dlsym.\n", blockrun::kHookCount);
}

namespace {

// The driver this machine would give a CUDA program, asked in this process (never in the program's).
// What `--version` says of the machine's driver: its CUDA version, and for each of the shim's newer entry
// points (src/cuda/driver_features.def) whether the driver has it, what stands in for it, or what its absence
// costs (issue 42), a line each.
struct DriverText {
  std::string version;
  std::string features;
};

DriverText describe_driver() {
  void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!driver) return {"no CUDA driver found (libcuda.so.1 cannot be loaded)", ""};
  using GetVersion = int (*)(int*);
  auto get_version = reinterpret_cast<GetVersion>(dlsym(driver, "cuDriverGetVersion"));
  int version = 0;
  if (!get_version || get_version(&version) != 0) {
    dlclose(driver);
    return {"a libcuda.so.1 without cuDriverGetVersion", ""};
  }
  DriverText text{"driver supports CUDA " + blockrun::cuda_version_text(version), ""};
  for (const blockrun::DriverFeature& feature : blockrun::driver_features()) {
    text.features += "  " + std::string(feature.feature) + ": ";
    if (dlsym(driver, feature.entry_point)) {
      text.features += std::string("yes (") + feature.entry_point + ")\n";
    } else {
      text.features += std::string(*feature.fallback ? "yes, by " : "no") + feature.fallback + " (" +
                       feature.entry_point + " needs CUDA " + blockrun::cuda_version_text(feature.since) +
                       "): " + feature.cost + "\n";
    }
  }
  dlclose(driver);
  return text;
}

}  // namespace

void print_version() {
  DriverText driver = describe_driver();
  std::printf("cuda-blockrun %s (built against CUDA %s; %s)\n%s", CUDA_BLOCKRUN_VERSION,
              CUDA_BLOCKRUN_CUDA_VERSION, driver.version.c_str(), driver.features.c_str());
}

}  // namespace blockrun::cli
// SPDX-License-Identifier: MIT
