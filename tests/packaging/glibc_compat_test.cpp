// tools/glibc_compat, linked into this program as into the shipped binaries (with the C++ runtime linked in,
// as theirs is): each replacement does what the function it replaces does, here on glibc 2.36, and so do the
// equivalents that an older glibc gets (the real pthread_cond_clockwait and _dl_find_object cleared).
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

extern "C" {
typedef int (*ClockWait)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const struct timespec*);
typedef int (*FindObject)(void*, struct dl_find_object*);
extern ClockWait blockrun_compat_real_clockwait __attribute__((visibility("hidden")));
extern FindObject blockrun_compat_real_find_object __attribute__((visibility("hidden")));
extern char __libc_single_threaded;
}

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
  if (!ok) {
    std::fprintf(stderr, "FAILED: %s\n", what.c_str());
    ++failures;
  }
}

// The executable's constructors run once (glibc_compat_start_main.c): a C++ one and an attribute one.
int cxx_constructions = 0;
int attribute_constructions = 0;
struct Constructed {
  Constructed() { ++cxx_constructions; }
} constructed;
__attribute__((constructor)) void count_attribute_construction() {
  ++attribute_constructions;
}

void test_constructors() {
  check(cxx_constructions == 1,
        "a C++ global's constructor ran " + std::to_string(cxx_constructions) + " times");
  check(attribute_constructions == 1,
        "a constructor function ran " + std::to_string(attribute_constructions) + " times");
}

void test_stat() {
  char directory[] = "/tmp/glibc_compat_test.XXXXXX";
  check(mkdtemp(directory) != nullptr, "mkdtemp");
  std::string file = std::string(directory) + "/file", link = std::string(directory) + "/link";
  int fd = open(file.c_str(), O_CREAT | O_WRONLY, 0600);
  check(fd >= 0, "open");
  std::string text(1234, 'x');
  check(write(fd, text.data(), text.size()) == ssize_t(text.size()), "write");
  check(symlink("file", link.c_str()) == 0, "symlink");
  int directory_fd = open(directory, O_RDONLY | O_DIRECTORY);

  struct stat by_path {
  }, by_fd{}, by_link{}, at{}, at_nofollow{};
  check(stat(link.c_str(), &by_path) == 0 && by_path.st_size == 1234 && S_ISREG(by_path.st_mode), "stat");
  check(fstat(fd, &by_fd) == 0 && by_fd.st_ino == by_path.st_ino && by_fd.st_size == 1234, "fstat");
  check(lstat(link.c_str(), &by_link) == 0 && S_ISLNK(by_link.st_mode), "lstat");
  check(fstatat(directory_fd, "link", &at, 0) == 0 && at.st_ino == by_path.st_ino, "fstatat");
  check(fstatat(directory_fd, "link", &at_nofollow, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(at_nofollow.st_mode),
        "fstatat, AT_SYMLINK_NOFOLLOW");
  struct stat64 by_path64 {
  }, by_fd64{}, by_link64{}, at64{};
  check(stat64(file.c_str(), &by_path64) == 0 && by_path64.st_ino == by_path.st_ino, "stat64");
  check(fstat64(fd, &by_fd64) == 0 && by_fd64.st_size == 1234, "fstat64");
  check(lstat64(link.c_str(), &by_link64) == 0 && S_ISLNK(by_link64.st_mode), "lstat64");
  check(fstatat64(directory_fd, "file", &at64, 0) == 0 && at64.st_ino == by_path.st_ino, "fstatat64");
  struct stat missing {};
  errno = 0;
  check(stat((std::string(directory) + "/missing").c_str(), &missing) == -1 && errno == ENOENT,
        "stat: ENOENT");

  close(directory_fd);
  close(fd);
  unlink(link.c_str());
  unlink(file.c_str());
  rmdir(directory);
}

void test_arc4random() {
  std::set<uint32_t> values;
  for (int i = 0; i < 16; ++i) values.insert(arc4random());
  check(values.size() > 8, "arc4random gave " + std::to_string(values.size()) + " different values of 16");
}

void test_dl() {
  void* printf_address = dlsym(RTLD_DEFAULT, "printf");
  check(printf_address != nullptr, "dlsym(RTLD_DEFAULT, printf)");
  check(dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.2.5") != nullptr, "dlvsym(dlsym, GLIBC_2.2.5)");
  Dl_info info{};
  check(dladdr(printf_address, &info) != 0 && std::strstr(info.dli_fname, "libc.so") != nullptr, "dladdr");
  struct link_map* map = nullptr;
  check(
      dladdr1(printf_address, &info, reinterpret_cast<void**>(&map), RTLD_DL_LINKMAP) != 0 && map != nullptr,
      "dladdr1");
  void* handle = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
  check(handle != nullptr, "dlopen(libc.so.6, RTLD_NOLOAD)");
  struct link_map* handle_map = nullptr;
  if (handle)
    check(dlinfo(handle, RTLD_DI_LINKMAP, &handle_map) == 0 && handle_map == map, "dlinfo(RTLD_DI_LINKMAP)");
  if (handle) check(dlclose(handle) == 0, "dlclose");
  check(dlopen("/nonexistent/libnothing.so", RTLD_NOW) == nullptr && dlerror() != nullptr,
        "dlopen fails, dlerror");
}

// One address in each loaded object's first PT_LOAD segment.
int collect_addresses(struct dl_phdr_info* info, size_t, void* data) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X)) {
      static_cast<std::vector<uintptr_t>*>(data)->push_back(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr +
                                                            info->dlpi_phdr[i].p_memsz / 2);
      break;
    }
  }
  return 0;
}

