// Reading JSON (json_read.h): recursive descent over the text, no allocation beyond the DOM.
#include "json_read.h"

#include <fmt/format.h>

#include <cmath>
#include <cstdlib>

namespace blockrun {

const JsonValue* JsonValue::get(std::string_view key) const {
  if (type != Type::Object) return nullptr;
  for (const auto& [name, value] : object) {
    if (name == key) return &value;
  }
  return nullptr;
}

std::string JsonValue::text(std::string_view key, std::string_view fallback) const {
  const JsonValue* value = get(key);
  return value && value->type == Type::String ? value->string : std::string(fallback);
}

double JsonValue::num(std::string_view key, double fallback) const {
  const JsonValue* value = get(key);
  return value && value->type == Type::Number ? value->number : fallback;
}

const JsonValue* JsonValue::object_member(std::string_view key) const {
  const JsonValue* value = get(key);
  return value && value->type == Type::Object ? value : nullptr;
}

const JsonValue* JsonValue::array_member(std::string_view key) const {
  const JsonValue* value = get(key);
  return value && value->type == Type::Array ? value : nullptr;
}

std::string JsonValue::whole(std::string_view key) const {
  return fmt::format("{:.0f}", num(key));
}

namespace {

constexpr int kMaxDepth = 64;

class Parser {
 public:
  explicit Parser(std::string_view text) : text_(text) {}

  std::optional<JsonValue> document(std::string* error) {
    JsonValue value;
    bool ok = parse_value(&value, 0);
    skip_space();
    if (ok && at_ != text_.size()) ok = fail("unexpected text after the value");
    if (!ok) {
      if (error) *error = problem_ + " at offset " + std::to_string(at_);
      return std::nullopt;
    }
    return value;
  }

 private:
  bool fail(const char* what) {
    if (problem_.empty()) problem_ = what;
    return false;
  }
  void skip_space() {
    while (at_ < text_.size() &&
           (text_[at_] == ' ' || text_[at_] == '\t' || text_[at_] == '\n' || text_[at_] == '\r'))
      ++at_;
  }
  bool literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return fail("invalid literal");
    at_ += word.size();
    return true;
  }

  bool parse_value(JsonValue* value, int depth) {
    if (depth > kMaxDepth) return fail("nested too deeply");
    skip_space();
    if (at_ >= text_.size()) return fail("unexpected end");
    char c = text_[at_];
    switch (c) {
      case '{':
        return parse_object(value, depth);
      case '[':
        return parse_array(value, depth);
      case '"':
        value->type = JsonValue::Type::String;
        return parse_string(&value->string);
      case 't':
        value->type = JsonValue::Type::Bool;
        value->boolean = true;
        return literal("true");
      case 'f':
        value->type = JsonValue::Type::Bool;
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return parse_number(value);
    }
  }

  bool parse_object(JsonValue* value, int depth) {
    value->type = JsonValue::Type::Object;
    ++at_;  // {
    skip_space();
    if (at_ < text_.size() && text_[at_] == '}') {
      ++at_;
      return true;
    }
    while (true) {
      skip_space();
      if (at_ >= text_.size() || text_[at_] != '"') return fail("expected a member name");
      std::string name;
      if (!parse_string(&name)) return false;
      skip_space();
      if (at_ >= text_.size() || text_[at_] != ':') return fail("expected ':'");
      ++at_;
      JsonValue member;
      if (!parse_value(&member, depth + 1)) return false;
      value->object.emplace_back(std::move(name), std::move(member));
      skip_space();
      if (at_ < text_.size() && text_[at_] == ',') {
        ++at_;
        continue;
      }
      if (at_ < text_.size() && text_[at_] == '}') {
        ++at_;
        return true;
      }
      return fail("expected ',' or '}'");
    }
  }

