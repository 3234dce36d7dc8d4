#!/bin/bash
# The install as a user gets it: `cmake --install` into a temporary prefix, then the CPack tarball unpacked.
# Each tree holds exactly the wrapper, the shim and the Python door's rebind library (all stripped), the Python
# package's modules (docs/python.md), the report's schema, the docs, the man page and the completions; its wrapper, run from another directory, prints its version and help, preloads the
# installed shim (not the build tree's) and pins a simulated-stack program's fault to its launch.
#   check_install.sh BUILD LIBDIR CUDA_APP SIM_LIBDIR CPACK VERSION
set -u
build=$1
libdir=$2
cuda_app=$3
sim_libdir=$4
cpack=$5
version=$6
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
fail() { echo "FAIL: $*"; status=1; }

# Checks the tree under $1 (a prefix); $2 names it in messages.
check_tree() {
  local prefix=$1 what=$2 file
  for file in bin/cuda-blockrun "$libdir/libcuda_blockrun.so" "$libdir/libcuda_blockrun_rebind.so" \
              share/cuda-blockrun/python/cuda_blockrun/__init__.py share/cuda-blockrun/report.schema.json \
              share/doc/cuda-blockrun/README.md share/doc/cuda-blockrun/install.md share/doc/cuda-blockrun/config.md \
              share/man/man1/cuda-blockrun.1 share/bash-completion/completions/cuda-blockrun \
              share/zsh/site-functions/_cuda-blockrun; do
    [ -f "$prefix/$file" ] || fail "$what: $file is not installed"
  done
  # Nothing else: no tests, no demo, no simulated CUDA.
  local others
  others=$(cd "$prefix" && find . -type f | sed 's|^\./||' | grep -Ev \
    "^(bin/cuda-blockrun|$libdir/libcuda_blockrun(_rebind)?\.so|share/cuda-blockrun/python/cuda_blockrun/[^/]*\.py|share/cuda-blockrun/report\.schema\.json|share/doc/cuda-blockrun/[^/]*\.(md|png)|share/doc/cuda-blockrun/LICENSE|share/man/man1/cuda-blockrun\.1|share/bash-completion/completions/cuda-blockrun|share/zsh/site-functions/_cuda-blockrun)$")
  [ -z "$others" ] || fail "$what: installs more than the tool: $others"
  for file in bin/cuda-blockrun "$libdir/libcuda_blockrun.so" "$libdir/libcuda_blockrun_rebind.so"; do
    if readelf -S "$prefix/$file" | grep -Eq '\.debug_info|\.symtab'; then fail "$what: $file is not stripped"; fi
  done
  (
    cd "$work" || exit 1
    local wrapper=$prefix/bin/cuda-blockrun out
    out=$("$wrapper" --version)
    case $out in "cuda-blockrun $version (built against CUDA "*) ;; *) fail "$what: --version says '$out'" ;; esac
    out=$("$wrapper" --help | head -1)
    [ "$out" = "usage: cuda-blockrun [options] [--] program [args...]" ] || fail "$what: --help begins '$out'"
    out=$("$wrapper" --block all -- /bin/sh -c 'echo "$LD_PRELOAD"')
    [ "$out" = "$(cd "$prefix/$libdir" && pwd -P)/libcuda_blockrun.so" ] ||
      fail "$what: the installed wrapper preloads '$out', not the installed shim"
    LD_LIBRARY_PATH=$sim_libdir CUDA_SIM_FAULT=stencil:13 "$wrapper" --block all -- "$cuda_app" steps \
      >"$work/out" 2>"$work/err"
    local run_status=$?
    [ $run_status -eq 1 ] || fail "$what: the faulting program exited $run_status, not 1"
    grep -qF '[cuda-blockrun]   in kernel stencil(float*, float const*, int, long long)<<<(4096,1,1), (256,1,1), 0, 0x0>>>, launch #38 (stencil#13), blocked' \
      "$work/err" || fail "$what: the fault is not pinned to stencil's launch #38: $(cat "$work/err")"
    exit $status
  ) || status=1
}

cmake --install "$build" --prefix "$work/prefix" >"$work/install.log" || fail "cmake --install: $(cat "$work/install.log")"
check_tree "$work/prefix" "cmake --install"

"$cpack" -G TGZ --config "$build/CPackConfig.cmake" -B "$work/package" >"$work/cpack.log" 2>&1 ||
  fail "cpack: $(cat "$work/cpack.log")"
tarball=$(ls "$work/package"/cuda-blockrun-"$version"-*.tar.gz 2>/dev/null)
if [ -n "$tarball" ]; then
  mkdir "$work/unpacked" && tar -xzf "$tarball" -C "$work/unpacked"
  top=$(ls "$work/unpacked")
  [ "$top" = "$(basename "$tarball" .tar.gz)" ] || fail "the tarball's top directory is '$top'"
  check_tree "$work/unpacked/$top" "the tarball"
else
  fail "cpack made no cuda-blockrun-$version-*.tar.gz"
fi
[ $status -eq 0 ] && echo "ok: cmake --install and $(basename "$tarball"): the installed wrapper pins the fault"
exit $status
# SPDX-License-Identifier: MIT
