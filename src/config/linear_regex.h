// Regular expressions from the user's environment (the policy's regex= terms, CUDA_BLOCKRUN_PROCESS), matched
// in time linear in the subject: the pattern is compiled to a Thompson NFA, which is run over the subject in
// lock step (every state at once), with no backtracking and no recursion. A pattern like (x|x)*y or .*.*.*z
// costs the same as any other of its size, where std::regex took exponential or polynomial time and
// overflowed the stack on long subjects (issue 17, F2), before main(), in every process the shim was
// preloaded into.
//
// Why not RE2, the field's standard for this: Debian's libre2.a is not position-independent (its thread-local
// uses the local-exec model, which a shared object cannot hold), libre2.so would load a second library, and
// its C++ runtime, into every program, and Debian's source package lacks the Unicode tables RE2 is built
// from. The syntax needed here is small: the ECMAScript subset below, which the tests check against
// std::regex on random patterns and subjects (tests/unit/linear_regex_test.cpp, tests/fuzz/policy_fuzz.cpp).
//
// Syntax (ECMAScript, as std::regex reads it, bytes for characters): literals; `.` (any byte but \n and \r);
// classes [abc] [^a-z] with ranges and the escapes below; \d \D \w \W \s \S; \t \n \v \f \r \0 \xHH
// \uHHHH (ASCII) and an escaped punctuation character; groups (...) and (?:...); alternation |; the
// quantifiers * + ? {n} {n,} {n,m} (n, m <= 1000; a trailing ? makes them lazy, which does not change
// whether a subject matches); anchors ^ $ \b \B. Refused with the reason: back-references, lookahead, \cX,
// POSIX classes ([:alpha:]), named groups, and patterns over kMaxPatternBytes or whose repetitions expand to
// over kMaxInstructions states.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace blockrun {

class Regex {
 public:
  static constexpr size_t kMaxPatternBytes = 1024;
  static constexpr size_t kMaxInstructions = 4000;

  // Compiles `pattern`; nullopt, with `problem` saying why, where it is not accepted.
  static std::optional<Regex> compile(std::string_view pattern, std::string* problem);

  // Whether the pattern matches somewhere in `subject` (a search, as std::regex_search). Takes at most
  // size(subject) + 1 steps of at most instructions() states each.
  bool search(std::string_view subject) const;

  size_t instructions() const { return program_.size(); }

  enum class Op : uint8_t {
    Byte,
    Set,
    Split,
    Jump,
    LineStart,
    LineEnd,
    WordBoundary,
    NotWordBoundary,
    Match
  };
  struct Instruction {
    Op op;
    uint8_t byte = 0;  // Byte
    uint32_t x = 0;    // Set: index into sets_; Split and Jump: the target; Split: the first branch
    uint32_t y = 0;    // Split: the second branch
  };
  struct ByteSet {
    uint64_t bits[4] = {0, 0, 0, 0};
    bool has(unsigned char c) const { return (bits[c >> 6] >> (c & 63)) & 1; }
    void add(unsigned char c) { bits[c >> 6] |= uint64_t{1} << (c & 63); }
  };

 private:
  friend class RegexCompiler;
  std::vector<Instruction> program_;
  std::vector<ByteSet> sets_;
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
