// JSON writer and report file (report_file.h).
#include "report/report_file.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "report/log_file.h"

namespace blockrun {

namespace {

// Length of the valid UTF-8 sequence at text[i], or 0 when the bytes there are not one.
size_t utf8_sequence(std::string_view text, size_t i) {
  auto byte = [&](size_t at) { return static_cast<unsigned char>(text[at]); };
  unsigned char lead = byte(i);
  size_t length;
  uint32_t minimum;
  if (lead < 0x80) return 1;
  if ((lead & 0xE0) == 0xC0) {
    length = 2;
    minimum = 0x80;
  } else if ((lead & 0xF0) == 0xE0) {
    length = 3;
    minimum = 0x800;
  } else if ((lead & 0xF8) == 0xF0) {
    length = 4;
    minimum = 0x10000;
  } else {
    return 0;
  }
  if (i + length > text.size()) return 0;
  uint32_t code = lead & (0x7F >> length);
  for (size_t k = 1; k < length; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
    code = (code << 6) | (byte(i + k) & 0x3F);
  }
  // Overlong forms, surrogates and values past U+10FFFF are not valid UTF-8.
  if (code < minimum || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF) return 0;
  return length;
}

// Whether text[i..] is a lead byte and only continuation bytes, fewer than the lead announces: the
// start of a sequence that the end of `text` split.
bool cut_short(std::string_view text, size_t i) {
  unsigned char lead = static_cast<unsigned char>(text[i]);
  size_t announced = (lead & 0xE0) == 0xC0 ? 2 : (lead & 0xF0) == 0xE0 ? 3 : (lead & 0xF8) == 0xF0 ? 4 : 0;
  if (text.size() - i >= announced) return false;
  for (size_t k = i + 1; k < text.size(); ++k)
    if ((static_cast<unsigned char>(text[k]) & 0xC0) != 0x80) return false;
  return true;
}

}  // namespace

std::string json_string(std::string_view text, size_t max_bytes) {
  bool cut = text.size() > max_bytes;
  if (cut) text = text.substr(0, max_bytes);
  std::string out;
  out.reserve(text.size() + 2);
  out += '"';
  for (size_t i = 0; i < text.size();) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      static const char* const kShort[] = {"\\b", "\\t", "\\n", nullptr, "\\f", "\\r"};
      if (c >= 8 && c <= 13 && kShort[c - 8]) {
        out += kShort[c - 8];
      } else {
        char escaped[8];
        std::snprintf(escaped, sizeof(escaped), "\\u%04x", c);
        out += escaped;
      }
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (size_t length = utf8_sequence(text, i)) {
      out.append(text.data() + i, length);
      i += length;
    } else if (cut && cut_short(text, i)) {
      break;  // a sequence the cut split: drop its start rather than mark it invalid
    } else {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
    }
  }
  if (cut) out += "...";
  out += '"';
  return out;
}

void JsonWriter::separate() {
  if (after_key_) {
    after_key_ = false;
    return;
  }
  if (!has_items_.empty()) {
    if (has_items_.back()) out_ += ',';
    has_items_.back() = true;
  }
}

JsonWriter& JsonWriter::begin_object() {
  separate();
  out_ += '{';
  has_items_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_object() {
  out_ += '}';
  has_items_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::begin_array() {
  separate();
  out_ += '[';
  has_items_.push_back(false);
  return *this;
}

JsonWriter& JsonWriter::end_array() {
  out_ += ']';
  has_items_.pop_back();
  return *this;
}

JsonWriter& JsonWriter::key(std::string_view name) {
  separate();
  out_ += json_string(name);
  out_ += ':';
  after_key_ = true;
  return *this;
}

JsonWriter& JsonWriter::value(std::string_view text) {
  separate();
  out_ += json_string(text);
  return *this;
}

JsonWriter& JsonWriter::value(const char* text) {
  return text ? value(std::string_view(text)) : null();
}

JsonWriter& JsonWriter::value(int64_t number) {
  separate();
  out_ += std::to_string(number);
  return *this;
}

JsonWriter& JsonWriter::value(uint64_t number) {
  separate();
  out_ += std::to_string(number);
  return *this;
}

JsonWriter& JsonWriter::value(double number) {
  if (!std::isfinite(number)) return null();  // JSON has no NaN or infinity
  separate();
  char text[32];
  std::snprintf(text, sizeof(text), "%.16g", number);  // times: seconds since 1970 to the microsecond
  out_ += text;
  return *this;
}

JsonWriter& JsonWriter::value(bool flag) {
  separate();
  out_ += flag ? "true" : "false";
  return *this;
}

JsonWriter& JsonWriter::null() {
  separate();
  out_ += "null";
  return *this;
}

std::unique_ptr<ReportFile> ReportFile::open(const std::string& path, bool private_file,
                                             std::string* problem) {
  std::string reason;
  std::unique_ptr<OutputFile> file = OutputFile::open(path, private_file, &reason);
  if (!file) {
    *problem = cannot_open("report", path, reason, "no report is written");
    return nullptr;
  }
  return std::unique_ptr<ReportFile>(new ReportFile(std::move(file), path));
}

void ReportFile::write_record(const std::string& record) {
  std::string line = record;
  line += '\n';
  file_->write_record(line.data(), line.size());
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
