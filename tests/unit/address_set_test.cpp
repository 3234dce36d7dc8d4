// The set of addresses that only grows (src/util/address_set.h): what was inserted is found and nothing else
// is, an insert with no room among its probes fails and says so, and threads inserting at once lose nothing.
#include "util/address_set.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace blockrun {
namespace {

TEST(AddressSet, FindsWhatWasInsertedAndNothingElse) {
  AddressSet set(1024);
  EXPECT_FALSE(set.contains(0x7f0000001000));  // nothing allocated yet
  for (uintptr_t address = 0x7f0000001000; address < 0x7f0000001000 + 500 * 48; address += 48) {
    ASSERT_TRUE(set.insert(address));
  }
  EXPECT_TRUE(set.insert(0x7f0000001000));  // again: still in, true
  for (uintptr_t address = 0x7f0000001000; address < 0x7f0000001000 + 500 * 48; address += 48) {
    EXPECT_TRUE(set.contains(address)) << std::hex << address;
    EXPECT_FALSE(set.contains(address + 16)) << std::hex << address + 16;
  }
  EXPECT_FALSE(set.insert(0));
  EXPECT_FALSE(set.contains(0));
}

TEST(AddressSet, AnInsertWithNoRoomFailsAndIsNotFound) {
  AddressSet set(AddressSet::kProbes);  // as many slots as probes: the table fills
  std::vector<uintptr_t> in;
  uintptr_t refused = 0;
  for (uintptr_t address = 0x10000; address < 0x10000 + 64 * 16 && !refused; address += 16) {
    if (set.insert(address)) {
      in.push_back(address);
    } else {
      refused = address;
    }
  }
  ASSERT_EQ(in.size(), AddressSet::kProbes);
  ASSERT_NE(refused, 0u);
  EXPECT_FALSE(set.contains(refused));
  for (uintptr_t address : in) EXPECT_TRUE(set.contains(address));
}

TEST(AddressSet, ThreadsInsertingAtOnceLoseNothing) {
  AddressSet set(8192);
  constexpr int kThreads = 4;
  constexpr uintptr_t kEach = 1000;
  std::vector<std::thread> threads;
  std::vector<int> failed(kThreads, 0);
  for (int thread = 0; thread < kThreads; ++thread) {
    threads.emplace_back([&set, &failed, thread] {
      // Overlapping ranges: each address is inserted by two threads.
      uintptr_t first = 0x7f0000000000 + uintptr_t(thread) * kEach / 2 * 32;
      for (uintptr_t i = 0; i < kEach; ++i) failed[thread] += !set.insert(first + i * 32);
    });
  }
  for (auto& thread : threads) thread.join();
  for (int thread = 0; thread < kThreads; ++thread) EXPECT_EQ(failed[thread], 0);
  uintptr_t last = 0x7f0000000000 + (uintptr_t(kThreads - 1) * kEach / 2 + kEach) * 32;
  for (uintptr_t address = 0x7f0000000000; address < last; address += 32) EXPECT_TRUE(set.contains(address));
  EXPECT_FALSE(set.contains(last));
}

}  // namespace
}  // namespace blockrun
// SPDX-License-Identifier: MIT
