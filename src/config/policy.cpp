// The block policy: parsing of CUDA_BLOCKRUN_BLOCK into rules and the per-launch decision.
// Grammar (docs/policy.md):
//   policy := 'none' | rule { (';' | ',') rule }
//   rule   := ['!'] term { ' ' term }          all terms must match; '!' makes it an exclusion
//   term   := GLOB | GLOB '#' RANGE | 'kernel=' GLOB | 'regex=' ECMASCRIPT | 'family=' FAMILY
//           | 'library=' GLOB | '#' RANGE | 'thread#' RANGE | 'every=' N | 'stream=' HANDLE | 'thread=' N
//           | 'after=' DURATION | 'all'
//           | action: 'block' | 'block-device' | 'block-alone' | 'log' | 'return' | 'abort' | 'exit=' STATUS
#include "config/policy.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "config/linear_regex.h"
#include "cuda/names.h"
#include "config/suggest.h"

namespace blockrun {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Matches one bracket expression at pattern[pos] ('[') against c; sets *end past the ']'.
bool match_bracket(std::string_view pattern, size_t pos, char c, size_t* end) {
  size_t i = pos + 1;
  bool negate = i < pattern.size() && (pattern[i] == '!' || pattern[i] == '^');
  if (negate) ++i;
  bool matched = false;
  bool first = true;
  for (; i < pattern.size() && (first || pattern[i] != ']'); ++i, first = false) {
    char low = pattern[i];
    char high = low;
    if (i + 2 < pattern.size() && pattern[i + 1] == '-' && pattern[i + 2] != ']') {
      high = pattern[i + 2];
      i += 2;
    }
    if (low <= c && c <= high) matched = true;
  }
  *end = i + 1;  // past ']' (well-formedness was checked at parse time)
  return matched != negate;
}

// The policy's own words, for "did you mean": the actions, the on-error words, all and none; and the keys.
const std::vector<std::string> kWords = {"block",  "block-device", "block-alone", "log",
                                         "return", "abort",        "all",         "none"};
const std::vector<std::string> kKeys = {
    "kernel=", "regex=", "family=", "library=", "every=", "thread=", "stream=", "after=", "exit="};

struct Piece {
  std::string text;
  size_t offset;  // in the whole policy text
};

// Splits at separators outside (), <>, [] and {}, keeping each piece's offset; trims blanks.
std::vector<Piece> split_with_offsets(std::string_view text, size_t base, std::string_view separators) {
  std::vector<Piece> pieces;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : separators[0];
    if (opens_nesting(c)) ++depth;
    if (closes_nesting(c) && depth > 0) --depth;
    if ((separators.find(c) != std::string_view::npos && depth == 0) || i == text.size()) {
      std::string_view raw = text.substr(start, i - start);
      size_t lead = 0;
      while (lead < raw.size() && std::isspace(static_cast<unsigned char>(raw[lead]))) ++lead;
      pieces.push_back(Piece{std::string(trim(raw)), base + start + lead});
      start = i + 1;
    }
  }
  return pieces;
}

bool parse_number(std::string_view text, uint64_t* out) {
  if (text.empty() || text.size() > 19) return false;
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = value;
  return true;
}

// "N" or "A-B" (inclusive).
bool parse_range(std::string_view text, uint64_t* low, uint64_t* high) {
  size_t dash = text.find('-');
  if (dash == std::string_view::npos) {
    if (!parse_number(text, low)) return false;
    *high = *low;
    return true;
  }
  return parse_number(text.substr(0, dash), low) && parse_number(text.substr(dash + 1), high) &&
         *low <= *high;
}

// "30s", "500ms", "2m", "1h" -> milliseconds.
bool parse_duration(std::string_view text, uint64_t* ms) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  uint64_t value = 0;
  if (!parse_number(text.substr(0, digits), &value)) return false;
  std::string_view unit = text.substr(digits);
  if (unit == "ms")
    *ms = value;
  else if (unit == "s" || unit.empty())
    *ms = value * 1000;
  else if (unit == "m")
    *ms = value * 60000;
  else if (unit == "h")
    *ms = value * 3600000;
  else
    return false;
  return true;
}

