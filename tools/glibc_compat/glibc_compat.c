// glibc compatibility of the shipped binaries (the shim, the rebind library, the wrapper), x86-64.
//
// Built against the build machine's glibc (2.36 on Debian 12), they would need symbol versions up to
// GLIBC_2.36 and refuse to load on an older one ("version `GLIBC_2.34' not found"). The wheel's tag claims
// what CUDA_BLOCKRUN_WHEEL_GLIBC says (CMakeLists.txt, "the Python package": 2.28, RHEL 8 and Ubuntu 20.04),
// and tests/packaging checks every binary against that number. Linked into each of them as an object file,
// this file's definitions (hidden: never exported) take the place of libc's for every reference of the link:
// the project's own objects and the libstdc++/libgcc archives linked in (-static-libstdc++ -static-libgcc),
// whose objects could not be recompiled with a .symver directive. Three kinds:
//  - moved into libc in glibc 2.34 under a new version (pthread_*, dl*; pthread_sigmask 2.32): the old
//  version
//    (GLIBC_2.2.5, dladdr1 GLIBC_2.3.3), which glibc 2.34+ keeps as an alias of the same function.
//    Before 2.34 it lives in libpthread.so.0 or libdl.so.2, which the link names as needed
//    (cuda_blockrun_glibc_compat()).
//  - new functions: stat & co. (2.33; before, inline wrappers of __xstat & co., which glibc still exports),
//    arc4random (2.36, libstdc++'s random_device), pthread_cond_clockwait (2.30, libstdc++'s
//    condition_variable on the steady clock, spdlog's), _dl_find_object (2.35, libgcc's unwinder): the real
//    one where the running glibc has it (looked up once, at load time), otherwise an equivalent.
//  - __libc_single_threaded (2.32, a variable libstdc++ reads to skip atomics): ours always says "not
//    single-threaded", so the atomic path is taken, as before glibc 2.32.
// Not here: dlsym (glibc_compat_dlsym.c; the shim defines its own) and __libc_start_main (executables only,
// glibc_compat_start_main.c). A name that a binary defines itself must not be defined here too: the link then
// fails with "multiple definition" (loudly, rather than a hidden definition hiding an export).
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#if !defined(__x86_64__)
#error "tools/glibc_compat is written for x86-64 (its old symbol versions and _STAT_VER are that ABI's)"
#endif

#define COMPAT __attribute__((visibility("hidden")))
// old_NAME, in this file, is NAME@VERSION for the linker: the old version, not the default one.
#define OLD_VERSION(name, version) __asm__(".symver old_" #name ", " #name "@" version)

// ---- moved into libc in glibc 2.34: forwarded to the old version ----
OLD_VERSION(pthread_create, "GLIBC_2.2.5");
OLD_VERSION(pthread_join, "GLIBC_2.2.5");
OLD_VERSION(pthread_detach, "GLIBC_2.2.5");
OLD_VERSION(pthread_once, "GLIBC_2.2.5");
OLD_VERSION(pthread_key_create, "GLIBC_2.2.5");
OLD_VERSION(__pthread_key_create, "GLIBC_2.2.5");
OLD_VERSION(pthread_key_delete, "GLIBC_2.2.5");
OLD_VERSION(pthread_getspecific, "GLIBC_2.2.5");
OLD_VERSION(pthread_setspecific, "GLIBC_2.2.5");
OLD_VERSION(pthread_mutex_timedlock, "GLIBC_2.2.5");
OLD_VERSION(pthread_sigmask, "GLIBC_2.2.5");
OLD_VERSION(dlopen, "GLIBC_2.2.5");
OLD_VERSION(dlclose, "GLIBC_2.2.5");
OLD_VERSION(dlerror, "GLIBC_2.2.5");
OLD_VERSION(dladdr, "GLIBC_2.2.5");
OLD_VERSION(dladdr1, "GLIBC_2.3.3");
OLD_VERSION(dlinfo, "GLIBC_2.3.3");
OLD_VERSION(dlvsym, "GLIBC_2.2.5");

