// libFuzzer target: the report's JSON writer. The input is a small program: each step opens or closes an
// object or array, or writes a key, a string (arbitrary bytes; in some inputs one repeated to around
// JsonWriter::kMaxString), an integer, a double (any bit pattern: NaN, infinities, subnormals), a boolean
// or null, or quotes a string with json_string and a small limit. A strict RFC 8259 reader written here
// then checks that:
// - the writer's output is one JSON value, on one line, valid UTF-8 with no raw control character, and
//   reads back as the values written: integers exactly, doubles to 16 digits, NaN and infinities as null,
//   strings as report.h promises (each byte that is not well-formed UTF-8 replaced by U+FFFD; over the
//   limit, cut to it, the start of a sequence the cut split dropped, "..." added), so that a valid UTF-8
//   string within the limit reads back unchanged;
// - json_string's output is one JSON string, at most 6 bytes per input byte plus quotes and "...";
// - the engine's own reader (json_read.h, for --localize) reads the writer's output back as the same
//   number of values, and never crashes on the raw input.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "json_read.h"
#include "report.h"

#define FUZZ_CHECK(condition)                                                                       \
  do {                                                                                              \
    if (!(condition)) {                                                                             \
      std::fprintf(stderr, "json_fuzz: %s:%d: check failed: %s\n", __FILE__, __LINE__, #condition); \
      std::abort();                                                                                 \
    }                                                                                               \
  } while (0)

namespace {

using blockrun::JsonWriter;

// The checking code is left out of the coverage the fuzzer steers by, so that its search is about
// report.cpp and the long strings are read back at full speed.
#define ORACLE __attribute__((no_sanitize("coverage")))

// ---- UTF-8, written independently of report.cpp ----

// Length of the well-formed UTF-8 sequence at text[i] (RFC 3629: no overlong forms, no surrogates,
// nothing past U+10FFFF), 0 where there is none. *code gets the code point.
ORACLE size_t utf8_length(std::string_view text, size_t i, uint32_t* code = nullptr) {
  const unsigned char* at = reinterpret_cast<const unsigned char*>(text.data());
  unsigned char lead = at[i];
  size_t length = lead < 0x80                    ? 1
                  : lead >= 0xC2 && lead <= 0xDF ? 2
                  : lead >= 0xE0 && lead <= 0xEF ? 3
                  : lead >= 0xF0 && lead <= 0xF4 ? 4
                                                 : 0;
  if (length == 0 || i + length > text.size()) return 0;
  // The second byte's range depends on the lead (RFC 3629, section 4).
  unsigned char low = 0x80, high = 0xBF;
  if (lead == 0xE0) low = 0xA0;
  if (lead == 0xED) high = 0x9F;
  if (lead == 0xF0) low = 0x90;
  if (lead == 0xF4) high = 0x8F;
  if (length > 1 && (at[i + 1] < low || at[i + 1] > high)) return 0;
  uint32_t value = length == 1 ? lead : lead & (0xFF >> (length + 1));
  for (size_t k = 1; k < length; ++k) {
    if ((at[i + k] & 0xC0) != 0x80) return 0;
    value = (value << 6) | (at[i + k] & 0x3F);
  }
  if (code) *code = value;
  return length;
}

ORACLE bool valid_utf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    size_t length = utf8_length(text, i);
    if (!length) return false;
    i += length;
  }
  return true;
}

// Whether `tail` is the start of some well-formed sequence that more bytes would complete.
ORACLE bool completable(std::string_view tail) {
  if (tail.empty() || tail.size() >= 4) return false;
  static const unsigned char kContinuations[] = {0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF};
  for (unsigned char a : kContinuations)
    for (unsigned char b : kContinuations)
      for (unsigned char c : kContinuations) {
        std::string candidate(tail);
        candidate += static_cast<char>(a);
        if (utf8_length(candidate, 0) == candidate.size()) return true;
        candidate += static_cast<char>(b);
        if (utf8_length(candidate, 0) == candidate.size()) return true;
        candidate += static_cast<char>(c);
        if (utf8_length(candidate, 0) == candidate.size()) return true;
      }
  return false;
}