bool well_formed_glob(std::string_view glob, std::string* problem) {
  for (size_t i = 0; i < glob.size(); ++i) {
    if (glob[i] == '\\') {
      ++i;
    } else if (glob[i] == '[') {
      size_t close = glob.find(']', i + 2);
      if (close == std::string_view::npos) {
        *problem = "unclosed '[' in '" + std::string(glob) + "'";
        return false;
      }
      i = close;
    }
  }
  return true;
}

bool parse_regex(const std::string& text, std::shared_ptr<const Regex>* out, std::string* problem) {
  std::string detail;
  std::optional<Regex> regex = Regex::compile(text, &detail);
  if (!regex) {
    *problem = "invalid regular expression: " + detail;
    return false;
  }
  *out = std::make_shared<const Regex>(std::move(*regex));
  return true;
}

bool mentions_nccl(std::string_view text) {
  for (size_t i = 0; i + 4 <= text.size(); ++i) {
    if (std::tolower(static_cast<unsigned char>(text[i])) == 'n' &&
        std::tolower(static_cast<unsigned char>(text[i + 1])) == 'c' &&
        std::tolower(static_cast<unsigned char>(text[i + 2])) == 'c' &&
        std::tolower(static_cast<unsigned char>(text[i + 3])) == 'l')
      return true;
  }
  return false;
}

const char* const kFamilies[] = {"runtime", "driver", "cublas", "graph"};  // by LaunchFamily
static_assert(std::size(kFamilies) == static_cast<size_t>(LaunchFamily::Graph) + 1,
              "a name per LaunchFamily");

}  // namespace

struct Term {
  enum class Kind {
    All,
    KernelGlob,
    KernelRegex,
    KernelOrdinal,
    Family,
    Library,
    Sequence,
    ThreadLaunch,
    Every,
    Stream,
    Thread,
    After
  };
  Kind kind = Kind::All;
  std::string glob;
  std::shared_ptr<const Regex> regex;
  uint64_t low = 0, high = 0;
  LaunchFamily family = LaunchFamily::Runtime;
  const void* stream = nullptr;

  bool names_kernel() const {
    return kind == Kind::KernelGlob || kind == Kind::KernelRegex || kind == Kind::KernelOrdinal;
  }
  // Depends on nothing but the kernel's names (All included).
  bool per_kernel() const {
    return kind == Kind::All || kind == Kind::KernelGlob || kind == Kind::KernelRegex;
  }

  bool name_matches(std::string_view name) const {
    if (kind == Kind::KernelRegex) {
      // A search takes time in proportion to the subject (linear_regex.h): regular expressions see the first
      // kRegexSubjectWindow bytes of a name (docs/policy.md).
      return regex->search(name.substr(0, kRegexSubjectWindow));
    }
    return glob_match(glob, name);
  }

  bool matches(const LaunchFacts& facts, bool names_known) const {
    switch (kind) {
      case Kind::All:
        return true;
      case Kind::KernelGlob:
      case Kind::KernelRegex:
      case Kind::KernelOrdinal: {
        bool named = false;
        if (facts.kernel && names_known) {
          named = true;  // the caller's cached name mask says so
        } else if (facts.kernel) {
          named = name_matches(facts.kernel->base) || name_matches(facts.kernel->demangled) ||
                  name_matches(facts.kernel->mangled);
        } else if (facts.library_unit && facts.library_api) {
          named = name_matches(facts.library_api);  // a library call or graph launch, by its API name
        }
        if (!named) return false;
        return kind != Kind::KernelOrdinal || (facts.kernel_ordinal >= low && facts.kernel_ordinal <= high);
      }
      case Kind::Family:
        return facts.family == family;
      case Kind::Library:
        return facts.library_unit && facts.library_api && glob_match(glob, facts.library_api);
      case Kind::Sequence:
        return facts.sequence >= low && facts.sequence <= high;
      case Kind::ThreadLaunch:
        return facts.thread_launch >= low && facts.thread_launch <= high;
      case Kind::Every:
        return low != 0 && facts.sequence % low == 0;
      case Kind::Stream:
        return facts.stream == stream;
      case Kind::Thread:
        return facts.thread == low;
      case Kind::After:
        return facts.elapsed_ms >= low;
    }
    return false;
  }
};

