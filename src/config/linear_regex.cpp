// Regular expressions in linear time (see linear_regex.h): a parser to a small tree, a compiler of the tree
// to a Thompson NFA, and the lock-step search.
#include "config/linear_regex.h"

#include <cctype>
#include <utility>

namespace blockrun {

namespace {

using ByteSet = Regex::ByteSet;

struct Node {
  enum class Kind { Empty, Byte, Set, Concat, Alternate, Repeat, Assertion };
  Kind kind = Kind::Empty;
  Regex::Op assertion = Regex::Op::Match;  // Assertion: LineStart, LineEnd, WordBoundary or NotWordBoundary
  unsigned char byte = 0;
  ByteSet set;
  int min = 0, max = 0;  // Repeat: max -1 for no bound
  std::vector<Node> children;
};

constexpr int kMaxNesting = 64;
constexpr int kMaxRepeat = 1000;

ByteSet range_set(unsigned char low, unsigned char high) {
  ByteSet set;
  for (int c = low; c <= high; ++c) set.add(static_cast<unsigned char>(c));
  return set;
}

ByteSet complement(const ByteSet& set) {
  ByteSet out;
  for (int i = 0; i < 4; ++i) out.bits[i] = ~set.bits[i];
  return out;
}

void add_all(ByteSet* to, const ByteSet& from) {
  for (int i = 0; i < 4; ++i) to->bits[i] |= from.bits[i];
}

bool is_word(unsigned char c) {
  return std::isalnum(c) || c == '_';
}

ByteSet class_escape(char letter) {
  ByteSet set;
  switch (std::tolower(static_cast<unsigned char>(letter))) {
    case 'd':
      set = range_set('0', '9');
      break;
    case 'w':
      for (int c = 0; c < 256; ++c)
        if (is_word(static_cast<unsigned char>(c))) set.add(static_cast<unsigned char>(c));
      break;
    case 's':
      for (unsigned char c : {' ', '\t', '\n', '\v', '\f', '\r'}) set.add(c);
      break;
  }
  return std::isupper(static_cast<unsigned char>(letter)) ? complement(set) : set;
}

bool is_class_escape(char c) {
  return c == 'd' || c == 'D' || c == 'w' || c == 'W' || c == 's' || c == 'S';
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

class Parser {
 public:
  Parser(std::string_view pattern, std::string* problem) : text_(pattern), problem_(problem) {}

  std::optional<Node> parse() {
    Node node = disjunction();
    if (failed_) return std::nullopt;
    if (at_ < text_.size()) {
      fail("unmatched ')'");
      return std::nullopt;
    }
    return node;
  }

 private:
  bool more() const { return at_ < text_.size(); }
  char peek(size_t ahead = 0) const { return at_ + ahead < text_.size() ? text_[at_ + ahead] : '\0'; }

  Node fail(std::string message) {
    if (!failed_) {
      failed_ = true;
      *problem_ = std::move(message) + " (at offset " + std::to_string(at_) + ")";
    }
    return Node{};
  }

  Node disjunction() {
    Node first = alternative();
    if (peek() != '|' || !more()) return first;
    Node node;
    node.kind = Node::Kind::Alternate;
    node.children.push_back(std::move(first));
    while (!failed_ && more() && peek() == '|') {
      ++at_;
      node.children.push_back(alternative());
    }
    return node;
  }

  Node alternative() {
    Node node;
    node.kind = Node::Kind::Concat;
    while (!failed_ && more() && peek() != '|' && peek() != ')') node.children.push_back(term());
    return node;
  }

  Node term() {
    char c = peek();
    if (c == '^' || c == '$' || (c == '\\' && (peek(1) == 'b' || peek(1) == 'B'))) {
      Node node;
      node.kind = Node::Kind::Assertion;
      node.assertion = c == '^'         ? Regex::Op::LineStart
                       : c == '$'       ? Regex::Op::LineEnd
                       : peek(1) == 'b' ? Regex::Op::WordBoundary
                                        : Regex::Op::NotWordBoundary;
      at_ += c == '\\' ? 2 : 1;
      if (starts_quantifier()) return fail("an anchor (^, $, \\b, \\B) cannot be repeated");
      return node;
    }
    Node node = atom();
    // a** and a{2}+ repeat the repetition, as std::regex reads them (ECMAScript itself refuses them).
    while (!failed_ && starts_quantifier()) {
      Node repeat;
      repeat.kind = Node::Kind::Repeat;
      if (!quantifier(&repeat.min, &repeat.max)) return Node{};
      if (peek() == '?') ++at_;  // lazy: the same subjects match
      repeat.children.push_back(std::move(node));
      node = std::move(repeat);
    }
    return node;
  }

  bool starts_quantifier() const { return peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{'; }

  // * + ? {n} {n,} {n,m}
  bool quantifier(int* min, int* max) {
    char c = text_[at_++];
    if (c == '*') *min = 0, *max = -1;
    if (c == '+') *min = 1, *max = -1;
    if (c == '?') *min = 0, *max = 1;
    if (c != '{') return true;
    bool too_large = false;
    auto number = [&](int* out) {
      size_t start = at_;
      long value = 0;
      while (more() && std::isdigit(static_cast<unsigned char>(peek()))) {
        if (value <= kMaxRepeat) value = value * 10 + (peek() - '0');
        ++at_;
      }
      if (at_ == start) return false;
      if (value > kMaxRepeat && !too_large) {
        too_large = true;
        size_t end = at_;
        at_ = start;
        fail("repetition counts are limited to " + std::to_string(kMaxRepeat));
        at_ = end;
      }
      *out = static_cast<int>(value);
      return true;
    };
    if (!number(min)) {
      fail("a { must begin a repetition {n}, {n,} or {n,m} (write \\{ for the character)");
      return false;
    }
    *max = *min;
    if (peek() == ',') {
      ++at_;
      if (peek() == '}') {
        *max = -1;
      } else if (!number(max)) {
        fail("a repetition {n,m} needs a number after the comma");
        return false;
      }
    }
    if (peek() != '}') {
      fail("a repetition {n,m} must end with }");
      return false;
    }
    ++at_;
    if (too_large) return false;
    if (*max != -1 && *max < *min) {
      fail("a repetition {n,m} needs n <= m");
      return false;
    }
    return true;
  }

  Node atom() {
    char c = text_[at_];
    switch (c) {
      case '(':
        return group();
      case '[':
        ++at_;
        return byte_class();
      case '.': {
        ++at_;
        Node node;
        node.kind = Node::Kind::Set;
        node.set = complement([] {
          ByteSet s;
          s.add('\n');
          s.add('\r');
          return s;
        }());
        return node;
      }
      case '\\':
        return escape();
      case '*':
      case '+':
      case '?':
        return fail(std::string("nothing to repeat before '") + c + "'");
      case '{':
        return fail("a { must follow something to repeat (write \\{ for the character)");
      default: {
        ++at_;
        Node node;
        node.kind = Node::Kind::Byte;
        node.byte = static_cast<unsigned char>(c);
        return node;
      }
    }
  }

  Node group() {
    ++at_;  // (
    if (peek() == '?') {
      if (peek(1) == '=' || peek(1) == '!') return fail("lookahead (?= (?! is not supported");
      if (peek(1) == '<') return fail("named groups and lookbehind (?< are not supported");
      if (peek(1) != ':') return fail("unknown group (? : only (?:...) is supported");
      at_ += 2;
    }
    if (++depth_ > kMaxNesting) return fail("groups nest at most " + std::to_string(kMaxNesting) + " deep");
    Node node = disjunction();
    --depth_;
    if (failed_) return Node{};
    if (peek() != ')' || !more()) return fail("unmatched '('");
    ++at_;
    return node;
  }

  // One escaped character (after the backslash) as a byte, or false with the problem set; `in_class` for
  // the meaning of \b (backspace there).
  bool escaped_byte(bool in_class, unsigned char* out) {
    if (!more()) {
      fail("a \\ at the end of the pattern");
      return false;
    }
    const char c = text_[at_++];
    if (c == 'x' || c == 'u') return hex_escape(c, out);
    if (control_escape(c, in_class, out)) return true;
    if (!std::isalnum(static_cast<unsigned char>(c))) {
      *out = static_cast<unsigned char>(c);  // an escaped punctuation character, a blank, a byte >= 0x80
      return true;
    }
    return refuse_escape(c);
  }

  // ECMAScript's control escapes \t \n \v \f \r, \b (a backspace) in a class, and \0 when no digit follows.
  bool control_escape(char c, bool in_class, unsigned char* out) const {
    static constexpr char kLetters[] = {'t', 'n', 'v', 'f', 'r'};
    static constexpr char kBytes[] = {'\t', '\n', '\v', '\f', '\r'};
    for (size_t i = 0; i < sizeof kLetters; ++i) {
      if (c == kLetters[i]) {
        *out = static_cast<unsigned char>(kBytes[i]);
        return true;
      }
    }
    if (c == 'b' && in_class) {
      *out = '\b';
      return true;
    }
    if (c == '0' && !std::isdigit(static_cast<unsigned char>(peek()))) {
      *out = '\0';
      return true;
    }
    return false;
  }

  // \xHH, or \uHHHH for an ASCII character.
  bool hex_escape(char c, unsigned char* out) {
    size_t digits = c == 'x' ? 2 : 4;
    int value = 0;
    for (size_t i = 0; i < digits; ++i) {
      int digit = hex_value(peek());
      if (digit < 0) {
        fail(std::string("\\") + c + " needs " + std::to_string(digits) + " hexadecimal digits");
        return false;
      }
      value = value * 16 + digit;
      ++at_;
    }
    if (value > 0xff || (c == 'u' && value > 0x7f)) {
      fail("\\u escapes are limited to ASCII: write the character itself");
      return false;
    }
    *out = static_cast<unsigned char>(value);
    return true;
  }

  // A letter or digit escape that is not a byte: false, with the reason, at the offset of the backslash.
  bool refuse_escape(char c) {
    at_ -= 2;
    if (c >= '1' && c <= '9') {
      fail("back-references (\\1) are not supported: they cannot be matched in linear time");
    } else if (c == 'k') {
      fail("named back-references (\\k) are not supported");
    } else if (c == 'c') {
      fail("control escapes (\\cX) are not supported: write \\xHH");
    } else {
      fail(std::string("unknown escape \\") + c);
    }
    return false;
  }

  Node escape() {
    ++at_;  // the backslash
    Node node;
    if (is_class_escape(peek())) {
      node.kind = Node::Kind::Set;
      node.set = class_escape(text_[at_++]);
      return node;
    }
    node.kind = Node::Kind::Byte;
    if (!escaped_byte(false, &node.byte)) return Node{};
    return node;
  }

  // After the '['.
  Node byte_class() {
    Node node;
    node.kind = Node::Kind::Set;
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++at_;
    }
    ByteSet set;
    while (true) {
      if (!more()) return fail("unterminated character class: a [ without its ]");
      if (peek() == ']') {
        ++at_;
        break;
      }
      if (peek() == '[' && (peek(1) == ':' || peek(1) == '.' || peek(1) == '=')) {
        return fail("POSIX classes like [:alpha:] are not supported: use \\w, \\d, \\s or a range");
      }
      ByteSet single;
      int low = -1;
      if (!class_atom(&single, &low)) return Node{};
      if (peek() == '-' && peek(1) != ']' && at_ + 1 < text_.size()) {
        ++at_;
        ByteSet ignored;
        int high = -1;
        if (!class_atom(&ignored, &high)) return Node{};
        if (low < 0 || high < 0) return fail("a range in a character class cannot end at \\d, \\w or \\s");
        if (low > high) return fail("a range in a character class is out of order");
        add_all(&set, range_set(static_cast<unsigned char>(low), static_cast<unsigned char>(high)));
        continue;
      }
      add_all(&set, single);
    }
    node.set = negated ? complement(set) : set;
    return node;
  }

  // One member of a class: a byte (`byte` >= 0, also in `set`) or \d \w \s and their complements (`byte` -1).
  bool class_atom(ByteSet* set, int* byte) {
    char c = text_[at_];
    if (c != '\\') {
      ++at_;
      *byte = static_cast<unsigned char>(c);
      set->add(static_cast<unsigned char>(c));
      return true;
    }
    ++at_;
    if (is_class_escape(peek())) {
      *set = class_escape(text_[at_++]);
      *byte = -1;
      return true;
    }
    unsigned char value = 0;
    if (!escaped_byte(true, &value)) return false;
    *byte = value;
    set->add(value);
    return true;
  }

  std::string_view text_;
  std::string* problem_;
  size_t at_ = 0;
  int depth_ = 0;
  bool failed_ = false;
};

}  // namespace

// Emits the program of a tree (see linear_regex.h). The program is at most kMaxInstructions long.
class RegexCompiler {
 public:
  RegexCompiler(Regex* out, std::string* problem) : out_(out), problem_(problem) {}

  bool compile(const Node& root) {
    emit(root);
    add({Regex::Op::Match});
    return !too_large_;
  }

 private:
  using Op = Regex::Op;

  uint32_t here() const { return static_cast<uint32_t>(out_->program_.size()); }

  uint32_t add(Regex::Instruction instruction) {
    if (out_->program_.size() >= Regex::kMaxInstructions) {
      if (!too_large_) {
        *problem_ = "the pattern is too large once its repetitions are written out (over " +
                    std::to_string(Regex::kMaxInstructions) + " states)";
      }
      too_large_ = true;
      return here();
    }
    out_->program_.push_back(instruction);
    return here() - 1;
  }

  void emit(const Node& node) {
    if (too_large_) return;
    switch (node.kind) {
      case Node::Kind::Empty:
        return;
      case Node::Kind::Byte:
        add({Op::Byte, node.byte});
        return;
      case Node::Kind::Set:
        out_->sets_.push_back(node.set);
        add({Op::Set, 0, static_cast<uint32_t>(out_->sets_.size() - 1)});
        return;
      case Node::Kind::Assertion:
        add({node.assertion});
        return;
      case Node::Kind::Concat:
        for (const Node& child : node.children) emit(child);
        return;
      case Node::Kind::Alternate:
        alternate(node.children);
        return;
      case Node::Kind::Repeat:
        repeat(node);
        return;
    }
  }

  // children[0] | children[1] | ...: each but the last behind a Split to it and to the rest, jumping past
  // the rest when it matched.
  void alternate(const std::vector<Node>& children) {
    std::vector<uint32_t> jumps;
    for (size_t i = 0; i + 1 < children.size(); ++i) {
      uint32_t split = add({Op::Split});
      if (too_large_) return;
      out_->program_[split].x = here();
      emit(children[i]);
      jumps.push_back(add({Op::Jump}));
      if (too_large_) return;
      out_->program_[split].y = here();
    }
    emit(children.back());
    if (too_large_) return;
    for (uint32_t jump : jumps) out_->program_[jump].x = here();
  }

  // x{min,max}: min copies of x, then x* (no bound) or max - min copies of x?.
  void repeat(const Node& node) {
    const Node& body = node.children[0];
    for (int i = 0; i < node.min && !too_large_; ++i) emit(body);
    if (node.max == -1) {
      uint32_t split = add({Op::Split});
      if (too_large_) return;
      out_->program_[split].x = here();
      emit(body);
      add({Op::Jump, 0, split});
      if (too_large_) return;
      out_->program_[split].y = here();
      return;
    }
    std::vector<uint32_t> splits;
    for (int i = node.min; i < node.max && !too_large_; ++i) {
      uint32_t split = add({Op::Split});
      if (too_large_) return;
      out_->program_[split].x = here();
      splits.push_back(split);
      emit(body);
    }
    if (too_large_) return;
    for (uint32_t split : splits) out_->program_[split].y = here();
  }

  Regex* out_;
  std::string* problem_;
  bool too_large_ = false;
};

std::optional<Regex> Regex::compile(std::string_view pattern, std::string* problem) {
  if (pattern.size() > kMaxPatternBytes) {
    *problem = "regular expressions are limited to " + std::to_string(kMaxPatternBytes) + " bytes";
    return std::nullopt;
  }
  std::optional<Node> tree = Parser(pattern, problem).parse();
  if (!tree) return std::nullopt;
  Regex regex;
  if (!RegexCompiler(&regex, problem).compile(*tree)) return std::nullopt;
  return regex;
}

namespace {

// One search: the program run over the subject in lock step. current_ holds the states waiting for the byte
// at the position being read, next_ those for the byte after it.
class LockStep {
 public:
  using Instruction = Regex::Instruction;
  using Op = Regex::Op;

  LockStep(const std::vector<Instruction>& program, const std::vector<ByteSet>& sets,
           std::string_view subject)
      : program_(program), sets_(sets), subject_(subject), mark_(program.size(), 0) {
    current_.reserve(program.size());
    next_.reserve(program.size());
    stack_.reserve(program.size());
  }

  bool run() {
    for (size_t at = 0;; ++at) {
      if (add(current_, 0, at)) return true;  // a match may start here (the search is not anchored)
      if (at == subject_.size()) return false;
      const unsigned char byte = static_cast<unsigned char>(subject_[at]);
      next_.clear();
      for (uint32_t pc : current_) {
        const Instruction& instruction = program_[pc];
        bool takes = instruction.op == Op::Byte ? instruction.byte == byte : sets_[instruction.x].has(byte);
        if (takes && add(next_, pc + 1, at + 1)) return true;
      }
      std::swap(current_, next_);
    }
  }

 private:
  bool is_word_at(size_t i) const {
    return i < subject_.size() && is_word(static_cast<unsigned char>(subject_[i]));
  }

  // Adds the state `start` and every state it reaches without reading a byte, at position `at`, to `list`.
  // Returns whether Match is among them.
  bool add(std::vector<uint32_t>& list, uint32_t start, size_t at) {
    const size_t generation = at + 1;
    stack_.push_back(start);
    while (!stack_.empty()) {
      uint32_t pc = stack_.back();
      stack_.pop_back();
      if (mark_[pc] == generation) continue;
      mark_[pc] = generation;
      const Instruction& instruction = program_[pc];
      switch (instruction.op) {
        case Op::Byte:
        case Op::Set:
          list.push_back(pc);
          break;
        case Op::Split:
          stack_.push_back(instruction.y);
          stack_.push_back(instruction.x);
          break;
        case Op::Jump:
          stack_.push_back(instruction.x);
          break;
        case Op::LineStart:
          if (at == 0) stack_.push_back(pc + 1);
          break;
        case Op::LineEnd:
          if (at == subject_.size()) stack_.push_back(pc + 1);
          break;
        case Op::WordBoundary:
        case Op::NotWordBoundary: {
          bool boundary = (at > 0 && is_word_at(at - 1)) != is_word_at(at);
          if (boundary == (instruction.op == Op::WordBoundary)) stack_.push_back(pc + 1);
          break;
        }
        case Op::Match:
          stack_.clear();
          return true;
      }
    }
    return false;
  }

  const std::vector<Instruction>& program_;
  const std::vector<ByteSet>& sets_;
  const std::string_view subject_;
  std::vector<uint32_t> current_, next_, stack_;
  // mark_[pc] == generation: pc is in the list of the position being built (generation = position + 1).
  std::vector<size_t> mark_;
};

}  // namespace

bool Regex::search(std::string_view subject) const {
  return LockStep(program_, sets_, subject).run();
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
