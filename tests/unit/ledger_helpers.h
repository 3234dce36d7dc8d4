// What the tests of the launch ledger and of the pieces built on it (breadcrumb slots) share: a stream by
// handle, and a launch numbered and recorded on a stream.
#pragma once

#include <cstdint>

#include "pieces/launch_ledger.h"

namespace blockrun::testing {

inline StreamId stream(uintptr_t handle) {
  StreamId id;
  id.handle = reinterpret_cast<const void*>(handle);
  return id;
}

// Numbers a launch on `state` and records it; its number.
inline uint64_t record_launch(LaunchLedger& ledger, StreamState* state) {
  LaunchRecord record;
  record.sequence = ledger.number_launch();
  record.stream = state->id;
  state->push(record, nullptr);
  return record.sequence;
}

}  // namespace blockrun::testing
// SPDX-License-Identifier: MIT