// A rule's terms other than kernel names, as plain bounds: once a cached name mask has settled the
// names, a kernel launch is decided with a handful of compares and no string work.
struct Checks {
  uint64_t sequence_low = 0, sequence_high = UINT64_MAX;
  uint64_t ordinal_low = 0, ordinal_high = UINT64_MAX;
  uint64_t thread_launch_low = 0, thread_launch_high = UINT64_MAX;
  uint64_t every = 0;
  uint64_t after_ms = 0;
  uint64_t thread = 0;  // 0: any
  const void* stream = nullptr;
  bool has_stream = false;
  int family = -1;       // -1: any
  bool library = false;  // a library= term: only library calls as units match, never kernel launches
  bool simple = true;    // false where a kind of term repeats: then the terms themselves are checked

  void add(const Term& term) {
    auto once = [&](bool& seen) {
      if (seen) simple = false;
      seen = true;
    };
    switch (term.kind) {
      case Term::Kind::Sequence:
        once(seen_sequence), sequence_low = term.low, sequence_high = term.high;
        break;
      case Term::Kind::KernelOrdinal:
        once(seen_ordinal), ordinal_low = term.low, ordinal_high = term.high;
        break;
      case Term::Kind::ThreadLaunch:
        once(seen_thread_launch), thread_launch_low = term.low, thread_launch_high = term.high;
        break;
      case Term::Kind::Every:
        once(seen_every), every = term.low;
        break;
      case Term::Kind::After:
        once(seen_after), after_ms = term.low;
        break;
      case Term::Kind::Thread:
        once(seen_thread), thread = term.low;
        break;
      case Term::Kind::Stream:
        once(has_stream), stream = term.stream;
        break;
      case Term::Kind::Family:
        if (family >= 0) simple = false;
        family = static_cast<int>(term.family);
        break;
      case Term::Kind::Library:
        library = true;
        break;
      default:
        break;
    }
  }

  bool match(const LaunchFacts& facts) const {
    return !library && facts.sequence >= sequence_low && facts.sequence <= sequence_high &&
           facts.kernel_ordinal >= ordinal_low && facts.kernel_ordinal <= ordinal_high &&
           facts.thread_launch >= thread_launch_low && facts.thread_launch <= thread_launch_high &&
           (every == 0 || facts.sequence % every == 0) && facts.elapsed_ms >= after_ms &&
           (thread == 0 || facts.thread == thread) && (!has_stream || facts.stream == stream) &&
           (family < 0 || static_cast<int>(facts.family) == family);
  }

 private:
  bool seen_sequence = false, seen_ordinal = false, seen_every = false, seen_after = false,
       seen_thread = false, seen_thread_launch = false;
};

struct Policy::Rule {
  std::string text;
  bool exclude = false;
  std::vector<Term> terms;
  Checks checks;
  Decision decision;  // action and on-error of this rule (rule index set when deciding)
  bool names_nccl = false;

  bool matches(const LaunchFacts& facts, bool names_known) const {
    for (const Term& term : terms) {
      if (!term.matches(facts, names_known)) return false;
    }
    return true;
  }

  bool names_match(const KernelName& name) const {
    LaunchFacts facts;
    facts.kernel = &name;
    for (const Term& term : terms) {
      if (!term.names_kernel()) continue;
      Term name_only = term;
      if (name_only.kind == Term::Kind::KernelOrdinal) name_only.kind = Term::Kind::KernelGlob;
      if (!name_only.matches(facts, false)) return false;
    }
    return true;
  }
};

