// The machine-readable report: JSON lines, one record per event (docs/report.md is the schema). This
// file has the JSON writer, which keeps any text valid (control bytes escaped, invalid UTF-8 replaced,
// very long strings cut), and the report file, written with one write(2) per record so that a record is
// complete on disk even when the process dies right after it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "report/output_file.h"

namespace blockrun {

// The schema's version, written in every `start` record. Fields are added within a version; a field renamed
// or removed makes a new one (2: the error records' `family`, the numbering of `code`, became `layer`).
constexpr int kReportSchemaVersion = 2;

// Builds one JSON value. Keys and strings are escaped; text that is not valid UTF-8 has each bad byte
// replaced by U+FFFD; a string longer than `max_string` bytes is cut and ends with "...".
class JsonWriter {
 public:
  static constexpr size_t kMaxString = 65536;

  JsonWriter& begin_object();
  JsonWriter& end_object();
  JsonWriter& begin_array();
  JsonWriter& end_array();
  JsonWriter& key(std::string_view name);
  JsonWriter& value(std::string_view text);
  JsonWriter& value(const char* text);  // null for nullptr
  JsonWriter& value(const std::string& text) { return value(std::string_view(text)); }
  JsonWriter& value(int64_t number);
  JsonWriter& value(uint64_t number);
  JsonWriter& value(int number) { return value(static_cast<int64_t>(number)); }
  JsonWriter& value(unsigned number) { return value(static_cast<uint64_t>(number)); }
  JsonWriter& value(double number);
  JsonWriter& value(bool flag);
  JsonWriter& null();
  template <typename T>
  JsonWriter& field(std::string_view name, const T& v) {
    key(name);
    return value(v);
  }

  const std::string& text() const { return out_; }

 private:
  void separate();
  std::string out_;
  std::vector<bool> has_items_;  // per open container: whether an item was written
  bool after_key_ = false;
};

// `text` as a JSON string literal, quotes included.
std::string json_string(std::string_view text, size_t max_bytes = JsonWriter::kMaxString);

// The report file, one JSON record a line, through an OutputFile (output_file.h: created with mode 0644,
// never through a symbolic link, a regular file of the user's own, appended to, each record whole or absent).
class ReportFile {
 public:
  // nullptr and a sentence in *problem when the file cannot be used.
  static std::unique_ptr<ReportFile> open(const std::string& path, bool private_file, std::string* problem);
  // Writes `record` and a newline as one record.
  void write_record(const std::string& record);
  const std::string& path() const { return path_; }
  OutputFile* file() const { return file_.get(); }

 private:
  ReportFile(std::unique_ptr<OutputFile> file, std::string path)
      : file_(std::move(file)), path_(std::move(path)) {}
  std::unique_ptr<OutputFile> file_;
  std::string path_;
};

}  // namespace blockrun
// SPDX-License-Identifier: MIT
