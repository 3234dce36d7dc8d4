// Prints what dlsym answers for a fixed set of lookups: RTLD_DEFAULT, RTLD_NEXT (from the program and
// from a library), a dlopen handle, a missing symbol (and dlerror), dlvsym. The output must be
// identical with and without an LD_PRELOAD'ed dlsym interposer: RTLD_NEXT and RTLD_DEFAULT are
// resolved relative to the CALLER of dlsym, so an interposer must leave every lookup it does not own
// exactly as it was. Deterministic output only (no addresses, no dlerror text: it contains paths).
//
//   dlsym_probe [path of libdlsym_probe_lib.so]   (default: the one built with it)
//
// The program defines probe_value() returning 1 (exported: ENABLE_EXPORTS); the library returns 2.
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

extern "C" __attribute__((visibility("default"), noinline)) int probe_value() {
  return 1;
}

namespace {

using ProbeFn = int (*)();

// The first glibc symbol version of the architecture (malloc has only that one).
#if defined(__aarch64__)
const char* const kGlibcBaseVersion = "GLIBC_2.17";
#else
const char* const kGlibcBaseVersion = "GLIBC_2.2.5";
#endif
using LibDlsymFn = void* (*)(void*, const char*);

// "null", or the value the found probe_value returns.
void print_probe(const char* what, void* symbol) {
  if (symbol)
    std::printf("%s: %d\n", what, reinterpret_cast<ProbeFn>(symbol)());
  else
    std::printf("%s: null\n", what);
}

void print_yes_no(const char* what, bool value) {
  std::printf("%s: %s\n", what, value ? "yes" : "no");
}

// "error" or "null": whether dlerror() has a message now (the text is not printed: it contains paths).
void print_dlerror(const char* what) {
  std::printf("%s: %s\n", what, dlerror() ? "error" : "null");
}

}  // namespace

int main(int argc, char** argv) {
  std::setvbuf(stdout, nullptr, _IONBF, 0);
  const char* lib_path = argc > 1 ? argv[1] : DLSYM_PROBE_LIB;

  dlerror();  // start with no pending error
  print_probe("main: dlsym(RTLD_DEFAULT, probe_value)", dlsym(RTLD_DEFAULT, "probe_value"));
  print_dlerror("main: dlerror after it");
  print_probe("main: dlsym(RTLD_NEXT, probe_value) before dlopen", dlsym(RTLD_NEXT, "probe_value"));
  print_dlerror("main: dlerror after it");

  void* missing = dlsym(RTLD_DEFAULT, "no_such_symbol_xyz");
  std::printf("main: dlsym(RTLD_DEFAULT, no_such_symbol_xyz): %s\n", missing ? "found" : "null");
  print_dlerror("main: dlerror after it");
  print_dlerror("main: dlerror again");
  missing = dlsym(RTLD_NEXT, "no_such_symbol_xyz");
  std::printf("main: dlsym(RTLD_NEXT, no_such_symbol_xyz): %s\n", missing ? "found" : "null");
  print_dlerror("main: dlerror after it");

  void* malloc_default = dlsym(RTLD_DEFAULT, "malloc");
  void* malloc_next = dlsym(RTLD_NEXT, "malloc");
  print_yes_no("main: dlsym(RTLD_NEXT, malloc) non-null", malloc_next != nullptr);
  print_yes_no("main: it equals dlsym(RTLD_DEFAULT, malloc)", malloc_next == malloc_default);
  print_yes_no("main: dlsym(RTLD_NEXT, dlsym) equals dlsym(RTLD_DEFAULT, dlsym)",
               dlsym(RTLD_NEXT, "dlsym") == dlsym(RTLD_DEFAULT, "dlsym"));
  print_yes_no("main: dlvsym(RTLD_DEFAULT, dlsym, GLIBC_2.34) non-null",
               dlvsym(RTLD_DEFAULT, "dlsym", "GLIBC_2.34") != nullptr);
  print_yes_no("main: dlvsym(RTLD_NEXT, malloc, <base glibc version>) equals dlsym(RTLD_DEFAULT, malloc)",
               dlvsym(RTLD_NEXT, "malloc", kGlibcBaseVersion) == malloc_default);
  void* no_version = dlvsym(RTLD_DEFAULT, "dlsym", "NO_SUCH_VERSION_1.0");
  std::printf("main: dlvsym(RTLD_DEFAULT, dlsym, NO_SUCH_VERSION_1.0): %s\n", no_version ? "found" : "null");
  print_dlerror("main: dlerror after it");

  void* lib = dlopen(lib_path, RTLD_NOW | RTLD_GLOBAL);
  std::printf("dlopen probe library (RTLD_GLOBAL): %s\n", lib ? "ok" : "failed");
  if (!lib) return 1;
  print_probe("main: dlsym(RTLD_DEFAULT, probe_value) after dlopen", dlsym(RTLD_DEFAULT, "probe_value"));
  print_probe("main: dlsym(RTLD_NEXT, probe_value) after dlopen", dlsym(RTLD_NEXT, "probe_value"));
  print_probe("main: dlsym(lib handle, probe_value)", dlsym(lib, "probe_value"));
  void* missing_in_lib = dlsym(lib, "no_such_symbol_xyz");
  std::printf("main: dlsym(lib handle, no_such_symbol_xyz): %s\n", missing_in_lib ? "found" : "null");
  print_dlerror("main: dlerror after it");
  void* self = dlopen(nullptr, RTLD_NOW);
  print_probe("main: dlsym(dlopen(NULL) handle, probe_value)", dlsym(self, "probe_value"));

  // The same lookups made from inside the library: RTLD_NEXT now means "after the library".
  auto lib_dlsym = reinterpret_cast<LibDlsymFn>(dlsym(lib, "probe_lib_dlsym"));
  if (!lib_dlsym) {
    std::printf("probe_lib_dlsym: not found\n");
    return 1;
  }
  print_probe("lib: dlsym(RTLD_DEFAULT, probe_value)", lib_dlsym(RTLD_DEFAULT, "probe_value"));
  print_probe("lib: dlsym(RTLD_NEXT, probe_value)", lib_dlsym(RTLD_NEXT, "probe_value"));
  print_dlerror("lib: dlerror after it");
  print_probe("lib: dlsym(lib handle, probe_value)", lib_dlsym(lib, "probe_value"));
  void* lib_next_malloc = lib_dlsym(RTLD_NEXT, "malloc");
  std::printf("lib: dlsym(RTLD_NEXT, malloc): %s\n", lib_next_malloc == nullptr          ? "null"
                                                     : lib_next_malloc == malloc_default ? "malloc"
                                                                                         : "other");
  print_dlerror("lib: dlerror after it");
  void* lib_missing = lib_dlsym(RTLD_DEFAULT, "no_such_symbol_xyz");
  std::printf("lib: dlsym(RTLD_DEFAULT, no_such_symbol_xyz): %s\n", lib_missing ? "found" : "null");
  print_dlerror("lib: dlerror after it");
  print_dlerror("lib: dlerror again");

  dlclose(self);
  std::printf("done\n");
  return 0;
}
// SPDX-License-Identifier: MIT