extern int old_pthread_create(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);
extern int old_pthread_join(pthread_t, void**);
extern int old_pthread_detach(pthread_t);
extern int old_pthread_once(pthread_once_t*, void (*)(void));
extern int old_pthread_key_create(pthread_key_t*, void (*)(void*));
extern int old___pthread_key_create(pthread_key_t*, void (*)(void*));
extern int old_pthread_key_delete(pthread_key_t);
extern void* old_pthread_getspecific(pthread_key_t);
extern int old_pthread_setspecific(pthread_key_t, const void*) __attribute__((access(none, 2)));
extern int old_pthread_mutex_timedlock(pthread_mutex_t*, const struct timespec*);
extern int old_pthread_sigmask(int, const sigset_t*, sigset_t*);
extern void* old_dlopen(const char*, int);
extern int old_dlclose(void*);
extern char* old_dlerror(void);
extern int old_dladdr(const void*, Dl_info*);
extern int old_dladdr1(void*, Dl_info*, void**, int);
extern int old_dlinfo(void*, int, void*);
extern void* old_dlvsym(void*, const char*, const char*);

// dlopen, dlvsym: glibc takes the caller's object from the return address (RTLD_NEXT, $ORIGIN, the
// namespace). The forwarder is in the same object as its caller, so that object is the same.
COMPAT int pthread_create(pthread_t* restrict thread, const pthread_attr_t* restrict attributes,
                          void* (*start)(void*), void* restrict argument) {
  return old_pthread_create(thread, attributes, start, argument);
}
COMPAT int pthread_join(pthread_t thread, void** result) {
  return old_pthread_join(thread, result);
}
COMPAT int pthread_detach(pthread_t thread) {
  return old_pthread_detach(thread);
}
COMPAT int pthread_once(pthread_once_t* once, void (*routine)(void)) {
  return old_pthread_once(once, routine);
}
COMPAT int pthread_key_create(pthread_key_t* key, void (*destructor)(void*)) {
  return old_pthread_key_create(key, destructor);
}
// libgcc and libstdc++ test this one's address (weak) to know whether threads may exist (__gthread_active_p):
// defined, it says they may, which is true of every program since glibc 2.34.
COMPAT int __pthread_key_create(pthread_key_t* key, void (*destructor)(void*)) {
  return old___pthread_key_create(key, destructor);
}
COMPAT int pthread_key_delete(pthread_key_t key) {
  return old_pthread_key_delete(key);
}
COMPAT void* pthread_getspecific(pthread_key_t key) {
  return old_pthread_getspecific(key);
}
COMPAT int pthread_setspecific(pthread_key_t key, const void* value) {
  return old_pthread_setspecific(key, value);
}
COMPAT int pthread_mutex_timedlock(pthread_mutex_t* restrict mutex,
                                   const struct timespec* restrict deadline) {
  return old_pthread_mutex_timedlock(mutex, deadline);
}
COMPAT int pthread_sigmask(int how, const sigset_t* restrict set, sigset_t* restrict old) {
  return old_pthread_sigmask(how, set, old);
}
COMPAT void* dlopen(const char* file, int mode) {
  return old_dlopen(file, mode);
}
COMPAT int dlclose(void* handle) {
  return old_dlclose(handle);
}
COMPAT char* dlerror(void) {
  return old_dlerror();
}
COMPAT int dladdr(const void* address, Dl_info* info) {
  return old_dladdr(address, info);
}
COMPAT int dladdr1(const void* address, Dl_info* info, void** extra, int flags) {
  return old_dladdr1((void*)address, info, extra, flags);
}
COMPAT int dlinfo(void* restrict handle, int request, void* restrict argument) {
  return old_dlinfo(handle, request, argument);
}
COMPAT void* dlvsym(void* restrict handle, const char* restrict name, const char* restrict version) {
  return old_dlvsym(handle, name, version);
}

// ---- stat & co.: functions since glibc 2.33, before that inline calls of __xstat & co. (still exported)
// ---- _STAT_VER_LINUX, the struct stat of x86-64 (the same as struct stat64).
enum { kStatVersion = 1 };
OLD_VERSION(__xstat, "GLIBC_2.2.5");
OLD_VERSION(__lxstat, "GLIBC_2.2.5");
OLD_VERSION(__fxstat, "GLIBC_2.2.5");
OLD_VERSION(__fxstatat, "GLIBC_2.4");
OLD_VERSION(__xstat64, "GLIBC_2.2.5");
OLD_VERSION(__lxstat64, "GLIBC_2.2.5");
OLD_VERSION(__fxstat64, "GLIBC_2.2.5");
OLD_VERSION(__fxstatat64, "GLIBC_2.4");
extern int old___xstat(int, const char*, struct stat*);
extern int old___lxstat(int, const char*, struct stat*);
extern int old___fxstat(int, int, struct stat*);
extern int old___fxstatat(int, int, const char*, struct stat*, int);
extern int old___xstat64(int, const char*, struct stat64*);
extern int old___lxstat64(int, const char*, struct stat64*);
extern int old___fxstat64(int, int, struct stat64*);
extern int old___fxstatat64(int, int, const char*, struct stat64*, int);

