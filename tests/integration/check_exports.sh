#!/bin/sh
# Checks the shim's ELF interface: it needs no spdlog, fmt, CUDA or C++ runtime library at run time (libstdc++
# and libgcc are linked in, hidden, so that a program keeps its own: no NEEDED libstdc++.so or libgcc_s.so, no
# GLIBCXX, CXXABI or GCC symbol version), and exports exactly the hooked symbols of shim/hooks.def (and the
# loader's dlsym, the process's _exit and _Exit), nothing of the C++ runtime, spdlog, fmt or the engine.
set -eu
shim=$1
table=$2
status=0

needed=$(readelf -d "$shim" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p')
for library in $needed; do
  case $library in
    libc.so.*|libm.so.*|ld-linux*|libdl.so.*|libpthread.so.*) ;;
    *) echo "unexpected run-time dependency: $library"; status=1 ;;
  esac
done

exported=$(nm -D --defined-only "$shim" | awk '{print $3}' | sort)
expected=$( (sed -n 's/^CUDA_BLOCKRUN_HOOK([^,]*, *[^,]*, *[^,]*, *[^,]*, *\([A-Za-z_0-9]*\),.*/\1/p' "$table"
           sed -n 's/^CUDA_BLOCKRUN_LOADER(\([A-Za-z_0-9]*\))/\1/p' "$table"
           sed -n 's/^CUDA_BLOCKRUN_PROCESS_END(\([A-Za-z_0-9]*\))/\1/p' "$table") | sort)
if [ "$exported" != "$expected" ]; then
  echo "exported symbols differ from shim/hooks.def:"
  printf '%s\n' "$exported" > /tmp/blockrun_exported.$$
  printf '%s\n' "$expected" > /tmp/blockrun_expected.$$
  diff /tmp/blockrun_expected.$$ /tmp/blockrun_exported.$$ || true
  rm -f /tmp/blockrun_exported.$$ /tmp/blockrun_expected.$$
  status=1
fi
versions=$(readelf --version-info "$shim" | sed -n 's/.*Name: \([A-Z_]*[0-9.]*\).*/\1/p' | sort -u)
if echo "$versions" | grep -Eq '^(GLIBCXX|CXXABI|GCC)_'; then
  echo "needs the C++ runtime's symbol versions:" $(echo "$versions" | grep -E '^(GLIBCXX|CXXABI|GCC)_')
  status=1
fi
# Every symbol it needs is the C library's (libstdc++'s archive leaves a few weak references, such as the
# transactional-memory clones, which need nothing).
foreign=$(nm -D --undefined-only "$shim" | awk '$1 == "U" {print $2}' | grep -v '@GLIBC_' || true)
if [ -n "$foreign" ]; then
  echo "needs symbols that are not the C library's:" $foreign
  status=1
fi
if nm -D --defined-only "$shim" | grep -Eq 'spdlog|fmt|blockrun'; then
  echo "spdlog, fmt or engine symbols are visible:"; nm -D --defined-only "$shim" | grep -E 'spdlog|fmt|blockrun' | head
  status=1
fi
[ $status -eq 0 ] && echo "ok: $(echo "$exported" | wc -l) exported symbols, all hooks; run-time needs:" $needed \
  "(versions:" $versions")"
exit $status
# SPDX-License-Identifier: MIT