namespace {

// A term that does not parse: false, with *error saying where and why.
bool term_error(const Piece& piece, const std::string& what, std::string* error) {
  *error = "at " + std::to_string(piece.offset + 1) + " ('" + piece.text + "'): " + what;
  return false;
}

// What a rule does (block, block-device, log) and what then happens on an error (return, abort, exit=N).
// *is_action says whether the piece is one of them; false only for a bad exit status.
bool parse_action(const Piece& piece, Decision* decision, bool* is_action, std::string* error) {
  const std::string& text = piece.text;
  *is_action = true;
  if (text == "block") return decision->action = Action::Block, true;
  if (text == "block-device") return decision->action = Action::BlockDevice, true;
  if (text == "block-alone") return decision->action = Action::BlockAlone, true;
  if (text == "log") return decision->action = Action::Log, true;
  if (text == "return") return decision->on_error = OnError::Return, true;
  if (text == "abort") return decision->on_error = OnError::Abort, true;
  if (text.rfind("exit=", 0) == 0) {
    uint64_t status = 0;
    if (!parse_number(text.substr(5), &status) || status > 255)
      return term_error(piece, "exit status must be 0-255", error);
    decision->on_error = OnError::Exit;
    decision->exit_status = static_cast<int>(status);
    return true;
  }
  *is_action = false;
  return true;
}

// A `key=value` term (kernel=, regex=, family=, library=, every=, thread=, stream=, after=); any other key
// is an error.
bool parse_keyed_term(const Piece& piece, const std::string& key, const std::string& value, Term* term,
                      std::string* error) {
  auto fail = [&](const std::string& what) { return term_error(piece, what, error); };
  std::string problem;
  if (key == "kernel") {
    if (value.empty()) return fail("expected a glob after 'kernel='");
    if (!well_formed_glob(value, &problem)) return fail(problem);
    term->kind = Term::Kind::KernelGlob;
    term->glob = value;
  } else if (key == "regex") {
    if (!parse_regex(value, &term->regex, &problem)) return fail(problem);
    term->kind = Term::Kind::KernelRegex;
    term->glob = value;  // kept as text: whether the rule names NCCL
  } else if (key == "family") {
    std::optional<LaunchFamily> family = launch_family_named(value);
    if (!family) return fail("family must be runtime, driver, cublas or graph");
    term->family = *family;
    term->kind = Term::Kind::Family;
  } else if (key == "library") {
    if (value.empty()) return fail("expected a glob after 'library='");
    if (!well_formed_glob(value, &problem)) return fail(problem);
    term->kind = Term::Kind::Library;
    term->glob = value;
  } else if (key == "every") {
    if (!parse_number(value, &term->low) || term->low == 0)
      return fail("expected a positive number after 'every='");
    term->kind = Term::Kind::Every;
  } else if (key == "thread") {
    if (!parse_number(value, &term->low)) return fail("expected a thread number after 'thread='");
    term->kind = Term::Kind::Thread;
  } else if (key == "stream") {
    char* end = nullptr;
    unsigned long long handle = std::strtoull(value.c_str(), &end, 0);
    if (value.empty() || (end && *end)) return fail("expected a stream handle (0x...) after 'stream='");
    term->kind = Term::Kind::Stream;
    term->stream = reinterpret_cast<const void*>(static_cast<uintptr_t>(handle));
  } else if (key == "after") {
    if (!parse_duration(value, &term->low))
      return fail("expected a duration (500ms, 30s, 2m, 1h) after 'after='");
    term->kind = Term::Kind::After;
  } else {
    return fail("unknown term '" + key + "='" + did_you_mean(key + "=", kKeys) +
                "; terms are kernel=, regex=, family=, library=, every=, thread=, "
                "stream=, after=, #N, NAME#N, thread#N");
  }
  return true;
}

// A bare word one slip away from one of the policy's own words (`abortt`, `blok`, `al`) is refused rather
// than read as a kernel name that would never match: the rule would run the program without doing what was
// asked. A kernel that is really called so is written kernel=NAME.
bool check_not_a_misspelled_word(const Piece& piece, std::string* error) {
  const std::string& text = piece.text;
  if (text.find_first_of("*?[(<#:") != std::string::npos) return true;
  std::optional<std::string> meant = closest_word(text, kWords);
  if (!meant) return true;
  return term_error(
      piece,
      "not a word of the policy (did you mean '" + *meant +
          "'?); actions: block, block-device, block-alone, log; on error: return, abort, exit=N; for a "
          "kernel of that name write kernel=" +
          text,
      error);
}

// A kernel name: GLOB, or GLOB#RANGE for launches of that kernel by their number. The range follows the last
// '#' outside brackets and braces (`{lambda()#1}` is part of a name).
bool parse_name_term(const Piece& piece, Term* term, std::string* error) {
  const std::string& text = piece.text;
  size_t hash = std::string::npos;
  int depth = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (opens_nesting(c)) ++depth;
    if (closes_nesting(c) && depth > 0) --depth;
    if (c == '#' && depth == 0) hash = i;
  }
  std::string glob = text;
  if (hash != std::string::npos && hash > 0) {
    glob = text.substr(0, hash);
    if (!parse_range(text.substr(hash + 1), &term->low, &term->high))
      return term_error(
          piece, "expected the kernel's launch number or range after '#' (stencil#13 or stencil#10-20)",
          error);
    term->kind = Term::Kind::KernelOrdinal;
  } else {
    term->kind = Term::Kind::KernelGlob;
  }
  std::string problem;
  if (!well_formed_glob(glob, &problem)) return term_error(piece, problem, error);
  term->glob = glob;
  return true;
}