// The equivalent (dl_iterate_phdr) against the real _dl_find_object, for an address in every loaded object.
void compare_find_object(FindObject real, const char* when) {
  std::vector<uintptr_t> addresses;
  dl_iterate_phdr(collect_addresses, &addresses);
  addresses.push_back(1);  // in no object
  check(addresses.size() > 4, std::string("addresses of the loaded objects ") + when);
  for (int round = 0; round < 2; ++round) {  // the second round from the cache
    for (uintptr_t address : addresses) {
      struct dl_find_object expected {
      }, found{};
      int expected_result = real(reinterpret_cast<void*>(address), &expected);
      int found_result = _dl_find_object(reinterpret_cast<void*>(address), &found);
      char what[160];
      std::snprintf(what, sizeof what, "_dl_find_object(%#lx) %s, round %d",
                    static_cast<unsigned long>(address), when, round);
      check(found_result == expected_result, std::string(what) + ": result");
      if (found_result == 0 && expected_result == 0) {
        check(found.dlfo_eh_frame == expected.dlfo_eh_frame, std::string(what) + ": eh_frame");
        check(found.dlfo_map_start <= reinterpret_cast<void*>(address) &&
                  reinterpret_cast<void*>(address) < found.dlfo_map_end,
              std::string(what) + ": range");
      }
    }
  }
}

__attribute__((noinline)) void throw_deep(int depth) {
  if (depth == 0) throw std::runtime_error("deep");
  throw_deep(depth - 1);
  asm volatile("");  // not a tail call: one frame per level
}

void test_find_object() {
  FindObject real = blockrun_compat_real_find_object;
  check(real != nullptr, "the real _dl_find_object found (glibc 2.35+)");
  if (!real) return;
  blockrun_compat_real_find_object = nullptr;
  compare_find_object(real, "before a dlopen");
  void* added = dlopen("libresolv.so.2", RTLD_NOW);
  compare_find_object(real, "after a dlopen");
  if (added) dlclose(added);
  compare_find_object(real, "after a dlclose");
  // Exceptions through the equivalent.
  bool caught = false;
  try {
    throw_deep(8);
  } catch (const std::runtime_error& error) {
    caught = std::string(error.what()) == "deep";
  }
  check(caught, "an exception through 8 frames, unwound with the equivalent of _dl_find_object");
  blockrun_compat_real_find_object = real;
}

double elapsed_seconds(const struct timespec& start) {
  struct timespec now;
  clock_gettime(CLOCK_MONOTONIC, &now);
  return double(now.tv_sec - start.tv_sec) + double(now.tv_nsec - start.tv_nsec) / 1e9;
}

void timed_wait(clockid_t clock, const char* name) {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t condition = PTHREAD_COND_INITIALIZER;
  struct timespec start, deadline;
  clock_gettime(CLOCK_MONOTONIC, &start);
  clock_gettime(clock, &deadline);
  deadline.tv_nsec += 50 * 1000 * 1000;
  if (deadline.tv_nsec >= 1000000000) {
    deadline.tv_nsec -= 1000000000;
    deadline.tv_sec += 1;
  }
  pthread_mutex_lock(&mutex);
  int result = pthread_cond_clockwait(&condition, &mutex, clock, &deadline);
  pthread_mutex_unlock(&mutex);
  double waited = elapsed_seconds(start);
  check(result == ETIMEDOUT, std::string("pthread_cond_clockwait on ") + name + ": ETIMEDOUT");
  check(waited >= 0.045 && waited < 5, std::string("pthread_cond_clockwait on ") + name + " waited " +
                                           std::to_string(waited) + " s for 0.05");
}

