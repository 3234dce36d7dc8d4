// The block policy: parsing of CUDA_BLOCKRUN_BLOCK and the per-launch decision.
#include "policy.h"

namespace blockrun {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// Checks that every `[` of a glob has its `]`, so that a typo is reported rather than matching nothing.
bool glob_is_well_formed(std::string_view glob, std::string* error) {
  for (size_t i = 0; i < glob.size(); ++i) {
    if (glob[i] == '\\') {
      ++i;
    } else if (glob[i] == '[') {
      size_t close = glob.find(']', i + 2);
      if (close == std::string_view::npos) {
        *error = "unclosed '[' in '" + std::string(glob) + "'";
        return false;
      }
      i = close;
    }
  }
  return true;
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

}  // namespace

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

std::vector<std::string> split_top_level(std::string_view text, char separator) {
  std::vector<std::string> pieces;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    char c = i < text.size() ? text[i] : separator;
    if (c == '(' || c == '<' || c == '[') ++depth;
    if ((c == ')' || c == '>' || c == ']') && depth > 0) --depth;
    if (c == separator && (depth == 0 || i == text.size())) {
      pieces.emplace_back(trim(text.substr(start, i - start)));
      start = i + 1;
    }
  }
  return pieces;
}

std::optional<Policy> Policy::parse(std::string_view text, std::string* error) {
  Policy policy;
  std::string_view whole = trim(text);
  if (whole == "none" || whole.empty()) return policy;
  if (whole == "all") {
    policy.mode_ = Mode::All;
    return policy;
  }
  for (std::string& glob : split_top_level(whole, ',')) {
    if (glob.empty()) {
      *error = "empty entry in the list";
      return std::nullopt;
    }
    if (glob == "all" || glob == "none") {
      *error = "'" + glob + "' must stand alone, not in a list";
      return std::nullopt;
    }
    if (!glob_is_well_formed(glob, error)) return std::nullopt;
    policy.globs_.push_back(std::move(glob));
  }
  policy.mode_ = Mode::Globs;
  return policy;
}

bool Policy::blocks_kernel(const KernelName& name) const {
  return decide(name.base, name.demangled, name.mangled);
}

bool Policy::blocks_library_call(std::string_view api_name) const {
  return decide(api_name);
}

std::string Policy::describe() const {
  switch (mode_) {
    case Mode::None:
      return "none";
    case Mode::All:
      return "all";
    case Mode::Globs: {
      std::string out;
      for (const std::string& glob : globs_) out += (out.empty() ? "" : ",") + glob;
      return out;
    }
  }
  return "none";
}

}  // namespace blockrun