// Whether `tail` has the shape of a cut sequence: a lead byte, then only continuation bytes, fewer than
// the lead announces (whether the whole would have been well-formed is not asked).
ORACLE bool shaped_like_cut_sequence(std::string_view tail) {
  if (tail.empty()) return false;
  unsigned char lead = static_cast<unsigned char>(tail[0]);
  size_t announced = (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : (lead & 0xF8) == 0xF0 ? 4 : 0;
  if (tail.size() >= announced) return false;
  for (char c : tail.substr(1))
    if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) return false;
  return true;
}

// What report.h promises a JSON string reads back as: each byte that is not part of well-formed UTF-8
// replaced by U+FFFD; over the limit, cut to it with "..." added, and the start of a sequence the cut
// split dropped. `is_cut_sequence` says which tails count as such: "could have been completed" and "is
// shaped like one" are both fair readings, so both are accepted; a tail that is neither (a byte that
// starts no sequence, or one followed by a byte that continues none) must be replaced and kept.
ORACLE std::string expected_text(std::string_view text, size_t max_bytes,
                                 bool (*is_cut_sequence)(std::string_view) = completable) {
  bool cut = text.size() > max_bytes;
  if (cut) text = text.substr(0, max_bytes);
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (size_t length = utf8_length(text, i)) {
      out.append(text.substr(i, length));
      i += length;
    } else if (cut && is_cut_sequence(text.substr(i))) {
      break;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  if (cut) out += "...";
  return out;
}

ORACLE bool reads_as_promised(const std::string& decoded, std::string_view text, size_t max_bytes) {
  return decoded == expected_text(text, max_bytes, completable) ||
         decoded == expected_text(text, max_bytes, shaped_like_cut_sequence);
}

// ---- a strict RFC 8259 reader ----

struct Token {
  enum Kind { BeginObject, EndObject, BeginArray, EndArray, Key, String, Number, True, False, Null };
  Kind kind;
  std::string text;        // read: strings decoded, numbers as written; expected: strings as given
  bool is_double = false;  // expected only: compared by value with the next of Program::doubles_
};

class Reader {
 public:
  explicit Reader(std::string_view text) : text_(text) {}

  // The tokens of the one value `text` holds, or nullopt (and a reason on stderr) where it is not JSON.
  ORACLE std::optional<std::vector<Token>> read() {
    if (!valid_utf8(text_)) return failed("not valid UTF-8"), std::nullopt;
    skip_blanks();
    if (!value(0)) return std::nullopt;
    skip_blanks();
    if (at_ != text_.size()) return failed("text after the value"), std::nullopt;
    return tokens_;
  }

  // Reads one string that is the whole text.
  ORACLE std::optional<std::string> read_string() {
    if (!valid_utf8(text_)) return failed("not valid UTF-8"), std::nullopt;
    std::string decoded;
    if (!more() || peek() != '"') return failed("string expected"), std::nullopt;
    if (!string(&decoded)) return std::nullopt;
    if (at_ != text_.size()) return failed("text after the string"), std::nullopt;
    return decoded;
  }

 private:
  ORACLE bool failed(const char* why) {
    std::fprintf(stderr, "json_fuzz: not JSON at byte %zu: %s\n", at_, why);
    return false;
  }
  ORACLE bool more() const { return at_ < text_.size(); }
  ORACLE char peek() const { return text_[at_]; }
  ORACLE void skip_blanks() {
    while (more() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) ++at_;
  }
  ORACLE bool literal(std::string_view word, Token::Kind kind) {
    if (text_.substr(at_, word.size()) != word) return failed("unknown literal");
    at_ += word.size();
    tokens_.push_back({kind, std::string(word)});
    return true;
  }

  ORACLE bool value(int depth) {
    if (depth > 512) return failed("nested too deep");
    if (!more()) return failed("value expected");
    switch (peek()) {
      case '{':
        return container(depth, '}', Token::BeginObject, Token::EndObject);
      case '[':
        return container(depth, ']', Token::BeginArray, Token::EndArray);
      case '"': {
        std::string decoded;
        if (!string(&decoded)) return false;
        tokens_.push_back({Token::String, decoded});
        return true;
      }
      case 't':
        return literal("true", Token::True);
      case 'f':
        return literal("false", Token::False);
      case 'n':
        return literal("null", Token::Null);
      default:
        return number();
    }
  }

  ORACLE bool container(int depth, char close, Token::Kind begin, Token::Kind end) {
    bool object = close == '}';
    ++at_;
    tokens_.push_back({begin, ""});
    skip_blanks();
    if (more() && peek() == close) {
      ++at_;
      tokens_.push_back({end, ""});
      return true;
    }
    for (;;) {
      skip_blanks();
      if (object) {
        std::string name;
        if (!more() || peek() != '"') return failed("key expected");
        if (!string(&name)) return false;
        tokens_.push_back({Token::Key, name});
        skip_blanks();
        if (!more() || peek() != ':') return failed("':' expected");
        ++at_;
        skip_blanks();
      }
      if (!value(depth + 1)) return false;
      skip_blanks();
      if (!more()) return failed("unterminated container");
      if (peek() == ',') {
        ++at_;
        continue;
      }
      if (peek() != close) return failed("',' or end of container expected");
      ++at_;
      tokens_.push_back({end, ""});
      return true;
    }
  }

  ORACLE bool hex4(uint32_t* out) {
    if (at_ + 4 > text_.size()) return failed("short \\u escape");
    uint32_t value = 0;
    for (int k = 0; k < 4; ++k) {
      char c = text_[at_++];
      int digit = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
      if (digit < 0) return failed("bad hex digit");
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    *out = value;
    return true;
  }

  ORACLE static void append_utf8(std::string* out, uint32_t code) {
    if (code < 0x80) {
      *out += static_cast<char>(code);
    } else if (code < 0x800) {
      *out += static_cast<char>(0xC0 | (code >> 6));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      *out += static_cast<char>(0xE0 | (code >> 12));
      *out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (code >> 18));
      *out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  ORACLE bool string(std::string* out) {
    ++at_;  // the opening quote
    for (;;) {
      if (!more()) return failed("unterminated string");
      unsigned char c = static_cast<unsigned char>(peek());
      if (c == '"') {
        ++at_;
        return true;
      }
      if (c < 0x20) return failed("raw control character in a string");
      if (c != '\\') {
        size_t length = utf8_length(text_, at_);  // the whole text was checked: never 0 here
        out->append(text_.substr(at_, length));
        at_ += length;
        continue;
      }
      ++at_;
      if (!more()) return failed("unterminated escape");
      char escape = text_[at_++];
      static const char kFrom[] = "\"\\/bfnrt";
      static const char kTo[] = "\"\\/\b\f\n\r\t";
      if (const char* found = escape ? std::strchr(kFrom, escape) : nullptr) {
        *out += kTo[found - kFrom];
        continue;
      }
      if (escape != 'u') return failed("unknown escape");
      uint32_t code;
      if (!hex4(&code)) return false;
      if (code >= 0xDC00 && code <= 0xDFFF) return failed("lone low surrogate");
      if (code >= 0xD800 && code <= 0xDBFF) {
        uint32_t low;
        if (text_.substr(at_, 2) != "\\u") return failed("high surrogate without low");
        at_ += 2;
        if (!hex4(&low)) return false;
        if (low < 0xDC00 || low > 0xDFFF) return failed("high surrogate without low");
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
      }
      append_utf8(out, code);
    }
  }

  ORACLE bool digits() {
    size_t first = at_;
    while (more() && peek() >= '0' && peek() <= '9') ++at_;
    return at_ > first;
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
  ORACLE bool number() {
    size_t start = at_;
    if (more() && peek() == '-') ++at_;
    if (more() && peek() == '0') {
      ++at_;
    } else if (!more() || peek() < '1' || peek() > '9' || !digits()) {
      return failed("bad number");
    }
    if (more() && peek() == '.') {
      ++at_;
      if (!digits()) return failed("bad fraction");
    }
    if (more() && (peek() == 'e' || peek() == 'E')) {
      ++at_;
      if (more() && (peek() == '+' || peek() == '-')) ++at_;
      if (!digits()) return failed("bad exponent");
    }
    tokens_.push_back({Token::Number, std::string(text_.substr(start, at_ - start))});
    return true;
  }

  std::string_view text_;
  size_t at_ = 0;
  std::vector<Token> tokens_;
};

// ---- json_string alone ----

void check_json_string(const std::string& text, size_t max_bytes) {
  std::string quoted = blockrun::json_string(text, max_bytes);
  size_t kept = std::min(text.size(), max_bytes);
  FUZZ_CHECK(quoted.size() <= 6 * kept + 2 + 3);  // \u00XX per byte at worst, the quotes, "..."
  FUZZ_CHECK(quoted.find('\n') == std::string::npos);
  std::optional<std::string> decoded = Reader(quoted).read_string();
  FUZZ_CHECK(decoded.has_value());
  if (text.size() <= max_bytes && valid_utf8(text)) FUZZ_CHECK(*decoded == text);
  if (text.size() > max_bytes && valid_utf8(text)) {
    // Cut: a prefix of the text that lost at most the three bytes of a split sequence, then "...".
    FUZZ_CHECK(decoded->size() >= 3 && decoded->compare(decoded->size() - 3, 3, "...") == 0);
    std::string kept_text = decoded->substr(0, decoded->size() - 3);
    FUZZ_CHECK(text.compare(0, kept_text.size(), kept_text) == 0);
    FUZZ_CHECK(kept_text.size() + 3 >= max_bytes);
  }
  if (!reads_as_promised(*decoded, text, max_bytes)) {
    std::fprintf(
        stderr, "json_fuzz: json_string(%zu bytes, max %zu) reads back as %zu bytes, expected %zu: '%s'\n",
        text.size(), max_bytes, decoded->size(), expected_text(text, max_bytes).size(), quoted.c_str());
    FUZZ_CHECK(reads_as_promised(*decoded, text, max_bytes));
  }
}

// ---- the writer, driven by the input ----

class Program {
 public:
  Program(const uint8_t* data, size_t size) : input_(data, size) {}

  void run() {
    may_make_long_string_ = input_.ConsumeIntegralInRange<int>(0, 7) == 0;
    open(input_.ConsumeBool());
    while (!open_.empty()) {
      if (input_.remaining_bytes() == 0) {
        close();
        continue;
      }
      switch (input_.ConsumeIntegralInRange<int>(0, 11)) {
        case 0:
          if (open_.size() < 32) {
            key_if_in_object();
            open(input_.ConsumeBool());
          }
          break;
        case 1:
          close();
          break;
        case 2: {
          key_if_in_object();
          std::string text = next_string();
          writer_.value(text);
          expected_.push_back({Token::String, text});
          break;
        }
        case 3: {
          key_if_in_object();
          std::string text = next_string();
          writer_.value(text.c_str());  // up to the first NUL
          expected_.push_back({Token::String, text.c_str()});
          break;
        }
        case 4: {
          key_if_in_object();
          auto number = input_.ConsumeIntegral<int64_t>();
          writer_.value(number);
          expected_.push_back({Token::Number, std::to_string(number)});
          break;
        }
        case 5: {
          key_if_in_object();
          auto number = input_.ConsumeIntegral<uint64_t>();
          writer_.value(number);
          expected_.push_back({Token::Number, std::to_string(number)});
          break;
        }
        case 6: {
          key_if_in_object();
          uint64_t bits = input_.ConsumeIntegral<uint64_t>();
          double number;
          std::memcpy(&number, &bits, sizeof number);
          writer_.value(number);
          doubles_.push_back(number);
          expected_.push_back({std::isfinite(number) ? Token::Number : Token::Null, "", true});
          break;
        }
        case 7: {
          key_if_in_object();
          bool flag = input_.ConsumeBool();
          writer_.value(flag);
          expected_.push_back({flag ? Token::True : Token::False, flag ? "true" : "false"});
          break;
        }
        case 8:
          key_if_in_object();
          if (input_.ConsumeBool())
            writer_.null();
          else
            writer_.value(static_cast<const char*>(nullptr));
          expected_.push_back({Token::Null, "null"});
          break;
        case 9: {
          int number = input_.ConsumeIntegral<int>();
          if (in_object()) {
            std::string name = next_string();
            writer_.field(name, number);
            expected_.push_back({Token::Key, name});
          } else {
            writer_.value(number);
          }
          expected_.push_back({Token::Number, std::to_string(number)});
          break;
        }
        case 10: {
          unsigned number = input_.ConsumeIntegral<unsigned>();
          key_if_in_object();
          writer_.value(number);
          expected_.push_back({Token::Number, std::to_string(number)});
          break;
        }
        case 11: {
          size_t max_bytes = input_.ConsumeIntegralInRange<size_t>(0, 24);
          check_json_string(next_string(), max_bytes);
          break;
        }
      }
    }
  }

  void check() const {
    const std::string& text = writer_.text();
    FUZZ_CHECK(text.find('\n') == std::string::npos);
    std::optional<blockrun::JsonValue> ours = blockrun::parse_json(text);  // nesting stays within its 64
    FUZZ_CHECK(ours.has_value());
    FUZZ_CHECK(count_values(*ours) == count_scalars_and_containers());
    std::optional<std::vector<Token>> tokens = Reader(text).read();
    FUZZ_CHECK(tokens.has_value());
    FUZZ_CHECK(tokens->size() == expected_.size());
    size_t next_double = 0;
    for (size_t i = 0; i < tokens->size(); ++i) {
      const Token& got = (*tokens)[i];
      const Token& want = expected_[i];
      FUZZ_CHECK(got.kind == want.kind);
      if (want.is_double) {
        double written = doubles_[next_double++];
        if (want.kind == Token::Null) continue;
        // 16 significant digits (report.cpp's choice, for times): close, not exact. Next to DBL_MAX they
        // round past it and read back as infinity, which no report value comes near; not checked there.
        double read = std::strtod(got.text.c_str(), nullptr);
        if (std::isfinite(read)) FUZZ_CHECK(std::fabs(read - written) <= std::fabs(written) * 1e-15);
        continue;
      }
      if (want.kind == Token::Key || want.kind == Token::String)
        FUZZ_CHECK(reads_as_promised(got.text, want.text, JsonWriter::kMaxString));
      else if (want.kind == Token::Number)
        FUZZ_CHECK(got.text == want.text);
    }
  }

 private:
  bool in_object() const { return !open_.empty() && open_.back(); }

  static size_t count_values(const blockrun::JsonValue& value) {
    size_t count = 1;
    for (const blockrun::JsonValue& element : value.array) count += count_values(element);
    for (const auto& member : value.object) count += count_values(member.second);
    return count;
  }
  size_t count_scalars_and_containers() const {
    size_t count = 0;
    for (const Token& token : expected_) {
      if (token.kind != Token::Key && token.kind != Token::EndObject && token.kind != Token::EndArray) ++count;
    }
    return count;
  }

  void key_if_in_object() {
    if (!in_object()) return;
    std::string name = next_string();
    writer_.key(name);
    expected_.push_back({Token::Key, name});
  }

  void open(bool object) {
    if (object)
      writer_.begin_object();
    else
      writer_.begin_array();
    open_.push_back(object);
    expected_.push_back({object ? Token::BeginObject : Token::BeginArray, ""});
  }

  void close() {
    if (open_.back())
      writer_.end_object();
    else
      writer_.end_array();
    expected_.push_back({open_.back() ? Token::EndObject : Token::EndArray, ""});
    open_.pop_back();
  }

  // Bytes from the input; in one input of eight, once, a piece repeated to near the writer's limit, so
  // that its cut falls anywhere in a sequence. (The cut itself is searched with small limits, in
  // check_json_string: long strings cost milliseconds each.)
  std::string next_string() {
    size_t length = input_.ConsumeIntegralInRange<size_t>(0, 48);
    std::string text = input_.ConsumeBytesAsString(length);
    if (text.empty() || !may_make_long_string_ || input_.ConsumeIntegralInRange<int>(0, 3) != 0) return text;
    may_make_long_string_ = false;
    size_t target = input_.ConsumeBool()
                        ? JsonWriter::kMaxString - 4 + input_.ConsumeIntegralInRange<size_t>(0, 8)
                        : JsonWriter::kMaxString - 1024 + input_.ConsumeIntegralInRange<size_t>(0, 2048);
    std::string repeated;
    repeated.reserve(target + text.size());
    while (repeated.size() < target) repeated += text;
    repeated.resize(target);
    return repeated;
  }

  FuzzedDataProvider input_;
  JsonWriter writer_;
  std::vector<bool> open_;  // per open container: whether it is an object
  std::vector<Token> expected_;
  std::vector<double> doubles_;
  bool may_make_long_string_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  Program program(data, size);
  program.run();
  program.check();
  // The whole input as one string, at the writer's limit and at small ones.
  std::string text(reinterpret_cast<const char*>(data), size);
  (void)blockrun::parse_json(text);  // whatever the bytes: an answer, no crash
  check_json_string(text, JsonWriter::kMaxString);
  for (size_t max_bytes : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size / 2, size > 0 ? size - 1 : 0})
    check_json_string(text, max_bytes);
  return 0;
}
