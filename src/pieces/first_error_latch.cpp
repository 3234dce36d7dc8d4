// Taking the first error once, and waiting for its record (first_error_latch.h).
#include "pieces/first_error_latch.h"

#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <initializer_list>

namespace blockrun {

namespace {

long thread_id() {
  return static_cast<long>(syscall(SYS_gettid));
}

}  // namespace

bool FirstErrorLatch::take() {
  bool expected = false;
  if (taken_.compare_exchange_strong(expected, true)) return true;
  count_later();
  return false;
}

FirstErrorLatch::Writing::Writing(FirstErrorLatch& latch) : latch_(latch) {
  latch_.writer_.store(thread_id(), std::memory_order_release);
  latch_.writing_.store(true, std::memory_order_release);
  sigset_t termination;
  sigemptyset(&termination);
  for (int number : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaddset(&termination, number);
  pthread_sigmask(SIG_BLOCK, &termination, &saved_);
}

FirstErrorLatch::Writing::~Writing() {
  latch_.writing_.store(false, std::memory_order_release);
  pthread_sigmask(SIG_SETMASK, &saved_, nullptr);  // a signal held back is delivered now
}

bool FirstErrorLatch::wait_for_record(int max_ms) const {
  if (writer_.load(std::memory_order_acquire) == thread_id())
    return !writing_.load(std::memory_order_acquire);
  // Taken but its writer not yet registered: a few instructions away from writing.
  auto busy = [&] {
    return writing_.load(std::memory_order_acquire) ||
           (taken_.load(std::memory_order_acquire) && writer_.load(std::memory_order_acquire) == 0);
  };
  for (int waited = 0; busy(); ++waited) {
    if (waited >= max_ms) return false;
    timespec millisecond{0, 1000000};
    nanosleep(&millisecond, nullptr);
  }
  return true;
}

}  // namespace blockrun
// SPDX-License-Identifier: MIT
