// Reading the report's JSON lines back (for the wrapper: --localize and `report`), with nlohmann-json.
// The shim writes them with its own allocation-free JsonWriter (report/report_file.h) and never includes this
// file. The readers ask a record for its fields by name and take a missing field, or one of another type, as
// absent: the functions below say so once.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace blockrun {

// Objects keep the text's order, so that a record read back and written out again (job_json) is the same.
using Json = nlohmann::ordered_json;

// Parses one JSON text: RFC 8259 in UTF-8, no byte order mark, numbers within a double's range, nesting up
// to 64 deep (job_json writes records back recursively). On failure: nullopt, and `error` says why.
std::optional<Json> parse_json(std::string_view text, std::string* error = nullptr);

// Whether `text` is one JSON text that parse_json would accept, without building it: for the records a reader
// skips but must still count when they are cut short (a launch record, for the verdict).
bool valid_json(std::string_view text);

// Parses JSON lines (a report file): `visit` gets each record in order; empty lines are skipped. Returns how
// many lines were not JSON (a record cut short when the process that wrote it was killed).
size_t for_each_json_line(std::string_view contents, const std::function<void(Json&&)>& visit);

// The lines of `contents` (split at '\n'; a last line without one counts), empty ones skipped.
void for_each_line(std::string_view contents, const std::function<void(std::string_view)>& visit);
// The same, of the file at `path`, read a piece at a time: memory holds the longest line, not the file (a
// report of a million launch records; issue 40, N4). False where it cannot be opened or read, and `error`
// says why (strerror).
bool for_each_line_in_file(const std::string& path, const std::function<void(std::string_view)>& visit,
                           std::string* error = nullptr);

// The member `key` of an object, or nullptr (not an object, or no such member).
const Json* member(const Json& value, std::string_view key);
// The member's string, or `fallback` where it is missing or not a string.
std::string string_member(const Json& value, std::string_view key, std::string_view fallback = "");
// The member's number, or `fallback`.
double number_member(const Json& value, std::string_view key, double fallback = 0);
// The member's number written as a whole number ("38"; "0" where it is missing).
std::string whole_member(const Json& value, std::string_view key);
// The member when it is an object (an array), or nullptr: missing, null, or of another type.
const Json* object_member(const Json& value, std::string_view key);
const Json* array_member(const Json& value, std::string_view key);
// A value's number, or `fallback` where it is not a number.
double number_or(const Json& value, double fallback = 0);

}  // namespace blockrun
// SPDX-License-Identifier: MIT
