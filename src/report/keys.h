// The report's keys as C++ names (keys.def): key::seq is "seq". One list, so that the writers, the readers
// and the schema cannot drift apart (tests/unit/report_keys_test.cpp holds it against the schema).
#pragma once

namespace blockrun::key {

#define REPORT_KEY(name) inline constexpr const char name[] = #name;
#include "report/keys.def"
#undef REPORT_KEY

// Every key, for the schema test.
inline constexpr const char* kAll[] = {
#define REPORT_KEY(name) #name,
#include "report/keys.def"
#undef REPORT_KEY
};

}  // namespace blockrun::key
// SPDX-License-Identifier: MIT
