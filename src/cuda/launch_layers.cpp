// Which layer owns a launch (launch_layers.h): the rules for a library call, once per call
// (those on every launch are inline in the header).
#include "cuda/launch_layers.h"

namespace blockrun {

LaunchOwner library_unit_owner(const ThreadLayers& inside) {
  LaunchOwner owner;
  owner.family = LaunchFamily::Cublas;
  owner.api = inside.library_api;
  owner.caller = inside.library_caller;
  owner.in_library_call = true;
  return owner;
}

LibraryCallRecord library_call_record(const Decision& unit, uint64_t kernels_seen) {
  bool named = unit.action != Action::Run && unit.named;
  return kernels_seen > 0 && !named ? LibraryCallRecord::ErrorOnly : LibraryCallRecord::Unit;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
