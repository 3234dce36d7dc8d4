// The report's one list of keys (src/report/keys.def) against its schema (docs/report.schema.json): every key
// the writers and readers may use is a property the schema describes, and every property of the schema is in
// the list, so that neither can gain a key the other does not know.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <set>
#include <string>

#include "report/keys.h"

namespace blockrun {
namespace {

void collect_properties(const nlohmann::json& node, std::set<std::string>* out) {
  if (node.is_object()) {
    auto properties = node.find("properties");
    if (properties != node.end() && properties->is_object())
      for (const auto& [name, schema] : properties->items()) out->insert(name);
    for (const auto& [name, child] : node.items()) collect_properties(child, out);
  } else if (node.is_array()) {
    for (const nlohmann::json& child : node) collect_properties(child, out);
  }
}

std::set<std::string> schema_properties() {
  std::ifstream file(std::string(CUDA_BLOCKRUN_SOURCE_DIR) + "/docs/report.schema.json");
  std::set<std::string> found;
  collect_properties(nlohmann::json::parse(file), &found);
  return found;
}

TEST(ReportKeys, TheListAndTheSchemaNameTheSameKeys) {
  std::set<std::string> schema = schema_properties();
  ASSERT_GT(schema.size(), 50u);
  std::set<std::string> listed(std::begin(key::kAll), std::end(key::kAll));
  for (const std::string& name : listed) EXPECT_TRUE(schema.count(name)) << name << " is not in the schema";
  for (const std::string& name : schema) EXPECT_TRUE(listed.count(name)) << name << " is not in keys.def";
  EXPECT_EQ(listed.size(), std::size(key::kAll)) << "a key is listed twice";
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