void test_clockwait() {
  ClockWait real = blockrun_compat_real_clockwait;
  check(real != nullptr, "the real pthread_cond_clockwait found (glibc 2.30+)");
  for (int with_real = 1; with_real >= 0; --with_real) {
    blockrun_compat_real_clockwait = with_real ? real : nullptr;
    timed_wait(CLOCK_MONOTONIC, with_real ? "CLOCK_MONOTONIC" : "CLOCK_MONOTONIC (equivalent)");
    timed_wait(CLOCK_REALTIME, with_real ? "CLOCK_REALTIME" : "CLOCK_REALTIME (equivalent)");
    // libstdc++'s condition_variable on the steady clock, woken by another thread.
    std::mutex mutex;
    std::condition_variable condition;
    bool ready = false;
    std::thread notifier([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::lock_guard<std::mutex> lock(mutex);
      ready = true;
      condition.notify_one();
    });
    std::unique_lock<std::mutex> lock(mutex);
    bool woken = condition.wait_for(lock, std::chrono::seconds(10), [&] { return ready; });
    lock.unlock();
    notifier.join();
    check(woken, "condition_variable::wait_for woken by another thread");
  }
  blockrun_compat_real_clockwait = real;
}

// Threads, thread-specific data, once, a timed lock, the signal mask: the forwarders to the old versions.
pthread_once_t once = PTHREAD_ONCE_INIT;
int once_runs = 0;
std::atomic<int> destroyed{0};

void test_threads() {
  check(__libc_single_threaded == 0, "__libc_single_threaded is 0 (always the atomic path)");
  pthread_key_t key;
  check(pthread_key_create(&key, [](void*) { ++destroyed; }) == 0, "pthread_key_create");
  std::vector<std::thread> threads;
  std::atomic<int> counted{0};
  for (int i = 0; i < 4; ++i) {
    threads.emplace_back([&, i] {
      pthread_once(&once, [] { ++once_runs; });
      pthread_setspecific(key, reinterpret_cast<void*>(uintptr_t(i + 1)));
      if (pthread_getspecific(key) == reinterpret_cast<void*>(uintptr_t(i + 1))) ++counted;
      auto shared = std::make_shared<int>(i);
      auto copy = shared;
      if (*copy == i) ++counted;
    });
  }
  for (auto& thread : threads) thread.join();
  check(counted == 8 && once_runs == 1 && destroyed == 4, "threads, pthread_once, thread-specific data");
  check(pthread_key_delete(key) == 0, "pthread_key_delete");

  pthread_t detached;
  check(pthread_create(
            &detached, nullptr, [](void*) -> void* { return nullptr; }, nullptr) == 0 &&
            pthread_detach(detached) == 0,
        "pthread_create, pthread_detach");

  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_mutex_lock(&mutex);
  std::thread other([&] {
    struct timespec deadline;
    clock_gettime(CLOCK_REALTIME, &deadline);
    deadline.tv_nsec += 20 * 1000 * 1000;
    if (deadline.tv_nsec >= 1000000000) {
      deadline.tv_nsec -= 1000000000;
      deadline.tv_sec += 1;
    }
    check(pthread_mutex_timedlock(&mutex, &deadline) == ETIMEDOUT, "pthread_mutex_timedlock: ETIMEDOUT");
  });
  other.join();
  pthread_mutex_unlock(&mutex);

  sigset_t blocked, old;
  sigemptyset(&blocked);
  sigaddset(&blocked, SIGUSR1);
  check(pthread_sigmask(SIG_BLOCK, &blocked, &old) == 0, "pthread_sigmask");
  sigset_t now;
  pthread_sigmask(SIG_SETMASK, nullptr, &now);
  check(sigismember(&now, SIGUSR1) == 1, "pthread_sigmask blocked SIGUSR1");
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

}  // namespace

int main() {
  test_constructors();
  test_stat();
  test_arc4random();
  test_dl();
  test_find_object();
  test_clockwait();
  test_threads();
  if (failures) {
    std::fprintf(stderr, "glibc_compat_test: %d failures\n", failures);
    return 1;
  }
  std::printf("glibc_compat_test: every replacement agrees with glibc's function\n");
  return 0;
}
// SPDX-License-Identifier: MIT