COMPAT int stat(const char* restrict path, struct stat* restrict out) {
  return old___xstat(kStatVersion, path, out);
}
COMPAT int lstat(const char* restrict path, struct stat* restrict out) {
  return old___lxstat(kStatVersion, path, out);
}
COMPAT int fstat(int fd, struct stat* out) {
  return old___fxstat(kStatVersion, fd, out);
}
COMPAT int fstatat(int directory, const char* restrict path, struct stat* restrict out, int flags) {
  return old___fxstatat(kStatVersion, directory, path, out, flags);
}
COMPAT int stat64(const char* restrict path, struct stat64* restrict out) {
  return old___xstat64(kStatVersion, path, out);
}
COMPAT int lstat64(const char* restrict path, struct stat64* restrict out) {
  return old___lxstat64(kStatVersion, path, out);
}
COMPAT int fstat64(int fd, struct stat64* out) {
  return old___fxstat64(kStatVersion, fd, out);
}
COMPAT int fstatat64(int directory, const char* restrict path, struct stat64* restrict out, int flags) {
  return old___fxstatat64(kStatVersion, directory, path, out, flags);
}

// ---- __libc_single_threaded (2.32) ----
// libstdc++ skips atomic reference counts while it is nonzero. Zero: always atomic, which is never wrong.
COMPAT char __libc_single_threaded = 0;

// ---- arc4random (2.36): libstdc++'s random_device ----
COMPAT uint32_t arc4random(void) {
  uint32_t value;
  unsigned char* out = (unsigned char*)&value;
  size_t have = 0;
  while (have < sizeof value) {
    ssize_t got = getrandom(out + have, sizeof value - have, 0);  // GLIBC_2.25; Linux 3.17
    if (got > 0) {
      have += (size_t)got;
    } else if (got < 0 && errno != EINTR) {
      break;
    }
  }
  if (have == sizeof value) return value;
  // No getrandom (a kernel older than 3.17): the device.
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    have = 0;
    while (have < sizeof value) {
      ssize_t got = read(fd, out + have, sizeof value - have);
      if (got > 0) {
        have += (size_t)got;
      } else if (got == 0 || errno != EINTR) {
        break;
      }
    }
    close(fd);
  }
  if (have == sizeof value) return value;
  abort();  // what glibc's arc4random does when it has no entropy source
}

// ---- the real functions of a newer glibc, where the running one has them ----
typedef int (*ClockWait)(pthread_cond_t*, pthread_mutex_t*, clockid_t, const struct timespec*);
typedef int (*FindObject)(void*, struct dl_find_object*);
// Hidden rather than static: tests/packaging/glibc_compat_test.c clears them to test the equivalents.
COMPAT ClockWait blockrun_compat_real_clockwait;
COMPAT FindObject blockrun_compat_real_find_object;

// Early (before the C++ constructors of the binary), once per binary: no lookup on the paths that use them
// (the unwinder may run in the shim's launch path).
__attribute__((constructor(101))) static void blockrun_compat_find_real_functions(void) {
  __atomic_store_n(&blockrun_compat_real_clockwait,
                   (ClockWait)dlvsym(RTLD_DEFAULT, "pthread_cond_clockwait", "GLIBC_2.30"), __ATOMIC_RELEASE);
  __atomic_store_n(&blockrun_compat_real_find_object,
                   (FindObject)dlvsym(RTLD_DEFAULT, "_dl_find_object", "GLIBC_2.35"), __ATOMIC_RELEASE);
}

// ---- pthread_cond_clockwait (2.30) ----
// Without it: the deadline on the requested clock, moved to CLOCK_REALTIME for pthread_cond_timedwait, which
// is what libstdc++ does itself for the clocks the condition variable cannot wait on (its caller reads its
// own clock again after the wait, so a wall-clock step costs a spurious wake-up or a late one, never a wrong
// answer).
COMPAT int pthread_cond_clockwait(pthread_cond_t* restrict condition, pthread_mutex_t* restrict mutex,
                                  clockid_t clock, const struct timespec* restrict deadline) {
  ClockWait real = __atomic_load_n(&blockrun_compat_real_clockwait, __ATOMIC_ACQUIRE);
  if (real) return real(condition, mutex, clock, deadline);
  if (clock == CLOCK_REALTIME) return pthread_cond_timedwait(condition, mutex, deadline);
  if (clock != CLOCK_MONOTONIC) return EINVAL;  // glibc accepts these two only
  struct timespec now_on_clock, now_real;
  clock_gettime(clock, &now_on_clock);
  clock_gettime(CLOCK_REALTIME, &now_real);
  int64_t left_ns = (int64_t)(deadline->tv_sec - now_on_clock.tv_sec) * 1000000000 +
                    (deadline->tv_nsec - now_on_clock.tv_nsec);
  if (left_ns < 0) left_ns = 0;
  int64_t real_ns = (int64_t)now_real.tv_nsec + left_ns % 1000000000;
  struct timespec real_deadline = {now_real.tv_sec + left_ns / 1000000000 + real_ns / 1000000000,
                                   real_ns % 1000000000};
  return pthread_cond_timedwait(condition, mutex, &real_deadline);
}

