// Reading the report's JSON lines back (report_json.h).
#include "report_json.h"

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

}  // namespace

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
  size_t start = 0;
  while (start < contents.size()) {
    size_t end = contents.find('\n', start);
    if (end == std::string_view::npos) end = contents.size();
    std::string_view line = contents.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    std::optional<Json> record = parse_json(line);
    if (record) {
      visit(std::move(*record));
    } else {
      ++unreadable;
    }
  }
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
