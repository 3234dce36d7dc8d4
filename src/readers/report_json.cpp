// Reading the report's JSON lines back (report_json.h).
#include "report_json.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include <fmt/format.h>

namespace blockrun {

namespace {

constexpr int kMaxDepth = 64;

// Stops the parse at a value nested more than kMaxDepth deep. nlohmann's callback gets, for a container's
// start and for a scalar, how many containers enclose it.
class DepthLimit {
 public:
  explicit DepthLimit(bool* exceeded) : exceeded_(exceeded) {}
  bool operator()(int depth, nlohmann::json::parse_event_t event, Json&) {
    using Event = nlohmann::json::parse_event_t;
    bool opens = event == Event::object_start || event == Event::array_start || event == Event::value;
    if (opens && depth > kMaxDepth) *exceeded_ = true;
    return !*exceeded_;  // false: nlohmann drops the rest rather than build it
  }

 private:
  bool* exceeded_;
};

// valid_json's parse: nothing built, the same depth limit as DepthLimit (a container or a scalar inside more
// than kMaxDepth containers ends it).
class Validator {
 public:
  bool null() { return scalar(); }
  bool boolean(bool) { return scalar(); }
  bool number_integer(Json::number_integer_t) { return scalar(); }
  bool number_unsigned(Json::number_unsigned_t) { return scalar(); }
  bool number_float(Json::number_float_t, const Json::string_t&) { return scalar(); }
  bool string(Json::string_t&) { return scalar(); }
  bool binary(Json::binary_t&) { return scalar(); }
  bool start_object(size_t) { return open(); }
  bool key(Json::string_t&) { return true; }
  bool end_object() { return close(); }
  bool start_array(size_t) { return open(); }
  bool end_array() { return close(); }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) { return false; }

 private:
  bool scalar() const { return depth_ <= kMaxDepth; }
  bool open() { return depth_++ <= kMaxDepth; }
  bool close() {
    --depth_;
    return true;
  }
  int depth_ = 0;  // the containers open
};

constexpr size_t kReadBytes = 1 << 20;  // a read(2) per MiB of a report

}  // namespace

bool valid_json(std::string_view text) {
  if (text.substr(0, 3) == "\xEF\xBB\xBF") return false;  // as parse_json
  Validator validator;
  try {
    return Json::sax_parse(text.begin(), text.end(), &validator);
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

void for_each_line(std::string_view contents, const std::function<void(std::string_view)>& visit) {
  size_t start = 0;
  while (start < contents.size()) {
    size_t end = contents.find('\n', start);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(start, end - start);
    start = end + 1;
    if (!line.empty()) visit(line);
  }
}

bool for_each_line_in_file(const std::string& path, const std::function<void(std::string_view)>& visit,
                           std::string* error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (error) *error = std::strerror(errno);
    return false;
  }
  std::vector<char> buffer(kReadBytes);
  std::string partial;  // a line begun in an earlier piece
  bool read_all = false;
  for (;;) {
    ssize_t got = ::read(fd, buffer.data(), buffer.size());
    if (got < 0 && errno == EINTR) continue;
    if (got < 0) {
      if (error) *error = std::strerror(errno);
      break;
    }
    if (got == 0) {
      read_all = true;
      break;
    }
    std::string_view piece(buffer.data(), static_cast<size_t>(got));
    size_t last_newline = piece.rfind('\n');
    if (last_newline == std::string_view::npos) {
      partial.append(piece);
      continue;
    }
    // The line begun in an earlier piece ends at this piece's first newline; the rest is visited in place, so
    // that `partial` holds at most one line, never a piece.
    size_t first_newline = piece.find('\n');
    if (!partial.empty()) {
      partial.append(piece.substr(0, first_newline));
      for_each_line(partial, visit);
      partial.clear();
    } else {
      for_each_line(piece.substr(0, first_newline), visit);
    }
    if (last_newline > first_newline)
      for_each_line(piece.substr(first_newline + 1, last_newline - first_newline - 1), visit);
    partial.append(piece.substr(last_newline + 1));
  }
  ::close(fd);
  if (read_all) for_each_line(partial, visit);
  return read_all;
}

std::optional<Json> parse_json(std::string_view text, std::string* error) {
  // JSON text has no byte order mark, and nlohmann would skip one at the start: such a line is no record.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") {
    if (error) *error = "a byte order mark before the value";
    return std::nullopt;
  }
  bool too_deep = false;
  try {
    Json value = Json::parse(text.begin(), text.end(), DepthLimit(&too_deep));
    if (!too_deep) return value;
    if (error) *error = fmt::format("nested more than {} deep", kMaxDepth);
  } catch (const nlohmann::json::exception& problem) {  // not JSON, or a number past a double's range
    if (error) *error = problem.what();
  }
  return std::nullopt;
}

size_t for_each_json_line(std::string_view contents, const std::function<void(Json&&)>& visit) {
  size_t unreadable = 0;
  for_each_line(contents, [&](std::string_view line) {
    std::optional<Json> record = parse_json(line);
    if (record) {
      visit(std::move(*record));
    } else {
      ++unreadable;
    }
  });
  return unreadable;
}

const Json* member(const Json& value, std::string_view key) {
  if (!value.is_object()) return nullptr;
  auto found = value.find(key);
  return found == value.end() ? nullptr : &*found;
}

std::string string_member(const Json& value, std::string_view key, std::string_view fallback) {
  const Json* found = member(value, key);
  return found && found->is_string() ? found->get<std::string>() : std::string(fallback);
}

double number_member(const Json& value, std::string_view key, double fallback) {
  const Json* found = member(value, key);
  return found ? number_or(*found, fallback) : fallback;
}

std::string whole_member(const Json& value, std::string_view key) {
  return fmt::format("{:.0f}", number_member(value, key));
}

const Json* object_member(const Json& value, std::string_view key) {
  const Json* found = member(value, key);
  return found && found->is_object() ? found : nullptr;
}

const Json* array_member(const Json& value, std::string_view key) {
  const Json* found = member(value, key);
  return found && found->is_array() ? found : nullptr;
}

double number_or(const Json& value, double fallback) {
  return value.is_number() ? value.get<double>() : fallback;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