// Parses one term (or action) of a rule; returns false with *error set. *bare_name says whether it is a
// kernel name written without kernel=.
bool parse_term(const Piece& piece, Term* term, Decision* decision, bool* is_action, bool* bare_name,
                std::string* error) {
  const bool parsed = parse_action(piece, decision, is_action, error);
  if (!parsed || *is_action) return parsed;
  const std::string& text = piece.text;
  if (text == "all") {
    term->kind = Term::Kind::All;
    return true;
  }
  const size_t equals = text.find('=');
  const std::string key = equals == std::string::npos ? "" : text.substr(0, equals);
  // Before the '=', a glob's or a template's characters make a kernel name (`kern<N=4>`), not a key.
  if (!key.empty() && key.find_first_of("*?[(<") == std::string::npos)
    return parse_keyed_term(piece, key, text.substr(equals + 1), term, error);
  if (text[0] == '#') {
    if (!parse_range(text.substr(1), &term->low, &term->high))
      return term_error(piece, "expected a launch number or range after '#' (#1000 or #1000-2000)", error);
    term->kind = Term::Kind::Sequence;
    return true;
  }
  // The N-th launch of whichever host thread makes it (a kernel of that name is written kernel=thread).
  static constexpr std::string_view kThreadLaunch = "thread#";
  if (text.rfind(kThreadLaunch, 0) == 0) {
    if (!parse_range(text.substr(kThreadLaunch.size()), &term->low, &term->high))
      return term_error(piece,
                        "expected the thread's launch number or range after 'thread#' (thread#31 or "
                        "thread#30-40)",
                        error);
    term->kind = Term::Kind::ThreadLaunch;
    return true;
  }
  *bare_name = true;
  return check_not_a_misspelled_word(piece, error) && parse_name_term(piece, term, error);
}

// A rule's bare kernel name, kept in *named: a second one is an error, since `stencil fill` would select the
// launches named both, which is none; two kernels are two rules.
bool check_one_name(const Piece& piece, const Piece** named, std::string* error) {
  if (*named) {
    *error = "at " + std::to_string(piece.offset + 1) + " ('" + piece.text +
             "'): a rule names one kernel, and '" + (*named)->text +
             "' is named already; to select both, write two rules: '" + (*named)->text + "; " + piece.text +
             "'";
    return false;
  }
  *named = &piece;
  return true;
}

}  // namespace

Policy::Policy() = default;
Policy::~Policy() = default;
Policy::Policy(const Policy&) = default;
Policy& Policy::operator=(const Policy&) = default;

