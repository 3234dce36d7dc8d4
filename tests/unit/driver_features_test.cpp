// The shim's optional driver entry points (src/cuda/driver_features.def, issue 42): which a driver lacks, and
// the one line the log says of them.
#include "cuda/driver_features.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace blockrun {
namespace {

// What driver 535 (CUDA 12.2) exports of the table's entry points: none of them.
bool driver_535_has(const char*) {
  return false;
}

TEST(DriverFeatures, Driver535LacksEveryRowAndTheNoticeSaysWhatEachCosts) {
  DriverSupport support = check_driver(12020, driver_535_has);
  ASSERT_EQ(support.missing.size(), driver_features().size());
  std::string notice = driver_notice(support);
  EXPECT_EQ(
      notice.rfind("the driver supports CUDA 12.2, older than this shim's newest entry points: "
                   "cuKernelGetName (CUDA 12.3) is missing: kernel names of runtime launches, named from "
                   "the kernel's registration (cuLibraryGetKernel's name) instead; ",
                   0),
      0u)
      << notice;
  EXPECT_NE(
      notice.find("; cuLogsRegisterCallback (CUDA 12.9) is missing: the driver's error log, no driver_log"),
      std::string::npos)
      << notice;
  EXPECT_EQ(notice.substr(notice.size() - 18), " (docs/install.md)") << notice;
}

TEST(DriverFeatures, Driver570LacksOnlyTheLogAndNoDriverIsNoNotice) {
  const std::set<std::string> has = {"cuKernelGetName", "cuFuncGetName", "cuStreamGetCaptureInfo_v3",
                                     "cuEventElapsedTime_v2"};
  DriverSupport support = check_driver(12080, [&](const char* name) { return has.count(name) > 0; });
  ASSERT_EQ(support.missing.size(), 1u);
  EXPECT_STREQ(support.missing[0]->entry_point, "cuLogsRegisterCallback");
  EXPECT_STREQ(support.missing[0]->fallback, "");
  EXPECT_EQ(driver_notice(check_driver(13000, [](const char*) { return true; })), "");
  EXPECT_TRUE(check_driver(0, driver_535_has).missing.empty());  // no driver: nothing to tell of it
  EXPECT_EQ(cuda_version_text(12020), "12.2");
  EXPECT_EQ(cuda_version_text(13000), "13.0");
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