  bool parse_array(JsonValue* value, int depth) {
    value->type = JsonValue::Type::Array;
    ++at_;  // [
    skip_space();
    if (at_ < text_.size() && text_[at_] == ']') {
      ++at_;
      return true;
    }
    while (true) {
      JsonValue element;
      if (!parse_value(&element, depth + 1)) return false;
      value->array.push_back(std::move(element));
      skip_space();
      if (at_ < text_.size() && text_[at_] == ',') {
        ++at_;
        continue;
      }
      if (at_ < text_.size() && text_[at_] == ']') {
        ++at_;
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  bool hex4(unsigned* out) {
    if (at_ + 4 > text_.size()) return fail("short \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      char h = text_[at_++];
      code <<= 4;
      if (h >= '0' && h <= '9')
        code |= static_cast<unsigned>(h - '0');
      else if (h >= 'a' && h <= 'f')
        code |= static_cast<unsigned>(h - 'a' + 10);
      else if (h >= 'A' && h <= 'F')
        code |= static_cast<unsigned>(h - 'A' + 10);
      else
        return fail("invalid \\u escape");
    }
    *out = code;
    return true;
  }

  static void append_utf8(std::string* out, unsigned code) {
    if (code < 0x80) {
      out->push_back(static_cast<char>(code));
    } else if (code < 0x800) {
      out->push_back(static_cast<char>(0xC0 | (code >> 6)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else if (code < 0x10000) {
      out->push_back(static_cast<char>(0xE0 | (code >> 12)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    } else {
      out->push_back(static_cast<char>(0xF0 | (code >> 18)));
      out->push_back(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
      out->push_back(static_cast<char>(0x80 | (code & 0x3F)));
    }
  }

  bool parse_string(std::string* out) {
    ++at_;  // "
    while (at_ < text_.size()) {
      char c = text_[at_++];
      if (c == '"') return true;
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in a string");
      if (c != '\\') {
        out->push_back(c);
        continue;
      }
      if (at_ >= text_.size()) break;
      char escape = text_[at_++];
      switch (escape) {
        case '"':
          out->push_back('"');
          break;
        case '\\':
          out->push_back('\\');
          break;
        case '/':
          out->push_back('/');
          break;
        case 'b':
          out->push_back('\b');
          break;
        case 'f':
          out->push_back('\f');
          break;
        case 'n':
          out->push_back('\n');
          break;
        case 'r':
          out->push_back('\r');
          break;
        case 't':
          out->push_back('\t');
          break;
        case 'u': {
          unsigned code = 0;
          if (!hex4(&code)) return false;
          if (code >= 0xD800 && code < 0xDC00) {  // a surrogate pair
            unsigned low = 0;
            if (text_.substr(at_, 2) != "\\u") return fail("unpaired surrogate");
            at_ += 2;
            if (!hex4(&low)) return false;
            if (low < 0xDC00 || low > 0xDFFF) return fail("unpaired surrogate");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code <= 0xDFFF) {
            return fail("unpaired surrogate");
          }
          append_utf8(out, code);
          break;
        }
        default:
          return fail("invalid escape");
      }
    }
    return fail("unterminated string");
  }

  bool parse_number(JsonValue* value) {
    size_t start = at_;
    if (at_ < text_.size() && text_[at_] == '-') ++at_;
    auto digits = [&] {
      size_t from = at_;
      while (at_ < text_.size() && text_[at_] >= '0' && text_[at_] <= '9') ++at_;
      return at_ - from;
    };
    size_t integer = digits();
    if (integer == 0) return fail("invalid value");
    if (integer > 1 && text_[at_ - integer] == '0') return fail("leading zero");
    if (at_ < text_.size() && text_[at_] == '.') {
      ++at_;
      if (digits() == 0) return fail("invalid number");
    }
    if (at_ < text_.size() && (text_[at_] == 'e' || text_[at_] == 'E')) {
      ++at_;
      if (at_ < text_.size() && (text_[at_] == '+' || text_[at_] == '-')) ++at_;
      if (digits() == 0) return fail("invalid number");
    }
    std::string number(text_.substr(start, at_ - start));
    value->type = JsonValue::Type::Number;
    value->number = std::strtod(number.c_str(), nullptr);
    return true;
  }

  std::string_view text_;
  size_t at_ = 0;
  std::string problem_;
};

}  // namespace

std::optional<JsonValue> parse_json(std::string_view text, std::string* error) {
  return Parser(text).document(error);
}

size_t for_each_json_line(std::string_view contents, const std::function<void(JsonValue&&)>& visit) {
  size_t unreadable = 0;
  size_t start = 0;
  while (start < contents.size()) {
    size_t end = contents.find('\n', start);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    std::optional<JsonValue> record = parse_json(line);
    if (record) {
      visit(std::move(*record));
    } else {
      ++unreadable;
    }
  }
  return unreadable;
}

}  // namespace blockrun
