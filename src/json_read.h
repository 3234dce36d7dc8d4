// Reading JSON (the report's JSON lines, for `cuda-blockrun --localize`): a small DOM and a strict
// parser. The engine writes JSON with JsonWriter (report.h); this is the other direction.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace blockrun {

struct JsonValue {
  enum class Type { Null, Bool, Number, String, Array, Object };
  Type type = Type::Null;
  bool boolean = false;
  double number = 0;
  std::string string;
  std::vector<JsonValue> array;
  std::vector<std::pair<std::string, JsonValue>> object;  // in the text's order

  bool is_null() const { return type == Type::Null; }
  // The member `key` of an object, or nullptr (not an object, or no such member).
  const JsonValue* get(std::string_view key) const;
  // The member's string, or `fallback` where it is missing or not a string.
  std::string text(std::string_view key, std::string_view fallback = "") const;
  // The member's number, or `fallback`.
  double num(std::string_view key, double fallback = 0) const;
  // The member when it is an object (an array), or nullptr: missing, null, or of another type.
  const JsonValue* object_member(std::string_view key) const;
  const JsonValue* array_member(std::string_view key) const;
  // The member's number written as a whole number ("38"; "0" where it is missing).
  std::string whole(std::string_view key) const;
};

// Parses one JSON text (RFC 8259; nesting up to 64 deep). On failure: nullopt, and `error` says where.
std::optional<JsonValue> parse_json(std::string_view text, std::string* error = nullptr);

// Parses JSON lines (a report file): `visit` gets each record in order; empty lines are skipped. Returns how
// many lines were not JSON (a record cut short when the process that wrote it was killed).
size_t for_each_json_line(std::string_view contents, const std::function<void(JsonValue&&)>& visit);

}  // namespace blockrun