// ---- _dl_find_object (2.35): libgcc's unwinder finds the unwind tables of each frame with it ----
// Without it: dl_iterate_phdr, as libgcc did before glibc 2.35 (under the loader's lock, so slower on the
// shim's stack walks; exceptions unchanged), with a small cache that a load or unload of a library empties.
struct FindObjectCacheEntry {
  uintptr_t start, end;  // the object's PT_LOAD range
  void* eh_frame;        // its PT_GNU_EH_FRAME, or null
};
enum { kFindObjectCacheSize = 16 };
struct FindObjectSearch {
  uintptr_t pc;
  int cache_checked;
  struct FindObjectCacheEntry found;
};
// Read and written only inside dl_iterate_phdr's callback, which glibc calls under its loader lock.
static struct FindObjectCacheEntry find_object_cache[kFindObjectCacheSize];
static unsigned find_object_cache_used, find_object_cache_next;
static unsigned long long find_object_cache_adds, find_object_cache_subs;

static int find_object_callback(struct dl_phdr_info* info, size_t size, void* data) {
  struct FindObjectSearch* search = (struct FindObjectSearch*)data;
  // dlpi_adds and dlpi_subs (glibc 2.4+): the same in every call of one iteration, read in the first.
  int has_counts = size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs;
  if (has_counts && !search->cache_checked) {
    search->cache_checked = 1;
    if (info->dlpi_adds != find_object_cache_adds || info->dlpi_subs != find_object_cache_subs) {
      find_object_cache_used = find_object_cache_next = 0;
      find_object_cache_adds = info->dlpi_adds;
      find_object_cache_subs = info->dlpi_subs;
    } else {
      for (unsigned i = 0; i < find_object_cache_used; ++i) {
        const struct FindObjectCacheEntry* entry = &find_object_cache[i];
        if (search->pc >= entry->start && search->pc < entry->end) {
          search->found = *entry;
          return 1;
        }
      }
    }
  }
  struct FindObjectCacheEntry entry = {UINTPTR_MAX, 0, NULL};
  int contains = 0;
  for (ElfW(Half) i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)* header = &info->dlpi_phdr[i];
    uintptr_t begin = info->dlpi_addr + header->p_vaddr;
    if (header->p_type == PT_LOAD) {
      if (begin < entry.start) entry.start = begin;
      if (begin + header->p_memsz > entry.end) entry.end = begin + header->p_memsz;
      if (search->pc >= begin && search->pc < begin + header->p_memsz) contains = 1;
    } else if (header->p_type == PT_GNU_EH_FRAME) {
      entry.eh_frame = (void*)begin;
    }
  }
  if (!contains) return 0;
  search->found = entry;
  if (has_counts) {
    find_object_cache[find_object_cache_next] = entry;
    find_object_cache_next = (find_object_cache_next + 1) % kFindObjectCacheSize;
    if (find_object_cache_used < kFindObjectCacheSize) ++find_object_cache_used;
  }
  return 1;
}

COMPAT int _dl_find_object(void* pc, struct dl_find_object* result) {
  FindObject real = __atomic_load_n(&blockrun_compat_real_find_object, __ATOMIC_ACQUIRE);
  if (real) return real(pc, result);
  struct FindObjectSearch search = {(uintptr_t)pc, 0, {0, 0, NULL}};
  if (!dl_iterate_phdr(find_object_callback, &search)) return -1;
  // dlfo_link_map stays null: libgcc reads the range and the unwind tables only.
  *result = (struct dl_find_object){0};
  result->dlfo_map_start = (void*)search.found.start;
  result->dlfo_map_end = (void*)search.found.end;
  result->dlfo_eh_frame = search.found.eh_frame;
  return 0;
}
// SPDX-License-Identifier: MIT
