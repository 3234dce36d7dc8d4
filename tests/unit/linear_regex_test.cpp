// The linear-time regular expressions (src/config/linear_regex.h): what they match, checked against
// std::regex on random patterns and subjects; what they refuse, with the reason; and the patterns std::regex
// took exponential or polynomial time on, or overflowed the stack with, on subjects far longer than any
// window.
#include "config/linear_regex.h"
#include "../sanitized_build.h"

#include <gtest/gtest.h>

#include <random>
#include <regex>
#include <string>

namespace blockrun {
namespace {

// The sanitizer builds run std::regex and the search ten times slower: fewer rounds, shorter subjects.
constexpr int kRandomPatterns = testing::kSanitizedBuild ? 2000 : 20000;
constexpr size_t kLongSubject = testing::kSanitizedBuild ? 20000 : 100000;

bool search(const std::string& pattern, const std::string& subject) {
  std::string problem;
  std::optional<Regex> regex = Regex::compile(pattern, &problem);
  EXPECT_TRUE(regex) << pattern << ": " << problem;
  return regex && regex->search(subject);
}

std::string refusal(const std::string& pattern) {
  std::string problem;
  std::optional<Regex> regex = Regex::compile(pattern, &problem);
  return regex ? "(accepted)" : problem;
}

TEST(Regex, MatchesAsECMAScriptDoes) {
  EXPECT_TRUE(search("^ampere_.*gemm", "ampere_sgemm_128x64_nn"));
  EXPECT_FALSE(search("^ampere_.*gemm", "sm90_ampere_gemm"));
  EXPECT_TRUE(search("k_[0-9]+_gemm", "void k_000123_gemm_128x64x32(float*)"));
  EXPECT_TRUE(search("stencil\\(float\\*", "stencil(float*, int)"));
  EXPECT_TRUE(search("^(fill|scale)$", "scale"));
  EXPECT_FALSE(search("^(fill|scale)$", "scaled"));
  EXPECT_TRUE(search("a{2,3}", "baab"));
  EXPECT_FALSE(search("^a{2,3}$", "aaaa"));
  EXPECT_TRUE(search("\\bgemm\\b", "cutlass gemm kernel"));
  EXPECT_FALSE(search("\\bgemm\\b", "sgemm_kernel"));
  EXPECT_TRUE(search("[^\\d\\s]", "12 a"));
  EXPECT_FALSE(search(".", "\n\r"));
  EXPECT_TRUE(search("", ""));
  EXPECT_TRUE(search("(?:ab)+c", "xababc"));
  EXPECT_TRUE(search("\\x41\\u0042", "AB"));
  EXPECT_TRUE(search("[]|x", "x"));  // [] matches nothing, [^] any byte
  EXPECT_TRUE(search("[^]", "\n"));
  EXPECT_TRUE(search("a**", "b"));  // repeated repetitions, as std::regex reads them
  EXPECT_TRUE(search("t\xc3\xa9", "caf\xc3\xa9 t\xc3\xa9"));  // UTF-8 bytes as they are
}

TEST(Regex, RefusesWithTheReason) {
  EXPECT_EQ(refusal("(\\w)\\1"),
            "back-references (\\1) are not supported: they cannot be matched in linear time (at offset 4)");
  EXPECT_EQ(refusal("a{1,99999999999}"), "repetition counts are limited to 1000 (at offset 4)");
  EXPECT_EQ(refusal("a(?=b)"), "lookahead (?= (?! is not supported (at offset 2)");
  EXPECT_EQ(refusal("[[:alpha:]]"),
            "POSIX classes like [:alpha:] are not supported: use \\w, \\d, \\s or a range (at offset 1)");
  EXPECT_EQ(refusal("\\q"), "unknown escape \\q (at offset 0)");
  EXPECT_EQ(refusal("(a"), "unmatched '(' (at offset 2)");
  EXPECT_EQ(refusal("a)"), "unmatched ')' (at offset 1)");
  EXPECT_EQ(refusal("[a"), "unterminated character class: a [ without its ] (at offset 2)");
  EXPECT_EQ(refusal("*a"), "nothing to repeat before '*' (at offset 0)");
  EXPECT_EQ(refusal("a{3,2}"), "a repetition {n,m} needs n <= m (at offset 6)");
  EXPECT_EQ(refusal("[z-a]"), "a range in a character class is out of order (at offset 4)");
  EXPECT_EQ(refusal("(a{1000}){1000}"),
            "the pattern is too large once its repetitions are written out (over 4000 states)");
  EXPECT_EQ(refusal(std::string(1025, 'a')), "regular expressions are limited to 1024 bytes");
  EXPECT_EQ(refusal(std::string(65, '(') + std::string(65, ')')),
            "groups nest at most 64 deep (at offset 65)");
}

// Issue 17, F2: each of these took seconds to minutes with std::regex on subjects of a few hundred
// characters, or overflowed the stack on 30 KB; here each takes one pass over a subject far longer than the
// shim's window (kRegexSubjectWindow), whatever it is.
TEST(Regex, PatternsThatBacktrackTakeOnePass) {
  std::string xs(kLongSubject, 'x');
  for (const char* pattern :
       {"(x|x)*y", ".*.*.*z", ".*z", "a*z", "(a|b)*z", "(a|aa)*c", "(a*)*b", "((x+)+)+y"}) {
    EXPECT_FALSE(search(pattern, xs)) << pattern;
    EXPECT_TRUE(search(pattern, xs + "yzbc")) << pattern;
  }
  std::string options;
  for (int i = 1; i <= 2000; ++i) options += "--opt" + std::to_string(10000 + i).substr(1) + "=value ";
  EXPECT_TRUE(search("true .*--opt0001", "/bin/true " + options));
}

// Random patterns of the supported syntax against random subjects: the same answer as std::regex wherever
// std::regex accepts the pattern (it accepts \cX and \0 followed by digits, which are refused here). At most
// two quantifiers a pattern and subjects of at most 8 bytes: std::regex backtracks.
TEST(Regex, AgreesWithStdRegexOnRandomPatterns) {
  const std::vector<std::string> tokens = {"a",     "b",   "_",     ".",      "*",      "+",   "?",    "|",
                                           "(",     ")",   "(?:",   "[ab]",   "[^a]",   "^",   "$",    "\\b",
                                           "\\B",   "\\d", "\\w",   "\\s",    "{1,2}",  "{2}", "{0,}", "-",
                                           "[a-c]", "\\.", "*?",    "]",      "}",      "[]",  "[^]",  "\\n",
                                           " ",     "1",   "\\x41", "[\\d-]", "[a\\]]", "\\-", "[-a]", "[a-]",
                                           "\\0",   "\\t", "\\S",   "\\W",    "\\D",    "A",   "(a|)", "()",
                                           "[\\b]", "\\/", "[.]",   "\\u0041"};
  const std::string alphabet = std::string("ab_ 1-\n.A\x01\b\t]");
  std::mt19937 random(17);
  int compared = 0, accepted = 0, both_accept = 0;
  for (int round = 0; round < kRandomPatterns; ++round) {
    std::string pattern;
    int quantifiers = 0;
    for (int length = 1 + random() % 7; length > 0; --length) {
      const std::string& token = tokens[random() % tokens.size()];
      bool quantifier = token == "*" || token == "+" || token == "?" || token[0] == '{' || token == "*?";
      if (quantifier && ++quantifiers > 2) continue;
      pattern += token;
    }
    std::string problem;
    std::optional<Regex> ours = Regex::compile(pattern, &problem);
    std::regex theirs;
    bool theirs_accepts = true;
    try {
      theirs = std::regex(pattern, std::regex::ECMAScript);
    } catch (const std::regex_error&) {
      theirs_accepts = false;
    }
    accepted += ours.has_value();
    if (ours && !theirs_accepts) ADD_FAILURE() << "accepted, std::regex refuses: " << pattern;
    if (!ours || !theirs_accepts) continue;
    ++both_accept;
    for (int subject_round = 0; subject_round < 8; ++subject_round) {
      std::string subject;
      for (int length = random() % 9; length > 0; --length) subject += alphabet[random() % alphabet.size()];
      ++compared;
      ASSERT_EQ(ours->search(subject), std::regex_search(subject, theirs))
          << "pattern '" << pattern << "', subject '" << subject << "'";
    }
  }
  EXPECT_GT(both_accept, kRandomPatterns / 2);  // the generator writes mostly patterns both accept
  EXPECT_GT(compared, kRandomPatterns * 4);
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
