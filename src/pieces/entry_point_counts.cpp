// Launches by entry point: the first launch of a thread through an entry point, and the totals
// (entry_point_counts.h).
#include "pieces/entry_point_counts.h"

#include <algorithm>

namespace blockrun {

namespace {
constexpr size_t kCapacity = 1 << 7;  // launch entry points: a few dozen exist
}  // namespace

EntryPointCounts::EntryPointCounts() : counts_(kCapacity) {}

void EntryPointCounts::count_first(const char* api) {
  if (t_kept_.owner != serial_) t_kept_ = Kept{serial_, {}, {}, {}, 0};
  Count* entry = counts_.find_or_insert(reinterpret_cast<uint64_t>(api), [&] {
    auto* created = new Count;
    created->api = api;
    return created;
  });
  if (!entry) return;
  uint32_t thread = current_thread_number();
  Tally* tally = nullptr;
  // This thread's tally of it, where it has one (a thread cycling through more entry points than it keeps).
  for (Tally* known = tallies_.load(std::memory_order_acquire); known && !tally; known = known->next)
    if (known->count == entry && known->thread == thread) tally = known;
  bool shared = !tally && tally_count_.fetch_add(1, std::memory_order_relaxed) >= kMaxTallies;
  if (!tally && !shared) {
    tally = new Tally{entry, thread, {0}, tallies_.load(std::memory_order_relaxed)};
    while (!tallies_.compare_exchange_weak(tally->next, tally, std::memory_order_release,
                                           std::memory_order_relaxed)) {
    }
  }
  int at = t_kept_.next;
  t_kept_.next = (at + 1) % Kept::kKept;
  t_kept_.api[at] = api;
  t_kept_.launches[at] = shared ? &entry->launches : &tally->launches;
  t_kept_.shared[at] = shared;
  count(api);
}

std::vector<std::pair<std::string, uint64_t>> EntryPointCounts::totals() const {
  std::vector<std::pair<std::string, uint64_t>> totals;
  counts_.for_each([&](Count& count) {
    uint64_t launches = count.launches.load();
    for (Tally* tally = tallies_.load(std::memory_order_acquire); tally; tally = tally->next)
      if (tally->count == &count) launches += tally->launches.load(std::memory_order_relaxed);
    totals.emplace_back(count.api, launches);
  });
  std::sort(totals.begin(), totals.end());
  return totals;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
