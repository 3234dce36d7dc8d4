// libFuzzer target: the report's JSON writer. The input is a small program: each step opens or closes an
// object or array, or writes a key, a string (arbitrary bytes; in some inputs one repeated to around
// JsonWriter::kMaxString), an integer, a double (any bit pattern: NaN, infinities, subnormals), a boolean
// or null, or quotes a string with json_string and a small limit. nlohmann-json's strict RFC 8259 parser,
// read event by event so that every key counts, is the oracle; UTF-8 is checked by code written here. They
// check that:
// - the writer's output is one JSON value, on one line, valid UTF-8 with no raw control character, and
//   reads back as the values written: integers exactly, doubles to 16 digits, NaN and infinities as null,
//   strings as report_file.h promises (each byte that is not well-formed UTF-8 replaced by U+FFFD; over the
//   limit, cut to it, the start of a sequence the cut split dropped, "..." added), so that a valid UTF-8
//   string within the limit reads back unchanged;
// - json_string's output is one JSON string, at most 6 bytes per input byte plus quotes and "...";
// - the wrapper's reader (src/readers/report_json.h, for --localize and `report`) reads the writer's output,
//   and never crashes on the raw input.
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

#include <nlohmann/json.hpp>

#include "report/report_file.h"
#include "report_json.h"

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
// report_file.cpp and the long strings are read back at full speed.
#define ORACLE __attribute__((no_sanitize("coverage")))

// ---- UTF-8, written independently of report_file.cpp ----

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

// What report_file.h promises a JSON string reads back as: each byte that is not part of well-formed UTF-8
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

// ---- reading the output back: nlohmann-json's strict parser, event by event ----

struct Token {
  enum Kind { BeginObject, EndObject, BeginArray, EndArray, Key, String, Number, True, False, Null };
  Kind kind;
  std::string text;        // read: strings decoded, numbers as written; expected: strings as given
  bool is_double = false;  // expected only: compared by value with the next of Program::doubles_
};

// Records nlohmann's parse events as tokens. Events rather than its DOM: they keep every key, in order,
// where an object would keep one of each. A whole number comes as its value, which its decimal form gives
// back exactly; any other number as the text written.
class TokenRecorder : public nlohmann::json_sax<nlohmann::json> {
 public:
  std::vector<Token> tokens;

  bool null() override { return add(Token::Null, "null"); }
  bool boolean(bool flag) override { return add(flag ? Token::True : Token::False, flag ? "true" : "false"); }
  bool number_integer(number_integer_t number) override { return add(Token::Number, std::to_string(number)); }
  bool number_unsigned(number_unsigned_t number) override {
    return add(Token::Number, std::to_string(number));
  }
  bool number_float(number_float_t, const string_t& text) override { return add(Token::Number, text); }
  bool string(string_t& text) override { return add(Token::String, text); }
  bool binary(binary_t&) override { return false; }  // JSON text has none
  bool start_object(std::size_t) override { return add(Token::BeginObject, ""); }
  bool key(string_t& name) override { return add(Token::Key, name); }
  bool end_object() override { return add(Token::EndObject, ""); }
  bool start_array(std::size_t) override { return add(Token::BeginArray, ""); }
  bool end_array() override { return add(Token::EndArray, ""); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& problem) override {
    std::fprintf(stderr, "json_fuzz: not JSON: %s\n", problem.what());
    return false;
  }

 private:
  bool add(Token::Kind kind, std::string text) {
    tokens.push_back({kind, std::move(text)});
    return true;
  }
};

// The tokens of the one value `text` holds (strict: nothing after it), or nullopt where it is not JSON.
// nlohmann refuses invalid UTF-8 and raw control characters in strings, and unpaired surrogate escapes.
ORACLE std::optional<std::vector<Token>> read_tokens(std::string_view text) {
  TokenRecorder recorder;
  if (!nlohmann::json::sax_parse(text.begin(), text.end(), &recorder)) return std::nullopt;
  return std::move(recorder.tokens);
}

// The string that is the whole text, or nullopt.
ORACLE std::optional<std::string> read_string(std::string_view text) {
  std::optional<std::vector<Token>> tokens = read_tokens(text);
  if (!tokens || tokens->size() != 1 || tokens->front().kind != Token::String) return std::nullopt;
  return tokens->front().text;
}

// ---- json_string alone ----

void check_json_string(const std::string& text, size_t max_bytes) {
  std::string quoted = blockrun::json_string(text, max_bytes);
  size_t kept = std::min(text.size(), max_bytes);
  FUZZ_CHECK(quoted.size() <= 6 * kept + 2 + 3);  // \u00XX per byte at worst, the quotes, "..."
  FUZZ_CHECK(quoted.find('\n') == std::string::npos);
  FUZZ_CHECK(valid_utf8(quoted));
  std::optional<std::string> decoded = read_string(quoted);
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

// The double of any bit pattern (NaN, infinities, subnormals), but for the few next to DBL_MAX that 16
// digits round past it: those would read back as infinity, a number nlohmann refuses (the wrapper's
// reader too). No report value comes near; the largest double that reads back stands in for them.
double readable_double(uint64_t bits) {
  constexpr double kLargestReadBack = 1.797693134862315e308;
  double number;
  std::memcpy(&number, &bits, sizeof number);
  if (std::isfinite(number) && std::fabs(number) > kLargestReadBack)
    number = std::copysign(kLargestReadBack, number);
  return number;
}

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
          double number = readable_double(input_.ConsumeIntegral<uint64_t>());
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
    FUZZ_CHECK(valid_utf8(text));
    FUZZ_CHECK(blockrun::parse_json(text).has_value());  // the wrapper's reader; nesting within its 64
    std::optional<std::vector<Token>> tokens = read_tokens(text);
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
        // 16 significant digits (report_file.cpp's choice, for times): close, not exact.
        double read = std::strtod(got.text.c_str(), nullptr);
        FUZZ_CHECK(std::isfinite(read) && std::fabs(read - written) <= std::fabs(written) * 1e-15);
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
  (void)blockrun::parse_json(text);  // the wrapper's reader: whatever the bytes, an answer, no crash
  check_json_string(text, JsonWriter::kMaxString);
  for (size_t max_bytes : {size_t{0}, size_t{1}, size_t{2}, size_t{3}, size / 2, size > 0 ? size - 1 : 0})
    check_json_string(text, max_bytes);
  return 0;
}
// SPDX-License-Identifier: MIT