bool glob_match(std::string_view pattern, std::string_view text) {
  // Iterative matcher with one backtrack point for the last '*': linear in practice, no recursion,
  // so a megabyte-long templated kernel name cannot exhaust the stack.
  size_t p = 0, t = 0;
  size_t star_p = std::string_view::npos, star_t = 0;
  while (t < text.size()) {
    if (p < pattern.size()) {
      char pc = pattern[p];
      if (pc == '*') {
        star_p = p++;
        star_t = t;
        continue;
      }
      if (pc == '?') {
        ++p, ++t;
        continue;
      }
      if (pc == '[' && pattern.find(']', p + 2) != std::string_view::npos) {
        size_t end;
        if (match_bracket(pattern, p, text[t], &end)) {
          p = end, ++t;
          continue;
        }
      } else {
        if (pc == '\\' && p + 1 < pattern.size()) pc = pattern[++p];
        if (pc == text[t]) {
          ++p, ++t;
          continue;
        }
      }
    }
    if (star_p == std::string_view::npos) return false;
    p = star_p + 1;
    t = ++star_t;
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::vector<std::string> split_top_level(std::string_view text, std::string_view separators) {
  std::vector<std::string> out;
  for (Piece& piece : split_with_offsets(text, 0, separators)) out.push_back(std::move(piece.text));
  return out;
}

std::string pin_rule(const std::vector<PinTarget>& targets, bool lost) {
  if (lost) return "all";
  std::vector<std::string> terms;
  for (const PinTarget& target : targets) {
    if (target.name.empty()) continue;
    std::string term = target.thread_launch ? target.name + " thread#" + std::to_string(target.thread_launch)
                       : target.ordinal     ? target.name + "#" + std::to_string(target.ordinal)
                                            : target.name;
    if (std::find(terms.begin(), terms.end(), term) == terms.end()) terms.push_back(term);
  }
  std::string rule;
  for (const std::string& term : terms) rule += (rule.empty() ? "" : ",") + term;
  return rule;
}

const char* launch_family_name(LaunchFamily family) {
  return kFamilies[static_cast<size_t>(family)];
}

std::optional<LaunchFamily> launch_family_named(std::string_view name) {
  for (size_t i = 0; i < std::size(kFamilies); ++i) {
    if (name == kFamilies[i]) return static_cast<LaunchFamily>(i);
  }
  return std::nullopt;
}

bool is_nccl_kernel(const KernelName& name) {
  return name.base.rfind("nccl", 0) == 0 || name.mangled.find("nccl") != std::string::npos;
}

const char* nccl_collective(const KernelName& name) {
  std::string_view base = name.base;
  for (std::string_view prefix : {"ncclDevKernel_", "ncclKernel_", "nccl"}) {
    if (base.substr(0, prefix.size()) == prefix) {
      base.remove_prefix(prefix.size());
      break;
    }
  }
  if (base.size() == name.base.size()) return nullptr;  // not NCCL's
  // Longest first: "ReduceScatter" and "Reduce", "SendRecv" and "Send".
  static const char* const kCollectives[] = {"ReduceScatter", "AllReduce", "AllGather",
                                             "AllToAll",      "Broadcast", "SendRecv",
                                             "Reduce",        "Send",      "Recv"};
  for (const char* collective : kCollectives) {
    std::string_view known = collective;
    if (base.substr(0, known.size()) == known &&
        (base.size() == known.size() || base[known.size()] == '_' ||
         std::isupper(static_cast<unsigned char>(base[known.size()]))))
      return collective;
  }
  return nullptr;
}

std::optional<Policy> Policy::parse(std::string_view text, std::string* error) {
  Policy policy;
  std::string_view whole = trim(text);
  if (whole == "none" || whole.empty()) return policy;
  size_t base = static_cast<size_t>(whole.data() - text.data());
  for (const Piece& rule_piece : split_with_offsets(whole, base, ";,")) {
    if (rule_piece.text.empty()) {
      *error = "at " + std::to_string(rule_piece.offset + 1) + ": empty rule";
      return std::nullopt;
    }
    auto rule = std::make_shared<Rule>();
    rule->text = rule_piece.text;
    std::string_view body = rule_piece.text;
    size_t offset = rule_piece.offset;
    if (body[0] == '!') {
      rule->exclude = true;
      body.remove_prefix(1);
      ++offset;
    }
    if (body == "none") {
      *error = "at " + std::to_string(rule_piece.offset + 1) + ": 'none' must stand alone";
      return std::nullopt;
    }
    rule->decision.action = rule->exclude ? Action::Run : Action::Block;
    const Piece* named = nullptr;  // the rule's bare kernel name
    for (const Piece& term_piece : split_with_offsets(body, offset, " \t")) {
      if (term_piece.text.empty()) continue;
      Term term;
      bool is_action = false, bare_name = false;
      if (!parse_term(term_piece, &term, &rule->decision, &is_action, &bare_name, error)) return std::nullopt;
      if (bare_name && !check_one_name(term_piece, &named, error)) return std::nullopt;
      if (is_action) {
        if (rule->exclude) {
          *error = "at " + std::to_string(term_piece.offset + 1) + " ('" + term_piece.text +
                   "'): an exclusion ('!') takes no action";
          return std::nullopt;
        }
        continue;
      }
      if (term.names_kernel() && !rule->exclude && mentions_nccl(term.glob)) rule->names_nccl = true;
      if (term.names_kernel() || term.kind == Term::Kind::Library) rule->decision.named = true;
      rule->checks.add(term);
      if (term.kind == Term::Kind::Thread && term.low == 0)
        rule->checks.simple = false;  // thread=0 matches none
      policy.per_kernel_ = policy.per_kernel_ && term.per_kernel();
      policy.uses_time_ = policy.uses_time_ || term.kind == Term::Kind::After;
      rule->terms.push_back(std::move(term));
    }
    if (rule->terms.empty()) {
      *error = "at " + std::to_string(rule_piece.offset + 1) + " ('" + rule_piece.text +
               "'): a rule needs something to match (a kernel name, #N, family=, ... or all)";
      return std::nullopt;
    }
    policy.names_nccl_ = policy.names_nccl_ || rule->names_nccl;
    policy.blocks_alone_ = policy.blocks_alone_ || rule->decision.action == Action::BlockAlone;
    policy.rules_.push_back(std::move(rule));
  }
  return policy;
}

uint64_t Policy::name_mask(const KernelName& name) const {
  if (rules_.size() > 64) return ~uint64_t{0};
  uint64_t mask = 0;
  for (size_t index = 0; index < rules_.size(); ++index) {
    if (rules_[index]->names_match(name)) mask |= uint64_t{1} << index;
  }
  return mask;
}

Decision Policy::decide(const LaunchFacts& facts) const {
  bool masked = facts.kernel && facts.name_mask && rules_.size() <= 64;
  for (size_t index = 0; index < rules_.size(); ++index) {
    const Rule& rule = *rules_[index];
    if (masked && !(*facts.name_mask & (uint64_t{1} << index))) continue;
    if (!(masked && rule.checks.simple ? rule.checks.match(facts) : rule.matches(facts, masked))) continue;
    // Blocking a collective can deadlock the job: NCCL kernels are left alone unless a rule names them.
    bool nccl = facts.nccl >= 0 ? facts.nccl == 1 : facts.kernel && is_nccl_kernel(*facts.kernel);
    if (!rule.exclude && !rule.names_nccl && facts.kernel && nccl) return Decision{};
    Decision decision = rule.decision;
    decision.rule = static_cast<int>(index);
    return decision;
  }
  return Decision{};
}

bool Policy::blocks_kernel(const KernelName& name) const {
  LaunchFacts facts;
  facts.kernel = &name;
  return decide(facts).blocks();
}

std::vector<std::string> Policy::describe_rules() const {
  std::vector<std::string> out;
  for (const auto& rule : rules_) out.push_back(rule->text);
  return out;
}

std::string Policy::describe() const {
  if (rules_.empty()) return "none";
  std::string out;
  for (const auto& rule : rules_) out += (out.empty() ? "" : "; ") + rule->text;
  return out;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
