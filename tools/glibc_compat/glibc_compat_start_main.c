// __libc_start_main at its old version, for executables (the wrapper). See glibc_compat.c.
//
// The start-up code of glibc 2.34+ (Scrt1.o) calls __libc_start_main@GLIBC_2.34 with no init function: that
// version runs the executable's constructors itself. The old version (GLIBC_2.2.5, which glibc 2.34+ keeps)
// runs the init function it is given, and an older glibc runs nothing else: the dynamic loader runs every
// object's constructors but the executable's, which were __libc_csu_init's (libc_nonshared.a, gone in 2.34).
// So this passes a function that does what __libc_csu_init did: _init (DT_INIT), then the init array. glibc
// 2.34+ calls a given init function instead of its own (a "legacy program"), so the constructors run once on
// every glibc. DT_PREINIT_ARRAY is the dynamic loader's on every version; the destructors are too (_dl_fini).
#include <stddef.h>

#if !defined(__x86_64__)
#error "tools/glibc_compat is written for x86-64"
#endif

typedef int (*Main)(int, char**, char**);
typedef void (*Initializer)(int, char**, char**);

__asm__(".symver old___libc_start_main, __libc_start_main@GLIBC_2.2.5");
extern int old___libc_start_main(Main main, int argc, char** argv, Main init, void (*fini)(void),
                                 void (*rtld_fini)(void), void* stack_end);

// crti.o's, and the linker's bounds of the executable's .init_array.
extern void _init(void);
extern Initializer __init_array_start[] __attribute__((visibility("hidden")));
extern Initializer __init_array_end[] __attribute__((visibility("hidden")));

static int run_initializers(int argc, char** argv, char** environment) {
  _init();
  size_t count = (size_t)(__init_array_end - __init_array_start);
  for (size_t i = 0; i < count; ++i) __init_array_start[i](argc, argv, environment);
  return 0;
}

__attribute__((visibility("hidden"))) int __libc_start_main(Main main, int argc, char** argv, Main init,
                                                            void (*fini)(void), void (*rtld_fini)(void),
                                                            void* stack_end) {
  return old___libc_start_main(main, argc, argv, init ? init : run_initializers, fini, rtld_fini, stack_end);
}
// SPDX-License-Identifier: MIT
