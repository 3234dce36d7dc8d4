// Which of the shim's optional driver entry points a driver has (driver_features.h).
#include "cuda/driver_features.h"

#include <fmt/format.h>

namespace blockrun {

const std::vector<DriverFeature>& driver_features() {
  // Never destroyed: the summary at exit (the shim's destructor runs after static destructors) points into
  // it.
  static const auto* features = new std::vector<DriverFeature>{
#define CUDA_BLOCKRUN_DRIVER_FEATURE(entry_point, since, feature, cost, fallback) \
  {#entry_point, since, feature, cost, fallback},
#include "cuda/driver_features.def"
  };
  return *features;
}

DriverSupport check_driver(int version, const std::function<bool(const char* entry_point)>& has) {
  DriverSupport support;
  support.version = version;
  if (version <= 0) return support;
  for (const DriverFeature& feature : driver_features())
    if (!has(feature.entry_point)) support.missing.push_back(&feature);
  return support;
}

std::string cuda_version_text(int version) {
  return fmt::format("{}.{}", version / 1000, version % 1000 / 10);
}

std::string driver_notice(const DriverSupport& support) {
  if (support.missing.empty()) return "";
  std::string text = fmt::format("the driver supports CUDA {}, older than this shim's newest entry points:",
                                 cuda_version_text(support.version));
  const char* separator = " ";
  for (const DriverFeature* feature : support.missing) {
    text += fmt::format("{}{} (CUDA {}) is missing: {}, {}", separator, feature->entry_point,
                        cuda_version_text(feature->since), feature->feature, feature->cost);
    separator = "; ";
  }
  return text + " (docs/install.md)";
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
